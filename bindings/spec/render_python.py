"""render.py's Python module: python/src/slotlane/_commands.py (the typed methods of
Client, Pipeline and, in the async mode, slotlane.asyncio's Client: the same methods as
``async def`` with the same types) and python/src/slotlane/_errors.py (the exception
classes).

Idiom: snake_case methods with type hints; the client's methods are generic in the
decoded string type (bytes, or str with decode_responses=True: Client's __init__
overloads pick it); required parameters positional, options keyword-only; a method whose
only list is its last required parameter takes it as *args (or one list); a tuple list of
2 fields also takes a Mapping. Reply shaping is the spec's one normalisation, built once
per type at import (python/src/slotlane/_shapes.py)."""
import keyword

OUT_COMMANDS = "python/src/slotlane/_commands.py"
OUT_ERRORS = "python/src/slotlane/_errors.py"

SCALAR_HINT = {"key": "KeyT", "value": "ValueT", "int": "int", "double": "float"}
RESERVED = set(keyword.kwlist) | {"self"}


def pyname(n):
    return n + "_" if n in RESERVED else n


def hint(t, s="_S"):
    """The Python type of a reply type node (s: the client's string type)."""
    n = t["t"]
    if n in ("ok", "bool"):
        h = "bool"
    elif n == "status":
        h = "str"
    elif n == "string":
        h = s
    elif n in ("int", "cursor"):
        h = "int"
    elif n == "double":
        h = "float"
    elif n == "any":
        return "Any"
    elif n == "array":
        h = "List[%s]" % hint(t["of"][0], s)
    elif n == "set":
        h = "Set[%s]" % hint(t["of"][0], s)
    elif n == "map":
        h = "Dict[%s, %s]" % (hint(t["of"][0], s), hint(t["of"][1], s))
    elif n == "pairs":
        h = "List[Tuple[%s, %s]]" % (hint(t["of"][0], s), hint(t["of"][1], s))
    elif n == "tuple":
        h = "Tuple[%s]" % ", ".join(hint(k, s) for k in t["of"])
    else:
        raise ValueError(n)
    if t.get("null") and n != "ok":  # ok? is a bool: false when nil
        h = "Optional[%s]" % h
    return h


def is_varargs(m):
    req = [p for p in m["params"] if not p["optional"]]
    lists = [p for p in m["params"] if p.get("list")]
    return (len(lists) == 1 and req and req[-1] is lists[0] and lists[0]["type"] != "tuple")


def param_hint(p):
    if p["type"] == "flag":
        return "bool"
    if p["type"] == "tuple":
        fs = [SCALAR_HINT[f["type"]] for f in p["fields"]]
        h = "Sequence[Tuple[%s]]" % ", ".join(fs)
        if len(fs) == 2:
            km, vm = (fs[1], fs[0]) if swapped(p) else (fs[0], fs[1])
            h = "Union[%s, Mapping[%s, %s]]" % (h, km, vm)
        return h
    base = SCALAR_HINT[p["type"]]
    if p.get("list"):
        return "Sequence[%s]" % base
    return base


def swapped(p):
    """ZADD's (score, member) tuples: a Mapping is {member: score}."""
    f = p["fields"]
    return len(f) == 2 and f[0]["type"] in ("int", "double") and f[1]["type"] in ("key", "value")


def signature(m, ret):
    parts = ["self"]
    star = False
    va = is_varargs(m)
    for p in m["params"]:
        n = pyname(p["name"])
        if not p["optional"]:
            if va and p.get("list"):
                parts.append("*%s: Union[%s, Sequence[%s]]" % (n, SCALAR_HINT[p["type"]], SCALAR_HINT[p["type"]]))
                star = True
            else:
                parts.append("%s: %s" % (n, param_hint(p)))
            continue
        if not star:
            parts.append("*")
            star = True
        if p["type"] == "flag":
            parts.append("%s: bool = False" % n)
        else:
            parts.append("%s: Optional[%s] = None" % (n, param_hint(p)))
    return "(%s) -> %s" % (", ".join(parts), ret)


def docstring(m, ind):
    lines = ["%s (%s): %s." % (m["command"], m["group"], m["summary"].rstrip("."))]
    extra = []
    if m.get("deprecated"):
        extra.append("Deprecated since Redis %s%s." % (m["deprecated"], "; use %s" % m["replaced_by"] if m.get("replaced_by") else ""))
    extra.append("Reply: ``%s``%s" % (m["reply"], (" -- " + m["doc"]) if m.get("doc") else "."))
    text = lines + [""] + extra
    out = ['%s"""%s' % (ind, text[0])]
    for t in text[1:]:
        out.append((ind + t) if t else "")
    out[-1] += '"""'
    return out


def fast_arity(m):
    """1 or 2 when every required parameter is a key/value scalar sent right after the
    command's name (GET, SET, HGET...): the RESP-prefix fast path. Else 0."""
    req = [p for p in m["params"] if not p["optional"]]
    if len(m["words"]) != 1 or not 1 <= len(req) <= 2 or any(p["type"] not in ("key", "value") or p.get("list") for p in req):
        return 0
    enc = m["encode"]
    if [op.get("p") for op in enc[:len(req)]] != [p["name"] for p in req]:
        return 0
    if any(op["op"] != "arg" or "t" in op for op in enc[:len(req)]):
        return 0
    if any(op["op"] in ("arg", "token", "count", "list", "tuples") for op in enc[len(req):]):
        return 0
    return len(req)


def emit_ops(ops, m, out, ind):
    ptypes = {p["name"]: p for p in m["params"]}
    for op in ops:
        o = op["op"]
        p = ptypes.get(op.get("p"))
        n = pyname(op["p"]) if "p" in op else None
        tok = 'b"%s"' % op["t"] if "t" in op else None

        def val(expr, ptype):
            if ptype == "int":
                return '_int("%s", %s)' % (p["name"], expr)
            if ptype == "double":
                return '_num("%s", %s)' % (p["name"], expr)
            return expr
        if o == "token":
            out.append('%sa.append(%s)' % (ind, tok))
        elif o == "arg":
            if tok:
                out.append('%sa.append(%s)' % (ind, tok))
            out.append('%sa.append(%s)' % (ind, val(n, p["type"])))
        elif o == "opt":
            out.append('%sif %s is not None:' % (ind, n))
            if tok:
                out.append('%s    a.append(%s)' % (ind, tok))
            out.append('%s    a.append(%s)' % (ind, val(n, p["type"])))
        elif o == "flag":
            out.append('%sif %s:' % (ind, n))
            out.append('%s    a.append(%s)' % (ind, tok))
        elif o == "count":
            out.append('%sa.append(len(%s))' % (ind, n if not p["optional"] else "%s or ()" % n))
        elif o == "list":
            src = n
            guard = p["optional"]
            pre = ind
            if guard:
                out.append('%sif %s:' % (ind, n))
                pre = ind + "    "
            if tok and not op.get("each"):
                out.append('%sa.append(%s)' % (pre, tok))
            if op.get("each"):
                out.append('%sfor x in %s:' % (pre, src))
                out.append('%s    a += (%s, %s)' % (pre, tok, val("x", p["type"])))
            elif p["type"] in ("int", "double"):
                out.append('%sa += [%s for x in %s]' % (pre, val("x", p["type"]), src))
            else:
                out.append('%sa += %s' % (pre, src))
        elif o == "tuples":
            pre = ind
            if p["optional"]:
                out.append('%sif %s:' % (ind, n))
                pre = ind + "    "
            kinds = tuple(f["type"] for f in p["fields"])
            out.append('%s_tuples(a, "%s", %s, %r, %s, %s, %s)' % (
                pre, p["name"], n, kinds, tok or "None", bool(op.get("each")), swapped(p)))
        elif o == "group":
            out.append('%sif %s is not None%s:' % (ind, n, "" if p["type"] != "flag" else " and %s" % n))
            if tok:
                out.append('%s    a.append(%s)' % (ind, tok))
            emit_ops(op["body"], m, out, ind + "    ")
        elif o == "choice":
            names = [pyname(x["p"]) for x in op["body"] if "p" in x]
            conds = []
            for x in op["body"]:
                if "p" not in x:
                    continue
                conds.append(pyname(x["p"]) if ptypes[x["p"]]["type"] == "flag" else "%s is not None" % pyname(x["p"]))
            out.append('%sif %s:' % (ind, " or ".join(conds)))
            out.append('%s    a.append(%s)' % (ind, tok))
            emit_ops(op["body"], m, out, ind + "    ")
            del names
        else:
            raise ValueError(o)


def optional_default_cond(m):
    """The condition under which every optional parameter keeps its default."""
    c = []
    for p in m["params"]:
        if not p["optional"]:
            continue
        n = pyname(p["name"])
        c.append(("not %s" % n) if p["type"] == "flag" or p.get("list") else "%s is None" % n)
    return " and ".join(c)


def shaper_name(reply):
    return "_T_" + "".join(ch if ch.isalnum() else "_" for ch in reply.replace("?", "_n").replace("<", "_").replace(">", "").replace(",", "_"))


def method_lines(m, pipeline, asynchronous=False):
    """The method's lines; asynchronous: ``async def``, awaiting the client's _cmd/_cN
    (the async client's coroutines), everything else the same."""
    ret = "_P" if pipeline else hint(m["type"])
    name = pyname(m["method"])
    self_t = "self: _P" if pipeline else "self"
    sig = signature(m, ret).replace("(self", "(" + self_t, 1)
    out = ["    %sdef %s%s:" % ("async " if asynchronous else "", name, sig)]
    ret_kw = "return await" if asynchronous else "return"
    out += docstring(m, "        ")
    shaper = shaper_name(m["reply"])
    k = fast_arity(m)
    req = [p for p in m["params"] if not p["optional"]]
    body_ind = "        "
    pfx = "_P_%s" % "".join(ch if ch.isalnum() else "_" for ch in m["method"].upper())
    if k:
        cond = optional_default_cond(m)
        names = [pyname(p["name"]) for p in req]
        fast = []
        if pipeline:
            # inline: the commands pipelines carry most (GET, SET) pay no call per command
            for i, n in enumerate(names):
                fast.append("if type(%s) is not bytes:" % n)
                fast.append("    %s = %s.encode(self._enc, self._errs) if type(%s) is str else conv(%s, self._enc, self._errs, %s, %d)"
                            % (n, n, n, n, pfx, i + 1))
            lens = []
            for i, n in enumerate(names):
                fast.append("m%d = len(%s)" % (i, n))
                lens.append('_HDR[m%d] if m%d < 4096 else b"$%%d\\r\\n" %% m%d, %s, _CRLF' % (i, i, i, n))
            fast.append("self._parts += (%s, %s)" % (pfx, ", ".join(lens)))
            fast += shaper_register(m, shaper)
            fast.append("self._n += 1")
            fast.append("return self")
        else:
            fast.append("%s self._c%d(%s, %s%s)" % (ret_kw, k, pfx, ", ".join(names), (", " + shaper) if shaper_used(m) else ""))
        if cond:
            out.append("%sif %s:" % (body_ind, cond))
            out += [body_ind + "    " + f for f in fast]
        else:
            out += [body_ind + f for f in fast]
            return out, pfx, k
    # the general path: build the argument list by the encoding program
    for p in m["params"]:
        if p.get("list") and not p["optional"]:
            n = pyname(p["name"])
            if is_varargs(m):
                out.append("%sif len(%s) == 1 and isinstance(%s[0], (list, tuple)):" % (body_ind, n, n))
                out.append("%s    %s = tuple(%s[0])" % (body_ind, n, n))
            out.append("%sif not %s:" % (body_ind, n))
            out.append('%s    raise ArgumentError("%s: %s needs at least one element")' % (body_ind, m["command"], p["name"]))
    words = ", ".join('b"%s"' % w for w in m["words"])
    out.append("%sa: List[Any] = [%s]" % (body_ind, words))
    emit_ops(m["encode"], m, out, body_ind)
    out.append("%s%s self._cmd(a%s)" % (body_ind, ret_kw, (", " + shaper) if shaper_used(m) else ""))
    return out, (pfx if k else None), k


def needs_shaping(t):
    """Whether the decoded reply is not already the type's value (mirrors _shapes._compile)."""
    n = t["t"]
    if n in ("ok", "bool", "double", "cursor", "set", "map", "pairs", "tuple"):
        return True
    if n == "array":
        return needs_shaping(t["of"][0])
    return False


def shaper_used(m):
    return needs_shaping(m["type"])


def shaper_register(m, shaper):
    if not shaper_used(m):
        return []
    if m["reply"] in ("ok", "ok?"):
        return ["self._oks.append(self._n)"]
    return ["self._cbs.append((self._n, %s))" % shaper]


def render_commands(ctx):
    ms = ctx.methods
    L = ['"""The typed command methods of Client (ClientCommands: runs the command, returns its',
         'shaped reply) and Pipeline (PipelineCommands: queues it, returns the pipeline).',
         "",
         ctx.generated_note("").strip(),
         "",
         "Every method only builds its command's arguments (bindings/spec/README.md, the encoding",
         "program) and names its reply type's shaper; routing, splitting multi-key commands and",
         "redirects are the core's. Keys: bytes or str; values: bytes, str, int or float; int",
         "parameters: int; double parameters: int or float; flags: bool; a bool is never a key,",
         "value or number.",
         '"""',
         "# mypy: disable-error-code=\"no-any-return\"",
         "# (the shaped replies are typed by the method signatures; _cmd returns Any)",
         "from typing import Any, Callable, Dict, Generic, List, Mapping, Optional, Sequence, Set, Tuple, TypeVar, Union",
         "",
         "from . import _shapes",
         "from ._codec import _CRLF, _HDR, conv, prefix",
         "from ._errors import ArgumentError",
         "from ._shapes import _int, _num, _tuples",
         "",
         '__all__ = ["ClientCommands", "PipelineCommands", "AsyncClientCommands", "KeyT", "ValueT", "METHODS"]',
         "",
         "KeyT = Union[bytes, str, bytearray, memoryview]",
         "ValueT = Union[bytes, str, int, float, bytearray, memoryview]",
         '_S = TypeVar("_S", bytes, str)',
         '_P = TypeVar("_P", bound="PipelineCommands")',
         "_Shaper = Optional[Callable[[Any], Any]]",
         ""]
    replies = sorted({m["reply"] for m in ms if shaper_used(m)})
    L.append("# one shaper per reply type that needs one (the others are the decoded value as it is)")
    for r in replies:
        L.append('%s = _shapes.shaper("%s")' % (shaper_name(r), r))
    L.append("")
    pfx_lines = []
    for m in ms:
        k = fast_arity(m)
        if k:
            pfx = "_P_%s" % "".join(ch if ch.isalnum() else "_" for ch in m["method"].upper())
            pfx_lines.append('%s = prefix(b"%s", %d)' % (pfx, m["words"][0], k))
    L += pfx_lines
    L.append("")
    L.append("METHODS = {")
    for m in ms:
        L.append('    "%s": "%s",' % (m["method"], pyname(m["method"])))
    L.append("}")
    L.append('"""The spec\'s method names -> the Python method names (a keyword gets a trailing _)."""')
    L.append("")
    L.append("")
    L.append("class ClientCommands(Generic[_S]):")
    L.append('    """The typed methods of Client. Each runs its command now and returns the shaped reply;')
    L.append('    an error reply is raised (ResponseError, ...)."""')
    L.append("")
    L.append("    __slots__ = ()")
    L.append("")
    L.append("    def _cmd(self, args: List[Any], cb: _Shaper = None) -> Any:")
    L.append("        raise NotImplementedError")
    L.append("")
    L.append("    def _c1(self, pfx: bytes, a: Any, cb: _Shaper = None) -> Any:")
    L.append("        raise NotImplementedError")
    L.append("")
    L.append("    def _c2(self, pfx: bytes, a: Any, b: Any, cb: _Shaper = None) -> Any:")
    L.append("        raise NotImplementedError")
    for m in ms:
        L.append("")
        L += method_lines(m, False)[0]
    L.append("")
    L.append("")
    L.append("class PipelineCommands:")
    L.append('    """The typed methods of Pipeline. Each queues its command and returns the pipeline;')
    L.append('    execute() returns the shaped replies in order."""')
    L.append("")
    L.append("    __slots__ = ()")
    L.append("    _parts: List[bytes]")
    L.append("    _n: int")
    L.append("    _cbs: List[Tuple[int, Callable[[Any], Any]]]")
    L.append("    _oks: List[int]")
    L.append("    _enc: str")
    L.append("    _errs: str")
    L.append("")
    L.append("    def _cmd(self: _P, args: List[Any], cb: _Shaper = None) -> _P:")
    L.append("        raise NotImplementedError")
    for m in ms:
        L.append("")
        L += method_lines(m, True)[0]
    L.append("")
    L.append("")
    L.append("class AsyncClientCommands(Generic[_S]):")
    L.append('    """The typed methods of slotlane.asyncio.Client: the same as ClientCommands\'s, as')
    L.append('    coroutines. Each sends its command when awaited and returns the shaped reply; an error')
    L.append('    reply is raised (ResponseError, ...)."""')
    L.append("")
    L.append("    __slots__ = ()")
    L.append("")
    L.append("    async def _cmd(self, args: List[Any], cb: _Shaper = None) -> Any:")
    L.append("        raise NotImplementedError")
    L.append("")
    L.append("    async def _c1(self, pfx: bytes, a: Any, cb: _Shaper = None) -> Any:")
    L.append("        raise NotImplementedError")
    L.append("")
    L.append("    async def _c2(self, pfx: bytes, a: Any, b: Any, cb: _Shaper = None) -> Any:")
    L.append("        raise NotImplementedError")
    for m in ms:
        L.append("")
        L += method_lines(m, False, asynchronous=True)[0]
    return "\n".join(L) + "\n"


def render_errors(ctx):
    e = ctx.errors
    L = ['"""Exceptions: one class per type of bindings/spec/errors.json. A failed command\'s reply',
         "is an instance of one of these; the server's message is the exception's message",
         "(``str(exc)``) and ``exc.message``.",
         "",
         ctx.generated_note("").strip(),
         '"""',
         "from typing import Dict, Optional, Type",
         "",
         "__all__ = [%s]" % ", ".join('"%s"' % t["name"] for t in e["types"]),
         ""]
    for t in e["types"]:
        L.append("")
        if t["parent"] is None:
            L += ['class Error(Exception):',
                  '    """%s' % t["doc"],
                  "",
                  '    ``kind``: ``"server"``, ``"io"``, ``"timeout"``, ``"redirects"``, ``"protocol"``,',
                  '    ``"cancelled"``, ``"cluster"``, ``"argument"`` for a command\'s reply, or ``"client"``',
                  '    for an error of the client as a whole."""',
                  "",
                  '    kind: str = "client"',
                  "",
                  '    def __init__(self, message: str = "", kind: Optional[str] = None) -> None:',
                  "        super().__init__(message)",
                  "        self.message = message",
                  "        if kind is not None:",
                  "            self.kind = kind",
                  "",
                  "    def __eq__(self, other: object) -> bool:  # errors in result lists compare by content",
                  "        if type(other) is not type(self):",
                  "            return False",
                  "        assert isinstance(other, Error)",
                  "        return other.message == self.message and other.kind == self.kind",
                  "",
                  "    def __hash__(self) -> int:",
                  "        return hash((type(self), self.message, self.kind))",
                  "",
                  "    def __reduce__(self):  # type: ignore[no-untyped-def]",
                  "        return (type(self), (self.message, self.kind))"]
            continue
        bases = t["parent"]
        if t["name"] == "ArgumentError":
            bases += ", ValueError"
        L.append("class %s(%s):" % (t["name"], bases))
        L.append('    """%s"""' % t["doc"])
        L.append("")
        L.append('    kind = "%s"' % t["kind"])
        if t["name"] == "ResponseError":
            L += ["",
                  "    @property",
                  "    def code(self) -> str:",
                  '        """The error\'s first word: ``"ERR"``, ``"WRONGTYPE"``, ..."""',
                  '        return self.message.split(" ", 1)[0]']
    L.append("")
    L.append("")
    kinds = sorted(e["kinds"].items(), key=lambda kv: ctx.enums["kinds"][kv[0]])
    L.append("KINDS = (%s)" % ", ".join('"%s"' % v[0] for k, v in kinds))
    L.append('"""sl_err_kind values -> the kind names (slotlane.h order)."""')
    L.append("KIND_CLASS: Dict[int, Type[Error]] = {")
    for k, v in kinds:
        L.append("    %d: %s,  # %s" % (ctx.enums["kinds"][k], v[1], k))
    L.append("}")
    L.append("CODE_CLASS: Dict[int, Type[Error]] = {")
    for k, v in sorted(e["codes"].items(), key=lambda kv: -ctx.enums["codes"][kv[0]]):
        L.append("    %d: %s,  # %s" % (ctx.enums["codes"][k], v, k))
    L.append("}")
    return "\n".join(L) + "\n"


def render(ctx):
    return {OUT_COMMANDS: render_commands(ctx), OUT_ERRORS: render_errors(ctx)}
