"""The spec's reply types as Python values (bindings/spec/README.md, "Reply types and the
one normalisation of RESP2 and RESP3"), and the argument checks the generated methods use.

``build("pairs<string,double>")`` returns the function that turns a decoded reply
(_codec.decode_records: bytes/str, int, float, list, dict, set, None...) into the type's
value, or None when the decoded value already is it. Built once per type at import by
_commands.py; nothing here knows a command."""
from typing import Any, Callable, Dict, List, Optional, Tuple

from ._errors import ArgumentError

__all__ = ["build", "shaper", "OK"]

Shaper = Optional[Callable[[Any], Any]]


def OK(r: Any) -> bool:
    """ok and ok?: +OK -> True; nil (SET NX/XX not done) -> False."""
    return bool(r == "OK")


def _parse(s: str) -> Tuple[str, List[Any], bool]:
    """'map<string,int?>?' -> ("map", [("string", [], False), ("int", [], True)], True)."""
    pos = 0

    def one() -> Tuple[str, List[Any], bool]:
        nonlocal pos
        j = pos
        while j < len(s) and s[j].isalpha():
            j += 1
        name, pos = s[pos:j], j
        kids: List[Any] = []
        if pos < len(s) and s[pos] == "<":
            pos += 1
            kids.append(one())
            while s[pos] == ",":
                pos += 1
                kids.append(one())
            pos += 1  # ">"
        null = pos < len(s) and s[pos] == "?"
        if null:
            pos += 1
        return name, kids, null

    return one()


def _nullable(f: Shaper) -> Shaper:
    if f is None:
        return None
    g = f
    return lambda r: None if r is None else g(r)


def _flat_pairs(r: Any) -> List[Tuple[Any, Any]]:
    """A map or pairs reply in any of its layouts: RESP3 map (dict), RESP2 flat list
    k, v, k, v, or a list of [k, v] lists (told apart by the first element)."""
    if isinstance(r, dict):
        return list(r.items())
    if r and isinstance(r[0], list):
        return [(p[0], p[1]) for p in r]
    return list(zip(r[0::2], r[1::2]))


def _compile(node: Tuple[str, List[Any], bool]) -> Shaper:
    name, kids, null = node
    f: Shaper
    if name == "ok":
        return OK
    if name in ("status", "string", "int", "any"):
        f = None
    elif name == "bool":
        f = bool
    elif name == "double":
        f = float
    elif name == "cursor":
        f = int
    elif name == "array":
        inner = _compile(kids[0])
        if inner is None:
            f = None
        else:
            fi = inner
            f = lambda r: [fi(x) for x in r]  # noqa: E731
    elif name == "set":
        inner = _compile(kids[0])
        if inner is None:
            f = lambda r: r if isinstance(r, set) else set(r)  # noqa: E731
        else:
            fi = inner
            f = lambda r: {fi(x) for x in r}  # noqa: E731
    elif name in ("map", "pairs"):
        fk = _compile(kids[0]) or (lambda x: x)
        fv = _compile(kids[1]) or (lambda x: x)
        if name == "map":
            f = lambda r: {fk(k): fv(v) for k, v in _flat_pairs(r)}  # noqa: E731
        else:
            f = lambda r: [(fk(k), fv(v)) for k, v in _flat_pairs(r)]  # noqa: E731
    elif name == "tuple":
        fs = [_compile(k) or (lambda x: x) for k in kids]
        n = len(fs)

        def f(r: Any) -> Any:
            if len(r) != n:
                raise ValueError("expected %d elements" % n)
            return tuple(g(x) for g, x in zip(fs, r))
    else:
        raise ValueError("unknown reply type %s" % name)
    return _nullable(f) if null else f


_CACHE: Dict[str, Shaper] = {}


def build(t: str) -> Shaper:
    """The shaper of a reply type of commands.json (None: the decoded value already is it)."""
    if t not in _CACHE:
        _CACHE[t] = _compile(_parse(t))
    return _CACHE[t]


def shaper(t: str) -> Callable[[Any], Any]:
    """build() for a type whose decoded value needs shaping (the renderer knows which)."""
    f = build(t)
    if f is None:
        raise ValueError("reply type %s needs no shaper" % t)
    return f


# ------------------------------------------------------------------ argument checks

def _int(name: str, v: Any) -> int:
    """An int parameter: an int, never a bool (bindings/spec/README.md, argument rules)."""
    if type(v) is int:
        return v
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("%s must be an int, not %s" % (name, type(v).__name__))
    return int(v)


def _num(name: str, v: Any) -> Any:
    """A double parameter: an int or a float, never a bool."""
    if type(v) is float or type(v) is int:
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError("%s must be an int or float, not %s" % (name, type(v).__name__))
    return v


def _tuples(a: List[Any], name: str, v: Any, kinds: Tuple[str, ...], token: Optional[bytes],
            each: bool, swapped: bool) -> None:
    """A tuple-list parameter (field_value, score_member...): a sequence of tuples of
    len(kinds), or for 2 fields a Mapping ({field: value}; for ZADD's (score, member) the
    Mapping is {member: score})."""
    n = len(kinds)
    if hasattr(v, "items"):
        if n != 2:
            raise TypeError("%s takes a sequence of %d-tuples, not a mapping" % (name, n))
        items: Any = [(s, m) for m, s in v.items()] if swapped else list(v.items())
    elif isinstance(v, (list, tuple)):
        items = v
    else:
        raise TypeError("%s must be a sequence of tuples%s, not %s"
                        % (name, " or a mapping" if n == 2 else "", type(v).__name__))
    if not items:
        raise ArgumentError("%s needs at least one element" % name)
    if token is not None and not each:
        a.append(token)
    for t in items:
        if not isinstance(t, (list, tuple)) or len(t) != n:
            raise TypeError("%s: each element must be a tuple of %d, not %r" % (name, n, t))
        if each:
            a.append(token)
        for k, x in zip(kinds, t):
            if k == "int":
                x = _int(name, x)
            elif k == "double":
                x = _num(name, x)
            a.append(x)
