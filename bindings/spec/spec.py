"""The spec's reference semantics, shared by gen_spec.py, render.py and the conformance
recorder: the reply-type grammar, the encoding program (parameters -> arguments) and the
check of a recorded reply against a declared type. Standard library only."""
import json
import math
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
COMMANDS = os.path.join(HERE, "commands.json")
ERRORS = os.path.join(HERE, "errors.json")

BASE_TYPES = ("ok", "status", "string", "int", "bool", "double", "cursor", "any")
GENERIC = {"array": 1, "set": 1, "map": 2, "pairs": 2, "tuple": None}
PARAM_TYPES = ("key", "value", "int", "double", "flag", "tuple")
OPS = ("token", "arg", "opt", "flag", "list", "tuples", "count", "group", "choice")


def load():
    with open(COMMANDS) as f:
        return json.load(f)


def load_errors():
    with open(ERRORS) as f:
        return json.load(f)


# ------------------------------------------------------------------ reply types

_TOK = re.compile(r"\s*([a-z]+|[<>,?])")


def parse_type(s):
    """'map<string,array<int?>>?' -> {"t": "map", "of": [...], "null": True}."""
    toks = _TOK.findall(s)
    if "".join(toks) != re.sub(r"\s+", "", s):
        raise ValueError("bad type %r" % s)
    pos = [0]

    def peek():
        return toks[pos[0]] if pos[0] < len(toks) else None

    def take(want=None):
        t = peek()
        if t is None or (want is not None and t != want):
            raise ValueError("bad type %r: expected %s at token %d" % (s, want or "a name", pos[0]))
        pos[0] += 1
        return t

    def one():
        name = take()
        node = {"t": name}
        if name in GENERIC:
            take("<")
            kids = [one()]
            while peek() == ",":
                take(",")
                kids.append(one())
            take(">")
            n = GENERIC[name]
            if n is not None and len(kids) != n:
                raise ValueError("bad type %r: %s takes %d types" % (s, name, n))
            node["of"] = kids
        elif name not in BASE_TYPES:
            raise ValueError("bad type %r: unknown %s" % (s, name))
        if peek() == "?":
            take("?")
            node["null"] = True
        return node

    node = one()
    if peek() is not None:
        raise ValueError("bad type %r: trailing %s" % (s, peek()))
    return node


def type_str(node):
    s = node["t"]
    if "of" in node:
        s += "<" + ",".join(type_str(k) for k in node["of"]) + ">"
    return s + ("?" if node.get("null") else "")


# ------------------------------------------------------------------ methods

def check_method(m):
    names = [p["name"] for p in m["params"]]
    if len(set(names)) != len(names):
        raise ValueError("%s: duplicate parameter names %s" % (m["method"], names))
    for p in m["params"]:
        if p["type"] not in PARAM_TYPES:
            raise ValueError("%s: parameter %s of type %s" % (m["method"], p["name"], p["type"]))
    used = set()
    for op in walk(m["encode"]):
        if op["op"] not in OPS:
            raise ValueError("%s: op %s" % (m["method"], op["op"]))
        if "p" in op:
            if op["p"] not in names:
                raise ValueError("%s: op %s names %s, no such parameter" % (m["method"], op["op"], op["p"]))
            used.add(op["p"])
    unused = set(names) - used
    if unused:
        raise ValueError("%s: parameters never sent: %s" % (m["method"], sorted(unused)))
    parse_type(m["reply"])


def walk(ops):
    for op in ops:
        yield op
        if op["op"] in ("group", "choice"):
            yield from walk(op["body"])


def fmt_scalar(ptype, v):
    """A parameter's argument text by the argument rules (README.md)."""
    if isinstance(v, bool):
        raise TypeError("a bool is not a key, value or number")
    if ptype == "int":
        if not isinstance(v, int):
            raise TypeError("an int parameter takes an integer, not %r" % (v,))
        return str(v)
    if ptype == "double":
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float):
            return fmt_double(v)
        raise TypeError("a double parameter takes a number, not %r" % (v,))
    if isinstance(v, (int,)):
        return str(v)
    if isinstance(v, float):
        return fmt_double(v)
    if isinstance(v, dict) and "hex" in v:
        return v
    if not isinstance(v, str):
        raise TypeError("a %s parameter takes a string, not %r" % (ptype, v))
    return v


def fmt_double(v):
    if math.isinf(v):
        return "+inf" if v > 0 else "-inf"
    if v == int(v) and abs(v) < 1e16:
        return str(int(v))
    return repr(v)


def is_set(v):
    return v is not None and v is not False and v != []


def encode(m, values):
    """The arguments of a call: m a method of commands.json, values {param: JSON value}."""
    ptypes = {p["name"]: p for p in m["params"]}
    for k in values:
        if k not in ptypes:
            raise KeyError("%s has no parameter %s" % (m["method"], k))
    for p in m["params"]:
        if not p["optional"] and not is_set(values.get(p["name"])) and values.get(p["name"]) != 0:
            if values.get(p["name"]) is None:
                raise KeyError("%s: %s is required" % (m["method"], p["name"]))
    out = list(m["words"])
    run(m["encode"], ptypes, values, out)
    return out


def run(ops, ptypes, values, out):
    for op in ops:
        o = op["op"]
        v = values.get(op.get("p"))
        if o == "token":
            out.append(op["t"])
        elif o == "arg":
            if "t" in op:
                out.append(op["t"])
            out.append(fmt_scalar(ptypes[op["p"]]["type"], v))
        elif o == "opt":
            if v is not None:
                if "t" in op:
                    out.append(op["t"])
                out.append(fmt_scalar(ptypes[op["p"]]["type"], v))
        elif o == "flag":
            if v is True:
                out.append(op["t"])
            elif v not in (None, False):
                raise TypeError("flag %s takes a bool" % op["p"])
        elif o == "count":
            out.append(str(len(v or [])))
        elif o == "list":
            items = v or []
            if items and "t" in op and not op.get("each"):
                out.append(op["t"])
            for x in items:
                if op.get("each"):
                    out.append(op["t"])
                out.append(fmt_scalar(ptypes[op["p"]]["type"], x))
        elif o == "tuples":
            fields = ptypes[op["p"]]["fields"]
            items = v or []
            if items and "t" in op and not op.get("each"):
                out.append(op["t"])
            for tup in items:
                if len(tup) != len(fields):
                    raise TypeError("%s takes tuples of %d" % (op["p"], len(fields)))
                if op.get("each"):
                    out.append(op["t"])
                for f, x in zip(fields, tup):
                    out.append(fmt_scalar(f["type"], x))
        elif o == "choice":
            if any(is_set(values.get(x["p"])) for x in walk(op["body"]) if "p" in x):
                out.append(op["t"])
                run(op["body"], ptypes, values, out)
        elif o == "group":
            if is_set(v) or v == 0:
                if "t" in op:
                    out.append(op["t"])
                run(op["body"], ptypes, values, out)
        else:
            raise ValueError(o)


# ------------------------------------------------------------------ replies

def check_reply(tnode, r, where="reply"):
    """Problems (a list of strings) of a recorded reply (the conformance cases' reply
    form) under a declared type, by the normalisation of README.md."""
    if isinstance(tnode, str):
        tnode = parse_type(tnode)
    rt = r["type"]
    t = tnode["t"]
    if rt == "error":
        return []  # any command may fail; the error is raised in every language
    if rt == "nil":
        return [] if tnode.get("null") or t == "any" else ["%s: nil, but %s is not nullable" % (where, type_str(tnode))]
    bad = ["%s: a %s reply is not a %s" % (where, rt, type_str(tnode))]
    if t == "any":
        return []
    if t == "ok":
        return [] if rt == "status" and r.get("value", "OK") == "OK" else bad
    if t == "status":
        return [] if rt == "status" else bad
    if t == "string":
        return [] if rt in ("string", "verb") else bad
    if t == "int":
        return [] if rt == "integer" else bad
    if t == "cursor":
        return [] if rt == "string" and r.get("value", "0").isdigit() else bad
    if t == "bool":
        if rt == "bool" or (rt == "integer" and r.get("value") in (0, 1)):
            return []
        return bad
    if t == "double":
        if rt == "double" or rt == "integer":
            return []
        if rt == "string" and "value" in r:
            try:
                float(r["value"])
                return []
            except ValueError:
                return bad
        return bad
    kids = r.get("children")
    if t in ("array", "set"):
        if rt not in ("array", "set") or (t == "array" and rt == "set"):
            return bad
        out = []
        for i, c in enumerate(kids or []):
            out += check_reply(tnode["of"][0], c, "%s[%d]" % (where, i))
        return out
    if t == "tuple":
        if rt != "array" or (kids is not None and len(kids) != len(tnode["of"])):
            return bad
        out = []
        for i, (tt, c) in enumerate(zip(tnode["of"], kids or [])):
            out += check_reply(tt, c, "%s[%d]" % (where, i))
        return out
    if t in ("map", "pairs"):
        if rt == "map" or (rt == "array" and kids and kids[0]["type"] != "array"):
            if kids is not None and len(kids) % 2:
                return ["%s: an odd number of elements for %s" % (where, type_str(tnode))]
            flat = kids or []
        elif rt == "array":
            flat = []
            for i, c in enumerate(kids or []):
                if c["type"] != "array" or len(c.get("children", [])) != 2:
                    return ["%s[%d]: not a [key, value] pair" % (where, i)]
                flat += c["children"]
        else:
            return bad
        out = []
        for i in range(0, len(flat), 2):
            out += check_reply(tnode["of"][0], flat[i], "%s key %d" % (where, i // 2))
            out += check_reply(tnode["of"][1], flat[i + 1], "%s value %d" % (where, i // 2))
        return out
    return ["%s: unknown type %s" % (where, t)]
