"""Unit tests of the spec's reference semantics (spec.py) and of commands.json's shape:
the reply-type grammar, the encoding program, the check of recorded replies against a
declared type (the one normalisation of RESP2 and RESP3), and the rules every method
follows. Run by ci/test-spec.sh: python3 -m unittest bindings/spec/test_spec.py"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spec  # noqa: E402

METHODS = {m["method"]: m for m in spec.load()["methods"]}


def s(v):
    return {"type": "string", "value": v}


def i(v):
    return {"type": "integer", "value": v}


def arr(*c):
    return {"type": "array", "children": list(c)}


class TypeGrammar(unittest.TestCase):
    def test_parse_and_print(self):
        for t in ("ok?", "map<string,array<tuple<string,pairs<string,string>>>>?", "array<double?>",
                  "tuple<cursor,pairs<string,double>>"):
            self.assertEqual(spec.type_str(spec.parse_type(t)), t)

    def test_bad_types(self):
        for t in ("arr<string>", "map<string>", "pairs<string,int", "string??x", "tuple"):
            with self.assertRaises(ValueError, msg=t):
                spec.parse_type(t)


class Encoding(unittest.TestCase):
    def test_set(self):
        m = METHODS["set"]
        self.assertEqual(spec.encode(m, {"key": "k", "value": "v"}), ["SET", "k", "v"])
        self.assertEqual(spec.encode(m, {"key": "k", "value": 1.5, "nx": True, "ex": 10}),
                         ["SET", "k", "1.5", "NX", "EX", "10"])
        self.assertEqual(spec.encode(METHODS["set_get"], {"key": "k", "value": "v"}), ["SET", "k", "v", "GET"])

    def test_numkeys_and_groups(self):
        self.assertEqual(spec.encode(METHODS["zinter_withscores"], {"keys": ["a", "b"], "weights": [1, 0.5], "max": True}),
                         ["ZINTER", "2", "a", "b", "WEIGHTS", "1", "0.5", "AGGREGATE", "MAX", "WITHSCORES"])
        self.assertEqual(spec.encode(METHODS["eval"], {"script": "return 1"}), ["EVAL", "return 1", "0"])
        self.assertEqual(spec.encode(METHODS["zrange"], {"key": "z", "start": 0, "stop": 5, "offset": 1, "count": 2}),
                         ["ZRANGE", "z", "0", "5", "LIMIT", "1", "2"])
        self.assertEqual(spec.encode(METHODS["client_list"], {"pubsub": True}), ["CLIENT", "LIST", "TYPE", "PUBSUB"])
        self.assertEqual(spec.encode(METHODS["bitfield_ro"], {"key": "k", "encoding_offset": [["u8", 0], ["i4", 4]]}),
                         ["BITFIELD_RO", "k", "GET", "u8", "0", "GET", "i4", "4"])
        self.assertEqual(spec.encode(METHODS["xadd"], {"key": "s", "id": "*", "field_value": [["f", "v"]], "maxlen": True,
                                                        "approximately": True, "threshold": "100"}),
                         ["XADD", "s", "MAXLEN", "~", "100", "*", "f", "v"])

    def test_argument_rules(self):
        with self.assertRaises(TypeError):
            spec.encode(METHODS["set"], {"key": "k", "value": True})  # a bool is never a value
        with self.assertRaises(TypeError):
            spec.encode(METHODS["expire"], {"key": "k", "seconds": "10"})  # an int parameter
        with self.assertRaises(KeyError):
            spec.encode(METHODS["get"], {})
        self.assertEqual(spec.encode(METHODS["zadd"], {"key": "z", "score_member": [[float("inf"), "m"]]}),
                         ["ZADD", "z", "+inf", "m"])


class Normalisation(unittest.TestCase):
    def ok(self, t, r):
        self.assertEqual(spec.check_reply(t, r), [], (t, r))

    def bad(self, t, r):
        self.assertNotEqual(spec.check_reply(t, r), [], (t, r))

    def test_map_in_every_layout(self):
        self.ok("map<string,string>", {"type": "map", "children": [s("a"), s("1")]})
        self.ok("map<string,string>", arr(s("a"), s("1")))                       # RESP2 flat
        self.ok("map<string,array<string>>", arr(arr(s("k"), arr(s("x")))))     # XREAD's RESP2 pairs
        self.bad("map<string,string>", arr(s("a")))

    def test_pairs_and_doubles(self):
        self.ok("pairs<string,double>", arr(s("m"), s("1.5")))                                   # RESP2
        self.ok("pairs<string,double>", arr(arr(s("m"), {"type": "double", "value": "1.5"})))    # RESP3
        self.ok("double?", {"type": "nil"})
        self.bad("double", s("abc"))
        self.bad("double", {"type": "nil"})

    def test_scalars(self):
        self.ok("ok", {"type": "status", "value": "OK"})
        self.bad("ok", {"type": "status", "value": "QUEUED"})
        self.ok("bool", i(1))
        self.bad("bool", i(2))
        self.ok("string", {"type": "verb", "format": "txt", "value": "x"})
        self.ok("cursor", s("17"))
        self.ok("int", {"type": "error", "kind": "server", "prefix": "WRONGTYPE"})  # errors raise
        self.bad("array<string>", {"type": "set", "children": []})
        self.ok("set<string>", arr(s("a")))


class Methods(unittest.TestCase):
    def test_every_method(self):
        self.assertGreaterEqual(len(METHODS), 250)
        for m in METHODS.values():
            spec.check_method(m)  # names, ops, every parameter sent, the reply type parses
            req = [p for p in m["params"] if not p["optional"]]
            self.assertEqual(m["params"][:len(req)], req, m["method"])  # required parameters first

    def test_held_commands_are_not_methods(self):
        held = {h["command"] for h in spec.load()["held"]}
        self.assertTrue({"MULTI", "EXEC", "WATCH", "SELECT", "HELLO", "SUBSCRIBE", "MONITOR"} <= held)
        self.assertIn("BLPOP", {m["command"] for m in METHODS.values()})  # rendered: the core leases it
        self.assertFalse(held & {m["command"] for m in METHODS.values()})

    def test_errors_table(self):
        e = spec.load_errors()
        names = {t["name"] for t in e["types"]}
        self.assertTrue(set(e["codes"].values()) <= names)
        self.assertTrue({v[1] for v in e["kinds"].values()} <= names)
        self.assertEqual(e["codes"]["SL_ECANCELLED"], "CancelledError")
        self.assertEqual(e["kinds"]["SL_ERR_CANCELLED"][1], "CancelledError")


if __name__ == "__main__":
    unittest.main()
