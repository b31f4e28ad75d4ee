#!/usr/bin/env python3
"""Generates bindings/spec/commands.json: the command surface every binding renders.

    python3 bindings/spec/gen_spec.py            # starts a redis-server, writes commands.json
    python3 bindings/spec/gen_spec.py --check    # exit 1 when commands.json is not current

Starts a throwaway redis-server (the reference: Debian 12's 7.0) on a free loopback port
in 20900-20999 (core/scripts/redis_tmp.py, as core/scripts/gen_commands.py does), reads
COMMAND DOCS, and turns every command's argument grammar into the spec's small parameter
vocabulary and encoding program (README.md, "Parameters"). Everything that COMMAND DOCS
does not say -- the reply type, which commands are held back for sessions, routing,
variants and parameter overrides -- comes from surface.json, written by hand.

Only the standard library; commands.json is checked in (a CI step compares a fresh
render against it, never the redis-server run: that is this script's --check)."""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "core", "scripts"))
sys.path.insert(0, HERE)

import spec as speclib  # noqa: E402

OUT = os.path.join(HERE, "commands.json")
SURFACE = os.path.join(HERE, "surface.json")
DOCS_CACHE_ENV = "SL_SPEC_DOCS"  # a JSON dump of COMMAND DOCS instead of a server (tests)

SCALARS = {"key": "key", "string": "value", "pattern": "value", "integer": "int",
           "double": "double", "unix-time": "int"}


def pairs(lst):
    return dict(zip(lst[::2], lst[1::2]))


def text(x):
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, list):
        return [text(i) for i in x]
    return x


def read_docs():
    cache = os.environ.get(DOCS_CACHE_ENV)
    if cache:
        with open(cache) as f:
            return json.load(f)
    from redis_tmp import Server
    with Server() as s:
        version = s.version()
        docs = text(s.client.call("COMMAND", "DOCS"))
    return {"version": version, "docs": docs}


def norm_args(args):
    """COMMAND DOCS argument entries (RESP2 flat lists) -> dicts, recursively."""
    out = []
    for a in args:
        a = pairs(a)
        if "arguments" in a:
            a["arguments"] = norm_args(a["arguments"])
        out.append(a)
    return out


def ident(name):
    """A parameter or method name: lower snake case, never a keyword of the languages."""
    n = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    if not n or n[0].isdigit():
        n = "p_" + n
    return n


class Flattener:
    """COMMAND DOCS arguments -> (params, encode program).

    params: [{"name", "type": key|value|int|double|flag, "optional", "list", "fields"}]
    encode: ops (README.md, "The encoding program")."""

    def __init__(self, cmd):
        self.cmd = cmd
        self.params = []
        self.byname = {}
        self.scopes = {}
        self.scope = None  # the name of the oneof whose alternatives are being read

    def param(self, name, ptype, optional, lst=False, fields=None, doc=None, block=None):
        name = ident(name)
        p = {"name": name, "type": ptype, "optional": optional}
        scope = self.scope
        if lst:
            p["list"] = True
        if fields:
            p["fields"] = fields
        old = self.byname.get(name)
        if old is not None:
            same = all(old.get(k) == p.get(k) for k in ("type", "list", "fields"))
            if same and scope is not None and self.scopes[name] == scope:
                # one choice repeated in two alternatives (GEOSEARCH's unit): one parameter
                return name
            name = ident((block or "opt") + "_" + name)
            p["name"] = name
            if name in self.byname:
                raise SystemExit("%s: cannot name parameter %s" % (self.cmd, name))
        self.byname[name] = p
        self.scopes[name] = scope
        self.params.append(p)
        return name

    def args(self, args, optional, block=None):
        ops = []
        i = 0
        while i < len(args):
            a = args[i]
            nxt = args[i + 1] if i + 1 < len(args) else None
            if (a["type"] == "integer" and a["name"] in ("numkeys",) and nxt is not None
                    and "multiple" in nxt.get("flags", [])):
                # numkeys key [key ...]: the count is the list's length, never a parameter
                inner = self.arg(nxt, optional, block)
                lst = inner[0]["p"] if inner and inner[0]["op"] == "list" else None
                if lst is None:
                    raise SystemExit("%s: numkeys before %r" % (self.cmd, nxt["name"]))
                ops.append({"op": "count", "p": lst})
                ops += inner
                i += 2
                continue
            ops += self.arg(a, optional, block)
            i += 1
        return ops

    def arg(self, a, parent_optional, block):
        flags = a.get("flags", [])
        opt = parent_optional or "optional" in flags
        multiple = "multiple" in flags
        token = a.get("token")
        t = a["type"]
        if t == "pure-token":
            if "optional" not in flags and not parent_optional:
                return [{"op": "token", "t": token}]
            name = self.param(token.lower() if token.isalpha() else a["name"], "flag", True, block=block)
            return [{"op": "flag", "p": name, "t": token}]
        if t in SCALARS:
            ptype = SCALARS[t]
            if multiple:
                name = self.param(a["name"] + "s" if not a["name"].endswith("s") else a["name"],
                                  ptype, opt, lst=True, block=block)
                op = {"op": "list", "p": name}
                if token:
                    op["t"] = token
                    if "multiple_token" in flags:
                        op["each"] = True
                return [op]
            pname = token if (token and opt and token.isalpha()) else a["name"]
            name = self.param(pname, ptype, opt, block=block)
            op = {"op": "arg" if not opt else "opt", "p": name}
            if token:
                op["t"] = token
            return [op]
        if t == "oneof":
            alts = a["arguments"]
            if not opt:
                scal = [x for x in alts if x["type"] in SCALARS and not x.get("token")]
                toks = [x for x in alts if x["type"] == "pure-token"]
                if len(scal) == 1 and len(scal) + len(toks) == len(alts):
                    # XADD's id_or_auto (* or an id): one required value; the tokens are values of it
                    return self.arg(scal[0], False, block)
            ops = []
            outer, self.scope = self.scope, a["name"]
            for x in alts:
                ops += self.arg(dict(x, flags=[f for f in x.get("flags", []) if f != "optional"] + ["optional"]),
                                True, block=a["name"])
            self.scope = outer
            if token:  # CLIENT LIST's TYPE, ZINTER's AGGREGATE: sent before whichever is chosen
                return [{"op": "choice", "t": token, "body": ops}]
            return ops
        if t == "block":
            kids = a["arguments"]
            if multiple and len(kids) == 1 and kids[0]["type"] in SCALARS and not kids[0].get("token"):
                # CONFIG GET parameter [parameter ...]: a list of one scalar
                k = kids[0]
                return self.arg(dict(k, flags=["multiple"] + (["optional"] if opt else []),
                                     token=token) if token else dict(k, flags=["multiple"] + (["optional"] if opt else [])),
                                parent_optional, block)
            if multiple:
                fields = []
                for k in kids:
                    if k["type"] not in SCALARS or k.get("flags") or k.get("token"):
                        raise SystemExit("%s: multiple block %s with %s" % (self.cmd, a["name"], k))
                    fields.append({"name": ident(k["name"]), "type": SCALARS[k["type"]]})
                name = self.param(a["name"], "tuple", opt, lst=True, fields=fields, block=block)
                op = {"op": "tuples", "p": name}
                if token:
                    op["t"] = token
                    if "multiple_token" in flags:
                        op["each"] = True
                return [op]
            if not opt:
                body = self.args(kids, False, a["name"])
                return ([{"op": "token", "t": token}] if token else []) + body
            # optional block: its parameters are optional in the signature, sent together
            # when the first of them that is not a flag is given
            before = len(self.params)
            body = self.args(kids, True, a["name"])
            newp = self.params[before:]
            lead = next((p["name"] for p in newp if p["type"] != "flag"), None)
            if lead is None:
                lead = newp[0]["name"] if newp else None
            if lead is None:
                return [{"op": "token", "t": token}] if token else []
            g = {"op": "group", "p": lead, "body": body}
            if token:
                g["t"] = token
            return [g]
        raise SystemExit("%s: unknown argument type %s" % (self.cmd, t))


def strip(ops, names, fixed):
    """Removes the ops of dropped params; a fixed flag becomes its token."""
    out = []
    for op in ops:
        if op["op"] == "choice":
            body = strip(op["body"], names, fixed)
            if body:
                out.append(dict(op, body=body))
            continue
        if op["op"] == "group":
            body = strip(op["body"], names, fixed)
            if op["p"] in names:
                if op["p"] not in fixed:
                    continue
            out.append(dict(op, body=body))
        elif op.get("p") in fixed and op["op"] == "flag":
            out.append({"op": "token", "t": op["t"]})
        elif op.get("p") in names and op["op"] in ("flag", "opt", "list", "tuples", "count"):
            continue
        else:
            out.append(op)
    return out


def require(ops, names):
    out = []
    for op in ops:
        if op["op"] == "group" and op["p"] in names:
            out += ([{"op": "token", "t": op["t"]}] if op.get("t") else []) + require(op["body"], names)
        elif op["op"] == "opt" and op["p"] in names:
            out.append(dict(op, op="arg"))
        elif op["op"] in ("group", "choice"):
            out.append(dict(op, body=require(op["body"], names)))
        else:
            out.append(op)
    return out


def rename_ops(ops, names):
    out = []
    for op in ops:
        op = dict(op)
        if op.get("p") in names:
            op["p"] = names[op["p"]]
        if "body" in op:
            op["body"] = rename_ops(op["body"], names)
        out.append(op)
    return out


def renamed(base, names):
    """surface.json "rename": parameter names that COMMAND DOCS makes ambiguous (LMOVE's two LEFTs)."""
    b = dict(base)
    b["params"] = [dict(p, name=names.get(p["name"], p["name"])) for p in base["params"]]
    b["encode"] = rename_ops(base["encode"], names)
    return b


def make_method(base, method, reply, drop=(), fix=(), req=(), overrides=None, doc=None):
    m = dict(base)
    drop, fix, req = set(drop), set(fix), set(req)
    params = []
    for p in base["params"]:
        if p["name"] in drop or p["name"] in fix:
            continue
        p = dict(p)
        if p["name"] in req:
            p["optional"] = False
        if overrides and p["name"] in overrides:
            p.update(overrides[p["name"]])
        params.append(p)
    enc = strip(base["encode"], drop | fix, fix)
    enc = require(enc, req)
    m["method"] = method
    m["params"] = order_params(params)
    m["encode"] = enc
    m["reply"] = speclib.parse_type(reply) and reply
    if doc:
        m["doc"] = doc
    return m


def order_params(params):
    """Required parameters first (in grammar order), then the optional ones."""
    return [p for p in params if not p["optional"]] + [p for p in params if p["optional"]]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    raw = read_docs()
    with open(SURFACE) as f:
        surface = json.load(f)
    docs = pairs(raw["docs"])
    entries = {}
    for name, d in docs.items():
        d = pairs(d)
        subs = pairs(d.get("subcommands", []))
        if subs:
            for sn, sd in subs.items():
                entries[sn.upper().replace("|", " ")] = pairs(sd)
        else:
            entries[name.upper()] = d
    methods = []
    held = []
    listed = set()
    for section, table in surface["commands"].items():
        for cname, info in table.items():
            if isinstance(info, str):
                info = {"reply": info}
            listed.add(cname)
            if cname not in entries:
                raise SystemExit("surface.json: %s is not a command of redis-server %s" % (cname, raw["version"]))
            d = entries[cname]
            fl = Flattener(cname)
            enc = fl.args(norm_args(d.get("arguments", [])), False)
            base = {"command": cname, "words": cname.split(" "), "group": d["group"],
                    "summary": d.get("summary", ""), "since": d.get("since", "")}
            if "deprecated_since" in d:
                base["deprecated"] = d["deprecated_since"]
                if d.get("replaced_by"):
                    base["replaced_by"] = d["replaced_by"].replace("`", "")
            if info.get("route"):
                base["route"] = info["route"]
            base["params"] = fl.params
            base["encode"] = enc
            if info.get("rename"):
                base = renamed(base, info["rename"])
            if section == "held":
                held.append({"command": cname, "group": d["group"], "why": info["why"]})
                continue
            variants = info.get("variants", [])
            vdrop = set(info.get("drop", []))
            for v in variants:
                vdrop |= set(v.get("fix", [])) | set(v.get("require", []))
            over = info.get("params")
            methods.append(make_method(base, info.get("method", ident(cname)), info["reply"],
                                       drop=vdrop, overrides=over, doc=info.get("doc")))
            for v in variants:
                methods.append(make_method(base, v["method"], v["reply"], drop=set(v.get("drop", [])),
                                           fix=v.get("fix", []), req=v.get("require", []),
                                           overrides=over, doc=v.get("doc")))
    excluded = []
    for pat in surface["excluded"]:
        rx = re.compile("^" + re.escape(pat).replace(r"\*", ".*") + "$")
        hits = sorted(c for c in entries if rx.match(c))
        if not hits:
            raise SystemExit("surface.json: the exclusion %r matches no command" % pat)
        for c in hits:
            if c in excluded:
                continue
            if c in listed:
                raise SystemExit("surface.json: %s is both listed and excluded" % c)
            excluded.append(c)
            listed.add(c)
    unlisted = sorted(c for c, d in entries.items() if c not in listed and d["group"] in surface["groups"])
    if unlisted:
        raise SystemExit("surface.json lists neither a reply nor an exclusion for: " + ", ".join(unlisted))
    names = [m["method"] for m in methods]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SystemExit("duplicate method names: %s" % dup)
    out = {
        "version": 1,
        "generated": "by bindings/spec/gen_spec.py from redis-server %s COMMAND DOCS and "
                     "bindings/spec/surface.json; do not edit" % raw["version"],
        "redis": raw["version"],
        "methods": sorted(methods, key=lambda m: m["method"]),
        "held": sorted(held, key=lambda h: h["command"]),
        "excluded": sorted(excluded),
    }
    for m in out["methods"]:
        speclib.check_method(m)
    text_out = json.dumps(out, indent=1, sort_keys=False) + "\n"
    if args.check:
        with open(OUT) as f:
            if f.read() != text_out:
                print("bindings/spec/commands.json is not current: run python3 bindings/spec/gen_spec.py")
                return 1
        return 0
    with open(OUT, "w") as f:
        f.write(text_out)
    print("wrote %s: %d methods of %d commands, %d held for sessions, %d excluded"
          % (os.path.relpath(OUT, ROOT), len(methods), len({m["command"] for m in methods}), len(held),
             len(excluded)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
