// TypeScript declarations of the whole public API of slotlane (lib/index.js, lib/errors.js).

/// <reference types="node" />

/** An argument of a command: strings are sent as UTF-8, numbers and bigints as decimal text. */
export type Arg = string | number | bigint | Buffer | Uint8Array;

/**
 * A decoded reply: bulk and simple strings (Buffers for bulk strings with returnBuffers),
 * integers (a bigint beyond ±2^53), null, arrays, RESP3 maps (Map), sets (Set), doubles
 * (number), booleans, big numbers (bigint), verbatim strings (their text), and the error
 * of one element inside an aggregate (a SlotlaneError value, not thrown).
 */
export type Reply =
  | string
  | Buffer
  | number
  | bigint
  | boolean
  | null
  | Reply[]
  | Map<Reply, Reply>
  | Set<Reply>
  | SlotlaneError;

/** Where a command goes instead of the owner of its key. */
export type Route = 'all-primaries' | 'random' | { node: string } | { slot: number };

export interface ClientOptions {
  /** "redis://[user:password@]host:port[/db]", "host:port", or seeds "h1:p1,h2:p2". Not with host/port. */
  url?: string;
  /** Default 127.0.0.1 when port is given. */
  host?: string;
  /** Default 6379 when host is given. */
  port?: number;
  /** true: cluster (discover the slot map, route by key); false: one node; absent: ask the server. */
  cluster?: boolean;
  username?: string;
  password?: string;
  /** SELECT in plain mode. */
  db?: number;
  /** RESP version: 2 (default) or 3. */
  resp?: 2 | 3;
  /** Per connection attempt, ms (default 2000). */
  connectTimeout?: number;
  /** Deadline of one batch, ms (default 5000; 0: none). */
  commandTimeout?: number;
  /** Per command (default 5). */
  maxRedirects?: number;
  /** Bulk strings as Buffers instead of UTF-8 strings (default false). */
  returnBuffers?: boolean;
}

export interface SendOptions {
  route?: Route;
}

/** The core's counters (sl_stats). */
export interface Stats {
  commands: number;
  moved: number;
  ask: number;
  tryagain: number;
  refreshes: number;
  connects: number;
  reconnects: number;
  bytesWritten: number;
  bytesRead: number;
  nodes: number;
}

/** The command helpers, shared by Client (each returns a Promise) and Pipeline (each queues). */
interface Commands<R> {
  append(key: Arg, value: Arg): R;
  bitcount(key: Arg, ...args: Arg[]): R;
  blpop(...args: Arg[]): R;
  brpop(...args: Arg[]): R;
  copy(source: Arg, destination: Arg, ...args: Arg[]): R;
  dbsize(): R;
  decr(key: Arg): R;
  decrby(key: Arg, decrement: Arg): R;
  del(...keys: Arg[]): R;
  echo(message: Arg): R;
  eval(script: Arg, numkeys: Arg, ...args: Arg[]): R;
  evalsha(sha1: Arg, numkeys: Arg, ...args: Arg[]): R;
  exists(...keys: Arg[]): R;
  expire(key: Arg, seconds: Arg, ...args: Arg[]): R;
  expireat(key: Arg, timestamp: Arg, ...args: Arg[]): R;
  flushall(...args: Arg[]): R;
  flushdb(...args: Arg[]): R;
  get(key: Arg): R;
  getdel(key: Arg): R;
  getex(key: Arg, ...args: Arg[]): R;
  getrange(key: Arg, start: Arg, end: Arg): R;
  getset(key: Arg, value: Arg): R;
  hdel(key: Arg, ...fields: Arg[]): R;
  hexists(key: Arg, field: Arg): R;
  hget(key: Arg, field: Arg): R;
  hgetall(key: Arg): R;
  hincrby(key: Arg, field: Arg, increment: Arg): R;
  hkeys(key: Arg): R;
  hlen(key: Arg): R;
  hmget(key: Arg, ...fields: Arg[]): R;
  hset(key: Arg, ...fieldsAndValues: Arg[]): R;
  hsetnx(key: Arg, field: Arg, value: Arg): R;
  hvals(key: Arg): R;
  incr(key: Arg): R;
  incrby(key: Arg, increment: Arg): R;
  incrbyfloat(key: Arg, increment: Arg): R;
  info(...sections: Arg[]): R;
  keys(pattern: Arg): R;
  lindex(key: Arg, index: Arg): R;
  llen(key: Arg): R;
  lmove(source: Arg, destination: Arg, from: Arg, to: Arg): R;
  lpop(key: Arg, ...args: Arg[]): R;
  lpush(key: Arg, ...elements: Arg[]): R;
  lrange(key: Arg, start: Arg, stop: Arg): R;
  lrem(key: Arg, count: Arg, element: Arg): R;
  lset(key: Arg, index: Arg, element: Arg): R;
  ltrim(key: Arg, start: Arg, stop: Arg): R;
  mget(...keys: Arg[]): R;
  mset(...keysAndValues: Arg[]): R;
  msetnx(...keysAndValues: Arg[]): R;
  persist(key: Arg): R;
  pexpire(key: Arg, milliseconds: Arg, ...args: Arg[]): R;
  ping(...args: Arg[]): R;
  pttl(key: Arg): R;
  rename(key: Arg, newkey: Arg): R;
  rpop(key: Arg, ...args: Arg[]): R;
  rpush(key: Arg, ...elements: Arg[]): R;
  sadd(key: Arg, ...members: Arg[]): R;
  scan(cursor: Arg, ...args: Arg[]): R;
  scard(key: Arg): R;
  sdiff(...keys: Arg[]): R;
  set(key: Arg, value: Arg, ...options: Arg[]): R;
  setex(key: Arg, seconds: Arg, value: Arg): R;
  setnx(key: Arg, value: Arg): R;
  sinter(...keys: Arg[]): R;
  sismember(key: Arg, member: Arg): R;
  smembers(key: Arg): R;
  spop(key: Arg, ...args: Arg[]): R;
  srem(key: Arg, ...members: Arg[]): R;
  strlen(key: Arg): R;
  sunion(...keys: Arg[]): R;
  time(): R;
  touch(...keys: Arg[]): R;
  ttl(key: Arg): R;
  type(key: Arg): R;
  unlink(...keys: Arg[]): R;
  zadd(key: Arg, ...args: Arg[]): R;
  zcard(key: Arg): R;
  zincrby(key: Arg, increment: Arg, member: Arg): R;
  zrange(key: Arg, start: Arg, stop: Arg, ...args: Arg[]): R;
  zrangebyscore(key: Arg, min: Arg, max: Arg, ...args: Arg[]): R;
  zrank(key: Arg, member: Arg): R;
  zrem(key: Arg, ...members: Arg[]): R;
  zscore(key: Arg, member: Arg): R;
}

export interface Client extends Commands<Promise<Reply>> {}
export class Client {
  constructor(options?: ClientOptions | string);
  /** Resolves with the client once connected (slot map known); rejects with the connect error. */
  connect(): Promise<this>;
  /** 'plain' or 'cluster' once connected, else null. */
  readonly mode: 'plain' | 'cluster' | null;
  /** true between a successful connect and close(). */
  readonly isOpen: boolean;
  /** One command; commands of one tick go to the core as one batch. Throws TypeError on bad arguments. */
  sendCommand(args: Arg[], options?: SendOptions): Promise<Reply>;
  /** An explicit pipeline. */
  pipeline(): Pipeline;
  /** Alias of pipeline() (no MULTI is added). */
  batch(): Pipeline;
  /** The core's counters. Throws ConnectionError when not connected or closed. */
  stats(): Stats;
  /** Sends and answers what was issued, refuses later commands, closes the connections. */
  close(): Promise<void>;
  /** Alias of close(). */
  quit(): Promise<void>;
  /** Closes at once: commands in flight reject with ConnectionError (kind 'cancelled'). */
  disconnect(): Promise<void>;
}

export interface Pipeline extends Commands<Pipeline> {}
export class Pipeline {
  private constructor();
  /** Queues one command; returns the pipeline. */
  sendCommand(args: Arg[], options?: SendOptions): this;
  /** Commands queued. */
  readonly length: number;
  /** Sends the queued commands as one batch; one [error, value] pair per command, in order. */
  exec(): Promise<Array<[SlotlaneError, null] | [null, Reply]>>;
}

/** Creates a client and starts connecting in the background. */
export function createClient(options?: ClientOptions | string): Client;

/** The cluster slot of a key (CRC16 with {hash tags}, mod 16384). */
export function keySlot(key: string | Buffer | Uint8Array): number;

/** libslotlane's version. */
export const version: string;

/** The names of the command helpers. */
export const COMMANDS: readonly string[];

export type ErrorKind =
  | 'server' | 'io' | 'timeout' | 'redirects' | 'protocol' | 'cancelled' | 'cluster' | 'argument'
  | 'closed' | 'nomem' | 'unsupported' | 'state' | 'toosmall' | 'unknown';

export class SlotlaneError extends Error {
  constructor(message: string, kind?: ErrorKind);
  /** Which of the core's error kinds it came from ('closed': the client was closed). */
  readonly kind: ErrorKind;
}
/** The server's error reply; code is its first word (WRONGTYPE, ERR, MOVED...). */
export class ReplyError extends SlotlaneError {
  readonly code: string;
}
/** Connecting, writing or reading failed; the client is closed; a protocol error. */
export class ConnectionError extends SlotlaneError {}
/** The deadline passed before the reply. */
export class TimeoutError extends SlotlaneError {}
/** Discovery failed, no node for the slot, too many redirects, CROSSSLOT refused. */
export class ClusterError extends SlotlaneError {}
