"""Typed methods for the common commands, shared by Client (runs now, returns the result)
and Pipeline (queues, returns the pipeline; results come from execute()).

Each method only builds the command's arguments and names a reply conversion; routing,
splitting MGET/MSET/DEL/EXISTS across slots and redirects are the core's.
Keys and values: bytes, str (encoded with the client's encoding), int or float.
"""
import datetime
from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Tuple, Union

from ._codec import prefix

__all__ = ["Commands"]

KeyT = Union[bytes, str, int, float, bytearray, memoryview]
ValueT = Union[bytes, str, int, float, bytearray, memoryview]
ExpiryT = Union[int, datetime.timedelta]
AbsExpiryT = Union[int, datetime.datetime]
ScoreT = Union[int, float, str, bytes]
ResponseT = Any


# ------------------------------------------------------------ reply conversions

def _ok(r: Any) -> Any:
    return True if r == "OK" else r


def _bool(r: Any) -> Any:
    return bool(r) if isinstance(r, int) else r


def _float(r: Any) -> Optional[float]:
    return None if r is None else float(r)


def _float_list(r: Any) -> List[Optional[float]]:
    return [None if x is None else float(x) for x in r]


def _to_dict(r: Any) -> Dict[Any, Any]:
    if isinstance(r, dict):
        return r
    return dict(zip(r[0::2], r[1::2]))


def _to_set(r: Any) -> Set[Any]:
    return r if isinstance(r, set) else set(r)


def _bool_list(r: Any) -> List[bool]:
    return [bool(x) for x in r]


def _scored(r: Any) -> List[Tuple[Any, float]]:
    """ZRANGE ... WITHSCORES: RESP2 flat [m, s, m, s], RESP3 [[m, s], ...]."""
    if r and isinstance(r[0], list):
        return [(m, float(s)) for m, s in r]
    return [(m, float(s)) for m, s in zip(r[0::2], r[1::2])]


def _pop_scored(r: Any) -> Any:
    if r is None:
        return None
    if r and isinstance(r[0], list):
        return [(m, float(s)) for m, s in r]
    return [(m, float(s)) for m, s in zip(r[0::2], r[1::2])]


# ------------------------------------------------------------ argument checks

def _seconds(name: str, v: Any) -> int:
    if isinstance(v, datetime.timedelta):
        return int(v.total_seconds())
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("%s must be an int of seconds or a datetime.timedelta, not %s" % (name, type(v).__name__))
    return v


def _millis(name: str, v: Any) -> int:
    if isinstance(v, datetime.timedelta):
        return int(v.total_seconds() * 1000)
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("%s must be an int of milliseconds or a datetime.timedelta, not %s"
                        % (name, type(v).__name__))
    return v


def _unix(name: str, v: Any, ms: bool) -> int:
    if isinstance(v, datetime.datetime):
        return int(v.timestamp() * (1000 if ms else 1))
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("%s must be an int Unix time or a datetime.datetime, not %s" % (name, type(v).__name__))
    return v


def _int(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("%s must be an int, not %s" % (name, type(v).__name__))
    return v


def _number(name: str, v: Any) -> Union[int, float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError("%s must be an int or float, not %s" % (name, type(v).__name__))
    return v


def _keys(cmd: str, keys: Tuple[Any, ...]) -> Tuple[Any, ...]:
    """``f(k1, k2)`` or ``f([k1, k2])``."""
    if len(keys) == 1 and isinstance(keys[0], (list, tuple)):
        keys = tuple(keys[0])
    if not keys:
        raise ValueError("%s needs at least one key" % cmd)
    return keys


def _one_of(cmd: str, **flags: bool) -> None:
    on = [k for k, v in flags.items() if v]
    if len(on) > 1:
        raise ValueError("%s: %s are mutually exclusive" % (cmd, " and ".join(on)))


def _mapping(cmd: str, m: Any) -> List[Any]:
    if not isinstance(m, Mapping):
        raise TypeError("%s needs a mapping (dict), not %s" % (cmd, type(m).__name__))
    if not m:
        raise ValueError("%s needs a non-empty mapping" % cmd)
    out: List[Any] = []
    for k, v in m.items():
        out.append(k)
        out.append(v)
    return out


_P_GET = prefix(b"GET", 1)
_P_GETDEL = prefix(b"GETDEL", 1)
_P_STRLEN = prefix(b"STRLEN", 1)
_P_TTL = prefix(b"TTL", 1)
_P_PTTL = prefix(b"PTTL", 1)
_P_PERSIST = prefix(b"PERSIST", 1)
_P_TYPE = prefix(b"TYPE", 1)
_P_LLEN = prefix(b"LLEN", 1)
_P_HGETALL = prefix(b"HGETALL", 1)
_P_HLEN = prefix(b"HLEN", 1)
_P_HKEYS = prefix(b"HKEYS", 1)
_P_HVALS = prefix(b"HVALS", 1)
_P_SMEMBERS = prefix(b"SMEMBERS", 1)
_P_SCARD = prefix(b"SCARD", 1)
_P_ZCARD = prefix(b"ZCARD", 1)
_P_LPOP = prefix(b"LPOP", 1)
_P_RPOP = prefix(b"RPOP", 1)
_P_SPOP = prefix(b"SPOP", 1)
_P_INCR = prefix(b"INCR", 1)
_P_DECR = prefix(b"DECR", 1)
_P_ECHO = prefix(b"ECHO", 1)
_P_SET = prefix(b"SET", 2)
_P_SETNX = prefix(b"SETNX", 2)
_P_GETSET = prefix(b"GETSET", 2)
_P_APPEND = prefix(b"APPEND", 2)
_P_HGET = prefix(b"HGET", 2)
_P_HEXISTS = prefix(b"HEXISTS", 2)
_P_SISMEMBER = prefix(b"SISMEMBER", 2)
_P_ZSCORE = prefix(b"ZSCORE", 2)
_P_ZRANK = prefix(b"ZRANK", 2)
_P_ZREVRANK = prefix(b"ZREVRANK", 2)


class Commands:
    """The typed command methods. Subclasses implement ``_cmd(args, callback)``."""

    __slots__ = ()

    def _cmd(self, args: Tuple[Any, ...], cb: Optional[Callable[[Any], Any]] = None) -> Any:
        raise NotImplementedError

    def _c1(self, pfx: bytes, a: Any, cb: Optional[Callable[[Any], Any]] = None) -> Any:
        """A command of one argument whose RESP header and name are pfx (fast path)."""
        raise NotImplementedError

    def _c2(self, pfx: bytes, a: Any, b: Any, cb: Optional[Callable[[Any], Any]] = None) -> Any:
        raise NotImplementedError

    # ------------------------------------------------------------ server

    def ping(self) -> ResponseT:
        """PING -> True."""
        return self._cmd((b"PING",), lambda r: r == "PONG")

    def echo(self, value: ValueT) -> ResponseT:
        return self._c1(_P_ECHO, value)

    # ------------------------------------------------------------ strings

    def get(self, name: KeyT) -> ResponseT:
        """GET -> the value (bytes, or str with decode_responses) or None."""
        return self._c1(_P_GET, name)

    def set(self, name: KeyT, value: ValueT, ex: Optional[ExpiryT] = None, px: Optional[ExpiryT] = None,
            nx: bool = False, xx: bool = False, keepttl: bool = False, get: bool = False,
            exat: Optional[AbsExpiryT] = None, pxat: Optional[AbsExpiryT] = None) -> ResponseT:
        """SET with its options -> True when set, None when NX/XX prevented it; with
        ``get=True`` the old value (or None)."""
        if (ex is None and px is None and not nx and not xx and not keepttl and not get
                and exat is None and pxat is None):
            return self._c2(_P_SET, name, value, _ok)
        args: List[Any] = [b"SET", name, value]
        _one_of("SET", ex=ex is not None, px=px is not None, exat=exat is not None,
                pxat=pxat is not None, keepttl=keepttl)
        _one_of("SET", nx=nx, xx=xx)
        if ex is not None:
            args += (b"EX", _seconds("ex", ex))
        elif px is not None:
            args += (b"PX", _millis("px", px))
        elif exat is not None:
            args += (b"EXAT", _unix("exat", exat, False))
        elif pxat is not None:
            args += (b"PXAT", _unix("pxat", pxat, True))
        elif keepttl:
            args.append(b"KEEPTTL")
        if nx:
            args.append(b"NX")
        elif xx:
            args.append(b"XX")
        if get:
            args.append(b"GET")
            return self._cmd(tuple(args))
        return self._cmd(tuple(args), _ok)

    def setex(self, name: KeyT, time: ExpiryT, value: ValueT) -> ResponseT:
        return self._cmd((b"SETEX", name, _seconds("time", time), value), _ok)

    def setnx(self, name: KeyT, value: ValueT) -> ResponseT:
        return self._c2(_P_SETNX, name, value, _bool)

    def getdel(self, name: KeyT) -> ResponseT:
        return self._c1(_P_GETDEL, name)

    def getset(self, name: KeyT, value: ValueT) -> ResponseT:
        return self._c2(_P_GETSET, name, value)

    def append(self, name: KeyT, value: ValueT) -> ResponseT:
        return self._c2(_P_APPEND, name, value)

    def strlen(self, name: KeyT) -> ResponseT:
        return self._c1(_P_STRLEN, name)

    def mget(self, *keys: Any) -> ResponseT:
        """MGET k1 k2 ... (or a list) -> a list of values (None for a missing key), in the
        order of the keys, across slots (the core splits and merges)."""
        return self._cmd((b"MGET",) + _keys("MGET", keys))

    def mset(self, mapping: Mapping[KeyT, ValueT]) -> ResponseT:
        """MSET from a dict -> True, across slots (the core splits)."""
        return self._cmd(tuple([b"MSET"] + _mapping("MSET", mapping)), _ok)

    def incr(self, name: KeyT, amount: int = 1) -> ResponseT:
        if amount == 1 and type(amount) is int:
            return self._c1(_P_INCR, name)
        return self.incrby(name, amount)

    def incrby(self, name: KeyT, amount: int = 1) -> ResponseT:
        return self._cmd((b"INCRBY", name, _int("amount", amount)))

    def decr(self, name: KeyT, amount: int = 1) -> ResponseT:
        if amount == 1 and type(amount) is int:
            return self._c1(_P_DECR, name)
        return self.decrby(name, amount)

    def decrby(self, name: KeyT, amount: int = 1) -> ResponseT:
        return self._cmd((b"DECRBY", name, _int("amount", amount)))

    def incrbyfloat(self, name: KeyT, amount: float = 1.0) -> ResponseT:
        return self._cmd((b"INCRBYFLOAT", name, _number("amount", amount)), _float)

    # ------------------------------------------------------------ keys

    def delete(self, *names: Any) -> ResponseT:
        """DEL -> how many keys were removed, across slots."""
        return self._cmd((b"DEL",) + _keys("DEL", names))

    def unlink(self, *names: Any) -> ResponseT:
        return self._cmd((b"UNLINK",) + _keys("UNLINK", names))

    def exists(self, *names: Any) -> ResponseT:
        """EXISTS -> how many of the keys exist, across slots."""
        return self._cmd((b"EXISTS",) + _keys("EXISTS", names))

    def expire(self, name: KeyT, time: ExpiryT, nx: bool = False, xx: bool = False,
               gt: bool = False, lt: bool = False) -> ResponseT:
        """EXPIRE -> True when the timeout was set."""
        return self._cmd((b"EXPIRE", name, _seconds("time", time)) + self._expire_flags(nx, xx, gt, lt), _bool)

    def pexpire(self, name: KeyT, time: ExpiryT, nx: bool = False, xx: bool = False,
                gt: bool = False, lt: bool = False) -> ResponseT:
        return self._cmd((b"PEXPIRE", name, _millis("time", time)) + self._expire_flags(nx, xx, gt, lt), _bool)

    def expireat(self, name: KeyT, when: AbsExpiryT) -> ResponseT:
        return self._cmd((b"EXPIREAT", name, _unix("when", when, False)), _bool)

    def pexpireat(self, name: KeyT, when: AbsExpiryT) -> ResponseT:
        return self._cmd((b"PEXPIREAT", name, _unix("when", when, True)), _bool)

    @staticmethod
    def _expire_flags(nx: bool, xx: bool, gt: bool, lt: bool) -> Tuple[bytes, ...]:
        _one_of("EXPIRE", nx=nx, xx=xx, gt=gt, lt=lt)
        return (b"NX",) if nx else (b"XX",) if xx else (b"GT",) if gt else (b"LT",) if lt else ()

    def ttl(self, name: KeyT) -> ResponseT:
        """TTL -> seconds left, -1 without expiry, -2 when the key does not exist."""
        return self._c1(_P_TTL, name)

    def pttl(self, name: KeyT) -> ResponseT:
        return self._c1(_P_PTTL, name)

    def persist(self, name: KeyT) -> ResponseT:
        return self._c1(_P_PERSIST, name, _bool)

    def type(self, name: KeyT) -> ResponseT:
        """TYPE -> "string", "list", ... or "none"."""
        return self._c1(_P_TYPE, name)

    # ------------------------------------------------------------ lists

    def lpush(self, name: KeyT, *values: ValueT) -> ResponseT:
        if not values:
            raise ValueError("LPUSH needs at least one value")
        return self._cmd((b"LPUSH", name) + values)

    def rpush(self, name: KeyT, *values: ValueT) -> ResponseT:
        if not values:
            raise ValueError("RPUSH needs at least one value")
        return self._cmd((b"RPUSH", name) + values)

    def lpop(self, name: KeyT, count: Optional[int] = None) -> ResponseT:
        if count is None:
            return self._c1(_P_LPOP, name)
        return self._cmd((b"LPOP", name, _int("count", count)))

    def rpop(self, name: KeyT, count: Optional[int] = None) -> ResponseT:
        if count is None:
            return self._c1(_P_RPOP, name)
        return self._cmd((b"RPOP", name, _int("count", count)))

    def lrange(self, name: KeyT, start: int, end: int) -> ResponseT:
        return self._cmd((b"LRANGE", name, _int("start", start), _int("end", end)))

    def llen(self, name: KeyT) -> ResponseT:
        return self._c1(_P_LLEN, name)

    def lindex(self, name: KeyT, index: int) -> ResponseT:
        return self._cmd((b"LINDEX", name, _int("index", index)))

    def lset(self, name: KeyT, index: int, value: ValueT) -> ResponseT:
        return self._cmd((b"LSET", name, _int("index", index), value), _ok)

    def lrem(self, name: KeyT, count: int, value: ValueT) -> ResponseT:
        return self._cmd((b"LREM", name, _int("count", count), value))

    def ltrim(self, name: KeyT, start: int, end: int) -> ResponseT:
        return self._cmd((b"LTRIM", name, _int("start", start), _int("end", end)), _ok)

    # ------------------------------------------------------------ hashes

    def hset(self, name: KeyT, key: Optional[KeyT] = None, value: Optional[ValueT] = None,
             mapping: Optional[Mapping[KeyT, ValueT]] = None) -> ResponseT:
        """HSET name key value, and/or the pairs of mapping -> how many fields were added."""
        args: List[Any] = [b"HSET", name]
        if key is not None:
            if value is None:
                raise ValueError("HSET: a key needs a value (None is not a value)")
            args += (key, value)
        elif value is not None:
            raise ValueError("HSET: a value needs a key")
        if mapping is not None:
            args += _mapping("HSET", mapping)
        if len(args) == 2:
            raise ValueError("HSET needs a key and value or a mapping")
        return self._cmd(tuple(args))

    def hsetnx(self, name: KeyT, key: KeyT, value: ValueT) -> ResponseT:
        return self._cmd((b"HSETNX", name, key, value), _bool)

    def hget(self, name: KeyT, key: KeyT) -> ResponseT:
        return self._c2(_P_HGET, name, key)

    def hmget(self, name: KeyT, *keys: Any) -> ResponseT:
        return self._cmd((b"HMGET", name) + _keys("HMGET", keys))

    def hgetall(self, name: KeyT) -> ResponseT:
        """HGETALL -> a dict."""
        return self._c1(_P_HGETALL, name, _to_dict)

    def hdel(self, name: KeyT, *keys: KeyT) -> ResponseT:
        if not keys:
            raise ValueError("HDEL needs at least one field")
        return self._cmd((b"HDEL", name) + keys)

    def hexists(self, name: KeyT, key: KeyT) -> ResponseT:
        return self._c2(_P_HEXISTS, name, key, _bool)

    def hlen(self, name: KeyT) -> ResponseT:
        return self._c1(_P_HLEN, name)

    def hkeys(self, name: KeyT) -> ResponseT:
        return self._c1(_P_HKEYS, name)

    def hvals(self, name: KeyT) -> ResponseT:
        return self._c1(_P_HVALS, name)

    def hincrby(self, name: KeyT, key: KeyT, amount: int = 1) -> ResponseT:
        return self._cmd((b"HINCRBY", name, key, _int("amount", amount)))

    def hincrbyfloat(self, name: KeyT, key: KeyT, amount: float = 1.0) -> ResponseT:
        return self._cmd((b"HINCRBYFLOAT", name, key, _number("amount", amount)), _float)

    # ------------------------------------------------------------ sets

    def sadd(self, name: KeyT, *values: ValueT) -> ResponseT:
        if not values:
            raise ValueError("SADD needs at least one member")
        return self._cmd((b"SADD", name) + values)

    def srem(self, name: KeyT, *values: ValueT) -> ResponseT:
        if not values:
            raise ValueError("SREM needs at least one member")
        return self._cmd((b"SREM", name) + values)

    def smembers(self, name: KeyT) -> ResponseT:
        """SMEMBERS -> a set."""
        return self._c1(_P_SMEMBERS, name, _to_set)

    def sismember(self, name: KeyT, value: ValueT) -> ResponseT:
        return self._c2(_P_SISMEMBER, name, value, _bool)

    def smismember(self, name: KeyT, *values: Any) -> ResponseT:
        return self._cmd((b"SMISMEMBER", name) + _keys("SMISMEMBER", values), _bool_list)

    def scard(self, name: KeyT) -> ResponseT:
        return self._c1(_P_SCARD, name)

    def spop(self, name: KeyT, count: Optional[int] = None) -> ResponseT:
        if count is None:
            return self._c1(_P_SPOP, name)
        return self._cmd((b"SPOP", name, _int("count", count)))

    def srandmember(self, name: KeyT, number: Optional[int] = None) -> ResponseT:
        if number is None:
            return self._cmd((b"SRANDMEMBER", name))
        return self._cmd((b"SRANDMEMBER", name, _int("number", number)))

    # ------------------------------------------------------------ sorted sets

    def zadd(self, name: KeyT, mapping: Mapping[KeyT, ScoreT], nx: bool = False, xx: bool = False,
             ch: bool = False, incr: bool = False, gt: bool = False, lt: bool = False) -> ResponseT:
        """ZADD name {member: score} -> members added (or changed with ch); with incr=True
        the new score (a float, None when NX/XX prevented it)."""
        if not isinstance(mapping, Mapping):
            raise TypeError("ZADD needs a mapping {member: score}, not %s" % type(mapping).__name__)
        if not mapping:
            raise ValueError("ZADD needs a non-empty mapping")
        _one_of("ZADD", nx=nx, xx=xx)
        _one_of("ZADD", nx=nx, gt=gt, lt=lt)
        if incr and len(mapping) != 1:
            raise ValueError("ZADD with incr=True takes exactly one member")
        args: List[Any] = [b"ZADD", name]
        if nx:
            args.append(b"NX")
        if xx:
            args.append(b"XX")
        if gt:
            args.append(b"GT")
        if lt:
            args.append(b"LT")
        if ch:
            args.append(b"CH")
        if incr:
            args.append(b"INCR")
        for m, s in mapping.items():
            if isinstance(s, bool) or not isinstance(s, (int, float, str, bytes)):
                raise TypeError("ZADD: the score of %r must be a number, not %s" % (m, type(s).__name__))
            args.append(s)
            args.append(m)
        return self._cmd(tuple(args), _float if incr else None)

    def zrem(self, name: KeyT, *values: ValueT) -> ResponseT:
        if not values:
            raise ValueError("ZREM needs at least one member")
        return self._cmd((b"ZREM", name) + values)

    def zscore(self, name: KeyT, value: ValueT) -> ResponseT:
        """ZSCORE -> a float or None."""
        return self._c2(_P_ZSCORE, name, value, _float)

    def zmscore(self, name: KeyT, *members: Any) -> ResponseT:
        return self._cmd((b"ZMSCORE", name) + _keys("ZMSCORE", members), _float_list)

    def zincrby(self, name: KeyT, amount: float, value: ValueT) -> ResponseT:
        return self._cmd((b"ZINCRBY", name, _number("amount", amount), value), _float)

    def zcard(self, name: KeyT) -> ResponseT:
        return self._c1(_P_ZCARD, name)

    def zcount(self, name: KeyT, min: ScoreT, max: ScoreT) -> ResponseT:
        return self._cmd((b"ZCOUNT", name, min, max))

    def zrange(self, name: KeyT, start: int, end: int, desc: bool = False,
               withscores: bool = False) -> ResponseT:
        """ZRANGE by index -> members, or (member, score) pairs with withscores."""
        args: Tuple[Any, ...] = (b"ZRANGE", name, _int("start", start), _int("end", end))
        if desc:
            args += (b"REV",)
        if withscores:
            return self._cmd(args + (b"WITHSCORES",), _scored)
        return self._cmd(args)

    def zrevrange(self, name: KeyT, start: int, end: int, withscores: bool = False) -> ResponseT:
        return self.zrange(name, start, end, desc=True, withscores=withscores)

    def zrangebyscore(self, name: KeyT, min: ScoreT, max: ScoreT, start: Optional[int] = None,
                      num: Optional[int] = None, withscores: bool = False) -> ResponseT:
        if (start is None) != (num is None):
            raise ValueError("ZRANGEBYSCORE: start and num go together")
        args: Tuple[Any, ...] = (b"ZRANGEBYSCORE", name, min, max)
        if withscores:
            args += (b"WITHSCORES",)
        if start is not None:
            args += (b"LIMIT", _int("start", start), _int("num", num))
        return self._cmd(args, _scored if withscores else None)

    def zrank(self, name: KeyT, value: ValueT) -> ResponseT:
        return self._c2(_P_ZRANK, name, value)

    def zrevrank(self, name: KeyT, value: ValueT) -> ResponseT:
        return self._c2(_P_ZREVRANK, name, value)

    def zpopmin(self, name: KeyT, count: Optional[int] = None) -> ResponseT:
        args: Tuple[Any, ...] = (b"ZPOPMIN", name)
        if count is not None:
            args += (_int("count", count),)
        return self._cmd(args, _pop_scored)

    def zpopmax(self, name: KeyT, count: Optional[int] = None) -> ResponseT:
        args: Tuple[Any, ...] = (b"ZPOPMAX", name)
        if count is not None:
            args += (_int("count", count),)
        return self._cmd(args, _pop_scored)
