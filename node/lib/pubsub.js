'use strict';
// PubSub: an EventEmitter and an async iterator over the core's subscriber (core/README.md,
// "Pub/sub"). The core owns the subscriber's connections and its thread; it keeps what was
// subscribed across lost connections, failovers and slot moves and reports the gaps. The
// addon watches its queue's descriptor on Node's loop and hands over batches of 32-byte
// records, decoded here with a DataView.
//
// Events: 'message' (channel, message), 'pmessage' (pattern, channel, message), 'smessage'
// (channel, message), 'subscribe' / 'psubscribe' / 'ssubscribe' and the unsubscribes
// (channel, count), 'resubscribed' (channel, kind: subscribed again after a gap — messages
// of the gap were missed), 'connectionLost' (reason), 'overflow' (dropped: the bounded queue
// dropped that many of the newest messages), 'subscriptionError' (text: a server refused a
// subscription; the core retries it).
// for await (const m of sub): { type, pattern, channel, data } as redis-py's, every record.

const { EventEmitter } = require('events');
const { errorFromCode, SlotlaneError } = require('./errors');

const TYPES = [null, 'message', 'pmessage', 'smessage', 'subscribe', 'psubscribe', 'ssubscribe',
  'unsubscribe', 'punsubscribe', 'sunsubscribe', 'resubscribed', 'overflow', 'connectionLost',
  'subscriptionError'];
const KIND_WORD = ['subscribe', 'psubscribe', 'ssubscribe'];
const CHANNEL = 0;
const PATTERN = 1;
const SHARD = 2;
const HIGH_WATER = 4096; // records buffered for the iterator before the queue is left to the core
const LOW_WATER = 1024;

function layoutOf(native) {
  const l = native.subLayout();
  const want = [32, 0, 1, 4, 8, 12, 16, 24];
  for (let i = 0; i < want.length; i++) {
    if (l[i] !== want[i]) throw new Error(`slotlane: sl_message layout ${l} is not the one lib/pubsub.js decodes`);
  }
}

class PubSub extends EventEmitter {
  constructor(native, nativeOpts, opts, returnBuffers) {
    super();
    const o = opts || {};
    const sub = {};
    if (o.maxQueueBytes !== undefined) {
      if (!Number.isInteger(o.maxQueueBytes) || o.maxQueueBytes <= 0) throw new TypeError('slotlane: maxQueueBytes must be a positive integer');
      sub.maxQueueBytes = o.maxQueueBytes;
    }
    if (o.healthCheckInterval !== undefined) {
      if (!Number.isInteger(o.healthCheckInterval) || o.healthCheckInterval < 0) {
        throw new TypeError('slotlane: healthCheckInterval must be milliseconds (0: never)');
      }
      sub.healthCheckInterval = o.healthCheckInterval;
    }
    layoutOf(native);
    this._native = native;
    this._returnBuffers = returnBuffers;
    this._h = null;
    this._closed = false;
    this._waiters = new Map(); // "kind:name" -> resolvers of subscribe() promises
    this._iter = null;         // the async iterator's buffer and waiter, while one runs
    this._paused = false;
    this.channels = new Set();
    this.patterns = new Set();
    this.shardChannels = new Set();
    this._ready = new Promise((resolve, reject) => { this._readyRes = resolve; this._readyRej = reject; });
    this._ready.catch(() => {});
    native.subNew(nativeOpts, sub, this, this._onRecords, (code, h) => {
      if (code !== 0) {
        this._closed = true;
        this._readyRej(errorFromCode(code, `slotlane: subscriber connect failed: ${h}`));
        return;
      }
      this._h = h;
      if (this._closed) native.subClose(h);
      this._readyRes(this);
    });
  }

  /** Resolves once the subscriber is connected (and the cluster's map known). */
  connect() { return this._ready; }

  _name(v) {
    if (typeof v === 'string') return Buffer.from(v);
    if (Buffer.isBuffer(v)) return v;
    if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
    if (typeof v === 'number') return Buffer.from(String(v));
    throw new TypeError(`slotlane: a channel must be a string or a Buffer (got ${v === null ? 'null' : typeof v})`);
  }

  async _op(subscribe, kind, names, set) {
    await this._ready;
    if (this._closed) throw new SlotlaneError('slotlane: the subscriber is closed');
    const list = names.flat();
    if (!subscribe && list.length === 0) {
      this._check(this._native.subOp(this._h, 0, kind, null));
      set.clear();
      return 0;
    }
    const waits = [];
    for (const n of list) {
      const b = this._name(n);
      if (subscribe) {
        const key = `${kind}:${b.toString('latin1')}`;
        waits.push(new Promise((resolve) => {
          const w = this._waiters.get(key);
          if (w) w.push(resolve); else this._waiters.set(key, [resolve]);
        }));
      }
      this._check(this._native.subOp(this._h, subscribe ? 1 : 0, kind, b));
      if (subscribe) set.add(typeof n === 'string' ? n : b.toString()); else set.delete(typeof n === 'string' ? n : b.toString());
    }
    const counts = await Promise.all(waits);
    return counts.length ? counts[counts.length - 1] : 0;
  }

  _check(rc) {
    if (rc !== 0) throw errorFromCode(rc, `slotlane: ${this._native.strerror(rc)}`);
  }

  /** SUBSCRIBE channels; resolves with the server's count once they are confirmed. */
  subscribe(...channels) { return this._op(true, CHANNEL, channels, this.channels); }
  psubscribe(...patterns) { return this._op(true, PATTERN, patterns, this.patterns); }
  /** SSUBSCRIBE shard channels: on their slot's owner, followed across slot moves. */
  ssubscribe(...channels) { return this._op(true, SHARD, channels, this.shardChannels); }
  /** UNSUBSCRIBE these channels (none: all). */
  unsubscribe(...channels) { return this._op(false, CHANNEL, channels, this.channels); }
  punsubscribe(...patterns) { return this._op(false, PATTERN, patterns, this.patterns); }
  sunsubscribe(...channels) { return this._op(false, SHARD, channels, this.shardChannels); }

  /** The core subscriber's counters. */
  stats() {
    const k = ['messages', 'dropped', 'connectionLosses', 'resubscribed', 'pings', 'refreshes',
      'confirmed', 'queuedBytes', 'bytesRead'];
    const v = this._h ? this._native.subStats(this._h) : k.map(() => 0);
    const out = {};
    k.forEach((name, i) => { out[name] = v[i]; });
    return out;
  }

  /** Closes the subscriber's connections and stops its thread; a running iterator ends. */
  close() {
    if (this._closed) return;
    this._closed = true;
    if (this._h) this._native.subClose(this._h);
    if (this._iter && this._iter.wake) { const w = this._iter.wake; this._iter.wake = null; w(); }
  }

  quit() { this.close(); return Promise.resolve('OK'); }

  _onRecords(recs, data, count) {
    const dv = new DataView(recs.buffer, recs.byteOffset, recs.byteLength);
    const text = !this._returnBuffers;
    for (let i = 0; i < count; i++) {
      const base = i * 32;
      const kind = dv.getUint8(base);
      const flags = dv.getUint8(base + 1);
      const chl = dv.getUint32(base + 4, true);
      const patl = dv.getUint32(base + 8, true);
      const payl = dv.getUint32(base + 12, true);
      const cnt = Number(dv.getBigInt64(base + 16, true));
      const off = Number(dv.getBigUint64(base + 24, true));
      const bytes = (a, n) => (text ? data.toString('utf8', a, a + n) : Buffer.from(data.subarray(a, a + n)));
      const type = TYPES[kind] || 'unknown';
      let m;
      if (kind <= 3) {
        const ch = bytes(off, chl);
        const pat = kind === 2 ? bytes(off + chl, patl) : null;
        const payload = bytes(off + chl + patl, payl);
        m = { type, pattern: pat, channel: ch, data: payload };
        if (kind === 2) this.emit('pmessage', pat, ch, payload); else this.emit(type, ch, payload);
      } else if (kind <= 9) {
        const ch = bytes(off, chl);
        m = { type, pattern: null, channel: ch, data: cnt };
        if (kind <= 6) this._resolve(kind - 4, data, off, chl, cnt);
        this.emit(type, ch, cnt);
      } else if (kind === 10) {
        const ch = bytes(off, chl);
        m = { type, pattern: null, channel: ch, data: KIND_WORD[flags % 3] };
        this._resolve(flags % 3, data, off, chl, cnt);
        this.emit('resubscribed', ch, KIND_WORD[flags % 3]);
      } else if (kind === 11) {
        m = { type, pattern: null, channel: null, data: cnt };
        this.emit('overflow', cnt);
      } else {
        const why = data.toString('utf8', off + chl + patl, off + chl + patl + payl);
        m = { type, pattern: null, channel: null, data: why };
        this.emit(type, why);
      }
      if (this._iter) this._push(m);
    }
  }

  _resolve(kind, data, off, len, count) {
    const key = `${kind}:${data.toString('latin1', off, off + len)}`;
    const w = this._waiters.get(key);
    if (!w) return;
    this._waiters.delete(key);
    for (const r of w) r(count);
  }

  _push(m) {
    const it = this._iter;
    it.buf.push(m);
    if (it.wake) { const w = it.wake; it.wake = null; w(); }
    if (!this._paused && it.buf.length - it.head >= HIGH_WATER && this._h) {
      this._paused = true;
      this._native.subPause(this._h, true); // the core's bounded queue takes over
    }
  }

  async* _records(it) {
    try {
      for (;;) {
        while (it.head < it.buf.length) {
          const m = it.buf[it.head++];
          if (it.head > 1024 && it.head * 2 > it.buf.length) { it.buf = it.buf.slice(it.head); it.head = 0; }
          if (this._paused && it.buf.length - it.head <= LOW_WATER && this._h && !this._closed) {
            this._paused = false;
            this._native.subPause(this._h, false);
          }
          yield m;
        }
        if (this._closed) return;
        await new Promise((resolve) => { it.wake = resolve; });
      }
    } finally {
      if (this._iter === it) this._iter = null;
      if (this._paused && this._h && !this._closed) { this._paused = false; this._native.subPause(this._h, false); }
    }
  }

  /** Every record from now on (installed at once, so nothing between this call and the
   * first next() is missed); one iterator at a time. */
  [Symbol.asyncIterator]() {
    const it = { buf: [], head: 0, wake: null };
    this._iter = it;
    return this._records(it);
  }
}

module.exports = { PubSub };
