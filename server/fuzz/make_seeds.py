#!/usr/bin/env python3
"""Writes the seed inputs of the two fuzz targets (server/fuzz/README.md): real
requests of every command family and the malformed classes for fuzz_proto, and the
same command sequences in fuzz_command's grammar. The checked-in corpus started from
these and grew (and was minimized with -merge=1) under `make fuzz`.

    python3 server/fuzz/make_seeds.py OUTDIR    # writes OUTDIR/proto/* and OUTDIR/command/*
"""
import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import resp  # noqa: E402

# Sequences of commands that build state and then read, change and drop it.
SEQUENCES = [
    [["SET", "a", "hello"], ["GET", "a"], ["APPEND", "a", "!"], ["GETRANGE", "a", "0", "-2"],
     ["SETRANGE", "a", "10", "x"], ["STRLEN", "a"], ["GETDEL", "a"]],
    [["SET", "a", "1", "EX", "10", "NX"], ["INCR", "a"], ["INCRBY", "a", "-5"], ["INCRBYFLOAT", "a", "1.5"],
     ["DECR", "a"], ["TTL", "a"], ["PERSIST", "a"], ["GETEX", "a", "PX", "100"], ["PTTL", "a"]],
    [["MSET", "{t}a", "1", "{t}b", "2"], ["MGET", "{t}a", "{t}b", "{t}c"], ["MSETNX", "{t}c", "3"],
     ["RENAME", "{t}a", "{t}z"], ["RENAMENX", "{t}b", "{t}z"], ["DEL", "{t}a", "{t}b", "{t}z"], ["EXISTS", "{t}c"]],
    [["RPUSH", "l", "a", "b", "c", "d"], ["LPUSH", "l", "z"], ["LRANGE", "l", "0", "-1"], ["LINDEX", "l", "-1"],
     ["LSET", "l", "0", "y"], ["LINSERT", "l", "BEFORE", "b", "q"], ["LREM", "l", "0", "a"],
     ["LPOS", "l", "c", "RANK", "-1", "MAXLEN", "10"], ["LTRIM", "l", "1", "-2"], ["LPOP", "l", "2"],
     ["RPOP", "l"], ["LLEN", "l"]],
    [["RPUSH", "{t}a", "1", "2"], ["LMOVE", "{t}a", "{t}b", "LEFT", "RIGHT"], ["RPOPLPUSH", "{t}b", "{t}a"],
     ["LPUSHX", "{t}c", "x"], ["RPUSHX", "{t}a", "x"]],
    [["HSET", "h", "f", "v", "g", "w"], ["HGET", "h", "f"], ["HMGET", "h", "f", "x"], ["HINCRBY", "h", "n", "5"],
     ["HINCRBYFLOAT", "h", "n", "0.5"], ["HSETNX", "h", "f", "z"], ["HGETALL", "h"], ["HKEYS", "h"],
     ["HVALS", "h"], ["HSTRLEN", "h", "f"], ["HRANDFIELD", "h", "-5", "WITHVALUES"], ["HSCAN", "h", "0", "MATCH", "*"],
     ["HDEL", "h", "f", "g", "n"], ["HLEN", "h"]],
    [["SADD", "s", "a", "b", "c"], ["SISMEMBER", "s", "a"], ["SMISMEMBER", "s", "a", "z"], ["SCARD", "s"],
     ["SRANDMEMBER", "s", "-3"], ["SPOP", "s", "2"], ["SMEMBERS", "s"], ["SSCAN", "s", "0", "COUNT", "10"],
     ["SREM", "s", "a", "b", "c"]],
    [["SADD", "{t}a", "1", "2", "3"], ["SADD", "{t}b", "2", "3", "4"], ["SINTER", "{t}a", "{t}b"],
     ["SUNION", "{t}a", "{t}b"], ["SDIFF", "{t}a", "{t}b"], ["SINTERSTORE", "{t}c", "{t}a", "{t}b"],
     ["SINTERCARD", "2", "{t}a", "{t}b", "LIMIT", "1"], ["SMOVE", "{t}a", "{t}b", "1"]],
    [["ZADD", "z", "1", "a", "2", "b", "3", "c"], ["ZADD", "z", "GT", "CH", "5", "a"], ["ZINCRBY", "z", "-inf", "b"],
     ["ZSCORE", "z", "a"], ["ZMSCORE", "z", "a", "x"], ["ZRANK", "z", "c"], ["ZREVRANK", "z", "c"],
     ["ZRANGE", "z", "0", "-1", "WITHSCORES"], ["ZRANGE", "z", "(1", "+inf", "BYSCORE", "LIMIT", "0", "2"],
     ["ZRANGEBYLEX", "z", "-", "+"], ["ZCOUNT", "z", "-inf", "(3"], ["ZLEXCOUNT", "z", "[a", "(c"],
     ["ZPOPMIN", "z"], ["ZPOPMAX", "z", "2"], ["ZREMRANGEBYSCORE", "z", "-inf", "inf"], ["ZCARD", "z"]],
    [["ZADD", "z", "0", "a", "0", "b", "0", "c"], ["ZREVRANGEBYLEX", "z", "+", "-", "LIMIT", "1", "1"],
     ["ZREMRANGEBYLEX", "z", "[a", "[b"], ["ZREMRANGEBYRANK", "z", "0", "0"], ["ZSCAN", "z", "0"],
     ["ZREVRANGE", "z", "0", "-1"], ["ZRANGEBYSCORE", "z", "0", "1"], ["ZREVRANGEBYSCORE", "z", "1", "0"]],
    [["SET", "a", "1"], ["EXPIRE", "a", "100", "NX"], ["PEXPIRE", "a", "5", "LT"], ["EXPIREAT", "a", "1", "XX"],
     ["PEXPIREAT", "b", "100"], ["EXPIRETIME", "a"], ["PEXPIRETIME", "a"], ["TYPE", "a"], ["TOUCH", "a", "b"],
     ["KEYS", "*"], ["SCAN", "0", "MATCH", "a*", "COUNT", "5", "TYPE", "string"], ["RANDOMKEY"], ["DBSIZE"]],
    [["PING"], ["PING", "x"], ["ECHO", "e"], ["SELECT", "0"], ["HELLO", "3", "SETNAME", "n"],
     ["CLIENT", "SETNAME", "c"], ["CLIENT", "GETNAME"], ["CLIENT", "ID"], ["CLIENT", "SETINFO", "LIB-NAME", "x"],
     ["CLIENT", "LIST"], ["CLIENT", "INFO"], ["INFO"], ["INFO", "keyspace", "stats"], ["CONFIG", "GET", "*"],
     ["CONFIG", "SET", "maxclients", "100"], ["CONFIG", "RESETSTAT"], ["COMMAND", "COUNT"],
     ["COMMAND", "INFO", "get", "set"], ["COMMAND", "GETKEYS", "mset", "a", "1"], ["COMMAND", "DOCS", "get"],
     ["TIME"], ["AUTH", "default", "x"], ["FUNCTION", "FLUSH"], ["RESET"], ["HELLO", "2"], ["QUIT"]],
    [["CLUSTER", "SLOTS"], ["CLUSTER", "SHARDS"], ["CLUSTER", "NODES"], ["CLUSTER", "MYID"],
     ["CLUSTER", "INFO"], ["CLUSTER", "KEYSLOT", "a"], ["CLUSTER", "COUNTKEYSINSLOT", "15495"],
     ["CLUSTER", "GETKEYSINSLOT", "15495", "10"], ["READONLY"], ["READWRITE"], ["ASKING"],
     ["SET", "b", "x"], ["GET", "c"], ["MGET", "a", "b", "c"], ["FLUSHALL"]],
    [["SET", "a"], ["GET"], ["NOSUCH", "x"], ["SET", "a", "1", "EX", "-1"], ["INCR", "a"], ["LPUSH", "a", "x"],
     ["SET", "a", "x", "PX", "9223372036854775807"], ["ZADD", "z", "nan", "m"], ["SINTERCARD", "0", "a"],
     ["HRANDFIELD", "h", "-9223372036854775808"], ["SRANDMEMBER", "s", "-1000000"]],
]

PROTO_EXTRA = [
    b"PING\r\n", b"PING\n", b"\r\n", b"*0\r\n", b"*-1\r\n", b"SET a \"b c\\x41\\n\" 'd\\'e'\r\nGET a\r\n",
    b"*abc\r\n", b"*1\r\n:5\r\n", b"*1\r\n$-5\r\n", b"*1\r\n$536870913\r\n", b"*2147483648\r\n",
    b"SET \"unbalanced\r\n", b"SET 'x\r\n", b"\"a\"b\r\n", b"*1\r\n$536870912\r\nabc", b"*3\r\n$3\r\nSET\r\n$1\r\n",
    b"*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n", b"$5\r\nhello\r\n", b"*1\r\n*1\r\n$1\r\nx\r\n", b"+OK\r\n",
    b"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", b"*01\r\n$04\r\nPING\r\n", b"*+1\r\n", b"*1\r\n$ 4\r\nPING\r\n",
    b"   \t PING  \r\n", b"\x00\xff\r\n", b"a\rb\r\n", b"ECHO \"\\x4\"\r\n",
]


encode = resp.encode  # the repository's one RESP encoder (server/tests/integration/resp.py)


def inline(cmd):
    return (" ".join(cmd) + "\r\n").encode()


def grammar(cmds, mode):
    """fuzz_command's grammar: op 232 = raw name, then the argument count byte, then
    each argument as raw bytes (type byte 7, length, bytes)."""
    out = bytearray([mode])
    for cmd in cmds:
        name = cmd[0].encode()
        out += bytes([232, len(name)]) + name
        nargs = len(cmd) - 1
        if nargs < 6:
            out.append(nargs)
        else:
            out.append(next(v for v in range(224, 256) if v % 47 == nargs))
        for a in cmd[1:]:
            a = a.encode()
            out += bytes([7, len(a)]) + a
    return bytes(out)


def write(d, data):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def main():
    root = sys.argv[1]
    for seq in SEQUENCES:
        write(os.path.join(root, "proto"), b"".join(encode(c) for c in seq))
        write(os.path.join(root, "proto"), b"".join(inline(c) for c in seq if all(" " not in a for a in c)))
        for mode in (0, 1, 2 | 8, 3 | 16, 0 | 32, 2 | 4 | 32):
            write(os.path.join(root, "command"), grammar(seq, mode))
    for p in PROTO_EXTRA:
        write(os.path.join(root, "proto"), p)


if __name__ == "__main__":
    main()
