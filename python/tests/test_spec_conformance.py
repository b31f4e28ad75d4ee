"""The spec's conformance cases (bindings/conformance/commands/*.json) through the typed
methods: every case's calls are made through the rendered Python methods -- once queued on
one pipeline (the case's batch), once one by one on the client -- and each result is
compared with the recorded reply as the method's reply type shapes it
(bindings/spec/README.md: HGETALL a dict in both protocols, ZSCORE a float, WITHSCORES
pairs...). The raw replies of the same cases are checked by test_conformance.py's
comparison through execute_command as well."""
import glob
import json
import math
import os
import sys

import pytest

import slotlane
from conftest import ROOT
from slotlane._commands import METHODS
from test_conformance import arg, check as check_raw

CASE_DIR = os.path.join(ROOT, "bindings", "conformance", "commands")
sys.path.insert(0, os.path.join(ROOT, "bindings", "spec"))
import spec as speclib  # noqa: E402

SPEC = {m["method"]: m for m in speclib.load()["methods"]}


def load_cases():
    out = []
    for path in sorted(glob.glob(os.path.join(CASE_DIR, "*.json"))):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        for case in doc["cases"]:
            for resp in case["resp"]:
                out.append(pytest.param(case, resp, id="%s/%s/resp%d" % (os.path.basename(path)[:-5], case["name"], resp)))
    return out


CASES = load_cases()


def test_every_method_has_a_case():
    called = {c["method"] for p in CASES for c in p.values[0]["calls"]}
    missing = sorted(set(SPEC) - called)
    assert not missing, "methods of the spec without a conformance case: %s" % missing
    assert len(SPEC) >= 250


def py_value(ptype, v):
    if isinstance(v, dict) and "hex" in v:
        return bytes.fromhex(v["hex"])
    if ptype == "tuple":
        return [tuple(py_value(None, x) for x in t) for t in v]
    if isinstance(v, list):
        return [py_value(None, x) for x in v]
    return v


def call_args(m, args):
    """A spec call's named JSON arguments -> the Python method's (args, kwargs)."""
    pos, kw = [], {}
    for p in m["params"]:
        if p["name"] not in args:
            continue
        v = py_value(p["type"], args[p["name"]])
        name = p["name"] + "_" if p["name"] in ("async", "from") else p["name"]
        if not p["optional"]:
            if p.get("list") and p["type"] != "tuple" and [q for q in m["params"] if not q["optional"]][-1] is p \
                    and sum(1 for q in m["params"] if q.get("list")) == 1:
                pos.extend(v)  # the *args form
            else:
                pos.append(v)
        else:
            kw[name] = v
    return pos, kw


def num(exp):
    return float(exp["value"])


def check_typed(t, exp, got, where):
    et = exp["type"]
    if et == "error":
        assert isinstance(got, slotlane.Error), "%s: expected an error, got %r" % (where, got)
        check_raw(exp, got, where)
        return
    n = t["t"]
    loose = "value" not in exp and "children" not in exp and "hex" not in exp
    if et == "nil":
        if n == "ok":
            assert got is False, "%s: nil is False for ok?, got %r" % (where, got)
        else:
            assert got is None, "%s: expected None, got %r" % (where, got)
        return
    if n == "any":
        if not loose:  # a loose reply (a time, an id, server text) is kept by its type only
            check_raw(exp, got, where)
    elif n == "ok":
        assert got is True, "%s: expected True, got %r" % (where, got)
    elif n == "status":
        assert type(got) is str and (loose or got == exp["value"]), "%s: %r" % (where, got)
    elif n == "string":
        assert isinstance(got, bytes), "%s: expected bytes, got %r" % (where, got)
        if not loose:
            want = bytes.fromhex(exp["hex"]) if "hex" in exp else exp["value"].encode()
            assert bytes(got) == want, "%s: %r != %r" % (where, got, want)
    elif n == "int":
        assert type(got) is int and (loose or got == exp["value"]), "%s: %r" % (where, got)
    elif n == "bool":
        assert type(got) is bool and (loose or got == bool(exp["value"])), "%s: %r" % (where, got)
    elif n == "double":
        assert type(got) is float, "%s: expected a float, got %r" % (where, got)
        if not loose:
            w = num(exp)
            assert (math.isnan(w) and math.isnan(got)) or got == w, "%s: %r != %r" % (where, got, w)
    elif n == "cursor":
        assert type(got) is int and (loose or got == int(exp["value"])), "%s: %r" % (where, got)
    elif n == "array":
        assert type(got) is list, "%s: expected a list, got %r" % (where, got)
        if not loose:
            match_seq(t["of"][0], exp["children"], got, where, exp.get("unordered"))
    elif n == "set":
        assert type(got) is set, "%s: expected a set, got %r" % (where, got)
        if not loose:
            match_seq(t["of"][0], exp["children"], list(got), where, True)
    elif n in ("map", "pairs"):
        assert type(got) is (dict if n == "map" else list), "%s: expected a %s, got %r" % (where, n, got)
        if loose:
            return
        kids = exp["children"]
        if exp["type"] == "array" and kids and kids[0]["type"] == "array":
            flat = [c for k in kids for c in k["children"]]
        else:
            flat = kids
        items = list(got.items()) if n == "map" else got
        if n == "pairs":
            assert all(type(x) is tuple and len(x) == 2 for x in items), "%s: %r" % (where, got)
        assert len(items) == len(flat) // 2, "%s: %d pairs, expected %d" % (where, len(items), len(flat) // 2)
        want = [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]
        unordered = n == "map" or exp.get("unordered")
        left = list(items)
        for i, (ek, ev) in enumerate(want):
            cands = left if unordered else [left[0]]
            for g in cands:
                if matches(t["of"][0], ek, g[0]) and matches(t["of"][1], ev, g[1]):
                    left.remove(g)
                    break
            else:
                raise AssertionError("%s: pair %d %r not matched in %r" % (where, i, (ek, ev), got))
    elif n == "tuple":
        assert type(got) is tuple and len(got) == len(t["of"]), "%s: expected a %d-tuple, got %r" % (where, len(t["of"]), got)
        if not loose:
            for i, (tt, e, g) in enumerate(zip(t["of"], exp["children"], got)):
                check_typed(tt, e, g, "%s[%d]" % (where, i))
    else:
        raise AssertionError("unknown type %s" % n)


def matches(t, exp, got):
    try:
        check_typed(t, exp, got, "")
        return True
    except AssertionError:
        return False


def match_seq(t, kids, got, where, unordered):
    assert len(got) == len(kids), "%s: %d elements, expected %d: %r" % (where, len(got), len(kids), got)
    if unordered:
        left = list(got)
        for e in kids:
            for i, g in enumerate(left):
                if matches(t, e, g):
                    del left[i]
                    break
            else:
                raise AssertionError("%s: no element matches %r in %r" % (where, e, got))
    else:
        for i, (e, g) in enumerate(zip(kids, got)):
            check_typed(t, e, g, "%s[%d]" % (where, i))


def prepare(c, case):
    c.flushall()
    if case.get("setup"):
        with c.pipeline() as p:
            for cmd in case["setup"]:
                p.execute_command(*[arg(a) for a in cmd])
            p.execute(raise_on_error=True)


@pytest.mark.parametrize("case,resp", CASES)
def test_typed_methods(case, resp, redis_url):
    with slotlane.Client(redis_url, protocol=resp) as c:
        if case["mode"] == "cluster" and c.mode != "cluster":
            pytest.skip("a cluster-only case (this deployment is plain)")
        if case["mode"] == "plain" and c.mode != "plain":
            pytest.skip("a plain-only case")
        exp = case["expected"][str(resp)]
        # 1. the calls queued on one pipeline: the case's batch
        prepare(c, case)
        with c.pipeline() as p:
            for call in case["calls"]:
                pos, kw = call_args(SPEC[call["method"]], call["args"])
                getattr(p, METHODS[call["method"]])(*pos, **kw)
            got = p.execute()
        for i, (call, e, g) in enumerate(zip(case["calls"], exp, got)):
            check_typed(speclib.parse_type(SPEC[call["method"]]["reply"]), e, g,
                        "%s pipeline call %d %s" % (case["name"], i, call["method"]))
        # 2. the same calls one by one on the client (errors raised, not returned)
        prepare(c, case)
        for i, (call, e) in enumerate(zip(case["calls"], exp)):
            pos, kw = call_args(SPEC[call["method"]], call["args"])
            try:
                g = getattr(c, METHODS[call["method"]])(*pos, **kw)
            except slotlane.Error as err:
                g = err
            check_typed(speclib.parse_type(SPEC[call["method"]]["reply"]), e, g,
                        "%s client call %d %s" % (case["name"], i, call["method"]))


def test_error_table_covers_the_header():
    """errors.json (rendered into _errors.py) names every sl_error_code and sl_err_kind."""
    from slotlane import _errors
    from slotlane._native import lib
    codes = {getattr(lib, n) for n in dir(lib) if n.startswith("SL_E") and n[4:5].isupper()
             and not n.startswith(("SL_ERR_", "SL_EVENT_")) and isinstance(getattr(lib, n), int)}
    assert codes and codes <= set(_errors.CODE_CLASS), sorted(codes - set(_errors.CODE_CLASS))
    kinds = {getattr(lib, n) for n in dir(lib) if n.startswith("SL_ERR_")}
    assert kinds == set(_errors.KIND_CLASS)
    assert len(_errors.KINDS) == len(kinds)
    assert issubclass(slotlane.ArgumentError, ValueError)
    assert _errors.CODE_CLASS[lib.SL_ECANCELLED] is slotlane.CancelledError
