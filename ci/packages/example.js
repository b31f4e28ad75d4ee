// The Node package's example (ci/test-packages.sh runs it in a scratch project that did
// `npm install <the packed tarball>`): SETs and GETs over the cluster at argv[2], sent
// together by automatic pipelining, and a pipeline; every reply checked.
'use strict';
const assert = require('assert');
const path = require('path');
const sl = require('slotlane');

async function main() {
  const client = sl.createClient({ url: process.argv[2] });
  try {
    const keys = Array.from({ length: 32 }, (_, i) => `pkg:node:${i}`);
    await Promise.all(keys.map((k, i) => client.set(k, `value-${i}`)));
    const got = await Promise.all(keys.map((k) => client.get(k)));
    assert.deepStrictEqual(got, keys.map((_, i) => `value-${i}`));
    // the spec's SET resolves true (false when NX/XX prevented it): bindings/spec/README.md
    const res = await client.pipeline().set('pkg:node:n', 1).incr('pkg:node:n').get('pkg:node:n').exec();
    assert.deepStrictEqual(res, [[null, true], [null, 2], [null, '2']]);
  } finally {
    await client.close();
  }
  console.log(`node ok: 32 SET + 32 GET, a pipeline, slotlane ${sl.version} from ${path.dirname(require.resolve('slotlane'))}`);
}
main().catch((e) => { console.error(e); process.exit(1); });
