"""render.py's Node module: node/lib/commands.js (the typed methods of Client and Pipeline),
node/lib/commands.d.ts (their TypeScript declarations) and node/lib/errors.js (the error
classes).

Idiom: camelCase methods; required parameters positional, options in one trailing object
({ nx: true, ex: 60 }); a method whose only list is its last required parameter takes it as
...rest (or one array); a tuple list of 2 fields also takes a Map or a plain object. The
client's methods return Promise<T> with T the spec's reply type (strings, or Buffers with
returnBuffers: Client<Buffer>); a pipeline's methods queue and return the pipeline, exec()
gives the shaped values. Shapers are built once per type (node/lib/shapes.js)."""
from render_common import is_varargs  # ...rest (a rest parameter cannot be followed by the options object)

import json
import re

OUT_JS = "node/lib/commands.js"
OUT_DTS = "node/lib/commands.d.ts"
OUT_ERRORS = "node/lib/errors.js"

# errors.json's names -> Node's (the classes Node users already catch keep their names)
ERROR_NAMES = {"Error": "SlotlaneError", "ResponseError": "ReplyError"}
JS_RESERVED = {"delete", "function", "default", "export", "import", "new", "in", "class", "var", "let",
               "const", "with", "yield", "switch", "case", "do", "if", "for", "while", "return", "try",
               "catch", "finally", "throw", "this", "typeof", "void", "super", "enum", "await", "async"}


def camel(n):
    parts = n.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def pname(n):
    c = camel(n)
    return c + "_" if c in JS_RESERVED else c


def ts_type(t, s="S"):
    n = t["t"]
    if n in ("ok", "bool"):
        h = "boolean"
    elif n == "status":
        h = "string"
    elif n == "string":
        h = s
    elif n == "int" or n == "double":
        h = "number"
    elif n == "cursor":
        h = "string"
    elif n == "any":
        return "Reply"
    elif n == "array":
        h = "Array<%s>" % ts_type(t["of"][0], s)
    elif n == "set":
        h = "Set<%s>" % ts_type(t["of"][0], s)
    elif n == "map":
        h = "Map<%s, %s>" % (ts_type(t["of"][0], s), ts_type(t["of"][1], s))
    elif n == "pairs":
        h = "Array<[%s, %s]>" % (ts_type(t["of"][0], s), ts_type(t["of"][1], s))
    elif n == "tuple":
        h = "[%s]" % ", ".join(ts_type(k, s) for k in t["of"])
    else:
        raise ValueError(n)
    if t.get("null") and n != "ok":
        h = "%s | null" % h
    return h


SCALAR_TS = {"key": "Key", "value": "Value", "int": "Int", "double": "number"}




def swapped(p):
    f = p["fields"]
    return len(f) == 2 and f[0]["type"] in ("int", "double") and f[1]["type"] in ("key", "value")


def param_ts(p):
    if p["type"] == "flag":
        return "boolean"
    if p["type"] == "tuple":
        fs = [SCALAR_TS[f["type"]] for f in p["fields"]]
        h = "ReadonlyArray<readonly [%s]>" % ", ".join(fs)
        if len(fs) == 2:
            k, v = (fs[1], fs[0]) if swapped(p) else (fs[0], fs[1])
            h += " | ReadonlyMap<%s, %s> | Record<string, %s>" % (k, v, v)
        return h
    b = SCALAR_TS[p["type"]]
    return "ReadonlyArray<%s>" % b if p.get("list") else b


def needs_shaping(t):
    n = t["t"]
    if n in ("ok", "bool", "double", "cursor", "set", "map", "pairs", "tuple"):
        return True
    if n == "array":
        return needs_shaping(t["of"][0])
    return False


def shaper_name(reply):
    return "T_" + re.sub(r"[^A-Za-z0-9]", "_", reply.replace("?", "_n"))


def js_val(p, expr, name):
    if p == "int":
        return "int('%s', %s)" % (name, expr)
    if p == "double":
        return "dbl('%s', %s)" % (name, expr)
    return expr


def emit(ops, m, out, ind, src):
    pt = {p["name"]: p for p in m["params"]}
    for op in ops:
        o = op["op"]
        p = pt.get(op.get("p"))
        v = src(op["p"]) if "p" in op else None
        tok = "'%s'" % op["t"] if "t" in op else None
        if o == "token":
            out.append("%sa.push(%s);" % (ind, tok))
        elif o == "arg":
            if tok:
                out.append("%sa.push(%s);" % (ind, tok))
            out.append("%sa.push(%s);" % (ind, js_val(p["type"], v, p["name"])))
        elif o == "opt":
            out.append("%sif (%s !== undefined && %s !== null) {" % (ind, v, v))
            if tok:
                out.append("%s  a.push(%s);" % (ind, tok))
            out.append("%s  a.push(%s);" % (ind, js_val(p["type"], v, p["name"])))
            out.append("%s}" % ind)
        elif o == "flag":
            out.append("%sif (%s) a.push(%s);" % (ind, flag(v, p["name"]), tok))
        elif o == "count":
            out.append("%sa.push(%s ? %s.length : 0);" % (ind, v, v) if p["optional"] else "%sa.push(%s.length);" % (ind, v))
        elif o == "list":
            out.append("%sif (%s !== undefined && %s !== null) {" % (ind, v, v))
            out.append("%s  if (!Array.isArray(%s)) throw new TypeError('slotlane: %s: %s must be an array');" % (ind, v, m["command"], p["name"]))
            if tok and not op.get("each"):
                out.append("%s  if (%s.length > 0) a.push(%s);" % (ind, v, tok))
            out.append("%s  for (const x of %s) {" % (ind, v))
            if op.get("each"):
                out.append("%s    a.push(%s);" % (ind, tok))
            out.append("%s    a.push(%s);" % (ind, js_val(p["type"], "x", p["name"])))
            out.append("%s  }" % ind)
            out.append("%s}" % ind)
        elif o == "tuples":
            kinds = [f["type"] for f in p["fields"]]
            out.append("%sif (%s !== undefined && %s !== null) tuples(a, '%s', %s, %s, %s, %s, %s);" % (
                ind, v, v, p["name"], v, json.dumps(kinds), tok or "null", "true" if op.get("each") else "false",
                "true" if swapped(p) else "false"))
        elif o == "group":
            out.append("%sif (%s !== undefined && %s !== null) {" % (ind, v, v))
            if tok:
                out.append("%s  a.push(%s);" % (ind, tok))
            emit(op["body"], m, out, ind + "  ", src)
            out.append("%s}" % ind)
        elif o == "choice":
            conds = []
            for x in op["body"]:
                if "p" in x:
                    vv = src(x["p"])
                    conds.append(flag(vv, x["p"]) if pt[x["p"]]["type"] == "flag" else "(%s !== undefined && %s !== null)" % (vv, vv))
            out.append("%sif (%s) {" % (ind, " || ".join(conds)))
            out.append("%s  a.push(%s);" % (ind, tok))
            emit(op["body"], m, out, ind + "  ", src)
            out.append("%s}" % ind)
        else:
            raise ValueError(o)


def flag(v, name):
    return "flag('%s', %s)" % (name, v)


def method_js(m):
    req = [p for p in m["params"] if not p["optional"]]
    opt = [p for p in m["params"] if p["optional"]]
    va = is_varargs(m)
    names = [pname(p["name"]) for p in req]
    args = list(names)
    if va:
        args[-1] = "..." + args[-1]
    if opt:
        args.append("opts")
    shaper = shaper_name(m["reply"]) if needs_shaping(m["type"]) else "null"
    name = camel(m["method"])
    words = ", ".join("'%s'" % w for w in m["words"])
    L = []
    L.append("  // %s: %s" % (m["command"], m["summary"].rstrip(".")))
    L.append("  %s(%s) {" % (name, ", ".join(args)))
    if va:
        n = names[-1]
        L.append("    if (%s.length === 1 && Array.isArray(%s[0])) %s = %s[0];" % (n, n, n, n))
        L.append("    if (%s.length === 0) throw new ArgumentError('slotlane: %s: %s needs at least one element', 'argument');" % (n, m["command"], req[-1]["name"]))
    simple = all(p["type"] in ("key", "value") and not p.get("list") for p in req) and len(m["words"]) == 1
    enc_req = m["encode"][:len(req)]
    simple = simple and [op.get("p") for op in enc_req] == [p["name"] for p in req] and all(op["op"] == "arg" and "t" not in op for op in enc_req) \
        and not any(op["op"] in ("arg", "token", "count", "list", "tuples") for op in m["encode"][len(req):])
    if simple:
        fast = "return this._typed([%s], %s);" % (", ".join([words] + names), shaper)
        if opt:
            L.append("    if (opts === undefined) %s" % fast)
        else:
            L.append("    " + fast)
            L.append("  },")
            return L
    if opt:
        L.append("    const o = options(opts, '%s');" % m["command"])
    L.append("    const a = [%s];" % words)

    def src(n):
        p = next(q for q in m["params"] if q["name"] == n)
        return pname(n) if not p["optional"] else "o.%s" % camel(n)
    for p in req:
        if p.get("list") and not va and p["type"] != "tuple":  # tuples() checks its own
            L.append("    if (!Array.isArray(%s) || %s.length === 0) throw new ArgumentError('slotlane: %s: %s needs at least one element', 'argument');"
                     % (pname(p["name"]), pname(p["name"]), m["command"], p["name"]))
    emit(m["encode"], m, L, "    ", src)
    L.append("    return this._typed(a, %s);" % shaper)
    L.append("  },")
    return L


def render_js(ctx):
    ms = ctx.methods
    L = ["'use strict';",
         "//" + ctx.generated_note("").rstrip(),
         "//",
         "// The typed methods of Client and Pipeline: each builds its command's arguments by the",
         "// spec's encoding program (bindings/spec/README.md) and names its reply type's shaper.",
         "// Routing, splitting and redirects are the core's. this._typed(args, shaper) is the",
         "// client's (a Promise of the shaped reply) or the pipeline's (queue, return the pipeline).",
         "const shapes = require('./shapes');",
         "const { ArgumentError } = require('./errors');",
         "const { int, dbl, flag, options, tuples } = shapes;",
         ""]
    replies = sorted({m["reply"] for m in ms if needs_shaping(m["type"])})
    for r in replies:
        L.append("const %s = shapes.shaper('%s');" % (shaper_name(r), r))
    L.append("")
    L.append("const methods = {")
    for m in ms:
        L += method_js(m)
    L.append("};")
    L.append("")
    L.append("/** The spec's method names -> the JavaScript method names. */")
    L.append("const METHODS = Object.freeze({")
    for m in ms:
        L.append("  %s: '%s'," % (m["method"], camel(m["method"])))
    L.append("});")
    L.append("")
    L.append("/** Puts the typed methods on Client.prototype and Pipeline.prototype. */")
    L.append("function install(...classes) {")
    L.append("  for (const cls of classes) {")
    L.append("    for (const [name, fn] of Object.entries(methods)) {")
    L.append("      Object.defineProperty(cls.prototype, name, { value: fn, writable: true, configurable: true });")
    L.append("    }")
    L.append("  }")
    L.append("}")
    L.append("")
    L.append("module.exports = { install, METHODS };")
    return "\n".join(L) + "\n"


def render_dts(ctx):
    ms = ctx.methods
    L = ["//" + ctx.generated_note("").rstrip(),
         "// The typed methods of Client<S> (Promise of the reply type; S = string, or Buffer with",
         "// returnBuffers) and Pipeline<S> (queue and return the pipeline).",
         "",
         "/// <reference types=\"node\" />",
         "import type { Reply } from './index';",
         "",
         "/** A key: a string (sent as UTF-8) or bytes. */",
         "export type Key = string | Buffer | Uint8Array;",
         "/** A value, member, field or range bound: a key, or a number (sent as decimal text). */",
         "export type Value = Key | number | bigint;",
         "/** An integer parameter: an integer number or a bigint. */",
         "export type Int = number | bigint;",
         ""]
    for which in ("Client", "Pipeline"):
        L.append("/** The typed methods of %s (generated). */" % which)
        L.append("export interface %sCommands<S extends string | Buffer> {" % which)
        for m in ms:
            req = [p for p in m["params"] if not p["optional"]]
            opt = [p for p in m["params"] if p["optional"]]
            va = is_varargs(m)
            args = []
            for i, p in enumerate(req):
                if va and i == len(req) - 1:
                    args.append("...%s: %s[] | [ReadonlyArray<%s>]" % (pname(p["name"]), SCALAR_TS[p["type"]], SCALAR_TS[p["type"]]))
                else:
                    args.append("%s: %s" % (pname(p["name"]), param_ts(p)))
            if opt:
                args.append("opts?: { %s }" % "; ".join("%s?: %s" % (camel(p["name"]), param_ts(p)) for p in opt))
            ret = "Promise<%s>" % ts_type(m["type"]) if which == "Client" else "this"
            doc = "%s (%s): %s. Reply: %s." % (m["command"], m["group"], m["summary"].rstrip("."), m["reply"])
            if m.get("deprecated"):
                doc += " @deprecated since Redis %s%s" % (m["deprecated"], "; use %s" % m["replaced_by"] if m.get("replaced_by") else "")
            if m.get("doc"):
                doc += " " + m["doc"]
            L.append("  /** %s */" % doc.replace("*/", "* /"))
            L.append("  %s(%s): %s;" % (camel(m["method"]), ", ".join(args), ret))
        L.append("}")
        L.append("")
    L.append("/** The spec's method names -> the JavaScript method names. */")
    L.append("export declare const METHODS: Readonly<Record<string, string>>;")
    return "\n".join(L) + "\n"


def render_errors(ctx):
    e = ctx.errors
    L = ["'use strict';",
         "//" + ctx.generated_note("").rstrip(),
         "//",
         "// The error classes of slotlane, one per type of bindings/spec/errors.json. Every error a",
         "// command can fail with is a SlotlaneError; `kind` tells which of the core's error kinds",
         "// (sl_err_kind) or codes it came from ('closed': the client was closed).",
         ""]
    names = [ERROR_NAMES.get(t["name"], t["name"]) for t in e["types"]]
    for t in e["types"]:
        n = ERROR_NAMES.get(t["name"], t["name"])
        L.append("/** %s */" % t["doc"])
        if t["parent"] is None:
            L += ["class SlotlaneError extends Error {",
                  "  constructor(message, kind = '%s') {" % t["kind"],
                  "    super(message);",
                  "    this.name = this.constructor.name;",
                  "    this.kind = kind;",
                  "  }",
                  "}"]
        elif t["name"] == "ResponseError":
            L += ["class ReplyError extends %s {" % ERROR_NAMES.get(t["parent"], t["parent"]),
                  "  constructor(message, kind = 'server') {",
                  "    super(message, kind);",
                  "    const sp = message.indexOf(' ');",
                  "    this.code = sp < 0 ? message : message.slice(0, sp);",
                  "  }",
                  "}"]
        else:
            L += ["class %s extends %s {" % (n, ERROR_NAMES.get(t["parent"], t["parent"])),
                  "  constructor(message, kind = '%s') { super(message, kind); }" % t["kind"],
                  "}"]
        L.append("")
    kinds = sorted(e["kinds"].items(), key=lambda kv: ctx.enums["kinds"][kv[0]])
    L.append("// sl_err_kind order (core/include/slotlane.h)")
    L.append("const KINDS = [%s];" % ", ".join("'%s'" % v[0] for _, v in kinds))
    L.append("const KIND_CLASS = [%s];" % ", ".join(ERROR_NAMES.get(v[1], v[1]) for _, v in kinds))
    L.append("")
    L.append("function errorFromRecord(flags, message) {")
    L.append("  const C = KIND_CLASS[flags] || SlotlaneError;")
    L.append("  return new C(message, KINDS[flags] || 'unknown');")
    L.append("}")
    L.append("")
    L.append("// SL_E* codes (negative) of whole-call failures: [class, kind]")
    L.append("const CODES = {")
    for k, v in sorted(e["codes"].items(), key=lambda kv: -ctx.enums["codes"][kv[0]]):
        kind = next(t["kind"] for t in e["types"] if t["name"] == v)
        L.append("  [%d]: [%s, '%s'], // %s" % (ctx.enums["codes"][k], ERROR_NAMES.get(v, v), kind if kind != "client" else k[4:].lower(), k))
    L.append("};")
    L.append("")
    L.append("function errorFromCode(code, message) {")
    L.append("  const c = CODES[code];")
    L.append("  return c ? new c[0](message, c[1]) : new SlotlaneError(message, 'unknown');")
    L.append("}")
    L.append("")
    L.append("module.exports = {")
    L.append("  %s," % ", ".join(names))
    L.append("  errorFromRecord, errorFromCode, KINDS, CODES,")
    L.append("};")
    return "\n".join(L) + "\n"


def render(ctx):
    return {OUT_JS: render_js(ctx), OUT_DTS: render_dts(ctx), OUT_ERRORS: render_errors(ctx)}
