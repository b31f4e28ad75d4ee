"""What more than one render_<lang>.py module needs: the rules every language applies alike."""


def is_varargs(m):
    """Whether a method's only parameter list is its last parameter of all (and no tuple list):
    languages with variadic parameters render it so (Go ...T, Java T..., C# params T[])."""
    req = [p for p in m["params"] if not p["optional"]]
    lists = [p for p in m["params"] if p.get("list")]
    return (len(lists) == 1 and req and req[-1] is lists[0] and lists[0]["type"] != "tuple"
            and len(req) == len(m["params"]))


def type_ident(prefix, reply, upper=False):
    """An identifier for a reply type's shaper: 'array<string?>' -> prefix + 'array_stringNE'."""
    out = prefix
    for ch in reply:
        out += (ch.upper() if upper else ch) if ch.isalnum() else {"<": "_", ">": "E", ",": "_", "?": "N"}.get(ch, "_")
    return out
