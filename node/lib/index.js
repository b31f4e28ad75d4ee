'use strict';
// slotlane for Node: a thin binding of libslotlane's async engine on Node's own loop.
//
// Automatic pipelining: every command issued in one tick is RESP-encoded here into one
// reused Buffer; a setImmediate flush hands the whole tick to the core in ONE native call
// (sl_batch_append + sl_batch_exec_async). The core routes each command (cluster slots,
// multi-key splits, redirects — never JavaScript) and, once every command has its reply,
// the addon copies the 24-byte reply records and their data into two reused Buffers and
// calls _onReply once per batch; the records are decoded here with a DataView.

const crypto = require('crypto');
const errors = require('./errors');
const { ReplyError, ConnectionError, CancelledError, SlotlaneError, ProtocolError, errorFromRecord, errorFromCode } = errors;
const commands = require('./commands');
const { PubSub } = require('./pubsub');

function loadAddon() {
  const tried = [];
  for (const p of ['../build/Release/slotlane.node', '../build/Debug/slotlane.node']) {
    try {
      return require(p);
    } catch (e) {
      if (e.code !== 'MODULE_NOT_FOUND') throw e;
      tried.push(p);
    }
  }
  throw new Error(`slotlane: the native addon is not built (tried ${tried.join(', ')}); run \`npm rebuild slotlane\``);
}
const native = loadAddon();

// The record layout the decoder below assumes; checked against the compiled core.
const REC = 24;
{
  const l = native.layout();
  if (l.join() !== '24,0,1,4,8,16') throw new Error(`slotlane: unexpected sl_reply layout ${l.join()}`);
}

const T_STRING = 1, T_STATUS = 2, T_ERROR = 3, T_INTEGER = 4, T_NIL = 5, T_ARRAY = 6,
  T_MAP = 7, T_SET = 8, T_DOUBLE = 9, T_BOOL = 10, T_BIGNUM = 11, T_VERB = 12, T_PUSH = 13;

const MODES = { auto: 0, plain: 1, cluster: 2 };
const MODE_NAMES = { 1: 'plain', 2: 'cluster' };
const ROUTES = { 'all-primaries': 1, random: 4 };
// options.readFrom -> sl_read_from
const READ_FROM = { __proto__: null, primary: 0, preferReplica: 1, replicas: 2 };
// sl_event_type -> onEvent's event name
const EVENT_NAMES = { 1: 'topologyChanged', 2: 'nodeDown', 3: 'nodeUp', 4: 'failover' };

const CONNECTING = 0, OPEN = 1, CLOSING = 2, CLOSED = 3, FAILED = 4;

const utf8Slice = typeof Buffer.prototype.utf8Slice === 'function'
  ? (b, s, e) => b.utf8Slice(s, e)
  : (b, s, e) => b.toString('utf8', s, e);

function typeName(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function argTypeError(args, i, what) {
  const cmd = typeof args[0] === 'string' ? args[0].toUpperCase() : 'the command';
  return new TypeError(`slotlane: argument ${i} of ${cmd} must be a string, number, bigint, Buffer or Uint8Array (got ${what})`);
}

function digits(n) {
  return n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : n < 10000 ? 4 : n < 100000 ? 5 : String(n).length;
}

// Writes the decimal digits of n >= 0 at p; returns the new position.
function putInt(buf, p, n) {
  if (n < 10) { buf[p] = 48 + n; return p + 1; }
  if (n < 100) { buf[p] = 48 + ((n / 10) | 0); buf[p + 1] = 48 + (n % 10); return p + 2; }
  const d = digits(n);
  let q = p + d;
  while (n > 0) { buf[--q] = 48 + (n % 10); n = Math.floor(n / 10); }
  return p + d;
}

function checkOptions(o) {
  if (typeof o === 'string') o = { url: o };
  if (o === undefined) o = {};
  if (o === null || typeof o !== 'object' || Array.isArray(o)) {
    throw new TypeError(`slotlane: createClient options must be an object or a URL string (got ${typeName(o)})`);
  }
  const str = (k) => {
    if (o[k] !== undefined && o[k] !== null && typeof o[k] !== 'string') {
      throw new TypeError(`slotlane: option ${k} must be a string (got ${typeName(o[k])})`);
    }
    return o[k] == null ? undefined : o[k];
  };
  const int = (k, lo, hi) => {
    if (o[k] === undefined) return undefined;
    if (typeof o[k] !== 'number' || !Number.isInteger(o[k])) {
      throw new TypeError(`slotlane: option ${k} must be an integer (got ${typeName(o[k])})`);
    }
    if (o[k] < lo || o[k] > hi) throw new RangeError(`slotlane: option ${k} must be in ${lo}..${hi} (got ${o[k]})`);
    return o[k];
  };
  let url = str('url');
  const host = str('host');
  const port = int('port', 1, 65535);
  if (url !== undefined && (host !== undefined || port !== undefined)) {
    throw new TypeError('slotlane: give either url or host/port, not both');
  }
  if (url === undefined && (host !== undefined || port !== undefined)) {
    url = `${host === undefined ? '127.0.0.1' : host}:${port === undefined ? 6379 : port}`;
  }
  let mode = 0;
  if (o.cluster !== undefined) {
    if (typeof o.cluster !== 'boolean') {
      throw new TypeError(`slotlane: option cluster must be a boolean (got ${typeName(o.cluster)}); leave it out to detect`);
    }
    mode = o.cluster ? MODES.cluster : MODES.plain;
  }
  if (o.returnBuffers !== undefined && typeof o.returnBuffers !== 'boolean') {
    throw new TypeError(`slotlane: option returnBuffers must be a boolean (got ${typeName(o.returnBuffers)})`);
  }
  const resp = int('resp', 2, 3);
  let readFrom = 0;
  if (o.readFrom !== undefined) {
    readFrom = READ_FROM[o.readFrom];
    if (typeof o.readFrom !== 'string' || readFrom === undefined) {
      throw new TypeError(`slotlane: option readFrom must be 'primary', 'preferReplica' or 'replicas' (got ${typeof o.readFrom === 'string' ? `'${o.readFrom}'` : typeName(o.readFrom)})`);
    }
  }
  if (o.retryWrites !== undefined && typeof o.retryWrites !== 'boolean') {
    throw new TypeError(`slotlane: option retryWrites must be a boolean (got ${typeName(o.retryWrites)})`);
  }
  if (o.onEvent !== undefined && o.onEvent !== null && typeof o.onEvent !== 'function') {
    throw new TypeError(`slotlane: option onEvent must be a function (got ${typeName(o.onEvent)})`);
  }
  return {
    native: {
      url, mode,
      username: str('username'), password: str('password'),
      db: int('db', 0, 1 << 30), resp,
      connectTimeout: int('connectTimeout', 1, 0x7fffffff),
      commandTimeout: int('commandTimeout', 0, 0x7fffffff),
      maxRedirects: int('maxRedirects', 0, 1000),
      tls: tlsOptions(o.tls),
      readFrom, retryWrites: o.retryWrites === true ? 1 : 0,
    },
    onEvent: typeof o.onEvent === 'function' ? o.onEvent : null,
    returnBuffers: o.returnBuffers === true,
  };
}

// ioredis's tls: { ca, cert, key, servername, rejectUnauthorized } (PEM strings or Buffers;
// ca may be an array), or true for the defaults; the core's OpenSSL does the handshake, so
// a tls.SecureContext or checkServerIdentity callback cannot be used.
function tlsOptions(t) {
  if (t === undefined || t === null || t === false) return undefined;
  if (t === true) t = {};
  if (typeof t !== 'object') throw new TypeError(`slotlane: option tls must be an object or true (got ${typeName(t)})`);
  const pem = (k) => {
    const v = t[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v === 'string') return v;
    if (Buffer.isBuffer(v)) return v.toString('latin1');
    if (Array.isArray(v) && k === 'ca') return v.map((x) => (Buffer.isBuffer(x) ? x.toString('latin1') : String(x))).join('\n');
    throw new TypeError(`slotlane: option tls.${k} must be PEM text (a string or a Buffer) (got ${typeName(v)})`);
  };
  if (t.servername !== undefined && typeof t.servername !== 'string') {
    throw new TypeError(`slotlane: option tls.servername must be a string (got ${typeName(t.servername)})`);
  }
  if (t.rejectUnauthorized !== undefined && typeof t.rejectUnauthorized !== 'boolean') {
    throw new TypeError(`slotlane: option tls.rejectUnauthorized must be a boolean (got ${typeName(t.rejectUnauthorized)})`);
  }
  if ((t.cert === undefined) !== (t.key === undefined)) throw new TypeError('slotlane: option tls needs both cert and key');
  // rejectUnauthorized: false verifies nothing (SL_TLS_VERIFY_NONE_INSECURE)
  return { ca: pem('ca'), cert: pem('cert'), key: pem('key'), servername: t.servername,
           verify: t.rejectUnauthorized === false ? 2 : 0 };
}

function parseRoute(route) {
  if (route === undefined) return null;
  if (typeof route === 'string') {
    if (ROUTES[route] !== undefined) return { kind: ROUTES[route], slot: 0, node: null };
  } else if (route !== null && typeof route === 'object') {
    if (typeof route.node === 'string') return { kind: 2, slot: 0, node: route.node };
    if (Number.isInteger(route.slot) && route.slot >= 0 && route.slot < 16384) return { kind: 3, slot: route.slot, node: null };
  }
  throw new TypeError("slotlane: route must be 'all-primaries', 'random', { node: 'host:port' } or { slot: 0..16383 }");
}

class Client {
  constructor(opts) {
    const o = checkOptions(opts);
    this._returnBuffers = o.returnBuffers;
    this._nativeOpts = o.native;
    this._state = CONNECTING;
    this._h = null;
    this._mode = null;
    // the tick being gathered
    this._buf = Buffer.allocUnsafeSlow(16384);
    this._len = 0;
    this._count = 0;
    this._res = [];
    this._rej = [];
    this._shp = [];           // per command: the reply type's shaper (commands.js), or null
    this._segs = null;        // routed segments of this tick, or null
    this._segOff = 0;         // start of the current unrouted run
    this._segCount = 0;
    this._scheduled = false;
    this._flushBound = () => this._flush();
    this._executor = (res, rej) => { this._res.push(res); this._rej.push(rej); };
    // batches in flight, by the addon's slot index
    this._slotRes = [];
    this._slotRej = [];
    this._slotShp = [];
    this._aloneIdx = undefined; // the slot _alone sent a blocking command in (for _withSignal)
    this._slotDone = [];      // per slot: what to undo at its completion (an abort listener)
    this._slotOwn = [];       // per slot: the decoder of a batch of its own (a scan page, a script)
    this._early = null;       // a completion that came before its start returned (_startOwn)
    this._inflight = 0;
    this._closeWaiters = null;
    // output buffers (owned by the addon, reused) and their views
    this._recs = null;
    this._dv = null;
    this._data = null;
    this._pos = 0;
    this._ready = new Promise((resolve, reject) => { this._readyRes = resolve; this._readyRej = reject; });
    this._ready.catch(() => {});
    // onEvent: the core's events, delivered on this thread after the core returned (never
    // from inside it: the function may use the client); what it throws is an uncaught
    // exception, as from an event listener. The connect's events come before connect()
    // settles (also when it fails); none after close().
    const connectOpts = o.onEvent === null ? o.native : { ...o.native, onEvent: eventDispatcher(o.onEvent, this) };
    native.connect(connectOpts, this, this._onReply, (code, h, mode) => this._connected(code, h, mode));
  }

  _connected(code, h, mode) {
    if (code !== 0) {
      this._state = FAILED;
      const err = errorFromCode(code, `slotlane: connect failed: ${h}`);
      this._failPending(err);
      this._readyRej(err);
      this._finishClose();
      return;
    }
    this._h = h;
    this._mode = MODE_NAMES[mode];
    const closing = this._state === CLOSING;
    if (!closing) this._state = OPEN;
    this._readyRes(this);
    if (this._count > 0) this._flush();
    if (closing) this._maybeFinishClose();
  }

  /** Resolves with the client once connected (and the slot map known); rejects with the connect error. */
  connect() { return this._ready; }

  /**
   * A subscriber on connections of its own (lib/pubsub.js): an EventEmitter and an async
   * iterator. options: { maxQueueBytes (default 64 MiB: then the newest messages are dropped
   * and an 'overflow' event says how many), healthCheckInterval (ms of silence before a PING;
   * default 30000, 0: never) }. It connects in the background (sub.connect() resolves).
   */
  pubsub(options) {
    return new PubSub(native, this._nativeOpts, options, this._returnBuffers);
  }

  /** 'plain' or 'cluster' once connected, else null. */
  get mode() { return this._mode; }

  /** true between a successful connect and close(). */
  get isOpen() { return this._state === OPEN; }

  // ---------------------------------------------------------------- encoding

  // Appends one command to the tick's buffer. Validates first, so a bad argument leaves
  // nothing behind. Returns nothing; throws TypeError.
  _encode(args) {
    if (!Array.isArray(args)) throw new TypeError(`slotlane: a command must be an array of arguments (got ${typeName(args)})`);
    const n = args.length;
    if (n === 0) throw new TypeError('slotlane: a command needs at least its name');
    if (typeof args[0] !== 'string' && !(args[0] instanceof Uint8Array)) {
      throw new TypeError(`slotlane: the command name must be a string or a Buffer (got ${typeName(args[0])})`);
    }
    let need = 16;
    for (let i = 0; i < n; i++) {
      const a = args[i];
      if (typeof a === 'string') need += a.length * 3 + 16;
      else if (typeof a === 'number') {
        if (!Number.isFinite(a)) throw argTypeError(args, i, String(a));
        need += 40;
      } else if (a instanceof Uint8Array) need += a.length + 16;
      else if (typeof a === 'bigint') need += 40;
      else throw argTypeError(args, i, typeName(a));
    }
    let buf = this._buf;
    let p = this._len;
    if (p + need > buf.length) {
      let cap = buf.length * 2;
      while (cap < p + need) cap *= 2;
      const grown = Buffer.allocUnsafeSlow(cap);
      buf.copy(grown, 0, 0, p);
      this._buf = buf = grown;
    }
    buf[p++] = 42; // *
    p = putInt(buf, p, n);
    buf[p++] = 13; buf[p++] = 10;
    for (let i = 0; i < n; i++) {
      let a = args[i];
      if (typeof a === 'number' || typeof a === 'bigint') a = String(a);
      if (typeof a === 'string') {
        const sl = a.length;
        const d = digits(sl);
        const start = p + 3 + d;
        let ascii = sl <= 64;
        if (ascii) {
          for (let j = 0; j < sl; j++) {
            const c = a.charCodeAt(j);
            if (c > 127) { ascii = false; break; }
            buf[start + j] = c;
          }
        }
        let wrote = sl;
        let d2 = d;
        if (!ascii) {
          wrote = buf.utf8Write(a, start);
          d2 = digits(wrote);
          if (d2 !== d) buf.copyWithin(start + d2 - d, start, start + wrote);
        }
        buf[p++] = 36; // $
        p = putInt(buf, p, wrote);
        buf[p++] = 13; buf[p++] = 10;
        p += wrote;
      } else {
        buf[p++] = 36;
        p = putInt(buf, p, a.length);
        buf[p++] = 13; buf[p++] = 10;
        buf.set(a, p);
        p += a.length;
      }
      buf[p++] = 13; buf[p++] = 10;
    }
    this._len = p;
  }

  // Encodes one command into this tick's batch (throws TypeError, leaving nothing queued);
  // the caller then pushes its resolve/reject pair.
  _enqueue(args, route) {
    const off = this._len;
    this._encode(args);
    if (route) {
      const segs = this._segs || (this._segs = []);
      if (this._count - this._segCount > 0) {
        segs.push(this._segOff, off - this._segOff, this._count - this._segCount, -1, 0, null);
      }
      segs.push(off, this._len - off, 1, route.kind, route.slot, route.node);
      this._segOff = this._len;
      this._segCount = this._count + 1;
    }
    this._count++;
    if (!this._scheduled) {
      this._scheduled = true;
      setImmediate(this._flushBound);
    }
  }

  _closedError() {
    return new ConnectionError(this._state === FAILED ? 'slotlane: the client failed to connect' : 'slotlane: the client is closed', 'closed');
  }

  // One command as a promise: TypeError thrown synchronously for bad arguments.
  _cmd(args, route) {
    if (this._state >= CLOSING) return Promise.reject(this._closedError());
    if (blocks(args)) return this._alone(args, route, null);
    this._enqueue(args, route);
    this._shp.push(null);
    return new Promise(this._executor);
  }

  // A typed method's command (commands.js): the reply is shaped by its type before it resolves.
  _typed(args, shape) {
    if (this._state >= CLOSING) return Promise.reject(this._closedError());
    if (blocks(args)) return this._alone(args, null, shape);
    this._enqueue(args, null);
    this._shp.push(shape);
    return new Promise(this._executor);
  }

  // A blocking command goes out in a batch of its own (the core runs it on a connection
  // leased for it and refuses it in a batch of several): what this tick queued before it
  // leaves first, and it leaves at once.
  _alone(args, route, shape) {
    if (this._count > 0 && this._h !== null) this._flush();
    if (this._count > 0) { // still connecting: the batch of this tick waits; so does this one
      this._enqueue(args, route);
      this._shp.push(shape);
      return new Promise(this._executor);
    }
    this._enqueue(args, route);
    this._shp.push(shape);
    const p = new Promise(this._executor);
    if (this._h !== null) this._aloneIdx = this._flush(); // _withSignal cancels by this slot
    return p;
  }

  _flush() {
    this._scheduled = false;
    if (this._count === 0 || this._state !== OPEN && this._state !== CLOSING) return;
    if (this._h === null) return; // still connecting: _connected flushes
    let segs = this._segs;
    if (segs !== null && this._count - this._segCount > 0) {
      segs.push(this._segOff, this._len - this._segOff, this._count - this._segCount, -1, 0, null);
    }
    const res = this._res, rej = this._rej, shp = this._shp;
    const idx = native.exec(this._h, this._buf, this._len, this._count, 0, segs === null ? undefined : segs);
    this._len = 0;
    this._count = 0;
    this._res = [];
    this._rej = [];
    this._shp = [];
    this._segs = null;
    this._segOff = 0;
    this._segCount = 0;
    if (idx < 0) {
      const err = errorFromCode(idx, `slotlane: ${native.strerror(idx)}: ${native.errmsg(this._h)}`);
      for (let i = 0; i < rej.length; i++) rej[i](err);
      return;
    }
    this._slotRes[idx] = res;
    this._slotRej[idx] = rej;
    this._slotShp[idx] = shp;
    this._inflight++;
    return idx;
  }

  // Commands with an AbortSignal go as a batch of their own (the tick's other commands are
  // sent first), so that aborting cancels that batch and nothing else: the core gives its
  // commands cancelled records and drops the replies still owed on the shared connection.
  // enqueue() queues the commands and returns their promise.
  async _withSignal(signal, enqueue) {
    if (signal.aborted) throw abortError(signal);
    if (this._h === null && this._state === CONNECTING) await this._ready;
    if (this._state >= CLOSING) throw this._closedError();
    this._flush();
    this._aloneIdx = undefined;
    const p = enqueue();
    let idx = this._flush();
    if (idx === undefined) idx = this._aloneIdx; // a blocking command: _alone sent it already
    if (idx === undefined || idx < 0) return p; // not sent: p is already rejected
    const h = this._h;
    const onAbort = () => native.cancel(h, idx);
    signal.addEventListener('abort', onAbort, { once: true });
    this._slotDone[idx] = () => signal.removeEventListener('abort', onAbort);
    try {
      return await p;
    } catch (e) {
      if (signal.aborted && e instanceof CancelledError) throw abortError(signal, e);
      throw e;
    }
  }

  // ---------------------------------------------------------------- decoding

  // Starts a batch of its own with start() (a native call answering its slot index or a
  // negative code) and resolves with decode(status, ncmds) of its completion, which reads
  // the records with _value(). A start may complete before it returns (a scan's last page
  // needs no round trip): _onReply keeps that completion in _early for this to replay.
  _startOwn(start, decode) {
    return new Promise((resolve, reject) => {
      const idx = start();
      if (idx < 0) {
        reject(errorFromCode(idx, `slotlane: ${native.strerror(idx)}: ${native.errmsg(this._h)}`));
        return;
      }
      this._inflight++;
      this._slotOwn[idx] = (status, ncmds) => {
        try {
          resolve(decode(status, ncmds));
        } catch (e) {
          reject(e);
        }
      };
      const early = this._early;
      if (early !== null && early[0] === idx) {
        this._early = null;
        this._onReply(...early);
      }
    });
  }

  // A scan's next page (scanIterator): its keys. Aborting signal cancels the page's batch
  // (between its steps too: the core takes the cancel at the next step's start).
  async _scanPage(h, id, signal) {
    const start = () => {
      const idx = native.scanNext(h, id);
      if (signal !== null && idx >= 0) {
        const onAbort = () => native.cancel(h, idx);
        signal.addEventListener('abort', onAbort, { once: true });
        this._slotDone[idx] = () => signal.removeEventListener('abort', onAbort);
      }
      return idx;
    };
    try {
      return await this._startOwn(start, (status) => {
        if (status !== 0) throw errorFromCode(status, `slotlane: ${native.scanErrmsg(h, id)}`);
        return this._value();
      });
    } catch (e) {
      if (signal !== null && signal.aborted && e instanceof CancelledError) throw abortError(signal, e);
      throw e;
    }
  }

  // Script.run: EVALSHA as a batch of its own, reloaded by the core on NOSCRIPT.
  async _runScript(script, args) {
    if (this._h === null && this._state === CONNECTING) await this._ready;
    if (this._state >= CLOSING) throw this._closedError();
    this._flush();
    const off = this._len;
    try {
      this._encode(args);
    } catch (e) {
      this._len = off;
      throw e;
    }
    const len = this._len - off;
    this._len = off;
    const h = this._h;
    return this._startOwn(() => native.scriptExec(h, off ? this._buf.subarray(off) : this._buf, len, script.body),
      (status, ncmds) => {
        if (ncmds !== 1) throw errorFromCode(status < 0 ? status : -5, `slotlane: EVALSHA failed (${native.strerror(status < 0 ? status : -5)})`);
        const o = 0;
        if (this._dv.getUint8(o) === T_ERROR) {
          this._pos++;
          throw errorFromRecord(this._dv.getUint8(o + 1), utf8Slice(this._data, this._off(o), this._off(o) + this._dv.getUint32(o + 4, true)));
        }
        return this._value();
      });
  }

  // Called by the addon once per finished batch (records and data copied into recs/data).
  _onReply(idx, status, nrecs, ncmds, recs, data) {
    const own = this._slotOwn[idx];
    if (own === undefined && this._slotRes[idx] === undefined) {
      this._early = [idx, status, nrecs, ncmds, recs, data]; // its start has not returned yet
      return;
    }
    if (own !== undefined) {
      this._slotOwn[idx] = undefined;
      const undo = this._slotDone[idx];
      if (undo !== undefined) {
        this._slotDone[idx] = undefined;
        undo();
      }
      this._inflight--;
      if (recs !== this._recs) {
        this._recs = recs;
        this._dv = new DataView(recs.buffer, recs.byteOffset, recs.byteLength);
      }
      this._data = data;
      this._pos = 0;
      own(status, ncmds);
      if (this._inflight === 0 && this._state === CLOSING) this._maybeFinishClose();
      return;
    }
    const res = this._slotRes[idx], rej = this._slotRej[idx], shp = this._slotShp[idx];
    this._slotRes[idx] = undefined;
    this._slotRej[idx] = undefined;
    this._slotShp[idx] = undefined;
    const done = this._slotDone[idx];
    if (done !== undefined) {
      this._slotDone[idx] = undefined;
      done();
    }
    this._inflight--;
    if (recs !== this._recs) {
      this._recs = recs;
      this._dv = new DataView(recs.buffer, recs.byteOffset, recs.byteLength);
    }
    this._data = data;
    const n = res.length;
    if (ncmds !== n) {
      const err = errorFromCode(status < 0 ? status : -5,
        `slotlane: the batch failed (${native.strerror(status < 0 ? status : -5)}; ${ncmds} replies for ${n} commands)`);
      for (let i = 0; i < n; i++) rej[i](err);
    } else {
      const dv = this._dv;
      this._pos = 0;
      for (let i = 0; i < n; i++) {
        const o = this._pos * REC;
        const type = dv.getUint8(o);
        if (type === T_ERROR) {
          this._pos++;
          rej[i](errorFromRecord(dv.getUint8(o + 1), utf8Slice(data, this._off(o), this._off(o) + dv.getUint32(o + 4, true))));
        } else {
          const v = this._value();
          const f = shp[i];
          if (f === null) {
            res[i](v);
          } else {
            let w;
            try {
              w = f(v);
            } catch (e) {
              rej[i](new ProtocolError(`slotlane: unexpected reply for the command's type: ${e.message}`, 'protocol'));
              continue;
            }
            res[i](w);
          }
        }
      }
    }
    if (this._inflight === 0 && this._state === CLOSING) this._maybeFinishClose();
  }

  _off(o) {
    const dv = this._dv;
    return dv.getUint32(o + 16, true) + dv.getUint32(o + 20, true) * 4294967296;
  }

  _str(o) {
    const start = this._off(o);
    const end = start + this._dv.getUint32(o + 4, true);
    if (this._returnBuffers) return Buffer.from(this._data.subarray(start, end));
    return utf8Slice(this._data, start, end);
  }

  _value() {
    const dv = this._dv;
    const o = this._pos * REC;
    this._pos++;
    switch (dv.getUint8(o)) {
      case T_STRING: return this._str(o);
      case T_STATUS: {
        const start = this._off(o);
        return utf8Slice(this._data, start, start + dv.getUint32(o + 4, true));
      }
      case T_INTEGER: {
        const hi = dv.getInt32(o + 12, true);
        if (hi >= -2097152 && hi < 2097152) return hi * 4294967296 + dv.getUint32(o + 8, true);
        return dv.getBigInt64(o + 8, true);
      }
      case T_NIL: return null;
      case T_ARRAY: case T_PUSH: {
        const len = dv.getUint32(o + 4, true);
        const a = new Array(len);
        for (let i = 0; i < len; i++) a[i] = this._value();
        return a;
      }
      case T_MAP: {
        const len = dv.getUint32(o + 4, true);
        const m = new Map();
        for (let i = 0; i < len; i += 2) {
          const k = this._value();
          m.set(k, this._value());
        }
        return m;
      }
      case T_SET: {
        const len = dv.getUint32(o + 4, true);
        const s = new Set();
        for (let i = 0; i < len; i++) s.add(this._value());
        return s;
      }
      case T_ERROR: {
        const start = this._off(o);
        return errorFromRecord(dv.getUint8(o + 1), utf8Slice(this._data, start, start + dv.getUint32(o + 4, true)));
      }
      case T_DOUBLE: return dv.getFloat64(o + 8, true);
      case T_BOOL: return dv.getUint32(o + 8, true) !== 0;
      case T_BIGNUM: {
        const start = this._off(o);
        return BigInt(utf8Slice(this._data, start, start + dv.getUint32(o + 4, true)));
      }
      case T_VERB: return this._str(o);
      default: throw new SlotlaneError(`slotlane: unknown reply record type ${dv.getUint8(o)}`, 'protocol');
    }
  }

  // ---------------------------------------------------------------- commands

  /**
   * Sends one command, e.g. sendCommand(['HSET', 'h', 'f', 'v']). Commands of one tick go to
   * the core as one batch. options.route: 'all-primaries', 'random', { node: 'host:port' } or
   * { slot }. options.signal: an AbortSignal; aborting cancels this command's batch only
   * (it is sent as a batch of its own) and rejects with a CancelledError whose cause is the
   * signal's reason. Resolves with the reply; rejects with a ReplyError (or another SlotlaneError).
   */
  sendCommand(args, options) {
    let route = null;
    let signal = null;
    if (options !== undefined) {
      if (options === null || typeof options !== 'object') {
        throw new TypeError(`slotlane: sendCommand options must be an object (got ${typeName(options)})`);
      }
      route = parseRoute(options.route);
      signal = checkSignal(options.signal);
    }
    if (signal !== null) {
      if (this._state < CLOSING) this._encodeCheck(args);
      return this._withSignal(signal, () => this._cmd(args, route));
    }
    return this._cmd(args, route);
  }

  // Throws the TypeError of a bad command now, leaving nothing queued.
  _encodeCheck(args) {
    const mark = this._len;
    try {
      this._encode(args);
    } finally {
      this._len = mark;
    }
  }

  /** An explicit pipeline: queue commands, then exec() sends them as one batch. */
  pipeline() {
    return new Pipeline(this);
  }

  /** Alias of pipeline() for code written for other clients: no MULTI is added. */
  batch() {
    return new Pipeline(this);
  }

  /** The core's counters: commands, moved, ask, tryagain, refreshes, connects, reconnects,
   * bytesWritten, bytesRead, nodes; failovers (promotions seen), refreshesMoved and
   * refreshesLost (refreshes by cause), retries (commands sent again after a lost
   * connection or a -LOADING/-MASTERDOWN/-READONLY/-UNBLOCKED), replicaReads (read-only
   * commands routed to a replica), nodesDown ('nodeDown' events). */
  stats() {
    if (this._h === null || this._state >= CLOSED) {
      throw new ConnectionError('slotlane: stats() needs an open client', 'closed');
    }
    const s = native.stats(this._h);
    return {
      commands: s[0], moved: s[1], ask: s[2], tryagain: s[3], refreshes: s[4],
      connects: s[5], reconnects: s[6], bytesWritten: s[7], bytesRead: s[8], nodes: s[9],
      failovers: s[10], refreshesMoved: s[11], refreshesLost: s[12], retries: s[13],
      replicaReads: s[14], nodesDown: s[15],
    };
  }

  /**
   * The current topology (nothing is sent): every primary, in the order of all-primaries
   * replies, with its slot ranges, then the replicas the slot map names. Each `addr` is a
   * `route: { node: addr }` target, so a per-node command is one loop.
   */
  nodes() {
    if (this._h === null || this._state >= CLOSED) {
      throw new ConnectionError('slotlane: nodes() needs an open client', 'closed');
    }
    const raw = native.nodes(this._h);
    return raw.map(([addr, primary, pi, r]) => {
      const slots = [];
      for (let k = 0; k < r.length; k += 2) slots.push([r[k], r[k + 1]]);
      return { addr, primary, primaryAddr: pi >= 0 && pi < raw.length ? raw[pi][0] : null, slots };
    });
  }

  /**
   * Every key of the cluster (every primary; in plain mode the one node), as an async
   * iterator: `for await (const key of client.scanIterator({ match, count, type }))`. The
   * core's cluster SCAN (sl_scan_*) tracks slots, not node cursors: a key that exists for
   * the whole iteration comes at least once, also across a reshard or failover (a key of a
   * moved slot may come twice). Pages are fetched one at a time, on the client's connections.
   * options.signal: an AbortSignal; aborting cancels the page in flight (its batch only) and
   * the iteration rejects with a CancelledError whose cause is the signal's reason.
   */
  async *scanIterator(options) {
    const o = scanOptions(options, true);
    if (o.signal !== null && o.signal.aborted) throw abortError(o.signal);
    if (this._h === null && this._state === CONNECTING) await this._ready;
    if (this._state >= CLOSING) throw this._closedError();
    const h = this._h;
    const id = native.scanNew(h, o.match, o.count, o.type);
    if (id < 0) throw errorFromCode(id, `slotlane: ${native.strerror(id)}: ${native.errmsg(h)}`);
    try {
      while (!native.scanDone(h, id)) {
        const keys = await this._scanPage(h, id, o.signal);
        for (let i = 0; i < keys.length; i++) yield keys[i];
      }
    } finally {
      native.scanFree(h, id);
    }
  }

  /** The fields of one hash as [field, value] pairs (HSCAN to its end; a field may come twice). */
  hscanIterator(key, options) {
    return cursorIterator((c) => this.hscan(key, c, scanOptions(options, false, 'HSCAN')));
  }

  /** The members of one set (SSCAN to its end; a member may come twice). */
  sscanIterator(key, options) {
    return cursorIterator((c) => this.sscan(key, c, scanOptions(options, false, 'SSCAN')));
  }

  /** The members of one sorted set as [member, score] pairs (ZSCAN to its end). */
  zscanIterator(key, options) {
    return cursorIterator((c) => this.zscan(key, c, scanOptions(options, false, 'ZSCAN')));
  }

  /**
   * A Lua script bound to this client: `script.run({ keys, args })` sends EVALSHA; a node
   * that answers NOSCRIPT gets the script (SCRIPT LOAD, on that node) and the command once
   * more, in the core (sl_script_exec_async). `script.sha` is its SHA1.
   */
  createScript(body) {
    return new Script(this, body);
  }

  /**
   * Closes the client: commands already issued are sent and answered first, later ones
   * reject with a ConnectionError. Resolves when the connections are closed.
   */
  close() {
    if (this._closeWaiters) return this._closeWaiters.promise;
    let resolve;
    const promise = new Promise((r) => { resolve = r; });
    this._closeWaiters = { promise, resolve };
    if (this._state === FAILED || this._state === CLOSED) {
      this._state = this._state === FAILED ? FAILED : CLOSED;
      resolve();
      return promise;
    }
    this._state = CLOSING;
    if (this._h !== null) {
      // send what this tick gathered now
      if (this._count > 0) this._flush();
      this._maybeFinishClose();
    }
    return promise;
  }

  /** Alias of close(). */
  quit() {
    return this.close();
  }

  /**
   * Closes at once: commands in flight reject with a ConnectionError (kind 'cancelled'),
   * commands not yet sent with kind 'closed'.
   */
  disconnect() {
    const p = this.close();
    this._failPending(new ConnectionError('slotlane: the client is closed', 'closed'));
    if (this._h !== null && this._state === CLOSING) {
      native.close(this._h); // in-flight batches complete now, with cancelled records
      this._state = CLOSED;
      this._finishClose();
    }
    return p;
  }

  _failPending(err) {
    const rej = this._rej;
    this._len = 0;
    this._count = 0;
    this._res = [];
    this._rej = [];
    this._shp = [];
    this._segs = null;
    this._segOff = 0;
    this._segCount = 0;
    for (let i = 0; i < rej.length; i++) rej[i](err);
  }

  _maybeFinishClose() {
    if (this._state !== CLOSING || this._inflight > 0 || this._count > 0) return;
    native.close(this._h);
    this._state = CLOSED;
    this._finishClose();
  }

  _finishClose() {
    if (this._closeWaiters) this._closeWaiters.resolve();
  }
}

// The function the addon calls with (sl_event_type, "host:port").
// Nothing after close() (the core reports the connections it closes then as lost).
function eventDispatcher(fn, client) {
  return (type, addr) => {
    if (client._state === CLOSING || client._state === CLOSED) return;
    try {
      fn(EVENT_NAMES[type] || `event${type}`, addr);
    } catch (e) {
      process.nextTick(() => { throw e; });
    }
  };
}

// The options of scanIterator (cluster: type allowed) and the one-key iterators: match as
// a Buffer (or null), count 0 for the server's default.
function scanOptions(options, cluster, what) {
  if (options === undefined || options === null) return cluster ? { match: null, count: 0, type: null, signal: null } : undefined;
  if (typeof options !== 'object') throw new TypeError(`slotlane: scan options must be an object (got ${typeName(options)})`);
  if (!cluster) return { match: options.match, count: options.count };
  const { match, count, type } = options;
  let m = null;
  if (match !== undefined && match !== null) {
    if (typeof match === 'string') m = Buffer.from(match, 'utf8');
    else if (match instanceof Uint8Array) m = Buffer.from(match);
    else throw new TypeError(`slotlane: scanIterator: match must be a string or a Buffer (got ${typeName(match)})`);
  }
  let c = 0;
  if (count !== undefined && count !== null) {
    if (!Number.isInteger(count) || count <= 0 || count > 0x7fffffff) {
      throw new RangeError(`slotlane: scanIterator: count must be a positive integer (got ${String(count)})`);
    }
    c = count;
  }
  let t = null;
  if (type !== undefined && type !== null) {
    if (typeof type !== 'string' || type.includes('\0')) throw new TypeError(`slotlane: scanIterator: type must be a string (got ${typeName(type)})`);
    t = type;
  }
  return { match: m, count: c, type: t, signal: checkSignal(options.signal) };
}

// One key's *SCAN from cursor 0 until the server answers cursor 0 again.
// (The reply's cursor is a string: 64-bit; it goes back as a BigInt.)
async function* cursorIterator(page) {
  let cursor = '0';
  do {
    const [next, items] = await page(BigInt(cursor));
    for (let i = 0; i < items.length; i++) yield items[i];
    cursor = next;
  } while (cursor !== '0');
}

/** A Lua script bound to a client (Client.createScript). */
class Script {
  constructor(client, body) {
    if (typeof body === 'string') this.body = Buffer.from(body, 'utf8');
    else if (body instanceof Uint8Array) this.body = Buffer.from(body);
    else throw new TypeError(`slotlane: a script body must be a string or a Buffer (got ${typeName(body)})`);
    this.client = client;
    this.sha = crypto.createHash('sha1').update(this.body).digest('hex');
  }

  /** EVALSHA (EVALSHA_RO with readonly) with keys and args; NOSCRIPT loads it on that node and retries once. */
  run(options) {
    const o = options === undefined || options === null ? {} : options;
    if (typeof o !== 'object') return Promise.reject(new TypeError(`slotlane: Script.run options must be an object (got ${typeName(o)})`));
    const keys = o.keys === undefined || o.keys === null ? [] : o.keys;
    const args = o.args === undefined || o.args === null ? [] : o.args;
    if (!Array.isArray(keys) || !Array.isArray(args)) return Promise.reject(new TypeError('slotlane: Script.run: keys and args must be arrays'));
    return this.client._runScript(this, [o.readonly ? 'EVALSHA_RO' : 'EVALSHA', this.sha, keys.length, ...keys, ...args]);
  }
}

// Whether a command blocks, as the core classifies it (sl_command_blocking: the BLPOP
// family, WAIT, XREAD/XREADGROUP with BLOCK before STREAMS): such a command goes out alone
// (the core runs it on a connection leased for it and refuses it in a pipeline). The core
// is asked once per command name and its answer cached, except for the names whose answer
// depends on their other arguments (the core says which: XREAD, XREADGROUP, WAIT), asked
// per call. A command with no argument never blocks (the core's rule), and is not asked.
const blockingByName = new Map();
const BLOCKING_CACHE_MAX = 1024; // names sent with sendCommand are the caller's: bounded
function blocks(args) {
  if (!Array.isArray(args) || args.length < 2) return false; // (the encoder refuses a non-array)
  const name = args[0];
  const str = typeof name === 'string';
  if (!str && !(name instanceof Uint8Array)) return false; // the encoder refuses it
  if (str) { // by the name as given ('get' and 'GET' are two entries: the core decides, not a JS toUpperCase)
    const known = blockingByName.get(name);
    if (known !== undefined) return known;
  }
  const [r, byArgs] = native.commandBlocking(args);
  if (r < 0) return false; // an argument the encoder refuses next
  const b = r === 1;
  if (str && byArgs === 0 && blockingByName.size < BLOCKING_CACHE_MAX) blockingByName.set(name, b);
  return b;
}

class Pipeline {
  constructor(client) {
    this._client = client;
    this._cmds = [];
    this._routes = [];
    this._shps = [];
  }

  // A typed method's command (commands.js): queued with its reply type's shaper.
  _typed(args, shape) {
    this._cmds.push(args);
    this._routes.push(null);
    this._shps.push(shape);
    return this;
  }

  /** Queues a command given as an array of arguments; returns the pipeline. */
  sendCommand(args, options) {
    let route = null;
    if (options !== undefined) {
      if (options === null || typeof options !== 'object') {
        throw new TypeError(`slotlane: sendCommand options must be an object (got ${typeName(options)})`);
      }
      route = parseRoute(options.route);
    }
    if (!Array.isArray(args)) throw new TypeError(`slotlane: a command must be an array of arguments (got ${typeName(args)})`);
    this._cmds.push(args);
    this._routes.push(route);
    this._shps.push(null);
    return this;
  }

  /** Commands queued. */
  get length() { return this._cmds.length; }

  /**
   * Sends the queued commands as one batch (with the rest of this tick's commands) and
   * resolves with one [error, value] pair per command, in order: error is null or the
   * command's SlotlaneError. Throws TypeError (nothing sent) when an argument is bad.
   * options.signal: an AbortSignal; aborting cancels this pipeline's batch only (it is sent
   * as a batch of its own): its unanswered commands get CancelledErrors.
   */
  exec(options) {
    let signal = null;
    if (options !== undefined) {
      if (options === null || typeof options !== 'object') {
        throw new TypeError(`slotlane: exec options must be an object (got ${typeName(options)})`);
      }
      signal = checkSignal(options.signal);
    }
    const cmds = this._cmds, routes = this._routes, shps = this._shps;
    this._cmds = [];
    this._routes = [];
    this._shps = [];
    const n = cmds.length;
    if (n === 0) return Promise.resolve([]);
    const client = this._client;
    // validate every command first: a TypeError leaves nothing queued
    for (let i = 0; i < n; i++) client._encodeCheck(cmds[i]);
    if (client._state >= CLOSING) return Promise.reject(client._closedError());
    if (signal !== null) return client._withSignal(signal, () => queue(client, cmds, routes, shps));
    return queue(client, cmds, routes, shps);
  }
}

// A pipeline's commands into the client's current batch: one promise of [error, value] pairs.
function queue(client, cmds, routes, shps) {
    const n = cmds.length;
    return new Promise((resolve) => {
      const out = new Array(n);
      let left = n;
      for (let i = 0; i < n; i++) {
        client._enqueue(cmds[i], routes[i]);
        client._shp.push(shps[i]);
        client._res.push((v) => { out[i] = [null, v]; if (--left === 0) resolve(out); });
        client._rej.push((e) => { out[i] = [e, null]; if (--left === 0) resolve(out); });
      }
    });
}

function checkSignal(signal) {
  if (signal === undefined || signal === null) return null;
  if (typeof signal !== 'object' || typeof signal.addEventListener !== 'function' || typeof signal.aborted !== 'boolean') {
    throw new TypeError(`slotlane: options.signal must be an AbortSignal (got ${typeName(signal)})`);
  }
  return signal;
}

// What an aborted call rejects with: a CancelledError (the core's, when the batch was
// cancelled in flight) whose cause is the signal's reason.
function abortError(signal, coreError) {
  const e = coreError || new CancelledError('slotlane: the call was aborted before it was sent', 'cancelled');
  if (e.cause === undefined) Object.defineProperty(e, 'cause', { value: signal.reason, configurable: true, writable: true });
  return e;
}

// The typed methods of every command of the spec (bindings/spec/, rendered into commands.js):
// client.get(key) -> Promise<string | null>, client.set(key, value, { ex: 60 }) -> Promise<boolean>,
// ... and the same on pipelines (queue and return the pipeline).
commands.install(Client, Pipeline);

/**
 * Creates a client and starts connecting (in the background: discovery of a cluster runs on
 * a worker thread). Commands issued before the connection is up are queued.
 * options: a URL string or { url | host/port, cluster, username, password, db, resp,
 * connectTimeout, commandTimeout, maxRedirects, returnBuffers, tls, readFrom, retryWrites,
 * onEvent }. readFrom (a cluster's read-only commands): 'primary' (default),
 * 'preferReplica' (a replica of the slot's primary, the primary when none answers) or
 * 'replicas' (round-robin over the replicas); a replica's data may lag its primary's.
 * retryWrites: a write whose connection broke after it was sent is sent once more (it may
 * then run twice); default false: it fails with a ConnectionError. onEvent(event, addr):
 * 'topologyChanged', 'nodeDown', 'nodeUp' or 'failover' and the node's "host:port".
 * tls (as ioredis):
 * { ca, cert, key, servername, rejectUnauthorized } or true; "rediss://" alone uses the
 * system's CAs.
 */
function createClient(options) {
  return new Client(options);
}

/** The cluster slot of a key (CRC16 with {hash tags}, mod 16384), computed by the core. */
function keySlot(key) {
  if (typeof key === 'string') key = Buffer.from(key);
  else if (!(key instanceof Uint8Array)) throw new TypeError(`slotlane: keySlot needs a string or a Buffer (got ${typeName(key)})`);
  else if (!Buffer.isBuffer(key)) key = Buffer.from(key.buffer, key.byteOffset, key.byteLength);
  return native.keySlot(key);
}

const version = native.version();

module.exports = {
  createClient, Client, Pipeline, Script, PubSub, keySlot, version, METHODS: commands.METHODS,
  SlotlaneError, ReplyError, ConnectionError, ProtocolError,
  TimeoutError: errors.TimeoutError, ClusterError: errors.ClusterError,
  CancelledError: errors.CancelledError, ArgumentError: errors.ArgumentError,
  ResourceError: errors.ResourceError, TlsError: errors.TlsError,
};
