'use strict';
// The bundled slotlane-server in a process of its own, through the package's own helper
// (slotlane/testing), for the tests that freeze it with SIGSTOP (which an in-process server
// cannot survive): node test-support/server-process.js PORT SHARDS (kept out of test/, all
// of which `node --test test/` runs). Prints "ready URL" once every shard listens; stops the
// server and exits when its standard input ends (the parent closed the pipe or died) or on
// SIGTERM.
const { startServer } = require('../lib/testing');

const [port, shards] = process.argv.slice(2).map(Number);
const srv = startServer({ port, shards, bind: '127.0.0.1' });
const stop = () => {
  srv.stop();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.resume();
process.stdout.write(`ready ${srv.url}\n`);
