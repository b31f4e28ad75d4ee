"""The Python package's example (ci/test-packages.sh runs it in a fresh venv that installed
the wheel or the sdist, outside the checkout): SETs and GETs over the cluster at argv[1]
in one pipeline, an MSET/MGET the core splits across slots, every reply checked."""
import os
import sys

import slotlane

with slotlane.Client(sys.argv[1]) as r:
    with r.pipeline() as p:
        for i in range(32):
            p.set("pkg:py:%d" % i, "value-%d" % i)
        for i in range(32):
            p.get("pkg:py:%d" % i)
        res = p.execute()
    assert res[32:] == [b"value-%d" % i for i in range(32)], res[32:]
    r.mset({"pkg:py:a": 1, "pkg:py:b": 2, "pkg:py:c": 3})
    assert r.mget("pkg:py:a", "pkg:py:b", "pkg:py:c", "pkg:py:missing") == [b"1", b"2", b"3", None]
print("python ok: 32 SET + 32 GET, MSET/MGET across slots, slotlane %s from %s"
      % (slotlane.__version__, os.path.dirname(slotlane.__file__)))
