// TypeScript declarations of the whole public API of slotlane (lib/index.js, lib/errors.js).

/// <reference types="node" />

import { EventEmitter } from 'events';

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
  /** TLS, as ioredis (true: the defaults; "rediss://" alone uses the system's CAs). */
  tls?: boolean | TlsOptions;
  /**
   * Where a cluster's read-only commands go: 'primary' (default), 'preferReplica' (a
   * replica of the slot's primary, the primary when none answers) or 'replicas'
   * (round-robin over the primary's replicas). A replica's data may lag its primary's.
   */
  readFrom?: ReadFrom;
  /**
   * A write whose connection broke after it was sent is sent once more: it may then run
   * twice (an INCR counted twice). Default false: it rejects with a ConnectionError whose
   * message ends "(the command was sent: it may have been executed)".
   */
  retryWrites?: boolean;
  /**
   * Called with each topology event of the core and the node's "host:port", on the main
   * thread after the core has returned (it may use the client); the connect's (its
   * discovery is a 'topologyChanged') before connect() settles, none after close(). What it
   * throws is an uncaught exception, as from an event listener.
   */
  onEvent?: (event: ClientEvent, addr: string) => void;
}

/** ClientOptions.readFrom. */
export type ReadFrom = 'primary' | 'preferReplica' | 'replicas';

/**
 * ClientOptions.onEvent's events: a refresh changed the slot map or the replicas (addr:
 * the node that answered it); a working connection to addr broke, or a connect to a node
 * that had worked failed (once per outage); addr, reported down, connected again; addr, a
 * replica, owns a slot of its primary now (once per promotion).
 */
export type ClientEvent = 'topologyChanged' | 'nodeDown' | 'nodeUp' | 'failover';

/** PEM text (a string or a Buffer). */
export type Pem = string | Buffer;

export interface TlsOptions {
  /** Trusted CAs (none: the system's). */
  ca?: Pem | Pem[];
  /** Client certificate chain and its unencrypted key (mutual TLS): both or neither. */
  cert?: Pem;
  key?: Pem;
  /** The name the seeds' certificates are verified against and sent as SNI, instead of their address. */
  servername?: string;
  /** false verifies nothing: whoever is on the path can read and change the traffic (default true). */
  rejectUnauthorized?: boolean;
}

export interface SendOptions {
  route?: Route;
  /** Aborting cancels this command's batch only (sent as a batch of its own); the call
   * rejects with a CancelledError whose cause is the signal's reason. */
  signal?: AbortSignal;
}

/** Options of Pipeline.exec. */
export interface ExecOptions {
  /** Aborting cancels this pipeline's batch only: its unanswered commands get CancelledErrors. */
  signal?: AbortSignal;
}

/** The core's counters (sl_stats). */
/** One node of the client's current topology (Client.nodes()). */
export interface ClusterNode {
  /** "host:port": a `route` target. */
  addr: string;
  /** A primary (serves slots), else a replica. */
  primary: boolean;
  /** A replica's primary; null for a primary. */
  primaryAddr: string | null;
  /** The slot ranges served, [first, last] inclusive ([] for a replica). */
  slots: Array<[number, number]>;
}

/** scanIterator's options: a MATCH pattern, a COUNT hint per SCAN call, a TYPE filter. */
export interface ScanOptions {
  match?: string | Buffer | Uint8Array;
  /** A positive integer; absent: the server's default (10). */
  count?: number;
  /** 'string', 'hash', 'list', 'set', 'zset', 'stream'... */
  type?: string;
  /** Aborting cancels the page in flight; the iteration rejects with a CancelledError. */
  signal?: AbortSignal;
}

/** The options of hscanIterator/sscanIterator/zscanIterator (no TYPE: one key). */
export interface KeyScanOptions {
  match?: Value;
  count?: Int;
}

/** A Lua script bound to a client (Client.createScript). */
export class Script<S extends string | Buffer = string> {
  private constructor();
  /** The script's body as sent by SCRIPT LOAD. */
  readonly body: Buffer;
  /** Its SHA1 (40 lowercase hex digits): what EVALSHA names. */
  readonly sha: string;
  /** EVALSHA (EVALSHA_RO with readonly); NOSCRIPT loads the script on that node and retries once. */
  run(options?: { keys?: ReadonlyArray<Key>; args?: ReadonlyArray<Value>; readonly?: boolean }): Promise<Reply>;
}

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
  /** Promotions seen ('failover' events). */
  failovers: number;
  /** Refreshes asked for by a MOVED, CLUSTERDOWN, READONLY... */
  refreshesMoved: number;
  /** Refreshes asked for by a lost node. */
  refreshesLost: number;
  /** Commands sent again after a lost connection or a -LOADING, -MASTERDOWN, -READONLY, -UNBLOCKED reply. */
  retries: number;
  /** Read-only commands routed to a replica. */
  replicaReads: number;
  /** 'nodeDown' events. */
  nodesDown: number;
}

import type { ClientCommands, PipelineCommands, Key, Value, Int } from './commands';
export type { ClientCommands, PipelineCommands, Key, Value, Int } from './commands';

/** Client<string> by default; Client<Buffer> with returnBuffers: true (bulk strings as Buffers). */
export interface Client<S extends string | Buffer = string> extends ClientCommands<S> {}
export class Client<S extends string | Buffer = string> {
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
  pipeline(): Pipeline<S>;
  /** A subscriber on connections of its own (connects in the background). */
  pubsub(options?: PubSubOptions): PubSub<S>;
  /** Alias of pipeline() (no MULTI is added). */
  batch(): Pipeline<S>;
  /** The core's counters. Throws ConnectionError when not connected or closed. */
  stats(): Stats;
  /** The current topology (nothing is sent): primaries with their slot ranges, then replicas. */
  nodes(): ClusterNode[];
  /** Every key of the cluster (every primary), at least once across reshards and failovers. */
  scanIterator(options?: ScanOptions): AsyncGenerator<S, void, undefined>;
  /** One hash's [field, value] pairs (HSCAN to its end). */
  hscanIterator(key: Key, options?: KeyScanOptions): AsyncGenerator<[S, S], void, undefined>;
  /** One set's members (SSCAN to its end). */
  sscanIterator(key: Key, options?: KeyScanOptions): AsyncGenerator<S, void, undefined>;
  /** One sorted set's [member, score] pairs (ZSCAN to its end). */
  zscanIterator(key: Key, options?: KeyScanOptions): AsyncGenerator<[S, number], void, undefined>;
  /** A Lua script bound to this client (EVALSHA, reloaded on NOSCRIPT by the core). */
  createScript(body: string | Buffer | Uint8Array): Script<S>;
  /** Sends and answers what was issued, refuses later commands, closes the connections. */
  close(): Promise<void>;
  /** Alias of close(). */
  quit(): Promise<void>;
  /** Closes at once: commands in flight reject with CancelledError (kind 'cancelled'). */
  disconnect(): Promise<void>;
}

export interface PubSubOptions {
  /** Bytes queued in the core before the newest messages are dropped (an 'overflow' event
   * says how many). Default 64 MiB. */
  maxQueueBytes?: number;
  /** Milliseconds of silence before a health-check PING (unanswered: 'connectionLost').
   * Default 30000; 0: never. */
  healthCheckInterval?: number;
}

/** One record of the subscriber, shaped as redis-py's messages. */
export type PubSubMessage<S extends string | Buffer = string> =
  | { type: 'message' | 'smessage'; pattern: null; channel: S; data: S }
  | { type: 'pmessage'; pattern: S; channel: S; data: S }
  | { type: 'subscribe' | 'psubscribe' | 'ssubscribe' | 'unsubscribe' | 'punsubscribe' | 'sunsubscribe';
      pattern: null; channel: S; data: number }
  | { type: 'resubscribed'; pattern: null; channel: S; data: 'subscribe' | 'psubscribe' | 'ssubscribe' }
  | { type: 'overflow'; pattern: null; channel: null; data: number }
  | { type: 'connectionLost' | 'subscriptionError'; pattern: null; channel: null; data: string };

export interface PubSubStats {
  messages: number; dropped: number; connectionLosses: number; resubscribed: number; pings: number;
  refreshes: number; confirmed: number; queuedBytes: number; bytesRead: number;
}

/** client.pubsub(): the core keeps the subscriptions across lost connections, failovers and
 * slot moves; 'resubscribed' marks the end of a gap (messages of the gap were missed). */
export class PubSub<S extends string | Buffer = string> extends EventEmitter {
  readonly channels: Set<string>;
  readonly patterns: Set<string>;
  readonly shardChannels: Set<string>;
  connect(): Promise<this>;
  /** Resolve with the server's subscription count once confirmed. */
  subscribe(...channels: Array<string | Buffer | Array<string | Buffer>>): Promise<number>;
  psubscribe(...patterns: Array<string | Buffer | Array<string | Buffer>>): Promise<number>;
  ssubscribe(...channels: Array<string | Buffer | Array<string | Buffer>>): Promise<number>;
  /** None: every one of the kind. */
  unsubscribe(...channels: Array<string | Buffer>): Promise<number>;
  punsubscribe(...patterns: Array<string | Buffer>): Promise<number>;
  sunsubscribe(...channels: Array<string | Buffer>): Promise<number>;
  stats(): PubSubStats;
  close(): void;
  quit(): Promise<'OK'>;
  /** Every record from the call on; one iterator at a time. */
  [Symbol.asyncIterator](): AsyncIterator<PubSubMessage<S>>;
  on(event: 'message' | 'smessage', listener: (channel: S, message: S) => void): this;
  on(event: 'pmessage', listener: (pattern: S, channel: S, message: S) => void): this;
  on(event: 'subscribe' | 'psubscribe' | 'ssubscribe' | 'unsubscribe' | 'punsubscribe' | 'sunsubscribe',
     listener: (channel: S, count: number) => void): this;
  on(event: 'resubscribed', listener: (channel: S, kind: 'subscribe' | 'psubscribe' | 'ssubscribe') => void): this;
  on(event: 'overflow', listener: (dropped: number) => void): this;
  on(event: 'connectionLost' | 'subscriptionError', listener: (reason: string) => void): this;
}

export interface Pipeline<S extends string | Buffer = string> extends PipelineCommands<S> {}
export class Pipeline<S extends string | Buffer = string> {
  private constructor();
  /** Queues one command; returns the pipeline. */
  sendCommand(args: Arg[], options?: SendOptions): this;
  /** Commands queued. */
  readonly length: number;
  /** Sends the queued commands as one batch; one [error, value] pair per command, in order
   * (a typed method's value shaped by its reply type, as the client's method resolves it). */
  exec(options?: ExecOptions): Promise<Array<[SlotlaneError, null] | [null, unknown]>>;
}

/** Creates a client and starts connecting in the background. */
export function createClient(options: ClientOptions & { returnBuffers: true }): Client<Buffer>;
export function createClient(options?: (ClientOptions & { returnBuffers?: false }) | string): Client<string>;

/** The cluster slot of a key (CRC16 with {hash tags}, mod 16384). */
export function keySlot(key: string | Buffer | Uint8Array): number;

/** libslotlane's version. */
export const version: string;

/** The spec's method names (bindings/spec/commands.json) -> the JavaScript method names. */
export const METHODS: Readonly<Record<string, string>>;

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
/** The node sent bytes that are not RESP, or a reply exceeded a limit (or did not fit its type). */
export class ProtocolError extends ConnectionError {}
/** The call was cancelled (disconnect() while it ran): the same in every language. */
export class CancelledError extends SlotlaneError {}
/** The core refused an argument or option before sending anything. */
export class ArgumentError extends SlotlaneError {}
/** TLS failed: verification (chain, name, dates), the handshake, a refused client certificate, an unreadable PEM. */
export class TlsError extends ConnectionError {}
/** Out of memory, a feature this build lacks, a call invalid in the handle's state. */
export class ResourceError extends SlotlaneError {}
