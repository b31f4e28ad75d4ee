#!/usr/bin/env bash
# ci/test-java.sh — the Java binding's tests: `mvn -q -B install` in java/ (the build runs SWIG
# and gcc through java/build-native.sh, then JUnit 5 under Surefire). The tests start and stop
# their own servers: the bundled slotlane-server (inside the test JVM through the jar's
# io.slotlane.testing.SlotlaneServer), Debian's redis-server standalone and as Redis Clusters (ci/redis-plain.sh, ci/redis-cluster.sh), on
# loopback ports BASE..BASE+99, BASE from $SL_JAVA_TEST_PORT or else chosen by the tests (the
# first free block of the java range in ci/lib.sh, held with a lock file: TestServers,
# PortBlocks). A bare `mvn test` in java/ works too.
# Servers are stopped by PID when the JVM exits, and here again after Maven, also on failure.
SL_SUITE=java
. "$(dirname "$0")/lib.sh"
cd "$SL_ROOT"
ROOT=$SL_ROOT

need() { command -v "$1" >/dev/null || die "$1 is missing (ci/deps.sh installs $2)"; }
need mvn maven; need javac default-jdk; need swig swig; need gcc build-essential; need redis-server redis-server

# whatever a killed test JVM left behind: Redis, by the scripts (the bundled server dies with the JVM)
WORK=$ROOT/java/target/test-servers
sl_on_exit '[ -d "$WORK/redis-plain" ] && bash ci/redis-plain.sh stop "$WORK/redis-plain"'
sl_on_exit 'for d in "$WORK"/cluster-*; do [ -d "$d" ] && bash ci/redis-cluster.sh stop "$d"; done'

cd java
# -q -B: quiet and batch; Maven resolves from Maven Central once and then from ~/.m2
mvn -q -B -Dstyle.color=never install ${SL_JAVA_TEST_PORT:+-Dslotlane.test.port="$SL_JAVA_TEST_PORT"} "$@"
# the closing line CI reads: the Surefire totals
python3 - <<'PY'
import glob, re
t = f = e = s = 0
for p in glob.glob("target/surefire-reports/TEST-*.xml"):
    head = open(p, encoding="utf-8").read(2000)
    m = re.search(r'<testsuite[^>]*', head).group(0)
    g = lambda k: int(re.search(k + r'="(\d+)"', m).group(1))
    t += g("tests"); f += g("failures"); e += g("errors"); s += g("skipped")
print("java: Tests run: %d, Failures: %d, Errors: %d, Skipped: %d" % (t, f, e, s))
print("%d passed, %d failed, %d skipped" % (t - f - e - s, f + e, s))
PY
