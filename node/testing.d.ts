// Types of require('slotlane/testing') (lib/testing.js): the embedded slotlane-server.
export interface ServerOptions {
  /** 1..256; default 4 */
  shards?: number;
  /** 'per-shard' (default): shard i on its own port; 'one-port': every shard on one port */
  portMode?: 'per-shard' | 'one-port';
  /** per-shard mode, a key of another shard: '-MOVED' (default) or forwarded */
  misrouted?: 'moved' | 'forward';
  durability?: 'memory' | 'everysec' | 'always';
  /** the logs' directory (durability) */
  dir?: string;
  /** default '127.0.0.1' */
  bind?: string;
  /** 0 (default): ports chosen by the kernel; else the base port */
  port?: number;
  logLevel?: 'debug' | 'verbose' | 'notice' | 'warning' | 'none';
  /** other flags of the slotlane-server executable: { maxclients: 100 } */
  settings?: Record<string, string | number>;
}

export interface TestServer {
  /** redis://127.0.0.1:PORT of shard 0 (a cluster client discovers the others) */
  readonly url: string;
  /** each shard's port (all the same in one-port mode) */
  readonly ports: number[];
  /** stops every shard and waits; connected clients get errors, not hangs */
  stop(): void;
}

export function startServer(options?: ServerOptions): TestServer;
