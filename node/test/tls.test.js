'use strict';
// TLS with ioredis's options (tls: { ca, cert, key, servername, rejectUnauthorized }) and
// rediss://, against Debian's redis-server serving TLS only (ci/redis-plain.sh with
// SL_REDIS_TLS_DIR), certificates made by `openssl` now (ci/tls-certs.sh). The handshake is
// the core's, with the node binary's OpenSSL. Ports 25260 (client certificates optional),
// 25261 (required).
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const sl = require('..');
const { ROOT, startRedisPlain } = require('./helpers');

let certs, tls, mtls;
const pem = (name) => fs.readFileSync(path.join(certs, name), 'utf8');

test.before(() => {
  certs = fs.mkdtempSync(path.join(os.tmpdir(), 'slotlane-node-tls-'));
  execFileSync('bash', [path.join(ROOT, 'ci', 'tls-certs.sh'), certs], { stdio: 'ignore' });
  tls = startRedisPlain(25260, { SL_REDIS_TLS_DIR: certs, SL_REDIS_TLS_AUTH_CLIENTS: 'optional' });
  mtls = startRedisPlain(25261, { SL_REDIS_TLS_DIR: certs, SL_REDIS_TLS_AUTH_CLIENTS: 'yes' });
});
test.after(() => {
  tls && tls.stop();
  mtls && mtls.stop();
  fs.rmSync(certs, { recursive: true, force: true });
});

const url = (port) => `rediss://127.0.0.1:${port}`;

async function refused(opts, want) {
  const c = sl.createClient({ connectTimeout: 2000, ...opts });
  await assert.rejects(c.connect(), (e) => {
    assert.ok(e instanceof sl.TlsError, `${e.name}: ${e.message}`);
    assert.ok(e instanceof sl.ConnectionError);
    assert.match(e.message, want);
    return true;
  });
  await c.close();
}

test('ca as PEM: commands and a pipeline of 2000 over TLS', async () => {
  const c = sl.createClient({ url: url(25260), tls: { ca: pem('ca.crt') } });
  await c.connect();
  const v = 'x'.repeat(100);
  const p = c.pipeline();
  for (let i = 0; i < 2000; i++) p.set(`node:tls:${i}`, v).get(`node:tls:${i}`);
  const out = await p.exec();
  assert.equal(out.length, 4000);
  for (let i = 1; i < out.length; i += 2) assert.deepEqual(out[i], [null, v]); // over many TLS records
  await c.close();
});

test('ca as a Buffer array, servername, rejectUnauthorized', async () => {
  const c = sl.createClient({ url: url(25260), tls: { ca: [fs.readFileSync(path.join(certs, 'ca.crt'))], servername: 'localhost' } });
  await c.connect();
  assert.equal(await c.ping(), 'PONG');
  await c.close();
  await refused({ url: url(25260), tls: { ca: pem('ca.crt'), servername: 'wrong.example' } },
    /host name mismatch: expected wrong\.example, certificate names 127\.0\.0\.1/);
  const insecure = sl.createClient({ url: url(25260), tls: { rejectUnauthorized: false } });
  await insecure.connect();
  assert.equal(await insecure.ping(), 'PONG');
  await insecure.close();
});

test('mutual TLS', async () => {
  await refused({ url: url(25261), tls: { ca: pem('ca.crt') } }, /certificate required/);
  const c = sl.createClient({ url: url(25261), tls: { ca: pem('ca.crt'), cert: pem('client.crt'), key: pem('client.key') } });
  await c.connect();
  assert.equal(await c.ping(), 'PONG');
  await c.close();
});

test('failures say what failed', async () => {
  await refused({ url: url(25260), tls: { ca: pem('other-ca.crt') } }, /certificate verify failed/);
  await refused({ url: url(25260) }, /certificate verify failed/); // the system's CAs do not know the test CA
  assert.throws(() => sl.createClient({ url: url(25260), tls: { cert: pem('client.crt') } }), /both cert and key/);
  const plain = sl.createClient({ url: 'redis://127.0.0.1:25260', connectTimeout: 2000 });
  await assert.rejects(plain.connect(), /if the port speaks TLS, use rediss:\/\//);
  await plain.close();
});
