"""The language-neutral cases of bindings/conformance/ (cases/*.json), run through the
Python API: each case's commands as one pipeline, the replies compared with the recorded
ones through the Python types (bulk string -> bytes, status -> str, error -> exception
with its kind, map -> dict, set -> set, double -> float, verbatim -> Verbatim...)."""
import glob
import json
import math
import os

import pytest

import slotlane
from conftest import ROOT

CASE_DIR = os.path.join(ROOT, "bindings", "conformance", "cases")



def load_cases():
    out = []
    for path in sorted(glob.glob(os.path.join(CASE_DIR, "*.json"))):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        for case in doc["cases"]:
            for resp in case["resp"]:
                out.append(pytest.param(case, resp, os.path.basename(path)[:-5],
                                        id="%s/%s/resp%d" % (os.path.basename(path)[:-5], case["name"], resp)))
    return out


CASES = load_cases()


def test_cases_exist():
    assert len(CASES) >= 20, "no conformance cases found in %s" % CASE_DIR


def arg(a):
    if isinstance(a, dict):
        return bytes.fromhex(a["hex"])
    return a.encode("utf-8") if isinstance(a, str) else a


def expected_bytes(e):
    return bytes.fromhex(e["hex"]) if "hex" in e else e["value"].encode("utf-8")


def check(exp, got, where):
    t = exp["type"]
    if t == "string":
        assert type(got) is bytes, "%s: expected a bulk string, got %r" % (where, got)
        assert got == expected_bytes(exp), where
    elif t == "status":
        assert type(got) is str and got == exp["value"], "%s: expected status %r, got %r" % (where, exp["value"], got)
    elif t == "error":
        assert isinstance(got, slotlane.Error), "%s: expected an error, got %r" % (where, got)
        assert got.kind == exp.get("kind", "server"), "%s: kind %s, expected %s" % (where, got.kind, exp.get("kind"))
        if "prefix" in exp:
            assert got.message.startswith(exp["prefix"]), "%s: %r does not start with %r" % (where, got.message, exp["prefix"])
    elif t == "integer":
        assert type(got) is int and got == exp["value"], "%s: expected %r, got %r" % (where, exp["value"], got)
    elif t == "nil":
        assert got is None, "%s: expected nil, got %r" % (where, got)
    elif t == "double":
        want = float(exp["value"])
        assert type(got) is float, "%s: expected a double, got %r" % (where, got)
        assert (math.isnan(want) and math.isnan(got)) or got == want, where
    elif t == "bool":
        assert type(got) is bool and got == exp["value"], where
    elif t == "bignum":
        assert type(got) is int and got == int(exp["value"]), where
    elif t == "verb":
        assert isinstance(got, slotlane.Verbatim), "%s: expected verbatim, got %r" % (where, got)
        assert got.format == exp["format"] and bytes(got) == expected_bytes(exp), where
    elif t in ("array", "push"):
        assert type(got) is list, "%s: expected an array, got %r" % (where, got)
        check_children(exp, got, where)
    elif t == "set":
        assert isinstance(got, (set, list)), "%s: expected a set, got %r" % (where, got)
        check_children(dict(exp, unordered=True), list(got), where)
    elif t == "map":
        assert isinstance(got, (dict, list)), "%s: expected a map, got %r" % (where, got)
        items = list(got.items()) if isinstance(got, dict) else got
        ch = exp["children"]
        pairs = [(ch[i], ch[i + 1]) for i in range(0, len(ch), 2)]
        assert len(items) == len(pairs), "%s: %d pairs, expected %d" % (where, len(items), len(pairs))
        for ek, ev in pairs:
            for gk, gv in items:
                if matches(ek, gk) and matches(ev, gv):
                    break
            else:
                raise AssertionError("%s: no pair matches %r in %r" % (where, (ek, ev), got))
    else:
        raise AssertionError("%s: unknown expected type %s" % (where, t))


def matches(exp, got):
    try:
        check(exp, got, "")
        return True
    except AssertionError:
        return False


def check_children(exp, got, where):
    ch = exp["children"]
    assert len(got) == len(ch), "%s: %d elements, expected %d: %r" % (where, len(got), len(ch), got)
    if exp.get("unordered"):
        left = list(got)
        for e in ch:
            for i, g in enumerate(left):
                if matches(e, g):
                    del left[i]
                    break
            else:
                raise AssertionError("%s: no element matches %r in %r" % (where, e, got))
    else:
        for i, (e, g) in enumerate(zip(ch, got)):
            check(e, g, "%s[%d]" % (where, i))


@pytest.mark.parametrize("case,resp,casefile", CASES)
def test_conformance(case, resp, casefile, redis_url):
    with slotlane.Client(redis_url, protocol=resp) as c:
        if case["mode"] == "cluster" and c.mode != "cluster":
            pytest.skip("a cluster-only case (this deployment is plain)")
        if case["mode"] == "plain" and c.mode != "plain":
            pytest.skip("a plain-only case")
        c.flushall()
        if case.get("setup"):
            with c.pipeline() as p:
                for cmd in case["setup"]:
                    p.execute_command(*[arg(a) for a in cmd])
                p.execute(raise_on_error=True)
        with c.pipeline() as p:
            for cmd in case["commands"]:
                p.execute_command(*[arg(a) for a in cmd])
            got = p.execute()
        exp = case["expected"][str(resp)]
        assert len(got) == len(exp)
        for i, (e, g) in enumerate(zip(exp, got)):
            check(e, g, "%s command %d %s" % (case["name"], i, case["commands"][i][:3]))
