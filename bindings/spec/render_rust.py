"""render.py's Rust module: rust/slotlane/src/commands.rs (the typed methods of Client and
Pipeline, their option structs, rustdoc) and rust/slotlane/tests/spec_dispatch/mod.rs (the
conformance runner's table: a spec call's JSON arguments -> the typed method).

Idiom: snake_case methods; keys and values `impl ToArg`, ints `i64`, doubles `f64`, lists
`&[...]`, tuple lists `&[(..)]`; options in `Option<&<Method>Options>` (Default-derived
structs, only for commands that have options). A Client method returns
`Result<T, Error>` with T the reply type's Rust value through its `Shape` marker
(src/shape.rs: FromValue-style conversions of the one normalisation); a Pipeline method
queues the command and returns a `Slot<T>` whose `get(&results)` shapes the reply."""

OUT = "rust/slotlane/src/commands.rs"
OUT_DISPATCH = "rust/slotlane/tests/spec_dispatch/mod.rs"

RUST_KEYWORDS = {"as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum",
                 "extern", "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod",
                 "move", "mut", "pub", "ref", "return", "self", "static", "struct", "super", "trait",
                 "true", "type", "unsafe", "use", "where", "while", "abstract", "become", "box", "do",
                 "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try"}


def rid(n):
    return "r#" + n if n in RUST_KEYWORDS else n


def camel(n):
    return "".join(w[:1].upper() + w[1:] for w in n.split("_"))


def marker(t):
    n = t["t"]
    if n == "ok":
        return "OkNil" if t.get("null") else "Ok_"
    simple = {"status": "Status", "string": "Str", "int": "Int", "bool": "Bool", "double": "Double",
              "cursor": "Cursor", "any": "Any"}
    if n in simple:
        m = simple[n]
    elif n in ("array", "set"):
        m = "Arr<%s>" % marker(t["of"][0])
    elif n == "map":
        m = "MapOf<%s, %s>" % (marker(t["of"][0]), marker(t["of"][1]))
    elif n == "pairs":
        m = "PairsOf<%s, %s>" % (marker(t["of"][0]), marker(t["of"][1]))
    elif n == "tuple":
        m = "Tup2<%s, %s>" % (marker(t["of"][0]), marker(t["of"][1]))
    else:
        raise ValueError(n)
    if t.get("null") and n != "any":
        m = "Opt<%s>" % m
    return m


def rtype(t):
    n = t["t"]
    if n == "ok":
        return "bool"
    base = {"status": "String", "string": "Vec<u8>", "int": "i64", "bool": "bool", "double": "f64",
            "cursor": "u64", "any": "Value<'static>"}.get(n)
    if n == "any":
        return base
    if base is None:
        if n in ("array", "set"):
            base = "Vec<%s>" % rtype(t["of"][0])
        elif n == "map":
            base = "HashMap<%s, %s>" % (rtype(t["of"][0]), rtype(t["of"][1]))
        elif n == "pairs":
            base = "Vec<(%s, %s)>" % (rtype(t["of"][0]), rtype(t["of"][1]))
        elif n == "tuple":
            base = "(%s, %s)" % (rtype(t["of"][0]), rtype(t["of"][1]))
    return "Option<%s>" % base if t.get("null") else base


ARG = {"key": "impl ToArg", "value": "impl ToArg", "int": "i64", "double": "f64"}
OPTF = {"key": "Option<Vec<u8>>", "value": "Option<Vec<u8>>", "int": "Option<i64>", "double": "Option<f64>"}
LISTF = {"key": "Vec<Vec<u8>>", "value": "Vec<Vec<u8>>", "int": "Vec<i64>", "double": "Vec<f64>"}


def tuple_arg(p):
    return "&[(%s)]" % ", ".join(ARG[f["type"]] for f in p["fields"])


def tuple_field(p):
    return "Vec<(%s)>" % ", ".join({"key": "Vec<u8>", "value": "Vec<u8>", "int": "i64", "double": "f64"}[f["type"]] for f in p["fields"])


def param_arg(p):
    if p["type"] == "tuple":
        return tuple_arg(p)
    if p.get("list"):
        return "&[%s]" % ARG[p["type"]]
    return ARG[p["type"]]


def opt_field(p):
    if p["type"] == "flag":
        return "bool"
    if p["type"] == "tuple":
        return tuple_field(p)
    if p.get("list"):
        return LISTF[p["type"]]
    return OPTF[p["type"]]


def emit(ops, m, out, ind, src):
    pt = {p["name"]: p for p in m["params"]}
    for op in ops:
        o = op["op"]
        p = pt.get(op.get("p"))
        v = src(op["p"]) if "p" in op else None
        tok = 'c.arg("%s");' % op["t"] if "t" in op else None
        opt = p is not None and p["optional"]
        if o == "token":
            out.append(ind + tok)
        elif o == "arg":
            if tok:
                out.append(ind + tok)
            out.append("%sc.arg(%s);" % (ind, v))
        elif o == "opt":
            out.append("%sif let Some(x) = &%s {" % (ind, v))
            if tok:
                out.append(ind + "    " + tok)
            out.append("%s    c.arg(%s);" % (ind, "x.as_slice()" if p["type"] in ("key", "value") else "*x"))
            out.append("%s}" % ind)
        elif o == "flag":
            out.append("%sif %s {" % (ind, v))
            out.append(ind + "    " + tok)
            out.append("%s}" % ind)
        elif o == "count":
            out.append("%sc.arg(%s.len());" % (ind, v))
        elif o == "list":
            if tok and not op.get("each"):
                out.append("%sif !%s.is_empty() {" % (ind, v))
                out.append(ind + "    " + tok)
                out.append("%s}" % ind)
            out.append("%sfor x in %s.iter() {" % (ind, v))
            if op.get("each"):
                out.append(ind + "    " + tok)
            conv = "x.as_slice()" if opt and p["type"] in ("key", "value") else ("*x" if p["type"] in ("int", "double") else "x")
            out.append("%s    c.arg(%s);" % (ind, conv))
            out.append("%s}" % ind)
        elif o == "tuples":
            if tok and not op.get("each"):
                out.append("%sif !%s.is_empty() {" % (ind, v))
                out.append(ind + "    " + tok)
                out.append("%s}" % ind)
            n = len(p["fields"])
            names = ["t%d" % i for i in range(n)]
            out.append("%sfor (%s) in %s.iter() {" % (ind, ", ".join(names), v))
            if op.get("each"):
                out.append(ind + "    " + tok)
            for f, nm in zip(p["fields"], names):
                if f["type"] in ("int", "double"):
                    out.append("%s    c.arg(*%s);" % (ind, nm))
                elif opt:
                    out.append("%s    c.arg(%s.as_slice());" % (ind, nm))
                else:
                    out.append("%s    c.arg(%s);" % (ind, nm))
            out.append("%s}" % ind)
        elif o == "group":
            if p["type"] == "flag":
                cond = v
            elif p.get("list"):
                cond = "!%s.is_empty()" % v
            else:
                cond = "%s.is_some()" % v
            out.append("%sif %s {" % (ind, cond))
            if tok:
                out.append(ind + "    " + tok)
            emit(op["body"], m, out, ind + "    ", src)
            out.append("%s}" % ind)
        elif o == "choice":
            conds = []
            for x in op["body"]:
                if "p" in x:
                    q = pt[x["p"]]
                    conds.append(src(x["p"]) if q["type"] == "flag" else "%s.is_some()" % src(x["p"]))
            out.append("%sif %s {" % (ind, " || ".join(conds)))
            out.append(ind + "    " + tok)
            emit(op["body"], m, out, ind + "    ", src)
            out.append("%s}" % ind)
        else:
            raise ValueError(o)


def fast_simple(m):
    req = [p for p in m["params"] if not p["optional"]]
    if len(m["words"]) != 1 or not 1 <= len(req) <= 2 or any(p["type"] not in ("key", "value") or p.get("list") for p in req):
        return False
    enc = m["encode"]
    head = enc[:len(req)]
    return ([op.get("p") for op in head] == [p["name"] for p in req] and all(op["op"] == "arg" and "t" not in op for op in head)
            and not any(op["op"] in ("arg", "token", "count", "list", "tuples") for op in enc[len(req):]))


def docs(m, ind, what):
    L = ["%s/// `%s` (%s): %s." % (ind, m["command"], m["group"], m["summary"].rstrip("."))]
    L.append("%s///" % ind)
    L.append("%s/// Reply: `%s`%s %s" % (ind, m["reply"], (" -- " + m["doc"]) if m.get("doc") else ".", what))
    if m.get("deprecated"):
        L.insert(0, '%s#[deprecated(note = "deprecated since Redis %s%s")]' % (
            ind, m["deprecated"], "; use %s" % m["replaced_by"] if m.get("replaced_by") else ""))
    return L


def render_commands(ctx):
    ms = ctx.methods
    L = ["//! The typed methods of every command of the spec (bindings/spec/README.md) on",
         "//! [`Client`], [`Pipeline`] and [`crate::aio::Client`] (the async mode: the same",
         "//! methods returning futures): each builds its command's arguments by the spec's",
         "//! encoding program and shapes the reply by its type ([`crate::shape`]).",
         "//!",
         "//! " + ctx.generated_note("").strip(),
         "#![allow(deprecated)]  // deprecated commands (GEORADIUS...) are rendered too",
         "#![allow(clippy::too_many_arguments, clippy::type_complexity, unused_mut)]",
         "",
         "use crate::shape::*;",
         "use crate::{cmd, Client, Cmd, Error, Pipeline, ToArg, Value};",
         "use std::collections::HashMap;",
         ""]
    impl_c = ["impl Client {"]
    impl_p = ["impl Pipeline {"]
    # the async mode: the same methods on aio::Client, returning a Send + 'static future
    # (the arguments are encoded at the call, the command is sent at the first poll)
    impl_a = ["impl crate::aio::Client {"]
    for m in ms:
        name = rid(m["method"])
        req = [p for p in m["params"] if not p["optional"]]
        opt = [p for p in m["params"] if p["optional"]]
        oname = camel(m["method"]) + "Options"
        if opt:
            L.append("/// The options of [`Client::%s`] and [`Pipeline::%s`]." % (m["method"], m["method"]))
            L.append("#[derive(Debug, Clone, Default, PartialEq)]")
            L.append("pub struct %s {" % oname)
            for p in opt:
                L.append("    /// `%s`" % p["name"])
                L.append("    pub %s: %s," % (rid(p["name"]), opt_field(p)))
            L.append("}")
            L.append("")
        params = ["%s: %s" % (rid(p["name"]), param_arg(p)) for p in req]
        if opt:
            params.append("opts: Option<&%s>" % oname)
        call = ", ".join([rid(p["name"]) for p in req] + (["opts"] if opt else []))
        # the argument builder
        L.append("fn args_%s(%s) -> Result<Cmd, Error> {" % (m["method"], ", ".join(params)))
        if opt:
            L.append("    let default = %s::default();" % oname)
            L.append("    let o = opts.unwrap_or(&default);")
        for p in req:
            if p.get("list"):
                L.append("    if %s.is_empty() {" % rid(p["name"]))
                L.append('        return Err(Error::InvalidArgument("%s: %s needs at least one element".into()));' % (m["command"], p["name"]))
                L.append("    }")
        L.append('    let mut c = cmd("%s");' % m["words"][0])
        for w in m["words"][1:]:
            L.append('    c.arg("%s");' % w)

        def src(n):
            p = next(q for q in m["params"] if q["name"] == n)
            return rid(n) if not p["optional"] else "o.%s" % rid(n)
        emit(m["encode"], m, L, "    ", src)
        L.append("    Ok(c)")
        L.append("}")
        L.append("")
        mk = marker(m["type"])
        rt = rtype(m["type"])
        impl_c += docs(m, "    ", "")
        impl_c.append("    pub fn %s(&mut self, %s) -> Result<%s, Error> {" % (name, ", ".join(params), rt))
        impl_c.append("        let c = args_%s(%s)?;" % (m["method"], call))
        impl_c.append("        self.shaped::<%s>(&c)" % mk)
        impl_c.append("    }")
        impl_a += docs(m, "    ", "A future: sent when first polled; dropping it before it is ready cancels it.")
        impl_a.append("    pub fn %s(&self, %s) -> crate::aio::Call<%s> {" % (name, ", ".join(params), mk))
        impl_a.append("        self.shaped::<%s>(args_%s(%s))" % (mk, m["method"], call))
        impl_a.append("    }")
        impl_p += docs(m, "    ", "Queues it: the Slot gives the reply after `exec`.")
        impl_p.append("    pub fn %s(&mut self, %s) -> Slot<%s> {" % (name, ", ".join(params), rt))
        if fast_simple(m):
            # GET, SET...: encoded straight into the pipeline's buffer (no Cmd, no copy)
            hdr = "*%d\\r\\n$%d\\r\\n%s\\r\\n" % (len(req) + 1, len(m["words"][0]), m["words"][0])
            ind = "        "
            if opt:
                impl_p.append("        if opts.is_none() {")
                ind = "            "
            impl_p.append('%sself.begin_with(b"%s");' % (ind, hdr))
            for p in req:
                impl_p.append("%s%s.write_arg(&mut self.buf);" % (ind, rid(p["name"])))
            impl_p.append("%s%sSlot::new::<%s>(self.len() - 1)%s" % (ind, "return " if opt else "", mk, ";" if opt else ""))
            if opt:
                impl_p.append("        }")
        if not fast_simple(m) or opt:
            impl_p.append("        match args_%s(%s) {" % (m["method"], call))
            impl_p.append("            Ok(c) => Slot::new::<%s>(self.queue(&c))," % mk)
            impl_p.append("            Err(e) => Slot::refused(e),")
            impl_p.append("        }")
        impl_p.append("    }")
    impl_c.append("}")
    impl_p.append("}")
    impl_a.append("}")
    L += impl_c + [""] + impl_p + [""] + impl_a + [""]
    L.append("/// The spec's method names (all rendered, Rust names the same; a keyword is `r#`-escaped).")
    L.append("pub const METHODS: &[&str] = &[")
    for m in ms:
        L.append('    "%s",' % m["method"])
    L.append("];")
    return "\n".join(L) + "\n"


# ---------------------------------------------------------------- the conformance table

JGET = {"key": "b", "value": "b", "int": "n", "double": "f"}


def jexpr(p, opt):
    k = '"%s"' % p["name"]
    if p["type"] == "flag":
        return "fl(a, %s)" % k
    if p["type"] == "tuple":
        kinds = "".join({"key": "b", "value": "b", "int": "n", "double": "f"}[f["type"]] for f in p["fields"])
        return "t%s(a, %s)" % (kinds, k)
    if p.get("list"):
        return "l%s(a, %s)" % (JGET[p["type"]], k)
    if opt:
        return "o%s(a, %s)" % (JGET[p["type"]], k)
    return "%s(a, %s)" % (JGET[p["type"]], k)


def render_dispatch(ctx):
    ms = ctx.methods
    L = ["// " + ctx.generated_note("").strip(),
         "// The spec conformance runner's table: a call's JSON arguments -> the typed method.",
         "#![allow(deprecated, clippy::all)]",
         "use super::spec_json::*;",
         "use slotlane::*;",
         "",
         "/// Calls the typed Client method; the shaped reply as a Node (or its error).",
         "pub fn call_client(c: &mut Client, method: &str, a: &J) -> Result<Node, Error> {",
         "    match method {"]
    P = ["/// Queues the typed Pipeline method; its reader gives the shaped reply after exec.",
         "pub fn call_pipeline(p: &mut Pipeline, method: &str, a: &J) -> Reader {",
         "    match method {"]
    for m in ms:
        req = [p for p in m["params"] if not p["optional"]]
        opt = [p for p in m["params"] if p["optional"]]
        args = []
        for p in req:
            e = jexpr(p, False)
            if p["type"] == "tuple" or p.get("list"):
                args.append("&" + e)
            else:
                args.append(e)
        if opt:
            fields = ", ".join("%s: %s" % (rid(p["name"]), jexpr(p, True)) for p in opt)
            args.append("Some(&%sOptions { %s })" % (camel(m["method"]), fields))
        L.append('        "%s" => c.%s(%s).map(|v| v.node()),' % (m["method"], rid(m["method"]), ", ".join(args)))
        P.append('        "%s" => reader(p.%s(%s)),' % (m["method"], rid(m["method"]), ", ".join(args)))
    L.append('        other => panic!("no method {other}"),')
    L.append("    }")
    L.append("}")
    P.append('        other => panic!("no method {other}"),')
    P.append("    }")
    P.append("}")
    return "\n".join(L + [""] + P) + "\n"


def rustfmt(src):
    """cargo fmt --check (ci/test-rust.sh) must find the generated files formatted."""
    import subprocess
    p = subprocess.run(["rustfmt", "--edition", "2021", "--emit", "stdout"], input=src, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("render_rust: rustfmt failed: %s" % p.stderr[:2000])
    return p.stdout




# ------------------------------------------------------------------ errors

OUT_ERR = "rust/slotlane/src/error.rs"

# Rust's variants of errors.json's types: one per type, except that the cluster type keeps its
# redirect-limit variant and the resource type its unsupported-feature variant apart (their
# type_name() is the table's); UnexpectedReply is a typed conversion's failure (a ProtocolError).
RUST_CODES = {"SL_EINVAL": "InvalidArgument", "SL_EIO": "Io", "SL_ETIMEOUT": "Timeout", "SL_EPROTO": "Protocol",
              "SL_ESERVER": None, "SL_EREDIRECT": "RedirectsExhausted", "SL_ECANCELLED": "Cancelled",
              "SL_ECLUSTER": "Cluster", "SL_EUNSUPPORTED": "Unsupported", "SL_ENOMEM": "Other",
              "SL_ETOOSMALL": "Other", "SL_ESTATE": "Other",
              "SL_EBUSY": "Other", "SL_EFORK": "Other", "SL_ETLS": "Tls",
              "SL_EBLOCKING": "BlockingInPipeline", "SL_EWATCHMOVED": "WatchMoved", "SL_EABORTED": "Watch"}
RUST_KINDS = {"SL_ERR_SERVER": None, "SL_ERR_IO": "Io", "SL_ERR_TIMEOUT": "Timeout",
              "SL_ERR_REDIRECTS": "RedirectsExhausted", "SL_ERR_PROTOCOL": "Protocol",
              "SL_ERR_CANCELLED": "Cancelled", "SL_ERR_CLUSTER": "Cluster", "SL_ERR_ARGUMENT": "InvalidArgument"}
# variant -> (errors.json type, Display prefix, doc of the variant beyond the type's)
RUST_VARIANTS = [
    ("Response", "ResponseError", "server error", "`kind` is its first word (`ERR`, `WRONGTYPE`, `MOVED`...), `message` the whole text."),
    ("Io", "ConnectionError", "I/O error", "The next execution reconnects."),
    ("Timeout", "TimeoutError", "timeout", ""),
    ("RedirectsExhausted", "ClusterError", "too many redirects",
     "The redirect limit (MOVED/ASK/TRYAGAIN/CLUSTERDOWN, the client's `max_redirects`) was reached; the message is the last redirect."),
    ("Protocol", "ProtocolError", "protocol error", ""),
    ("Cancelled", "CancelledError", "cancelled", "[`CancelHandle::cancel`](crate::CancelHandle::cancel) stopped the execution."),
    ("Cluster", "ClusterError", "cluster error", ""),
    ("InvalidArgument", "ArgumentError", "invalid argument", ""),
    ("Tls", "TlsError", "TLS error",
     "The handshake or the certificate's verification failed (a wrong CA, an expired certificate, a host name mismatch, a plaintext port), the server refused the client certificate, or a CA, certificate or key could not be loaded. The message says which."),
    ("Watch", "WatchError", "transaction aborted", "EXEC answered nil: a watched key changed; nothing was applied."),
    ("WatchMoved", "WatchMovedError", "slot moved while watched", "The session is broken: retry the transaction."),
    ("BlockingInPipeline", "BlockingPipelineError", "blocking command in a pipeline", "Nothing was sent."),
    ("Unsupported", "ResourceError", "unsupported", "A feature this build does not have (TLS in a build without OpenSSL)."),
    ("UnexpectedReply", "ProtocolError", "unexpected reply",
     "A reply of another type than the one asked for (a typed method or [`FromValue`](crate::FromValue) conversion)."),
    ("Other", "ResourceError", "error", "Out of memory, a buffer too small, a call in the wrong state: `code` is the core's `SL_E*` code (below -1000: an unknown record kind)."),
]


def render_errors(ctx):
    e = ctx.errors
    types = {t["name"]: t for t in e["types"]}
    # Rust's variant of every code and kind must be of the type errors.json names for it
    table = list(e["codes"].items()) + [(k, typ) for k, (_, typ) in e["kinds"].items()]
    for name, typ in table:
        v = dict(RUST_CODES, **RUST_KINDS)[name]
        if v is not None and next(x[1] for x in RUST_VARIANTS if x[0] == v) != typ:
            raise SystemExit("render_rust: %s is %s in errors.json but Rust's %s" % (name, typ, v))
    L = ["// GENERATED by bindings/spec/render.py from bindings/spec/errors.json; do not edit.",
         "//! [`Error`]: every failure of the client, one enum, rendered from `bindings/spec/errors.json`",
         "//! (the only place errors are named): [`Error::type_name`] is the table's type of each variant.",
         "use slotlane_sys as sys;", "use std::fmt;", "",
         "/// An error of a command, a pipeline's command, or the client.", "///",
         "/// A failed command of a pipeline fails alone: its slot in the result holds one of these,",
         "/// the other commands keep their replies.",
         "#[derive(Debug, Clone, PartialEq, Eq)]", "#[non_exhaustive]", "pub enum Error {"]
    for name, typ, _, extra in RUST_VARIANTS:
        L.append("    /// %s%s (errors.json `%s`)" % (types[typ]["doc"], " " + extra if extra else "", typ))
        if name == "Response":
            L += ["    Response {", "        /// The first word of the error (`WRONGTYPE`).", "        kind: String,",
                  "        /// The whole error text.", "        message: String,", "    },"]
        elif name == "Other":
            L += ["    Other {", "        /// The core's `SL_E*` code (or below -1000: an unknown record kind).", "        code: i32,",
                  "        /// The core's message.", "        message: String,", "    },"]
        else:
            L.append("    %s(String)," % name)
    L += ["}", "", "impl Error {",
          "    /// An error from a core return code and the handle's message.",
          "    pub(crate) fn from_code(code: i32, message: &str) -> Error {",
          "        let m = || {", "            if message.is_empty() {",
          "                // SAFETY: sl_strerror returns static storage, never NULL.",
          "                unsafe { std::ffi::CStr::from_ptr(sys::sl_strerror(code)) }",
          "                    .to_string_lossy()", "                    .into_owned()",
          "            } else {", "                message.to_string()", "            }", "        };",
          "        match code {"]
    for code in sorted(e["codes"], key=lambda c: -ctx.enums["codes"][c]):
        v = RUST_CODES[code]
        if v is None:
            L.append("            sys::%s => Error::response(m().as_bytes())," % code)
        elif v == "Other":
            L.append("            sys::%s => Error::Other { code, message: m() }," % code)
        else:
            L.append("            sys::%s => Error::%s(m())," % (code, v))
    L += ["            _ => Error::Other { code, message: m() },", "        }", "    }", "",
          "    /// An error record (`SL_REPLY_ERROR`) of kind `flags` with its message.",
          "    pub(crate) fn from_record(flags: u8, message: &[u8]) -> Error {",
          "        let text = || String::from_utf8_lossy(message).into_owned();",
          "        match flags as i32 {"]
    for kind in sorted(e["kinds"], key=lambda k: ctx.enums["kinds"][k]):
        v = RUST_KINDS[kind]
        L.append("            sys::%s => %s," % (kind, "Error::response(message)" if v is None else "Error::%s(text())" % v))
    L += ["            other => Error::Other {", "                code: -1000 - other,", "                message: text(),", "            },",
          "        }", "    }", "",
          "    fn response(message: &[u8]) -> Error {",
          "        let message = String::from_utf8_lossy(message).into_owned();",
          "        let kind = message.split(' ').next().unwrap_or(\"\").to_string();",
          "        Error::Response { kind, message }", "    }", "",
          "    /// For a server error reply, its first word (`\"WRONGTYPE\"`...); `None` otherwise.",
          "    pub fn response_kind(&self) -> Option<&str> {", "        match self {",
          "            Error::Response { kind, .. } => Some(kind),", "            _ => None,", "        }", "    }", "",
          "    /// The error's text.", "    pub fn message(&self) -> &str {", "        match self {"]
    L.append("            " + " | ".join("Error::%s%s" % (n, " { message, .. }" if n in ("Response", "Other") else "(message)")
                                       for n, _, _, _ in RUST_VARIANTS) + " => message,")
    L += ["        }", "    }", "",
          "    /// The error's type in `bindings/spec/errors.json` (`\"ResponseError\"`, `\"CancelledError\"`...): the",
          "    /// same name in every binding.", "    pub fn type_name(&self) -> &'static str {", "        match self {"]
    for n, typ, _, _ in RUST_VARIANTS:
        L.append("            Error::%s%s => \"%s\"," % (n, " { .. }" if n in ("Response", "Other") else "(_)", typ))
    L += ["        }", "    }", "}", "", "impl fmt::Display for Error {",
          "    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {", "        match self {"]
    for n, _, disp, _ in RUST_VARIANTS:
        if n == "Response":
            L.append("            Error::Response { message, .. } => write!(f, \"%s: {message}\")," % disp)
        elif n == "Other":
            L.append("            Error::Other { code, message } => write!(f, \"%s {code}: {message}\")," % disp)
        else:
            L.append("            Error::%s(m) => write!(f, \"%s: {m}\")," % (n, disp))
    L += ["        }", "    }", "}", "", "impl std::error::Error for Error {}", "",
          "#[cfg(test)]", "mod tests {", "    use super::*;", "",
          "    /// Every SL_E* code and sl_err_kind of slotlane.h (slotlane-sys) is errors.json's type.",
          "    #[test]", "    fn codes_and_kinds_are_errors_json() {"]
    for code, typ in sorted(e["codes"].items()):
        L.append("        assert_eq!(Error::from_code(sys::%s, \"m\").type_name(), \"%s\");" % (code, typ))
    for kind, (_, typ) in sorted(e["kinds"].items()):
        L.append("        assert_eq!(Error::from_record(sys::%s as u8, b\"ERR m\").type_name(), \"%s\");" % (kind, typ))
    L += ["        let e = Error::from_record(sys::SL_ERR_SERVER as u8, b\"WRONGTYPE Operation against a key\");",
          "        assert_eq!(e.response_kind(), Some(\"WRONGTYPE\"));",
          "        assert_eq!(e.message(), \"WRONGTYPE Operation against a key\");",
          "        assert_eq!(e.to_string(), \"server error: WRONGTYPE Operation against a key\");",
          "        assert!(matches!(Error::from_code(sys::SL_ETIMEOUT, \"\"), Error::Timeout(m) if !m.is_empty()));",
          "        assert!(matches!(Error::from_code(sys::SL_ECANCELLED, \"c\"), Error::Cancelled(_)));",
          "        let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(Error::Io(\"x\".into()));",
          "        assert_eq!(boxed.to_string(), \"I/O error: x\");",
          "    }", "}"]
    return "\n".join(L) + "\n"


def render(ctx):
    return {OUT: rustfmt(render_commands(ctx)), OUT_DISPATCH: rustfmt(render_dispatch(ctx)),
            OUT_ERR: rustfmt(render_errors(ctx))}
