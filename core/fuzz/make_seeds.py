#!/usr/bin/env python3
"""Writes the seed corpus of the core's fuzz targets into core/fuzz/corpus/<target>/.

Each seed is a small, valid (or deliberately malformed) input in the target's format
(the formats are in each fuzz_<target>.c's header comment). Run once; the fuzzers grow
the corpus from these and run.sh merges what reaches new code.
    python3 core/fuzz/make_seeds.py
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def bulk(s):
    s = s.encode() if isinstance(s, str) else s
    return b"$%d\r\n%s\r\n" % (len(s), s)


def arr(*items, t=b"*"):
    return t + b"%d\r\n" % len(items) + b"".join(items)


def integer(n):
    return b":%d\r\n" % n


def cmd(*args):
    return arr(*[bulk(a) for a in args])


# ------------------------------------------------------------------ replies
REPLIES = [
    b"+OK\r\n", b"-ERR unknown command\r\n", b"-MOVED 3999 127.0.0.1:6381\r\n",
    b"-ASK 3999 127.0.0.1:6381\r\n", b"-TRYAGAIN x\r\n", b"-CLUSTERDOWN down\r\n",
    b":0\r\n", b":-9223372036854775808\r\n", b":9223372036854775807\r\n", b":9223372036854775808\r\n",
    b"$5\r\nhello\r\n", b"$0\r\n\r\n", b"$-1\r\n", b"*-1\r\n", b"*0\r\n", b"_\r\n",
    b"#t\r\n", b"#f\r\n", b"#x\r\n", b",3.14\r\n", b",inf\r\n", b",-inf\r\n", b",nan\r\n", b",1e400\r\n",
    b"(3492890328409238509324850943850943825024385\r\n", b"!21\r\nSYNTAX invalid syntax\r\n",
    b"=15\r\ntxt:Some string\r\n", b"=3\r\nab\r\n",
    arr(bulk("a"), integer(1), arr(bulk("b"), b"$-1\r\n")),
    b"%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n", b"~3\r\n:1\r\n:2\r\n:3\r\n",
    b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$3\r\nmsg\r\n",
    b"|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*2\r\n:2039123\r\n:9543892\r\n",
    b"*2\r\n|1\r\n+ttl\r\n:3600\r\n$1\r\nv\r\n:7\r\n",
    b"*1\r\n" * 40 + b":1\r\n", b"*1\r\n" * 70 + b":1\r\n",
    b"$400\r\n" + b"x" * 400 + b"\r\n", b"*200\r\n" + b":1\r\n" * 200,
    b"$99999999999999999999\r\n", b"*4294967296\r\n", b"$5\r\nhello\n\n", b"+OK\n", b"?\r\n",
    b"$-2\r\n", b":12a\r\n", b":\r\n", b"$3\r\nabc", b"*2\r\n:1\r\n",
]


def reply_seeds():
    out = []
    for i, r in enumerate(REPLIES):
        # header: limits byte, three chunk-size bytes (see fuzz_reply.c)
        out.append(bytes([0x1f | ((i % 4) << 6), (i * 37) & 0xff, 3, 250]) + r)
    out.append(bytes([0xff, 0xc0, 1, 1]) + b"".join(REPLIES[:12]))
    return out


# ------------------------------------------------------------------ topology
def slots_entry(lo, hi, host, port, *replicas, node_id="a" * 40):
    host_item = b"$-1\r\n" if host is None else bulk(host)
    primary = arr(host_item, integer(port), bulk(node_id))
    return arr(integer(lo), integer(hi), primary, *[arr(bulk(h), integer(p)) for h, p in replicas])


def shard(slots, nodes, t=b"*", mt=b"*"):
    def m(*kv):
        n = len(kv)
        return (mt + b"%d\r\n" % (n if mt == b"*" else n // 2)) + b"".join(kv)
    node_items = [m(bulk("id"), bulk("x" * 40), bulk("port"), integer(p), bulk("ip"), bulk(h),
                    bulk("endpoint"), bulk(h), bulk("role"), bulk(role), bulk("health"), bulk("online"))
                  for h, p, role in nodes]
    return m(bulk("slots"), arr(*[integer(s) for s in slots]), bulk("nodes"), arr(*node_items))


NODES_TEXT = (
    "07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,hostname4 slave "
    "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected\n"
    "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002,hostname2 master - 0 "
    "1426238316232 2 connected 5461-10922\n"
    "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001,hostname1 myself,master - 0 0 1 "
    "connected 0-5460 [5461->-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1]\n"
    "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f [::1]:30003@31003 master - 0 1426238318243 3 connected 10923-16383 42\n"
    ":0@0 master,noaddr - 0 0 0 disconnected 100\n"
)


def topology_seeds():
    slots = [
        arr(slots_entry(0, 8191, "127.0.0.1", 7000, ("127.0.0.1", 7003)), slots_entry(8192, 16383, "127.0.0.1", 7001)),
        arr(slots_entry(0, 16383, "", 7000)), arr(slots_entry(0, 16383, None, 7000)),
        arr(slots_entry(0, 16383, "?", 7000)), arr(slots_entry(0, 16384, "h", 7000)),
        arr(slots_entry(5, 1, "h", 7000)), arr(slots_entry(0, 100, "h", 70000)),
        arr(slots_entry(0, 100, "::1", 7000)), arr(arr(integer(1))), arr(), b"-ERR no cluster\r\n",
    ]
    shards = [
        arr(shard([0, 8191], [("127.0.0.1", 7000, "master"), ("127.0.0.1", 7003, "replica")]),
            shard([8192, 16383], [("127.0.0.1", 7001, "primary")])),
        arr(shard([0, 16383, 1, 2], [("127.0.0.1", 7000, "master")], mt=b"%")),
        arr(shard([0, 16383], [("", 7000, "master")])), arr(shard([0], [("h", 7000, "master")])),
    ]
    nodes = [bulk(NODES_TEXT), b"=%d\r\ntxt:%s\r\n" % (len(NODES_TEXT) + 4, NODES_TEXT.encode())]
    out = [b"\x00" + s for s in slots] + [b"\x01" + s for s in shards] + [b"\x02" + n for n in nodes]
    out += [b"\x03" + NODES_TEXT.encode(), b"\x03" + b"a 1.2.3.4:5@6 master - 0 0 1 connected 1-2 3\r\n"]
    return out


# ------------------------------------------------------------------ URLs
URLS = [
    "127.0.0.1:6379", "localhost", "redis://localhost:6379/0", "redis://user:p%40ss@host:7000/3",
    "redis://:secret@[::1]:6380", "[::1]:7000", "a:1,b:2,c:3", "redis://u:p@a:1,redis://u:p@b:2",
    "rediss://host:6380", "http://x", "host:0", "host:65536", "[::1", "::1", "redis://%zz@h",
    "redis://u%00@h", "redis://h/-1", "redis://h/99999999999", "h:", ",", "", "redis://",
    ",".join("h%d:%d" % (i, 7000 + i) for i in range(17)), "h" * 300, "redis://" + "u" * 300 + "@h",
]


# ------------------------------------------------------------------ commands
COMMANDS = [
    cmd("GET", "k"), cmd("set", "{user1}a", "v", "EX", "10"), cmd("MSET", "a", "1", "b", "2"),
    cmd("MGET", "a", "b", "{a}c"), cmd("DEL", "x", "y"), cmd("EVAL", "return 1", "2", "k1", "k2", "a"),
    cmd("EVALSHA", "abc", "0"), cmd("ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"),
    cmd("XREAD", "COUNT", "2", "STREAMS", "s1", "s2", "0", "0"), cmd("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"),
    cmd("SORT", "l", "BY", "w_*", "GET", "#", "STORE", "dst"), cmd("MIGRATE", "h", "1", "", "0", "5", "KEYS", "a", "b"),
    cmd("LMPOP", "2", "a", "b", "LEFT"), cmd("BLMPOP", "0", "1", "a", "RIGHT"), cmd("ZINTER", "2", "a", "b"),
    cmd("OBJECT", "ENCODING", "k"), cmd("CONFIG", "GET", "x"), cmd("XINFO", "STREAM", "s"), cmd("MEMORY", "USAGE", "k"),
    cmd("GEORADIUS", "g", "0", "0", "1", "km", "STORE", "d"), cmd("PING"), cmd("EVAL", "s", "-1"), cmd("EVAL", "s", "007", "k"),
    cmd("BITFIELD_RO", "k", "GET", "u8", "0"), cmd("SINTERCARD", "2", "a", "b", "LIMIT", "1"), cmd("RENAME", "a", "b"),
    cmd("FCALL", "f", "1", "k"), cmd("SET"), cmd("CLIENT", "KILL", "ID", "1"), cmd("COMMAND", "GETKEYS", "GET", "k"),
    b"*1\r\n$03\r\nGET\r\n", b"*0\r\n", b"PING\r\n", b"*2\r\n$3\r\nGET\r\n:1\r\n", b"*2\r\n$3\r\nGET\r\n",
    b"*1\r\n$4294967296\r\n", b"*99999999999\r\n",
]


def scan_seeds():
    return COMMANDS + [b"".join(COMMANDS[:8]), cmd("MULTI") + cmd("INCR", "a") + cmd("EXEC")]


def write(target, seeds):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    for i, s in enumerate(seeds):
        with open(os.path.join(d, "seed-%03d" % i), "wb") as f:
            f.write(s if isinstance(s, bytes) else s.encode())


if __name__ == "__main__":
    write("reply", reply_seeds())
    write("topology", topology_seeds())
    write("url", URLS)
    write("scan", scan_seeds())
