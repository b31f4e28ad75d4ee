"""render.py's Go module: go/commands_gen.go (the typed methods of Client and Pipeline, their
option structs) and go/errors_gen.go (the errors table: codes and kinds -> sentinels).

Idiom: exported CamelCase methods with godoc; every Client method takes ctx first and returns
(T, error); required parameters positional, options in a *<Method>Options struct (nil: none);
a method whose only list is its last parameter of all is variadic. Nullable scalars are
pointers (nil: the reply was nil), nullable aggregates nil slices or maps. A Pipeline method
queues and returns a Reply[T] (a value, no allocation) whose Result() gives (T, error) after
Exec. The output goes through gofmt (CI's gofmt -l stays clean)."""
import subprocess

from render_common import is_varargs, type_ident

OUT = "go/commands_gen.go"
OUT_ERR = "go/errors_gen.go"

GO_KEYWORDS = {"break", "case", "chan", "const", "continue", "default", "defer", "else", "fallthrough",
               "for", "func", "go", "goto", "if", "import", "interface", "map", "package", "range",
               "return", "select", "struct", "switch", "type", "var", "string", "any", "len", "min",
               "max", "copy", "a", "c", "p", "ctx", "opts", "error", "int", "bool"}
SCALAR = {"key": "string", "value": "any", "int": "int64", "double": "float64"}


def exported(n):
    return "".join(w[:1].upper() + w[1:] for w in n.split("_"))


def local(n):
    e = exported(n)
    v = e[:1].lower() + e[1:]
    return v + "Arg" if v in GO_KEYWORDS else v


def go_type(t):
    n = t["t"]
    null = t.get("null")
    if n in ("ok",):
        return "bool"
    base = {"status": "string", "string": "string", "int": "int64", "bool": "bool", "double": "float64",
            "cursor": "uint64", "any": "Value"}.get(n)
    if base is not None:
        if n == "any":
            return "Value"
        return "*" + base if null else base
    if n in ("array", "set"):
        return "[]" + go_type(t["of"][0])
    if n == "map":
        return "map[%s]%s" % (go_type(t["of"][0]), go_type(t["of"][1]))
    if n == "pairs":
        return "[]Pair[%s, %s]" % (go_type(t["of"][0]), go_type(t["of"][1]))
    if n == "tuple":
        s = "Tuple2[%s, %s]" % (go_type(t["of"][0]), go_type(t["of"][1]))
        return "*" + s if null else s
    raise ValueError(n)


def shaper(t):
    """The Go expression of the shaper func(Value) (T, error) of a type (shapes.go)."""
    n = t["t"]
    null = t.get("null")
    if n == "ok":
        return "shapeOKNil" if null else "shapeOK"
    simple = {"status": "Status", "string": "String", "int": "Int", "bool": "Bool", "double": "Double",
              "cursor": "Cursor"}
    if n in simple:
        return ("shapeOpt%s" if null else "shape%s") % simple[n]
    if n == "any":
        return "shapeAny"
    if n == "array":
        return "shapeArray(%s)" % shaper(t["of"][0])
    if n == "set":
        return "shapeArray(%s)" % shaper(t["of"][0])
    if n == "map":
        return "shapeMap(%s, %s)" % (shaper(t["of"][0]), shaper(t["of"][1]))
    if n == "pairs":
        return "shapePairs(%s, %s)" % (shaper(t["of"][0]), shaper(t["of"][1]))
    if n == "tuple":
        if len(t["of"]) != 2:
            raise ValueError("Go renders 2-tuples only")
        f = "shapeTuple2(%s, %s)" % (shaper(t["of"][0]), shaper(t["of"][1]))
        return "shapeOpt(%s)" % f if null else f
    raise ValueError(n)


def var_name(reply):
    return type_ident("shp", reply)




def tuple_go(p):
    fs = [SCALAR[f["type"]] for f in p["fields"]]
    if len(fs) == 2:
        return "Pair[%s, %s]" % tuple(fs)
    if len(fs) == 3:
        return "Tuple3[%s, %s, %s]" % tuple(fs)
    raise ValueError(p)


def param_go(p, optional_field=False):
    if p["type"] == "flag":
        return "bool"
    if p["type"] == "tuple":
        return "[]" + tuple_go(p)
    b = SCALAR[p["type"]]
    if p.get("list"):
        return "[]" + b
    if optional_field and b != "any":
        return "*" + b
    return b


def emit(ops, m, out, ind, src):
    pt = {p["name"]: p for p in m["params"]}
    for op in ops:
        o = op["op"]
        p = pt.get(op.get("p"))
        v = src(op["p"]) if "p" in op else None
        tok = '"%s"' % op["t"] if "t" in op else None
        if o == "token":
            out.append("%sa = append(a, %s)" % (ind, tok))
        elif o == "arg":
            if tok:
                out.append("%sa = append(a, %s)" % (ind, tok))
            out.append("%sa = append(a, %s)" % (ind, v))
        elif o == "opt":
            nil_ok = "nil"
            out.append("%sif %s != %s {" % (ind, v, nil_ok))
            if tok:
                out.append("%s\ta = append(a, %s)" % (ind, tok))
            out.append("%s\ta = append(a, %s)" % (ind, v if p["type"] == "value" else "*" + v))
            out.append("%s}" % ind)
        elif o == "flag":
            out.append("%sif %s {" % (ind, v))
            out.append("%s\ta = append(a, %s)" % (ind, tok))
            out.append("%s}" % ind)
        elif o == "count":
            out.append("%sa = append(a, len(%s))" % (ind, v))
        elif o == "list":
            if tok and not op.get("each"):
                out.append("%sif len(%s) > 0 {" % (ind, v))
                out.append("%s\ta = append(a, %s)" % (ind, tok))
                out.append("%s}" % ind)
            out.append("%sfor _, x := range %s {" % (ind, v))
            if op.get("each"):
                out.append("%s\ta = append(a, %s)" % (ind, tok))
            out.append("%s\ta = append(a, x)" % ind)
            out.append("%s}" % ind)
        elif o == "tuples":
            if tok and not op.get("each"):
                out.append("%sif len(%s) > 0 {" % (ind, v))
                out.append("%s\ta = append(a, %s)" % (ind, tok))
                out.append("%s}" % ind)
            out.append("%sfor _, x := range %s {" % (ind, v))
            if op.get("each"):
                out.append("%s\ta = append(a, %s)" % (ind, tok))
            n = len(p["fields"])
            fields = ["x.Key", "x.Value"] if n == 2 else ["x.A", "x.B", "x.C"]
            out.append("%s\ta = append(a, %s)" % (ind, ", ".join(fields)))
            out.append("%s}" % ind)
        elif o == "group":
            cond = "%s != nil" % v if p["type"] != "flag" and not p.get("list") else ("len(%s) > 0" % v if p.get("list") else v)
            out.append("%sif %s {" % (ind, cond))
            if tok:
                out.append("%s\ta = append(a, %s)" % (ind, tok))
            emit(op["body"], m, out, ind + "\t", src)
            out.append("%s}" % ind)
        elif o == "choice":
            conds = []
            for x in op["body"]:
                if "p" in x:
                    q = pt[x["p"]]
                    conds.append(src(x["p"]) if q["type"] == "flag" else "%s != nil" % src(x["p"]))
            out.append("%sif %s {" % (ind, " || ".join(conds)))
            out.append("%s\ta = append(a, %s)" % (ind, tok))
            emit(op["body"], m, out, ind + "\t", src)
            out.append("%s}" % ind)
        else:
            raise ValueError(o)


def doc_lines(m, name, extra=""):
    d = "// %s runs %s (%s): %s." % (name, m["command"], m["group"], m["summary"].rstrip("."))
    lines = [d]
    tail = "// Reply: %s%s" % (m["reply"], " -- " + m["doc"] if m.get("doc") else ".")
    lines.append(tail)
    if extra:
        lines.append("// " + extra)
    if m.get("deprecated"):
        lines.append("//")
        lines.append("// Deprecated: since Redis %s%s." % (m["deprecated"], "; use %s" % m["replaced_by"] if m.get("replaced_by") else ""))
    return lines


def fast_simple(m):
    req = [p for p in m["params"] if not p["optional"]]
    if len(m["words"]) != 1 or not 1 <= len(req) <= 2 or any(p["type"] not in ("key", "value") or p.get("list") for p in req):
        return False
    enc = m["encode"][:len(req)]
    return ([op.get("p") for op in enc] == [p["name"] for p in req] and all(op["op"] == "arg" and "t" not in op for op in enc)
            and not any(op["op"] in ("arg", "token", "count", "list", "tuples") for op in m["encode"][len(req):]))


def render_methods(ctx):
    ms = ctx.methods
    L = ["// Code generated by bindings/spec/render.py from bindings/spec/commands.json (redis %s); DO NOT EDIT." % ctx.spec["redis"],
         "",
         "package slotlane",
         "",
         'import "context"',
         "",
         "// The typed methods of every command of the spec (bindings/spec/README.md): each builds",
         "// its command's arguments by the spec's encoding program and shapes the reply by its type.",
         ""]
    types = sorted({m["reply"] for m in ms})
    L.append("var (")
    for r in types:
        t = next(m["type"] for m in ms if m["reply"] == r)
        L.append("\t%s = %s" % (var_name(r), shaper(t)))
    L.append(")")
    L.append("")
    for m in ms:
        name = exported(m["method"])
        req = [p for p in m["params"] if not p["optional"]]
        opt = [p for p in m["params"] if p["optional"]]
        va = is_varargs(m)
        oname = name + "Options"
        if opt:
            L.append("// %s are the options of %s (nil: none). A nil pointer or false leaves an option out." % (oname, name))
            L.append("type %s struct {" % oname)
            for p in opt:
                L.append("\t%s %s" % (exported(p["name"]), param_go(p, True)))
            L.append("}")
            L.append("")
        params = []
        for i, p in enumerate(req):
            if va and i == len(req) - 1:
                params.append("%s ...%s" % (local(p["name"]), SCALAR[p["type"]]))
            else:
                params.append("%s %s" % (local(p["name"]), param_go(p)))
        if opt:
            params.append("opts *%s" % oname)
        ret = go_type(m["type"])
        sh = var_name(m["reply"])

        def src(n):
            p = next(q for q in m["params"] if q["name"] == n)
            return local(n) if not p["optional"] else "opts.%s" % exported(n)
        # the argument builder, shared by the client's and the pipeline's method
        body = []
        body.append("\ta := make([]any, 0, %d)" % (len(m["words"]) + len(m["params"]) + 4))
        body.append("\ta = append(a, %s)" % ", ".join('"%s"' % w for w in m["words"]))
        reqops = [op for op in m["encode"] if not (op.get("p") in {p["name"] for p in opt}) or op["op"] in ("token",)]
        del reqops
        if opt:
            body.append("\tif opts == nil {")
            body.append("\t\topts = &%s{}" % oname)
            body.append("\t}")
        for p in req:
            if p.get("list"):
                body.append("\tif len(%s) == 0 {" % local(p["name"]))
                body.append('\t\treturn nil, argError("%s: %s needs at least one element")' % (m["command"], p["name"]))
                body.append("\t}")
        emit(m["encode"], m, body, "\t", src)
        body.append("\treturn a, nil")
        L.append("func args%s(%s) ([]any, error) {" % (name, ", ".join(params)))
        L += body
        L.append("}")
        L.append("")
        call = ", ".join([local(p["name"]) + ("..." if va and p is req[-1] else "") for p in req] + (["opts"] if opt else []))
        L += doc_lines(m, name)
        L.append("func (c *Client) %s(ctx context.Context%s) (%s, error) {" % (name, "".join(", " + x for x in params), ret))
        L.append("\ta, err := args%s(%s)" % (name, call))
        L.append("\tif err != nil {")
        L.append("\t\tvar zero %s" % ret)
        L.append("\t\treturn zero, err")
        L.append("\t}")
        L.append("\treturn shapeResult(c.Do(ctx, a...), %s)" % sh)
        L.append("}")
        L.append("")
        L += doc_lines(m, name, "It queues the command; the Reply's Result gives (%s, error) after Exec." % ret)
        L.append("func (p *Pipeline) %s(%s) Reply[%s] {" % (name, ", ".join(params), ret))
        if fast_simple(m) and not opt:
            names = [local(p["name"]) for p in req]
            if all(p["type"] == "key" for p in req):
                hdr = "*%d\\r\\n$%d\\r\\n%s\\r\\n" % (len(req) + 1, len(m["words"][0]), m["words"][0])
                L.append('\tp.buf = append(p.buf, "%s"...)' % hdr)
                for n in names:
                    L.append("\tp.buf = appendBulkString(p.buf, %s)" % n)
                L.append("\tp.n++")
                L.append("\treturn Reply[%s]{p: p, i: p.n - 1, gen: p.gen, shape: %s}" % (ret, sh))
                L.append("}")
                L.append("")
                continue
        L.append("\ta, err := args%s(%s)" % (name, call))
        L.append("\treturn queue(p, a, err, %s)" % sh)
        L.append("}")
        L.append("")
        # the no-allocation []byte form of a pipeline command whose last parameter is a value
        if fast_simple(m) and req[-1]["type"] == "value" and all(p["type"] == "key" for p in req[:-1]):
            keys = [local(p["name"]) for p in req[:-1]]
            bname = name + "Bytes"
            hdr = "*%d\\r\\n$%d\\r\\n%s\\r\\n" % (len(req) + 1, len(m["words"][0]), m["words"][0])
            L.append("// %s queues %s with a []byte %s, without allocating (options: %s)." % (bname, m["command"], req[-1]["name"], name))
            L.append("func (p *Pipeline) %s(%s) Reply[%s] {" % (bname, ", ".join(["%s string" % k for k in keys] + ["%s []byte" % local(req[-1]["name"])]), ret))
            L.append("\tif %s == nil {" % local(req[-1]["name"]))
            L.append('\t\treturn queue(p, nil, argError("%s: a nil []byte %s"), %s)' % (m["command"], req[-1]["name"], sh))
            L.append("\t}")
            L.append('\tp.buf = append(p.buf, "%s"...)' % hdr)
            for k in keys:
                L.append("\tp.buf = appendBulkString(p.buf, %s)" % k)
            L.append("\tp.buf = appendBulkBytes(p.buf, %s)" % local(req[-1]["name"]))
            L.append("\tp.n++")
            L.append("\treturn Reply[%s]{p: p, i: p.n - 1, gen: p.gen, shape: %s}" % (ret, sh))
            L.append("}")
            L.append("")
    L.append("// Methods maps the spec's method names to the Go method names.")
    L.append("var Methods = map[string]string{")
    for m in ms:
        L.append('\t"%s": "%s",' % (m["method"], exported(m["method"])))
    L.append("}")
    return "\n".join(L) + "\n"


def render_errors(ctx):
    e = ctx.errors
    sentinel = {"ArgumentError": "ErrInvalid", "ConnectionError": "ErrConnection", "TimeoutError": "ErrTimeout",
                "ProtocolError": "ErrProtocol", "ClusterError": "ErrCluster", "CancelledError": "ErrCancelled",
                "ResponseError": None, "ResourceError": "ErrResource", "TlsError": "ErrTLS",
                "WatchError": "ErrWatch", "WatchMovedError": "ErrWatchMoved",
                "BlockingPipelineError": "ErrBlockingPipeline"}
    L = ["// Code generated by bindings/spec/render.py from bindings/spec/errors.json; DO NOT EDIT.",
         "",
         "package slotlane",
         "",
         "// The errors table of bindings/spec/errors.json: every SL_E* code and sl_err_kind of",
         "// slotlane.h -> the sentinel a *Error or *ResponseError wraps (errors.Is). A too-many-",
         "// redirects failure also wraps ErrRedirects.",
         "",
         "// The sentinels of errors.json's types (errors.go has the Go-only ones: ErrNil, ErrClosed,",
         "// ErrRedirects, ErrUnsupported, ErrUnexpectedType); a *ResponseError is the ResponseError.",
         "var ("]
    for t in e["types"]:
        s = sentinel.get(t["name"])
        if not s:
            continue
        L.append("\t// %s: %s (errors.json %s)" % (s, t["doc"], t["name"]))
        text = {"ErrInvalid": "invalid argument", "ErrConnection": "connection error", "ErrTimeout": "timeout",
                "ErrProtocol": "protocol error", "ErrCluster": "cluster error", "ErrCancelled": "cancelled",
                "ErrResource": "resource error", "ErrTLS": "TLS error",
                "ErrWatch": "transaction aborted (a watched key changed)",
                "ErrWatchMoved": "slot moved while watched",
                "ErrBlockingPipeline": "blocking command in a pipeline"}[s]
        L.append('\t%s error = &sentinel{msg: "slotlane: %s"%s}' % (s, text, ", timeout: true" if s == "ErrTimeout" else ""))
    L += [")",
         "",
         "func sentinelOfCode(code int) error {",
         "\tswitch code {"]
    for k, v in sorted(e["codes"].items(), key=lambda kv: -ctx.enums["codes"][kv[0]]):
        s = sentinel[v]
        if k == "SL_EREDIRECT":
            s = "ErrRedirects"
        if k == "SL_EUNSUPPORTED":
            s = "ErrUnsupported"
        if k == "SL_ESERVER":
            continue
        L.append("\tcase %d: // %s -> %s" % (ctx.enums["codes"][k], k, v))
        L.append("\t\treturn %s" % s)
    L.append("\t}")
    L.append("\treturn nil")
    L.append("}")
    L.append("")
    L.append("func sentinelOfKind(k ErrorKind) error {")
    L.append("\tswitch k {")
    for k, (kind, cls) in sorted(e["kinds"].items(), key=lambda kv: ctx.enums["kinds"][kv[0]]):
        if cls == "ResponseError":
            continue
        s = "ErrRedirects" if k == "SL_ERR_REDIRECTS" else sentinel[cls]
        L.append("\tcase %d: // %s -> %s" % (ctx.enums["kinds"][k], k, cls))
        L.append("\t\treturn %s" % s)
    L.append("\t}")
    L.append("\treturn nil")
    L.append("}")
    return "\n".join(L) + "\n"


def gofmt(src):
    p = subprocess.run(["gofmt"], input=src, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("render_go: gofmt failed: %s" % p.stderr[:2000])
    return p.stdout


def render(ctx):
    return {OUT: gofmt(render_methods(ctx)), OUT_ERR: gofmt(render_errors(ctx))}
