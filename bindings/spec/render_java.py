"""render.py's Java module: the typed methods of SlotlaneClient, Pipeline and AsyncClient (through
their generated superclasses ClientCommands, PipelineCommands and AsyncCommands: the same methods,
future-returning), the argument encoders and reply
shapes they share (Commands), the option builders (CommandOptions) and the exception classes,
ErrorKind and the code -> exception table (errors.json).

Idiom: camelCase methods with Javadoc; required parameters positional, a method that has
optional parameters also takes a fluent <Method>Options builder (CommandOptions.<Method>Options;
null: none) and has an overload without it. Keys are String (UTF-8), values Object (String,
byte[], an integer or a float; never a Boolean), ints long, doubles double, a method whose only
parameter list is its last parameter of all is varargs. The client's methods return the reply
type (primitives where it cannot be nil); the pipeline's queue and return a Reply<T>. Shapes are
built from the type grammar by Shape.java (runtime, nothing per command)."""
from render_common import is_varargs, type_ident
import spec as speclib


PKG = "java/src/main/java/io/slotlane/"

JAVA_KEYWORDS = set("""abstract assert boolean break byte case catch char class const continue default do
double else enum extends final finally float for goto if implements import instanceof int interface long
native new package private protected public return short static strictfp super switch synchronized this
throw throws transient try void volatile while true false null var record yield b o""".split())

# errors.json's names -> Java's (the classes Java users already catch keep their names)
EXC = {"Error": "SlotlaneException", "ResponseError": "ReplyException", "ConnectionError": "ConnectionException",
       "ProtocolError": "ProtocolException", "TimeoutError": "SlotlaneTimeoutException",
       "ClusterError": "ClusterException", "CancelledError": "CancelledException",
       "ArgumentError": "ArgumentException", "ResourceError": "ResourceException", "TlsError": "TlsException",
       "WatchError": "WatchException", "WatchMovedError": "WatchMovedException",
       "BlockingPipelineError": "BlockingPipelineException"}


def camel(n):
    w = n.split("_")
    return w[0] + "".join(x[:1].upper() + x[1:] for x in w[1:])


def pascal(n):
    return "".join(x[:1].upper() + x[1:] for x in n.split("_"))


def local(n):
    v = camel(n)
    return v + "Arg" if v in JAVA_KEYWORDS else v


def esc(s):
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("*/", "*&#47;")
            .replace("@", "&#64;"))


# ------------------------------------------------------------------ types

BOXED = {"ok": "Boolean", "status": "String", "string": "String", "int": "Long", "bool": "Boolean",
         "double": "Double", "cursor": "Long", "any": "Object"}
PRIM = {"ok": "boolean", "int": "long", "bool": "boolean", "double": "double", "cursor": "long"}


def jtype(t, boxed=True):
    n = t["t"]
    if n in BOXED:
        if not boxed and n in PRIM and (not t.get("null") or n == "ok"):
            return PRIM[n]
        return BOXED[n]
    kids = [jtype(k) for k in t["of"]]
    if n == "array":
        return "List<%s>" % kids[0]
    if n == "set":
        return "Set<%s>" % kids[0]
    if n == "map":
        return "Map<%s, %s>" % tuple(kids)
    if n == "pairs":
        return "List<Pair<%s, %s>>" % tuple(kids)
    if n == "tuple":
        if len(kids) != 2:
            raise ValueError("Java renders 2-tuples only")
        return "Tuple2<%s, %s>" % tuple(kids)
    raise ValueError(n)


def shape_expr(t):
    n = t["t"]
    if n in BOXED:
        base = "Shape.%s" % n.upper()
        if n == "any":
            return base
    else:
        kids = [shape_expr(k) for k in t["of"]]
        base = "Shape.%s(%s)" % ({"array": "array", "set": "set", "map": "map", "pairs": "pairs",
                                   "tuple": "tuple"}[n], ", ".join(kids))
    return "Shape.nullable(%s)" % base if t.get("null") else base


def shape_name(reply):
    return type_ident("S_", reply, upper=True)




ELEM = {"key": "String", "value": "Object", "int": "Long", "double": "Double"}


def param_type(p, varargs=False):
    """A parameter's Java type (a required one; options' fields use field_type)."""
    if p["type"] == "tuple":
        return "List<? extends %s>" % ("Pair<?, ?>" if len(p["fields"]) == 2 else "Tuple3<?, ?, ?>")
    if p.get("list"):
        if varargs:
            return ELEM[p["type"]] + "..."
        if p["type"] == "double":
            return "List<? extends Number>"
        if p["type"] == "value":
            return "List<?>"
        return "List<%s>" % ELEM[p["type"]]
    return {"key": "String", "value": "Object", "int": "long", "double": "double", "flag": "boolean"}[p["type"]]


def field_type(p):
    if p.get("list") or p["type"] == "tuple":
        return param_type(p)
    return {"key": "String", "value": "Object", "int": "Long", "double": "Double", "flag": "boolean"}[p["type"]]


def param_doc(p):
    if p["type"] == "tuple":
        return "the (%s) tuples" % ", ".join(f["name"] for f in p["fields"])
    what = {"key": "key", "value": "value", "int": "integer", "double": "number", "flag": "flag"}[p["type"]]
    if p.get("list"):
        return "the %s (%ss)" % (p["name"].replace("_", " "), what)
    return "the %s (%s)" % (p["name"].replace("_", " "), what)


# ------------------------------------------------------------------ encoders

def add_expr(ptype, v, name):
    if ptype == "key":
        return 'b.add(Cmd.notNull(%s, "%s"));' % (v, name)
    if ptype == "value":
        return 'b.addValue(%s, "%s");' % (v, name)
    if ptype == "int":
        return "b.add((long) %s);" % v
    if ptype == "double":
        return "b.add((double) %s);" % v
    raise ValueError(ptype)


def add_obj(ptype, v, name):
    """An element given as an object (a list's or a tuple's)."""
    return {"key": 'b.addKey(%s, "%s");', "value": 'b.addValue(%s, "%s");', "int": 'b.addInt(%s, "%s");',
            "double": 'b.addDouble(%s, "%s");'}[ptype] % (v, name)


def is_fixed(m):
    return (not any(p["optional"] or p.get("list") for p in m["params"])
            and all(op["op"] in ("arg", "token") for op in m["encode"]))


def fixed_argc(m):
    n = len(m["words"])
    for op in m["encode"]:
        n += 1 + (1 if op["op"] == "arg" and "t" in op else 0)
    return n


def emit(ops, m, out, ind, src, arrays):
    pt = {p["name"]: p for p in m["params"]}

    def setexpr(name):
        p = pt[name]
        v = src(name)
        if p["type"] == "flag":
            return v
        if p.get("list") or p["type"] == "tuple":
            return "(%s != null && %s)" % (v, ("%s.length > 0" if name in arrays else "!%s.isEmpty()") % v) if p["optional"] \
                else ("%s.length > 0" if name in arrays else "!%s.isEmpty()") % v
        return "%s != null" % v if p["optional"] else "true"

    for op in ops:
        o = op["op"]
        p = pt.get(op.get("p"))
        v = src(op["p"]) if "p" in op else None
        tok = 'b.add("%s");' % op["t"] if "t" in op else None
        if o == "token":
            out.append(ind + tok)
        elif o == "arg":
            if tok:
                out.append(ind + tok)
            out.append(ind + add_expr(p["type"], v, p["name"]))
        elif o == "opt":
            out.append("%sif (%s != null) {" % (ind, v))
            if tok:
                out.append(ind + "    " + tok)
            out.append(ind + "    " + add_expr(p["type"], v, p["name"]))
            out.append(ind + "}")
        elif o == "flag":
            out.append("%sif (%s) %s" % (ind, v, tok))
        elif o == "count":
            if p["name"] in arrays:
                out.append("%sb.add((long) %s.length);" % (ind, v))
            else:
                out.append("%sb.add((long) (%s == null ? 0 : %s.size()));" % (ind, v, v))
        elif o in ("list", "tuples"):
            cond = setexpr(op["p"])
            out.append("%sif (%s) {" % (ind, cond))
            if tok and not op.get("each"):
                out.append(ind + "    " + tok)
            elem = ELEM[p["type"]] if o == "list" and p["name"] in arrays else "Object"
            out.append("%s    for (%s x : %s) {" % (ind, elem, v))
            if op.get("each"):
                out.append(ind + "        " + tok)
            if o == "list":
                out.append(ind + "        " + add_obj(p["type"], "x", p["name"]))
            else:
                acc = ["key()", "value()"] if len(p["fields"]) == 2 else ["a()", "b()", "c()"]
                cls = "Pair<?, ?>" if len(p["fields"]) == 2 else "Tuple3<?, ?, ?>"
                out.append('%s        %s t = (%s) Cmd.notNull(x, "%s");' % (ind, cls, cls, p["name"]))
                for f, a in zip(p["fields"], acc):
                    out.append(ind + "        " + add_obj(f["type"], "t." + a, f["name"]))
            out.append(ind + "    }")
            out.append(ind + "}")
        elif o == "group":
            out.append("%sif (%s) {" % (ind, setexpr(op["p"])))
            if tok:
                out.append(ind + "    " + tok)
            emit(op["body"], m, out, ind + "    ", src, arrays)
            out.append(ind + "}")
        elif o == "choice":
            conds = [setexpr(x["p"]) for x in op["body"] if "p" in x]
            out.append("%sif (%s) {" % (ind, " || ".join(conds)))
            out.append(ind + "    " + tok)
            emit(op["body"], m, out, ind + "    ", src, arrays)
            out.append(ind + "}")
        else:
            raise ValueError(o)


class M:
    """One method's Java names and signature pieces."""

    def __init__(self, m):
        self.m = m
        self.name = camel(m["method"])
        self.cls = pascal(m["method"])
        self.req = [p for p in m["params"] if not p["optional"]]
        self.opt = [p for p in m["params"] if p["optional"]]
        self.va = is_varargs(m)
        self.oname = "CommandOptions.%sOptions" % self.cls if self.opt else None
        self.params = ["%s %s" % (param_type(p, self.va and p is self.req[-1]), local(p["name"])) for p in self.req]
        self.args = [local(p["name"]) for p in self.req]
        self.arrays = {self.req[-1]["name"]} if self.va else set()
        self.ret = jtype(m["type"], boxed=False)
        self.boxed = jtype(m["type"])
        self.shape = shape_name(m["reply"])


def encoder(mm):
    m = mm.m
    params = list(mm.params)
    if mm.opt:
        params.append("%s o" % mm.oname)
    L = ["    /** %s */" % m["command"],
         "    static void %s(CommandBuffer b%s) {" % (mm.name, "".join(", " + x for x in params))]
    if mm.opt:
        # without options, a command whose required part is fixed (SET key value) takes the fixed path
        optional = {p["name"] for p in mm.opt}
        rest = [op for op in m["encode"] if op.get("p") not in optional and op["op"] not in ("group", "choice")]
        if (not any(p.get("list") or p["type"] == "tuple" for p in mm.req) and all(op["op"] in ("arg", "token") for op in rest)
                and all(op["op"] in ("arg", "token", "opt", "flag", "group", "choice") for op in m["encode"])
                and all(x.get("p") in optional for op in m["encode"] if op["op"] in ("group", "choice")
                        for x in speclib.walk(op["body"]) if "p" in x)):
            fixed = dict(m, encode=rest, params=mm.req)
            L.append("        if (o == null) {")
            L.append("            b.start(%d);" % fixed_argc(fixed))
            for w in m["words"]:
                L.append("            b.add(%s);" % word_const(w))
            emit(rest, fixed, L, "            ", lambda n: local(n), mm.arrays)
            L.append("            return;")
            L.append("        }")
        else:
            L.append("        if (o == null) o = %s.NONE;" % mm.oname)
    for p in mm.req:
        if p.get("list") or p["type"] == "tuple":
            L.append('        if (%s == null || %s) throw new IllegalArgumentException("%s: %s needs at least one element");'
                     % (local(p["name"]), ("%s.length == 0" if p["name"] in mm.arrays else "%s.isEmpty()") % local(p["name"]),
                        m["command"], p["name"]))

    def src(n):
        p = next(q for q in m["params"] if q["name"] == n)
        return local(n) if not p["optional"] else "o.%s" % local(n)
    if is_fixed(m):
        L.append("        b.start(%d);" % fixed_argc(m))
    else:
        L.append("        b.begin();")
    for w in m["words"]:
        L.append("        b.add(%s);" % word_const(w))
    emit(m["encode"], m, L, "        ", src, mm.arrays)
    if not is_fixed(m):
        L.append("        b.end();")
    L.append("    }")
    return L


def word_const(w):
    return "W_" + "".join(c if c.isalnum() else "_" for c in w.upper())


def javadoc(mm, ind, extra_params, ret_doc):
    m = mm.m
    L = [ind + "/**",
         ind + " * {@code %s} (%s): %s." % (esc(m["command"]), m["group"], esc(m["summary"].rstrip("."))),
         ind + " *",
         ind + " * <p>Reply: {@code %s}%s Since Redis %s." % (esc(m["reply"]), " &mdash; " + esc(m["doc"]) if m.get("doc") else ".", m["since"])]
    for p in mm.req:
        L.append(ind + " * @param %s %s" % (local(p["name"]), param_doc(p)))
    for n, d in extra_params:
        L.append(ind + " * @param %s %s" % (n, d))
    L.append(ind + " * @return " + ret_doc)
    if m.get("deprecated"):
        L.append(ind + " * @deprecated since Redis %s%s" % (m["deprecated"], "; use %s" % esc(m["replaced_by"]) if m.get("replaced_by") else ""))
    L.append(ind + " */")
    if m.get("deprecated"):
        L.append(ind + "@Deprecated")
    return L


def sig_variants(mm):
    """(params, call args, extra javadoc params) of the method's overloads: without and with options."""
    out = [(mm.params, mm.args + (["null"] if mm.opt else []), [])]
    if mm.opt:
        out.append((mm.params + ["%s options" % mm.oname], mm.args + ["options"],
                    [("options", "the options (null: none)")]))
    return out


def render_commands(ctx):
    ms = [M(m) for m in ctx.methods]
    L = [ctx.generated_note("//"), "", "package io.slotlane;", "",
         "import java.util.List;", "import java.util.Map;", "import java.util.Set;", "",
         "/** The argument encoders and reply shapes of every method of the spec, shared by the client and the pipeline. */",
         "final class Commands {",
         "    private Commands() {}", ""]
    for r in sorted({m["reply"] for m in ctx.methods}):
        t = next(m["type"] for m in ctx.methods if m["reply"] == r)
        L.append("    static final Shape<%s> %s = %s;" % (jtype(t), shape_name(r), shape_expr(t)))
    L.append("")
    words = sorted({w for m in ctx.methods for w in m["words"]})
    for w in words:
        L.append('    private static final byte[] %s = Cmd.ascii("%s");' % (word_const(w), w))
    L.append("")
    for mm in ms:
        L += encoder(mm)
        L.append("")
    L.append("    /** The spec's method names -> the Java method names. */")
    L.append("    static final Map<String, String> METHODS = Map.ofEntries(")
    L.append(",\n".join('            Map.entry("%s", "%s")' % (mm.m["method"], mm.name) for mm in ms) + ");")
    L.append("}")
    return "\n".join(L) + "\n"


def file_head(ctx, doc):
    """The generated note, package, imports and the class's Javadoc of ClientCommands/PipelineCommands."""
    return ([ctx.generated_note("//"), "", "package io.slotlane;", "",
             "import java.util.List;", "import java.util.Map;", "import java.util.Set;", "", "/**"]
            + [" * " + x for x in doc] + [" */"])


def render_client(ctx):
    ms = [M(m) for m in ctx.methods]
    L = file_head(ctx, [
        "The typed methods of every command of the spec (bindings/spec/README.md), inherited by",
        "{@link SlotlaneClient}: each encodes its command by the spec's encoding program, runs it",
        "and returns the reply as its type. Failures throw {@link SlotlaneException} (a",
        "{@link ReplyException} for an error reply); bad arguments throw",
        "{@link IllegalArgumentException} before anything is sent."]) + [
         "public abstract class ClientCommands {",
         "    ClientCommands() {}", "",
         "    /** Encodes one command, runs it and shapes its reply (or throws its failure). */",
         "    abstract <T> T run(Shape<T> shape, SlotlaneClient.Encoder e);", ""]
    L += call_methods(ms, "run", lambda mm: mm.ret, lambda mm: "the reply as {@code %s}" % esc(mm.ret))
    L.append("}")
    return "\n".join(L) + "\n"


def call_methods(ms, runner, ret, ret_doc):
    """Every method's overloads on a client: encode by the spec, hand to runner (run/submit), return ret(mm)
    (documented as ret_doc(mm))."""
    L = []
    for mm in ms:
        for params, args, extra in sig_variants(mm):
            L += javadoc(mm, "    ", extra, ret_doc(mm))
            L.append("    public %s %s(%s) {" % (ret(mm), mm.name, ", ".join(params)))
            if extra or not mm.opt:
                L.append("        return %s(Commands.%s, b -> Commands.%s(b%s));" % (runner, mm.shape, mm.name, "".join(", " + a for a in args)))
            else:
                L.append("        return %s(%s);" % (mm.name, ", ".join(args)))
            L.append("    }")
            L.append("")
    return L


def render_pipeline(ctx):
    ms = [M(m) for m in ctx.methods]
    L = file_head(ctx, [
        "The typed methods of every command of the spec (bindings/spec/README.md), inherited by",
        "{@link Pipeline}: each queues its command and returns a {@link Reply} whose",
        "{@link Reply#get()} gives the reply as its type after {@link Pipeline#sync()}. Bad",
        "arguments throw {@link IllegalArgumentException} at once, and nothing is queued."]) + [
         "public abstract class PipelineCommands {",
         "    PipelineCommands() {}", "",
         "    /** The pipeline's buffer (throws when the pipeline is closed). */",
         "    abstract CommandBuffer buf();", "",
         "    /** Records the shape of the command just encoded; its Reply. */",
         "    abstract <T> Reply<T> queued(Shape<T> shape);", "",
         "    /** A Reply's value: the shaped reply of command index of run gen (throws when that run is not the last). */",
         "    abstract Object result(int index, int gen);", ""]
    for mm in ms:
        for params, args, extra in sig_variants(mm):
            L += javadoc(mm, "    ", extra, "the queued command's reply ({@code %s} after sync)" % esc(mm.boxed))
            L.append("    public Reply<%s> %s(%s) {" % (mm.boxed, mm.name, ", ".join(params)))
            if extra or not mm.opt:
                L.append("        CommandBuffer b = buf();")
                L.append("        int bufPos = b.pos, bufCount = b.count;")
                L.append("        try {")
                L.append("            Commands.%s(b%s);" % (mm.name, "".join(", " + a for a in args)))
                L.append("        } catch (RuntimeException e) {")
                L.append("            b.rollback(bufPos, bufCount);")
                L.append("            throw e;")
                L.append("        }")
                L.append("        return queued(Commands.%s);" % mm.shape)
            else:
                L.append("        return %s(%s);" % (mm.name, ", ".join(args)))
            L.append("    }")
            L.append("")
    L.append("}")
    return "\n".join(L) + "\n"


def render_async(ctx):
    """AsyncCommands: the client's methods again, each returning a CompletableFuture of its boxed type."""
    ms = [M(m) for m in ctx.methods]
    L = file_head(ctx, [
        "The typed methods of every command of the spec (bindings/spec/README.md), inherited by",
        "{@link AsyncClient}: the same methods, parameters and reply types as {@link ClientCommands},",
        "each returning a {@link CompletableFuture} of the reply (boxed) at once. The future",
        "completes on the client's executor with the reply, or exceptionally with the",
        "command's {@link SlotlaneException}; {@code cancel(true)} cancels that command's batch",
        "only. Bad arguments throw {@link IllegalArgumentException} at once, and nothing is sent."])
    L[L.index("import java.util.List;")] = "import java.util.List;\nimport java.util.concurrent.CompletableFuture;"
    L += ["public abstract class AsyncCommands {",
          "    AsyncCommands() {}", "",
          "    /** Encodes one command and submits it; the future of its shaped reply. */",
          "    abstract <T> CompletableFuture<T> submit(Shape<T> shape, SlotlaneClient.Encoder e);", ""]
    L += call_methods(ms, "submit", lambda mm: "CompletableFuture<%s>" % mm.boxed,
                      lambda mm: "the future of the reply as {@code %s}" % esc(mm.boxed))
    L.append("}")
    return "\n".join(L) + "\n"


def render_options(ctx):
    ms = [M(m) for m in ctx.methods if any(p["optional"] for p in m["params"])]
    L = [ctx.generated_note("//"), "", "package io.slotlane;", "",
         "import java.util.List;", "",
         "/**",
         " * The option builders of the commands that take options (flags, optional values): one",
         " * {@code <Method>Options} class per method, fluent and mutable (not thread-safe; do not",
         " * change one while a call that uses it runs). Options the server refuses together (NX",
         " * with XX) are sent as given: the server answers its syntax error.",
         " *",
         " * <pre>{@code client.set(\"k\", \"v\", new CommandOptions.SetOptions().nx().ex(60)); }</pre>",
         " */",
         "public final class CommandOptions {",
         "    private CommandOptions() {}", ""]
    for mm in ms:
        m = mm.m
        cls = mm.cls + "Options"
        L.append("    /** The options of {@code %s} (%s). */" % (esc(m["command"]), "{@link ClientCommands#%s}" % mm.name))
        L.append("    public static final class %s {" % cls)
        L.append("        static final %s NONE = new %s();" % (cls, cls))
        for p in mm.opt:
            L.append("        %s %s;" % (field_type(p), local(p["name"])))
        L.append("")
        L.append("        /** No options set. */")
        L.append("        public %s() {}" % cls)
        for p in mm.opt:
            n = local(p["name"])
            L.append("")
            if p["type"] == "flag":
                L.append("        /**")
                L.append("         * @param on whether to send the %s flag" % esc(p["name"].upper()))
                L.append("         * @return this")
                L.append("         */")
                L.append("        public %s %s(boolean on) {" % (cls, n))
                L.append("            this.%s = on;" % n)
                L.append("            return this;")
                L.append("        }")
                L.append("")
                L.append("        /** @return this, with the %s flag */" % esc(p["name"].upper()))
                L.append("        public %s %s() {" % (cls, n))
                L.append("            return %s(true);" % n)
                L.append("        }")
            else:
                arg = {"key": "String", "value": "Object", "int": "long", "double": "double"}.get(p["type"]) \
                    if not (p.get("list") or p["type"] == "tuple") else field_type(p)
                L.append("        /**")
                L.append("         * @param %s %s%s" % (n, param_doc(p), "" if p["type"] in ("int", "double") and not p.get("list") else " (null: left out)"))
                L.append("         * @return this")
                L.append("         */")
                L.append("        public %s %s(%s %s) {" % (cls, n, arg, n))
                L.append("            this.%s = %s;" % (n, n))
                L.append("            return this;")
                L.append("        }")
        L.append("    }")
        L.append("")
    L.append("}")
    return "\n".join(L) + "\n"


# ------------------------------------------------------------------ errors

def render_errors(ctx):
    e = ctx.errors
    out = {}
    note = ctx.generated_note("//").replace("commands.json (redis %s) and errors.json" % ctx.spec["redis"], "errors.json")
    kinds = sorted(e["kinds"].items(), key=lambda kv: ctx.enums["kinds"][kv[0]])
    # ErrorKind: sl_err_kind in its order (a record's flags byte is its ordinal), then CLIENT
    L = [note, "", "package io.slotlane;", "",
         "/**",
         " * Why a command failed: the kinds of the core's error records ({@code sl_err_kind}, in",
         " * its order), and {@link #CLIENT} for failures of the client itself (memory, state).",
         " */",
         "public enum ErrorKind {"]
    docs = {t["kind"]: t["doc"] for t in e["types"]}
    items = []
    for k, (kind, cls) in kinds:
        d = docs.get(kind) or next(t["doc"] for t in e["types"] if t["name"] == cls)
        items.append("    /** %s ({@code %s}: {@link %s}) */\n    %s" % (esc(d), k, EXC[cls], kind.upper()))
    items.append("    /** The client failed by itself: out of memory, a call not valid in the handle's state, a feature the build lacks. */\n    CLIENT")
    L.append(",\n".join(items) + ";")
    L += ["",
          "    private static final ErrorKind[] BY_FLAGS = values();",
          "",
          "    /** The kind of an error record's flags byte ({@code sl_err_kind}); SERVER for unknown values. */",
          "    static ErrorKind ofRecordFlags(int flags) {",
          "        return flags >= 0 && flags < %d ? BY_FLAGS[flags] : SERVER;" % len(kinds),
          "    }",
          "}"]
    out[PKG + "ErrorKind.java"] = "\n".join(L) + "\n"
    for t in e["types"]:
        name = EXC[t["name"]]
        parent = EXC[t["parent"]] if t["parent"] else "RuntimeException"
        own = [x[0] for x in e["kinds"].values() if x[1] == t["name"]]
        single = own[0] if len(own) == 1 else ("client" if t["kind"] == "client" and t["parent"] else None)
        L = [note, "", "package io.slotlane;", "",
             "/**", " * %s" % esc(t["doc"]), " *",
             " * <p>errors.json type {@code %s}; codes %s." % (t["name"], ", ".join("{@code %s}" % c for c, v in sorted(e["codes"].items()) if v == t["name"]) or "none"),
             " */",
             "public class %s extends %s {" % (name, parent),
             "    private static final long serialVersionUID = 1L;"]
        if t["parent"] is None:
            L += ["    private final ErrorKind kind;", "",
                  "    /**", "     * @param kind    why the command failed", "     * @param message the core's or the server's message", "     */",
                  "    public %s(ErrorKind kind, String message) {" % name,
                  "        super(message);", "        this.kind = kind;", "    }", "",
                  "    /** @return why the command failed */",
                  "    public ErrorKind kind() {", "        return kind;", "    }"]
        else:
            L += ["", "    /**", "     * @param kind    why the command failed", "     * @param message the core's or the server's message", "     */",
                  "    public %s(ErrorKind kind, String message) {" % name, "        super(kind, message);", "    }"]
            if single:
                L += ["", "    /** @param message the core's or the server's message */",
                      "    public %s(String message) {" % name, "        super(ErrorKind.%s, message);" % single.upper(), "    }"]
        if t["name"] == "ResponseError":
            L += ["", "    /**", "     * The error's code: the first word of the message ({@code ERR}, {@code WRONGTYPE}, {@code MOVED}...).",
                  "     *", "     * @return the first word of the message", "     */",
                  "    public String prefix() {", "        String m = getMessage();", "        int sp = m.indexOf(' ');",
                  "        return sp < 0 ? m : m.substring(0, sp);", "    }"]
        L.append("}")
        out[PKG + name + ".java"] = "\n".join(L) + "\n"
    # the table: codes and kinds -> exceptions
    L = [note, "", "package io.slotlane;", "", "import io.slotlane.internal.sl_error_code;", "",
         "/** errors.json's table: every SL_E* code and sl_err_kind of slotlane.h -> its exception. */",
         "final class Errors {", "    private Errors() {}", "",
         "    /** The exception of an error record (or a failure) of the given kind. */",
         "    static SlotlaneException ofKind(ErrorKind kind, String message) {", "        switch (kind) {"]
    for k, (kind, cls) in kinds:
        L.append("            case %s: return new %s(ErrorKind.%s, message);" % (kind.upper(), EXC[cls], kind.upper()))
    L += ["            default: return new ResourceException(ErrorKind.CLIENT, message);", "        }", "    }", "",
          "    /** The exception of a failed call of the core as a whole (a negative sl_error_code). */",
          "    static SlotlaneException ofCode(int rc, String message) {", "        switch (rc) {"]
    kind_of = {cls: kind for k, (kind, cls) in kinds}
    for code, cls in sorted(e["codes"].items(), key=lambda kv: -ctx.enums["codes"][kv[0]]):
        kind = "REDIRECTS" if code == "SL_EREDIRECT" else kind_of.get(cls, "client").upper()
        L.append("            case sl_error_code.%s: return new %s(ErrorKind.%s, message);" % (code, EXC[cls], kind))
    L += ['            default: return new SlotlaneException(ErrorKind.CLIENT, "slotlane error " + rc + ": " + message);',
          "        }", "    }", "}"]
    out[PKG + "Errors.java"] = "\n".join(L) + "\n"
    return out


def render(ctx):
    out = {PKG + "Commands.java": render_commands(ctx),
           PKG + "ClientCommands.java": render_client(ctx),
           PKG + "PipelineCommands.java": render_pipeline(ctx),
           PKG + "AsyncCommands.java": render_async(ctx),
           PKG + "CommandOptions.java": render_options(ctx)}
    out.update(render_errors(ctx))
    return out
