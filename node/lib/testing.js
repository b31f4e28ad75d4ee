'use strict';
// slotlane/testing: the bundled slotlane-server inside the test process (the addon
// slotlane_server.node, built with the package from the server's sources): a real sharded
// cluster on loopback for an application's own tests.
//
//   const { startServer } = require('slotlane/testing');
//   const srv = startServer({ shards: 4 });   // ephemeral ports
//   const client = new Client(srv.url);       // slots, MOVED, discovery as in production
//   ...
//   srv.stop();                                // every connection closed, threads joined
//
// The server runs on threads of its own (its own libuv loops), never on Node's loop.

function addon() {
  for (const p of ['../build/Release/slotlane_server.node', '../build/Debug/slotlane_server.node']) {
    try {
      return require(p);
    } catch (e) {
      if (e.code !== 'MODULE_NOT_FOUND') throw e;
    }
  }
  throw new Error('slotlane/testing: slotlane_server.node is not built (node-gyp rebuild in the package)');
}

const PORT_MODES = { 'per-shard': 0, 'one-port': 1 };
const MISROUTED = { moved: 0, forward: 1 };
const DURABILITY = { memory: 0, everysec: 1, always: 2 };
const LOG_LEVELS = { debug: 0, verbose: 1, notice: 2, warning: 3, none: 4 };

function pick(table, name, value, def) {
  if (value === undefined) return table[def];
  if (!(value in table)) throw new TypeError(`slotlane/testing: ${name} must be one of ${Object.keys(table).join(', ')}`);
  return table[value];
}

/**
 * Starts a server: { shards = 4, portMode = 'per-shard'|'one-port', misrouted =
 * 'moved'|'forward', durability = 'memory'|'everysec'|'always', dir, bind = '127.0.0.1',
 * port = 0 (ephemeral), logLevel = 'warning', settings = { maxclients: 100, ... } } (other
 * flags of the slotlane-server executable). Returns { url, ports, stop() }; throws when it
 * cannot start (a bad option, a busy port, a directory in use).
 */
function startServer(options = {}) {
  const settings = [];
  for (const [k, v] of Object.entries(options.settings || {})) settings.push(k, String(v));
  const s = addon().start({
    shards: options.shards === undefined ? 4 : options.shards,
    portMode: pick(PORT_MODES, 'portMode', options.portMode, 'per-shard'),
    misrouted: pick(MISROUTED, 'misrouted', options.misrouted, 'moved'),
    durability: pick(DURABILITY, 'durability', options.durability, 'memory'),
    logLevel: pick(LOG_LEVELS, 'logLevel', options.logLevel, 'warning'),
    dir: options.dir,
    bind: options.bind,
    port: options.port || 0,
    settings,
  });
  let stopped = false;
  return {
    url: s.url,
    ports: s.ports,
    stop() {
      if (stopped) return;
      stopped = true;
      addon().stop(s.handle);
    },
  };
}

module.exports = { startServer };
