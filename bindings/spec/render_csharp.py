"""render.py's C# module: csharp/Slotlane.Client/Commands.g.cs (the typed methods of
SlotlaneClient and Pipeline, partial classes, with XML docs; the argument builders and reply
shapes they share), CommandsAsync.g.cs (the client's Task methods), CommandOptions.g.cs (one options struct per method that has options) and
Errors.g.cs (ErrorKind, the exception classes and the code/kind -> exception table of errors.json).

Idiom: PascalCase methods; required parameters positional, then, for a method with options, an overload taking an `XOptions options`
(a struct: fields left at their defaults are left out) besides the one without; keys string,
values object (string, byte[], an integer or a float; a bool is refused), ints long, doubles
double, tuple lists arrays of named value tuples; a method whose only list is its last parameter
of all is `params`. The client's methods return the reply type, the pipeline's a Reply<T>, the
client's XxxAsync methods (CommandsAsync.g.cs) a Task<T> and take a CancellationToken last.
C# 7.2 (Mono's mcs) and netstandard2.1/net8.0 alike."""
from render_common import is_varargs, type_ident


OUT = "csharp/Slotlane.Client/"

CS_KEYWORDS = set("""abstract as base bool break byte case catch char checked class const continue decimal
default delegate do double else enum event explicit extern false finally fixed float for foreach goto if
implicit in int interface internal is lock long namespace new null object operator out override params
private protected public readonly ref return sbyte sealed short sizeof stackalloc static string struct
switch this throw true try typeof uint ulong unchecked unsafe ushort using virtual void volatile while
options a""".split())

EXC = {"Error": "SlotlaneException", "ResponseError": "SlotlaneReplyException",
       "ConnectionError": "SlotlaneConnectionException", "ProtocolError": "SlotlaneProtocolException",
       "TimeoutError": "SlotlaneTimeoutException", "ClusterError": "SlotlaneClusterException",
       "CancelledError": "SlotlaneCancelledException", "ArgumentError": "SlotlaneArgumentException",
       "ResourceError": "SlotlaneResourceException", "TlsError": "SlotlaneTlsException",
       "WatchError": "SlotlaneWatchException", "WatchMovedError": "SlotlaneWatchMovedException",
       "BlockingPipelineError": "SlotlaneBlockingPipelineException"}


def pascal(n):
    return "".join(x[:1].upper() + x[1:] for x in n.split("_"))


def local(n):
    w = n.split("_")
    v = w[0] + "".join(x[:1].upper() + x[1:] for x in w[1:])
    return "@" + v if v in CS_KEYWORDS else v


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


VALUE_TYPES = {"ok", "int", "bool", "double", "cursor", "tuple"}
BASE = {"ok": "bool", "status": "string", "string": "string", "int": "long", "bool": "bool",
        "double": "double", "cursor": "ulong", "any": "object"}


def cstype(t):
    n = t["t"]
    null = t.get("null")
    if n in BASE:
        b = BASE[n]
        return b + "?" if null and n in VALUE_TYPES and n != "ok" else b
    kids = [cstype(k) for k in t["of"]]
    if n == "array":
        return kids[0] + "[]"
    if n == "set":
        return "HashSet<%s>" % kids[0]
    if n == "map":
        return "Dictionary<%s, %s>" % tuple(kids)
    if n == "pairs":
        return "KeyValuePair<%s, %s>[]" % tuple(kids)
    if n == "tuple":
        if len(kids) != 2:
            raise ValueError("C# renders 2-tuples only")
        return "ValueTuple<%s, %s>%s" % (kids[0], kids[1], "?" if null else "")
    raise ValueError(n)


def shape_expr(t):
    n = t["t"]
    null = t.get("null")
    if n in BASE:
        if n == "any":
            return "Shapes.Any"
        if n == "ok":
            return "Shapes.OkNil" if null else "Shapes.Ok"
        base = "Shapes.%s" % pascal(n)
    else:
        kids = [shape_expr(k) for k in t["of"]]
        base = "Shapes.%s(%s)" % (pascal(n), ", ".join(kids))
    if not null:
        return base
    plain = dict(t)
    plain.pop("null")
    if n in VALUE_TYPES:
        return "Shapes.NullableValue(%s)" % base
    return "Shapes.NullableRef(%s)" % base


def shape_name(reply):
    return type_ident("S_", reply, upper=True)




SCALAR = {"key": "string", "value": "object", "int": "long", "double": "double", "flag": "bool"}


def tuple_type(p):
    # unnamed: Mono's mcs refuses to pass an array of named tuples on (its element names are in the docs)
    return "ValueTuple<%s>[]" % ", ".join(SCALAR[f["type"]] for f in p["fields"])


def param_type(p):
    if p["type"] == "tuple":
        return tuple_type(p)
    if p.get("list"):
        return SCALAR[p["type"]] + "[]"
    return SCALAR[p["type"]]


def field_type(p):
    if p["type"] == "tuple" or p.get("list") or p["type"] in ("key", "value", "flag"):
        return param_type(p)
    return SCALAR[p["type"]] + "?"


def param_doc(p):
    if p["type"] == "tuple":
        return "The (%s) tuples." % ", ".join(f["name"] for f in p["fields"])
    what = {"key": "key", "value": "value", "int": "integer", "double": "number", "flag": "flag"}[p["type"]]
    if p.get("list"):
        return "The %s (%ss)." % (p["name"].replace("_", " "), what)
    return "The %s (%s)." % (p["name"].replace("_", " "), what)


def emit(ops, m, out, ind, src):
    pt = {p["name"]: p for p in m["params"]}

    def setexpr(name):
        p = pt[name]
        v = src(name)
        if p["type"] == "flag":
            return v
        if p.get("list") or p["type"] == "tuple":
            return "(%s != null && %s.Length > 0)" % (v, v)
        return "%s != null" % v if p["optional"] else "true"

    for op in ops:
        o = op["op"]
        p = pt.get(op.get("p"))
        v = src(op["p"]) if "p" in op else None
        tok = 'a.Add("%s");' % op["t"] if "t" in op else None
        if o == "token":
            out.append(ind + tok)
        elif o == "arg":
            if tok:
                out.append(ind + tok)
            out.append("%sa.Add(%s);" % (ind, v))
        elif o == "opt":
            out.append("%sif (%s != null)" % (ind, v))
            out.append(ind + "{")
            if tok:
                out.append(ind + "    " + tok)
            out.append("%s    a.Add(%s);" % (ind, v if p["type"] in ("key", "value") else v + ".Value"))
            out.append(ind + "}")
        elif o == "flag":
            out.append("%sif (%s) %s" % (ind, v, tok))
        elif o == "count":
            out.append("%sa.Add((long)(%s == null ? 0 : %s.Length));" % (ind, v, v))
        elif o in ("list", "tuples"):
            out.append("%sif (%s)" % (ind, setexpr(op["p"])))
            out.append(ind + "{")
            if tok and not op.get("each"):
                out.append(ind + "    " + tok)
            out.append("%s    foreach (var x in %s)" % (ind, v))
            out.append(ind + "    {")
            if op.get("each"):
                out.append(ind + "        " + tok)
            if o == "list":
                out.append(ind + "        a.Add(x);")
            else:
                for i, f in enumerate(p["fields"]):
                    out.append("%s        a.Add(x.Item%d);" % (ind, i + 1))
            out.append(ind + "    }")
            out.append(ind + "}")
        elif o == "group":
            out.append("%sif (%s)" % (ind, setexpr(op["p"])))
            out.append(ind + "{")
            if tok:
                out.append(ind + "    " + tok)
            emit(op["body"], m, out, ind + "    ", src)
            out.append(ind + "}")
        elif o == "choice":
            conds = [setexpr(x["p"]) for x in op["body"] if "p" in x]
            out.append("%sif (%s)" % (ind, " || ".join(conds)))
            out.append(ind + "{")
            out.append(ind + "    " + tok)
            emit(op["body"], m, out, ind + "    ", src)
            out.append(ind + "}")
        else:
            raise ValueError(o)


class M:
    def __init__(self, m):
        self.m = m
        self.name = pascal(m["method"])
        self.req = [p for p in m["params"] if not p["optional"]]
        self.opt = [p for p in m["params"] if p["optional"]]
        self.va = is_varargs(m)
        self.oname = self.name + "Options" if self.opt else None
        self.params = []
        for p in self.req:
            self.params.append("%s%s %s" % ("params " if self.va and p is self.req[-1] else "", param_type(p), local(p["name"])))
        self.args = [local(p["name"]) for p in self.req]
        if self.opt:
            self.params.append("%s options = default(%s)" % (self.oname, self.oname))
            self.args.append("options")
        self.ret = cstype(m["type"])
        self.shape = shape_name(m["reply"])


def fast(mm):
    """A one-word command of a key (and a value) sent first, its other parameters optional (GET, SET):
    the pipeline's pre-encoded prefix path when no option is set. (condition, expression) or None."""
    m = mm.m
    n = len(mm.req)
    if (len(m["words"]) != 1 or n not in (1, 2) or [p["type"] for p in mm.req] != ["key", "value"][:n]
            or [(op["op"], op.get("p"), "t" in op) for op in m["encode"][:n]] != [("arg", p["name"], False) for p in mm.req]
            or any(op["op"] in ("arg", "token", "count", "list", "tuples") for op in m["encode"][n:])):
        return None
    conds = []
    for p in mm.opt:
        f = "options." + pascal(p["name"])
        conds.append("!" + f if p["type"] == "flag" else "%s == null" % f)
    prefix = "P_" + mm.name
    # inline, in the method's own closed types (a generic helper costs Mono a runtime-generic-context
    # lookup per call: callgrind, bindings/spec/README.md "Measured")
    # the disposed check written out: Mono's JIT does not inline Check() (a call per command)
    stmts = ["if (_disposed) ThrowDisposed();"]
    for a in mm.args[:n]:
        stmts.append("if (%s == null) throw new ArgumentNullException(nameof(%s));" % (a, a))
    stmts.append("_w.%s(CommandArgs.%s, %s);" % ("AppendKey" if n == 1 else "AppendKeyValue", prefix, ", ".join(mm.args[:n])))
    # the handle's fields stored straight into a local of the closed type Reply<T>: its constructor is shared
    # generic code on Mono (T a reference type), a call with a generic-context argument per command
    stmts.append("Reply<%s> reply;" % mm.ret)
    stmts.append("reply._p = this;")
    stmts.append("reply._tag = (uint)(_w.Count - 1) | ((long)(_gen & 0xFFFFFF) << 32) | ((long)CommandArgs.I%s << 56);" % mm.shape[1:])
    stmts.append("return reply;")
    expr = stmts
    return (" && ".join(conds) or None, expr, prefix, '"*%d\\r\\n$%d\\r\\n%s\\r\\n"' % (n + 1, len(m["words"][0]), m["words"][0]))


def builder(mm):
    m = mm.m
    L = ["        internal static object[] %s(%s)" % (mm.name, ", ".join(p.replace(" = default(%s)" % mm.oname, "") for p in mm.params)),
         "        {"]
    for p in mm.req:
        n = local(p["name"])
        if p.get("list") or p["type"] == "tuple":
            L.append("            if (%s == null) throw new ArgumentNullException(\"%s\");" % (n, p["name"]))
            L.append('            if (%s.Length == 0) throw new ArgumentException("%s: %s needs at least one element", "%s");'
                     % (n, m["command"], p["name"], p["name"]))
        elif p["type"] in ("key", "value"):
            L.append("            if (%s == null) throw new ArgumentNullException(\"%s\");" % (n, p["name"]))
    simple = not mm.opt and all(op["op"] in ("arg", "token") for op in m["encode"]) and not any(p.get("list") or p["type"] == "tuple" for p in mm.req)
    if simple:
        items = ['"%s"' % w for w in m["words"]]
        for op in m["encode"]:
            if "t" in op:
                items.append('"%s"' % op["t"])
            if op["op"] == "arg":
                items.append(local(op["p"]))
        L.append("            return new object[] { %s };" % ", ".join(items))
    else:
        L.append("            var a = new List<object>(%d);" % (len(m["words"]) + len(m["params"]) + 4))
        for w in m["words"]:
            L.append('            a.Add("%s");' % w)

        def src(n):
            p = next(q for q in m["params"] if q["name"] == n)
            return local(n) if not p["optional"] else "options.%s" % pascal(n)
        emit(m["encode"], m, L, "            ", src)
        L.append("            return a.ToArray();")
    L.append("        }")
    return L


def xmldoc(mm, ind, returns, with_opts=True):
    m = mm.m
    L = [ind + "/// <summary><c>%s</c> (%s): %s.</summary>" % (esc(m["command"]), m["group"], esc(m["summary"].rstrip("."))),
         ind + "/// <remarks>Reply: <c>%s</c>%s Since Redis %s.%s</remarks>" % (
             esc(m["reply"]), " &#8212; " + esc(m["doc"]) if m.get("doc") else ".", m["since"],
             " Deprecated since Redis %s%s." % (m["deprecated"], "; use %s" % esc(m["replaced_by"]) if m.get("replaced_by") else "") if m.get("deprecated") else "")]
    for p in mm.req:
        L.append(ind + '/// <param name="%s">%s</param>' % (local(p["name"]).lstrip("@"), param_doc(p)))
    if mm.opt and with_opts:
        L.append(ind + '/// <param name="options">The options (fields left at their defaults are left out).</param>')
    L.append(ind + "/// <returns>%s</returns>" % returns)
    if m.get("deprecated"):
        L.append(ind + '[Obsolete("%s is deprecated since Redis %s")]' % (m["command"], m["deprecated"]))
    return L


def variants(mm):
    """(with options, parameters, builder arguments) of a method's overloads: a method with options has
    one without them (no options struct is made or copied: Mono zeroes a defaulted struct parameter on
    every call) and one with them."""
    if not mm.opt:
        return [(False, mm.params, mm.args)]
    plain = mm.params[:-1]
    return [(False, plain, mm.args[:-1] + ["default(%s)" % mm.oname]),
            (True, plain + ["%s options" % mm.oname], mm.args)]


def render_commands(ctx):
    ms = [M(m) for m in ctx.methods]
    L = [ctx.generated_note("//"), "", "using System;", "using System.Collections.Generic;", "",
         "#pragma warning disable 618 // the deprecated commands' methods call their own builders", "",
         "namespace Slotlane", "{",
         "    /// <summary>The argument builders and reply shapes of every method of the spec, shared by the client and the pipeline.</summary>",
         "    internal static class CommandArgs",
         "    {"]
    for r in sorted({m["reply"] for m in ctx.methods}):
        t = next(m["type"] for m in ctx.methods if m["reply"] == r)
        L.append("        internal static readonly Func<object, %s> %s = %s;" % (cstype(t), shape_name(r), shape_expr(t)))
    L.append("")
    # the Reply handles carry a shape as a one-byte id: its index here (Shapes.cs, ShapeIds)
    replies = sorted({m["reply"] for m in ctx.methods})
    L.append("        internal static readonly Delegate[] ShapeTable = { %s };" % ", ".join(shape_name(r) for r in replies))
    for i, r in enumerate(replies):
        L.append("        internal const int I%s = %d;" % (shape_name(r)[1:], i))
    L.append("")
    for mm in ms:
        f = fast(mm)
        if f:
            L.append("        internal static readonly byte[] %s = System.Text.Encoding.ASCII.GetBytes(%s);" % (f[2], f[3]))
    L.append("")
    for mm in ms:
        L += builder(mm)
        L.append("")
    L.append("        /// <summary>The spec's method names -> the C# method names.</summary>")
    L.append("        internal static readonly Dictionary<string, string> Methods = new Dictionary<string, string>")
    L.append("        {")
    for mm in ms:
        L.append('            { "%s", "%s" },' % (mm.m["method"], mm.name))
    L.append("        };")
    L.append("    }")
    L.append("")
    L.append("    public sealed partial class SlotlaneClient")
    L.append("    {")
    L.append("        private T Run<T>(object[] args, Func<object, T> shape) { return shape(Execute(args)); }")
    L.append("")
    for mm in ms:
        for with_opts, params, args in variants(mm):
            L += xmldoc(mm, "        ", "The reply as <c>%s</c>." % esc(mm.ret), with_opts)
            L.append("        public %s %s(%s)" % (mm.ret, mm.name, ", ".join(params)))
            L.append("        {")
            L.append("            return Run(CommandArgs.%s(%s), CommandArgs.%s);" % (mm.name, ", ".join(args), mm.shape))
            L.append("        }")
            L.append("")
    L.append("    }")
    L.append("")
    L.append("    public sealed partial class Pipeline")
    L.append("    {")
    for mm in ms:
        f = fast(mm)
        for with_opts, params, args in variants(mm):
            L += xmldoc(mm, "        ", "The queued command's reply (<c>%s</c> after the execution)." % esc(mm.ret), with_opts)
            L.append("        public Reply<%s> %s(%s)" % (mm.ret, mm.name, ", ".join(params)))
            L.append("        {")
            if f and f[0] and with_opts:
                L.append("            if (%s)" % f[0])
                L.append("            {")
                L += ["                " + x for x in f[1]]
                L.append("            }")
            if f and (not f[0] or not with_opts):
                L += ["            " + x for x in f[1]]
            else:
                L.append("            return Queue(CommandArgs.%s(%s), CommandArgs.%s, CommandArgs.I%s);" % (mm.name, ", ".join(args), mm.shape, mm.shape[1:]))
            L.append("        }")
            L.append("")
    L.append("    }")
    L.append("}")
    return "\n".join(L) + "\n"


def async_variants(mm):
    """The async overloads of a method: each sync variant with a trailing CancellationToken (defaulted);
    a params method keeps a params overload without the token (params must come last) beside one taking
    the array and the token."""
    ct = "CancellationToken cancellationToken"
    out = []
    for with_opts, params, args in variants(mm):
        if mm.va:
            out.append((with_opts, params, args, "CancellationToken.None", False))
            out.append((with_opts, params[:-1] + [params[-1].replace("params ", "", 1), ct], args, "cancellationToken", True))
        else:
            out.append((with_opts, params + [ct + " = default(CancellationToken)"], args, "cancellationToken", True))
    return out


def render_async(ctx):
    """CommandsAsync.g.cs: the client's XxxAsync methods, the same methods and types as Commands.g.cs, each
    a Task completed from the core's completion queue and cancelled by its token (AsyncEngine.cs)."""
    ms = [M(m) for m in ctx.methods]
    L = [ctx.generated_note("//"), "", "using System;", "using System.Collections.Generic;", "using System.Threading;",
         "using System.Threading.Tasks;", "",
         "#pragma warning disable 618 // the deprecated commands' methods call their own builders", "",
         "namespace Slotlane", "{",
         "    public sealed partial class SlotlaneClient", "    {"]
    for mm in ms:
        for with_opts, params, args, tok, has_ct in async_variants(mm):
            doc = xmldoc(mm, "        ", "A task with the reply as <c>%s</c>; cancelled (TaskCanceledException) when the token "
                         "cancels the command in flight." % esc(mm.ret), with_opts)
            if has_ct:
                at = next(i for i, x in enumerate(doc) if "<returns>" in x)
                doc.insert(at, '        /// <param name="cancellationToken">Cancels this command only (its batch: '
                           'the shared connection stays in step).</param>')
            L += doc
            L.append("        public Task<%s> %sAsync(%s)" % (mm.ret, mm.name, ", ".join(params)))
            L.append("        {")
            f = fast(mm)
            if f:
                # the pre-encoded prefix, no argument array (as the pipeline's fast path)
                n = len(mm.req)
                call = "RunAsync%s(CommandArgs.%s, %s, CommandArgs.%s, %s);" % ("Key" if n == 1 else "KeyValue", f[2], ", ".join(mm.args[:n]), mm.shape, tok)
                nulls = ["if (%s == null) throw new ArgumentNullException(nameof(%s));" % (a, a) for a in mm.args[:n]]
                if f[0] and with_opts:
                    L.append("            if (%s)" % f[0])
                    L.append("            {")
                    L += ["                " + x for x in nulls]
                    L.append("                return " + call)
                    L.append("            }")
                if not f[0] or not with_opts:
                    L += ["            " + x for x in nulls]
                    L.append("            return " + call)
                    L.append("        }")
                    L.append("")
                    continue
            L.append("            return RunAsync(CommandArgs.%s(%s), CommandArgs.%s, %s);" % (mm.name, ", ".join(args), mm.shape, tok))
            L.append("        }")
            L.append("")
    L.append("    }")
    L.append("}")
    return "\n".join(L) + "\n"


def render_options(ctx):
    ms = [M(m) for m in ctx.methods if any(p["optional"] for p in m["params"])]
    L = [ctx.generated_note("//"), "", "using System;", "", "namespace Slotlane", "{"]
    for mm in ms:
        m = mm.m
        L.append("    /// <summary>The options of <c>%s</c> (<c>SlotlaneClient.%s</c>): fields left at their defaults"
                 " (false, null) are left out. Options the server refuses together are sent as given.</summary>" % (esc(m["command"]), mm.name))
        L.append("    public struct %s" % mm.oname)
        L.append("    {")
        for p in mm.opt:
            d = ("Sends the %s flag." % p["name"].upper()) if p["type"] == "flag" else param_doc(p)[:-1] + " (null: left out)."
            L.append("        /// <summary>%s</summary>" % esc(d))
            L.append("        public %s %s;" % (field_type(p), pascal(p["name"])))
        L.append("    }")
        L.append("")
    L.append("}")
    return "\n".join(L) + "\n"


def render_errors(ctx):
    e = ctx.errors
    note = ctx.generated_note("//").replace("commands.json (redis %s) and errors.json" % ctx.spec["redis"], "errors.json")
    kinds = sorted(e["kinds"].items(), key=lambda kv: ctx.enums["kinds"][kv[0]])
    docs = {t["kind"]: t["doc"] for t in e["types"]}
    L = [note, "", "using System;", "", "namespace Slotlane", "{",
         "    /// <summary>What failed, for a <see cref=\"SlotlaneException\"/>: the core's error kinds",
         "    /// (<c>sl_err_kind</c>, same values) and <see cref=\"Client\"/> for failures of the client itself.</summary>",
         "    public enum ErrorKind", "    {"]
    for k, (kind, cls) in kinds:
        d = docs.get(kind) or next(t["doc"] for t in e["types"] if t["name"] == cls)
        L.append("        /// <summary>%s (<c>%s</c>: <see cref=\"%s\"/>)</summary>" % (esc(d), k, EXC[cls]))
        L.append("        %s = %d," % (pascal(kind), ctx.enums["kinds"][k]))
    L.append("        /// <summary>The client failed by itself: out of memory, a call not valid in the handle's state, a feature the build lacks.</summary>")
    L.append("        Client = 100,")
    L.append("    }")
    L.append("")
    for t in e["types"]:
        name = EXC[t["name"]]
        parent = EXC[t["parent"]] if t["parent"] else "Exception"
        own = [x[0] for x in e["kinds"].values() if x[1] == t["name"]]
        single = own[0] if len(own) == 1 else ("client" if t["kind"] == "client" and t["parent"] else None)
        codes = [c for c, v in sorted(e["codes"].items()) if v == t["name"]]
        L.append("    /// <summary>%s</summary>" % esc(t["doc"]))
        L.append("    /// <remarks>errors.json type <c>%s</c>; codes %s.</remarks>" % (t["name"], ", ".join("<c>%s</c>" % c for c in codes) or "none"))
        L.append("    public class %s : %s" % (name, parent))
        L.append("    {")
        if t["parent"] is None:
            L += ["        /// <summary>What failed.</summary>",
                  "        public ErrorKind Kind { get; }", "",
                  "        /// <summary>Creates an exception of the given kind.</summary>",
                  "        /// <param name=\"kind\">What failed.</param>",
                  "        /// <param name=\"message\">The message (for a server error: the server's text).</param>",
                  "        public %s(ErrorKind kind, string message) : base(message) { Kind = kind; }" % name]
        else:
            L += ["        /// <summary>Creates the exception.</summary>",
                  "        /// <param name=\"kind\">What failed.</param>",
                  "        /// <param name=\"message\">The message.</param>",
                  "        public %s(ErrorKind kind, string message) : base(kind, message) { }" % name]
            if single:
                L += ["", "        /// <summary>Creates the exception.</summary>",
                      "        /// <param name=\"message\">The message.</param>",
                      "        public %s(string message) : base(ErrorKind.%s, message) { }" % (name, pascal(single))]
        if t["name"] == "ResponseError":
            L += ["", "        /// <summary>The error's first word: \"ERR\", \"WRONGTYPE\", \"MOVED\", \"CROSSSLOT\"...</summary>",
                  "        public string Prefix", "        {", "            get", "            {",
                  "                int sp = Message.IndexOf(' ');", "                return sp < 0 ? Message : Message.Substring(0, sp);",
                  "            }", "        }"]
        L.append("    }")
        L.append("")
    L += ["    /// <summary>errors.json's table: every SL_E* code and sl_err_kind of slotlane.h -> its exception.</summary>",
          "    internal static class Errors", "    {",
          "        /// <summary>The exception of an error record of the given kind (<c>sl_err_kind</c>).</summary>",
          "        internal static SlotlaneException FromKind(int kind, string message)", "        {", "            switch (kind)", "            {"]
    for k, (kind, cls) in kinds:
        L.append("                case %d: return new %s(ErrorKind.%s, message); // %s" % (ctx.enums["kinds"][k], EXC[cls], pascal(kind), k))
    L += ["                default: return new SlotlaneResourceException(ErrorKind.Client, message);", "            }", "        }", "",
          "        /// <summary>The exception of a failed call of the core as a whole (a negative <c>sl_error_code</c>).</summary>",
          "        internal static SlotlaneException FromCode(int code, string message)", "        {",
          "            if (string.IsNullOrEmpty(message)) message = Native.PtrToUtf8(Native.sl_strerror(code));",
          "            switch (code)", "            {"]
    kind_of = {cls: kind for k, (kind, cls) in kinds}
    for code, cls in sorted(e["codes"].items(), key=lambda kv: -ctx.enums["codes"][kv[0]]):
        kind = "redirects" if code == "SL_EREDIRECT" else kind_of.get(cls, "client")
        L.append("                case %d: return new %s(ErrorKind.%s, message); // %s" % (ctx.enums["codes"][code], EXC[cls], pascal(kind), code))
    L += ['                default: return new SlotlaneException(ErrorKind.Client, message + " (code " + code + ")");', "            }", "        }", "    }", "}"]
    return "\n".join(L) + "\n"


def render(ctx):
    return {OUT + "Commands.g.cs": render_commands(ctx),
            OUT + "CommandsAsync.g.cs": render_async(ctx),
            OUT + "CommandOptions.g.cs": render_options(ctx),
            OUT + "Errors.g.cs": render_errors(ctx)}
