"""The benchmark tool itself (not a figure): a tiny run writes a well-formed record, and
a row with wrong replies fails instead of reporting a figure."""
import json
import os
import sys

import pytest

from conftest import ROOT

# the tool lives outside the installed package, in python/bench/
sys.path.insert(0, os.path.join(ROOT, "python", "bench"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import cluster_cost as bench  # noqa: E402
import cluster_cost_schema  # noqa: E402  (the one record schema of every runner)


def run_record(plain_url, cluster_url, tmp_path, clients):
    out = tmp_path / "records"
    rc = bench.main(["--cluster-cost", "--plain", plain_url, "--cluster", cluster_url, "--seconds", "0.1",
                     "--warmup", "0.05", "--rounds", "2", "--keys", "256", "--clients", clients,
                     "--json", str(out) + "/", "--json-only"])
    assert rc == 0
    files = os.listdir(out)
    assert len(files) == 1 and files[0].endswith("-cluster-cost-python.json")
    rec = json.loads((out / files[0]).read_text())
    assert rec["schema"] == "slotlane.bench.cluster-cost/1" and rec["ok"] is True
    assert cluster_cost_schema.validate(rec) == []
    assert rec["config"]["workers"] == 1
    for r in rec["rows"]:
        assert r["ok"] and len(r["rounds"]) == 2
        assert r["median"]["user_ns_per_req"] is not None and r["median"]["req_per_s"] > 0
        assert r["median"]["cpu_ns_per_req"] >= r["median"]["user_ns_per_req"]
        if r["client"] == "slotlane-python":
            # the core writes the caller's bytes unchanged: the minimal RESP per request
            assert r["median"]["bytes_per_req"] == pytest.approx(26.7 if r["op"] == "GET" else 65.7, abs=6)
    return rec


def test_cluster_cost_record(plain_url, cluster_url, tmp_path):
    """The package alone (`pip install ./python pytest`): the slotlane rows."""
    rec = run_record(plain_url, cluster_url, tmp_path, "slotlane-python")
    combos = {(r["client"], r["row"], r["op"], r["depth"]) for r in rec["rows"]}
    assert len(combos) == 3 * 2 * 2 and {c[0] for c in combos} == {"slotlane-python"}
    names = {t["name"] for t in rec["targets"]}
    assert "cluster user CPU <= 1.5 x plain" in names and "one-node user CPU <= 1.1 x plain" in names


def test_cluster_cost_with_redis_py(plain_url, cluster_url, tmp_path):
    """With the comparison client installed (ci/test-python.sh installs redis and hiredis)."""
    pytest.importorskip("redis")
    pytest.importorskip("hiredis")
    rec = run_record(plain_url, cluster_url, tmp_path, "slotlane-python,redis-py")
    assert rec["versions"]["hiredis"]
    combos = {(r["client"], r["row"], r["op"], r["depth"]) for r in rec["rows"]}
    assert len(combos) == 2 * 3 * 2 * 2


def test_wrong_replies_fail_the_row(plain_url):
    runner = bench.SlotlaneRunner(plain_url, "plain", 128)
    runner.values[5] = b"not what the server holds"  # the check must catch it
    n, _, err = runner.loop("GET", 16, 0.2)
    runner.close()
    assert err is not None and "GET replies differ" in err


def test_bad_usage():
    with pytest.raises(SystemExit):
        bench.main(["--plain", "redis://127.0.0.1:1"])  # no benchmark chosen
    assert bench.main(["--cluster-cost", "--rows", "plain"]) == 2  # no --plain URL
