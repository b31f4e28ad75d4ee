#!/usr/bin/env python3
"""Records the expected replies of the conformance cases from real Redis servers.

    python3 bindings/conformance/record.py                 # all cases/*.json
    python3 bindings/conformance/record.py cases/split.json
    python3 bindings/conformance/record.py --check         # record, compare with the files, write nothing

Case files: cases/*.json (commands written by hand) and commands/*.json (one case or more
per method of bindings/spec/commands.json: "calls" written by hand, "commands" encoded from
them by the spec, every reply checked against the method's declared reply type).

By default it starts its own servers with ci/redis-plain.sh and ci/redis-cluster.sh
(a standalone redis-server and a 3-primary Redis Cluster, ports from --base-port) and
stops them at the end; --plain HOST:PORT and --cluster HOST:PORT use running ones.

Every case is run against the standalone server (unless its mode is "cluster") and
against the cluster (unless its mode is "plain"), once per RESP version it lists,
over raw sockets with the repository's RESP test client (server/tests/integration/resp.py),
so every reply keeps its exact wire type. The expected replies are therefore the servers' own, never slotlane's.
For a case run in both deployments the two recordings must be identical, or the
recorder fails: a cluster client must be transparent.

The cluster is driven the way a cluster client must behave, written out here by hand:
  - each command goes to the owner of its keys' slot (keys found by COMMAND GETKEYS,
    slots from CLUSTER SLOTS, CRC16 with hash tags); a keyless command goes to the
    first node;
  - MGET, MSET, DEL, EXISTS, UNLINK, TOUCH whose keys span several slots are split
    into one command per slot (keys keep their order), each sent to its owner, and
    merged: MGET -> one array of the values in the order of the keys; DEL, EXISTS,
    UNLINK, TOUCH -> the sum of the integers; MSET -> +OK (the first error reply of a
    part, if any, is the reply);
  - a MULTI ... EXEC block whose keys are in one slot is sent whole to its owner;
    one whose keys span several slots is refused by the client: every command of the
    block, MULTI and EXEC included, gets an error record of kind "cluster" whose
    message starts with CROSSSLOT, and nothing is sent.
Before every case each node gets FLUSHALL (as the runner does).
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bindings", "spec"))
sys.path.insert(0, os.path.join(ROOT, "server", "tests", "integration"))
import resp as resp_client  # noqa: E402  (the repository's one RESP test client)
import spec as speclib  # noqa: E402  (the spec's encoding and reply types)
SPLIT_COMMANDS = {"MGET", "MSET", "DEL", "EXISTS", "UNLINK", "TOUCH"}


class RecordError(Exception):
    pass


# ------------------------------------------------------------------ RESP
# The repository's one RESP test client (server/tests/integration/resp.py) reads the
# replies with their wire types; here they become the cases' record form.

encode = resp_client.encode
key_slot = resp_client.key_slot


def text_or_hex(b):
    try:
        return {"value": b.decode("utf-8")}
    except UnicodeDecodeError:
        return {"hex": b.hex()}


def error_prefix(msg):
    """The stable start of an error message: its first word, and for ERR the words
    before the first quote or colon (e.g. "ERR wrong number of arguments for")."""
    first = msg.split(" ", 1)[0]
    if first != "ERR":
        return first
    cut = len(msg)
    for ch in "'\"(:,":
        i = msg.find(ch)
        if i != -1:
            cut = min(cut, i)
    return msg[:cut].rstrip()


def as_record(v):
    """A reply of resp_client.Conn.read() in the record form of the case files."""
    if isinstance(v, resp_client.Status):
        return dict(type="status", **text_or_hex(v.encode("utf-8")))
    if isinstance(v, resp_client.Err):
        return {"type": "error", "kind": "server", "prefix": error_prefix(v)}
    if isinstance(v, resp_client.Bool):
        return {"type": "bool", "value": bool(v)}
    if isinstance(v, int):
        return {"type": "integer", "value": int(v)}
    if v is None or isinstance(v, resp_client.NullArray):
        return {"type": "nil"}
    if isinstance(v, resp_client.Verbatim):
        return dict(type="verb", format=v[:3].decode(), **text_or_hex(bytes(v[4:])))
    if isinstance(v, bytes):
        return dict(type="string", **text_or_hex(v))
    if isinstance(v, resp_client.Map):
        return {"type": "map", "children": [as_record(x) for pair in v for x in pair]}
    for cls, kind in ((resp_client.Set, "set"), (resp_client.Push, "push"), (list, "array")):
        if isinstance(v, cls):
            return {"type": kind, "children": [as_record(x) for x in v]}
    if isinstance(v, resp_client.Double):
        return {"type": "double", "value": str(v)}
    if isinstance(v, resp_client.BigNum):
        return {"type": "bignum", "value": str(v)}
    raise RecordError("unexpected reply %r" % (v,))


class Conn:
    def __init__(self, host, port, protocol):
        self.addr = "%s:%d" % (host, port)
        self.conn = resp_client.Conn(port, host=host, timeout=10)
        if protocol == 3:
            r = self.call([b"HELLO", b"3"])
            if r.get("type") != "map":
                raise RecordError("HELLO 3 failed on %s: %r" % (self.addr, r))

    def close(self):
        self.conn.close()

    def pipeline(self, cmds):
        self.conn.send_raw(b"".join(encode(c) for c in cmds))
        try:
            return [as_record(self.conn.read()) for _ in cmds]
        except (ConnectionError, ValueError) as e:
            raise RecordError("%s: %s" % (self.addr, e))

    def call(self, cmd):
        return self.pipeline([cmd])[0]


# ------------------------------------------------------------------ cases

def arg_bytes(a):
    if isinstance(a, str):
        return a.encode("utf-8")
    if isinstance(a, dict) and "hex" in a:
        return bytes.fromhex(a["hex"])
    raise RecordError("bad argument %r (a string or {\"hex\": ...})" % (a,))


def cmd_bytes(cmd):
    return [arg_bytes(a) for a in cmd]


def mark_unordered(reply):
    """Marks an aggregate reply as order-insensitive and sorts its children (pairs for
    a map) so that recordings are stable and comparable."""
    t = reply.get("type")
    if t in ("array", "set", "push"):
        reply["unordered"] = True
        reply["children"] = sorted(reply["children"], key=lambda c: json.dumps(c, sort_keys=True))
    elif t == "map":
        reply["unordered"] = True
        ch = reply["children"]
        pairs = sorted(zip(ch[0::2], ch[1::2]), key=lambda p: json.dumps(p, sort_keys=True))
        reply["children"] = [x for p in pairs for x in p]
    return reply


class Plain:
    name = "plain"

    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.host, self.port = host, int(port)

    def run(self, setup, cmds, resp):
        c = Conn(self.host, self.port, resp)
        try:
            if c.call([b"FLUSHALL"]).get("type") != "status":
                raise RecordError("FLUSHALL failed")
            for r, cmd in zip(c.pipeline(setup), setup):
                if r["type"] == "error":
                    raise RecordError("setup command %r failed: %r" % (cmd, r))
            return c.pipeline(cmds) if cmds else []
        finally:
            c.close()


class Cluster:
    name = "cluster"

    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.seed = Conn(host, int(port), 2)
        self.owner = [None] * 16384
        self.nodes = []
        for rng in self._slots():
            lo, hi, node = rng
            for s in range(lo, hi + 1):
                self.owner[s] = node
            if node not in self.nodes:
                self.nodes.append(node)
        if any(o is None for o in self.owner):
            raise RecordError("the cluster does not cover every slot")
        self.nodes.sort()
        self.spanned_nodes = False

    def _slots(self):
        r = self.seed.call([b"CLUSTER", b"SLOTS"])
        if r["type"] != "array":
            raise RecordError("CLUSTER SLOTS failed: %r" % r)
        out = []
        for ent in r["children"]:
            ch = ent["children"]
            node = (ch[2]["children"][0]["value"], ch[2]["children"][1]["value"])
            out.append((ch[0]["value"], ch[1]["value"], node))
        return out

    def keys_of(self, cmd):
        r = self.seed.call([b"COMMAND", b"GETKEYS"] + cmd)
        if r["type"] != "array":
            return []  # keyless, or the server cannot tell (an error reply will come)
        return [arg_bytes({"hex": c["hex"]}) if "hex" in c else c["value"].encode() for c in r["children"]]

    def slots_of(self, cmd):
        return [key_slot(k) for k in self.keys_of(cmd)]

    def run(self, setup, cmds, resp):
        conns = {}

        def conn(node):
            if node not in conns:
                conns[node] = Conn(node[0], node[1], resp)
            return conns[node]

        try:
            for node in self.nodes:
                if conn(node).call([b"FLUSHALL"]).get("type") != "status":
                    raise RecordError("FLUSHALL failed on %r" % (node,))
            for r, cmd in zip(self._run(setup, conn), setup):
                if r["type"] == "error":
                    raise RecordError("setup command %r failed: %r" % (cmd, r))
            return self._run(cmds, conn)
        finally:
            for c in conns.values():
                c.close()

    def _node_for(self, slots):
        return self.owner[slots[0]] if slots else self.nodes[0]

    def _run(self, cmds, conn):
        out = []
        i = 0
        while i < len(cmds):
            cmd = cmds[i]
            name = cmd[0].upper() if cmd else b""
            if name == b"MULTI":
                j = i + 1
                while j < len(cmds) and cmds[j][0].upper() not in (b"EXEC", b"DISCARD"):
                    j += 1
                block = cmds[i:j + 1]
                slots = sorted({s for c in block for s in self.slots_of(c)})
                if len(slots) > 1:
                    out.extend({"type": "error", "kind": "cluster", "prefix": "CROSSSLOT"} for _ in block)
                else:
                    out.extend(conn(self._node_for(slots)).pipeline(block))
                i = j + 1
                continue
            slots = self.slots_of(cmd)
            if name.decode() in SPLIT_COMMANDS and len(set(slots)) > 1:
                out.append(self._split(cmd, conn))
            else:
                out.append(conn(self._node_for(slots)).call(cmd))
            i += 1
        return out

    def _split(self, cmd, conn):
        name = cmd[0].upper().decode()
        step = 2 if name == "MSET" else 1
        groups = {}   # slot -> [(position, args)]
        order = []
        for pos in range(1, len(cmd), step):
            s = key_slot(cmd[pos])
            if s not in groups:
                groups[s] = []
                order.append(s)
            groups[s].append((pos, cmd[pos:pos + step]))
        if len({self.owner[s] for s in order}) > 1:
            self.spanned_nodes = True
        replies = {}
        for s in order:
            part = [cmd[0]] + [a for _, args in groups[s] for a in args]
            replies[s] = conn(self.owner[s]).call(part)
        for s in order:
            if replies[s]["type"] == "error":
                return replies[s]
        if name == "MGET":
            by_pos = {}
            for s in order:
                for (pos, _), child in zip(groups[s], replies[s]["children"]):
                    by_pos[pos] = child
            return {"type": "array", "children": [by_pos[p] for p in sorted(by_pos)]}
        if name == "MSET":
            return {"type": "status", "value": "OK"}
        return {"type": "integer", "value": sum(replies[s]["value"] for s in order)}


def resp_list(case):
    r = case.get("resp", [2, 3])
    return r if isinstance(r, list) else [r]


def loosen(reply):
    """A reply kept only by its type (a "loose" command: a time, an id, server text)."""
    return {"type": reply["type"]}


def spec_commands(case, methods):
    """A case with "calls" (typed calls of bindings/spec/commands.json methods): its
    commands are what the spec encodes the calls to."""
    out = []
    for c in case["calls"]:
        m = methods.get(c["method"])
        if m is None:
            raise RecordError("%s: no method %r in the spec" % (case["name"], c["method"]))
        try:
            out.append(speclib.encode(m, c["args"]))
        except (KeyError, TypeError) as e:
            raise RecordError("%s: %s" % (case["name"], e))
    return out


def check_types(case, methods, expected):
    """Every recorded reply of a spec case must have its method's declared type."""
    for resp, replies in expected.items():
        for i, (c, r) in enumerate(zip(case["calls"], replies)):
            probs = speclib.check_reply(methods[c["method"]]["reply"], r, "%s call %d %s" % (case["name"], i, c["method"]))
            if probs:
                raise RecordError("RESP%s: %s (declared %s)" % (resp, "; ".join(probs), methods[c["method"]]["reply"]))


def record_case(case, plain, cluster):
    mode = case.get("mode", "any")
    if mode not in ("any", "cluster", "plain"):
        raise RecordError("%s: bad mode %r" % (case["name"], mode))
    setup = [cmd_bytes(c) for c in case.get("setup", [])]
    cmds = [cmd_bytes(c) for c in case["commands"]]
    unordered = set(case.get("unordered", []))
    expected = {}
    case["_raw"] = raw = {}
    for resp in resp_list(case):
        got = {}
        if mode in ("any", "plain"):
            got["plain"] = plain.run(setup, cmds, resp)
        if mode in ("any", "cluster"):
            cluster.spanned_nodes = False
            got["cluster"] = cluster.run(setup, cmds, resp)
            if case.get("cross_node") and not cluster.spanned_nodes:
                raise RecordError("%s: marked cross_node but no split command spans two nodes" % case["name"])
        loose = set(case.get("loose", []))
        for k in got:
            got[k] = [mark_unordered(r) if i in unordered else r for i, r in enumerate(got[k])]
            raw[str(resp)] = got[k]
            got[k] = [loosen(r) if i in loose and r["type"] != "error" else r for i, r in enumerate(got[k])]
        if "plain" in got and "cluster" in got and got["plain"] != got["cluster"]:
            for i, (a, b) in enumerate(zip(got["plain"], got["cluster"])):
                if a != b:
                    raise RecordError("%s (RESP%d): command #%d %r differs: plain %s, cluster %s" % (
                        case["name"], resp, i, case["commands"][i], json.dumps(a), json.dumps(b)))
        expected[str(resp)] = got.get("plain", got.get("cluster"))
    return expected


# ------------------------------------------------------------------ output

def dump_case(case):
    """One case as JSON with one command and one top-level reply per line."""
    lines = ["  {"]
    keys = [k for k in case if k not in ("calls", "commands", "setup", "expected")]
    body = []
    for k in keys:
        body.append("    %s: %s" % (json.dumps(k), json.dumps(case[k], ensure_ascii=False)))
    for k in ("setup", "calls", "commands"):
        if k in case:
            items = ",\n".join("      " + json.dumps(c, ensure_ascii=False) for c in case[k])
            body.append("    %s: [\n%s\n    ]" % (json.dumps(k), items))
    if "expected" in case:
        parts = []
        for resp, replies in case["expected"].items():
            items = ",\n".join("        " + json.dumps(r, ensure_ascii=False) for r in replies)
            parts.append("      %s: [\n%s\n      ]" % (json.dumps(resp), items))
        body.append('    "expected": {\n%s\n    }' % ",\n".join(parts))
    lines.append(",\n".join(body))
    lines.append("  }")
    return "\n".join(lines)


def dump_file(doc):
    head = {k: v for k, v in doc.items() if k != "cases"}
    out = ["{"]
    for k, v in head.items():
        out.append("  %s: %s," % (json.dumps(k), json.dumps(v, ensure_ascii=False)))
    out.append('  "cases": [')
    out.append(",\n".join(dump_case(c) for c in doc["cases"]))
    out.append("  ]")
    out.append("}")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ servers

def start_servers(base):
    tmp = tempfile.mkdtemp(prefix="sl-record-")
    pdir, cdir = os.path.join(tmp, "plain"), os.path.join(tmp, "cluster")
    subprocess.run([os.path.join(ROOT, "ci", "redis-plain.sh"), "start", pdir, str(base)], check=True)
    try:
        subprocess.run([os.path.join(ROOT, "ci", "redis-cluster.sh"), "start", cdir, str(base + 1), "3"], check=True)
    except BaseException:
        subprocess.run([os.path.join(ROOT, "ci", "redis-plain.sh"), "stop", pdir])
        raise

    def stop():
        subprocess.run([os.path.join(ROOT, "ci", "redis-cluster.sh"), "stop", cdir])
        subprocess.run([os.path.join(ROOT, "ci", "redis-plain.sh"), "stop", pdir])
        shutil.rmtree(tmp, ignore_errors=True)
    return "127.0.0.1:%d" % base, "127.0.0.1:%d" % (base + 1), stop


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="case files (default: cases/*.json)")
    ap.add_argument("--plain", help="HOST:PORT of a running standalone redis-server")
    ap.add_argument("--cluster", help="HOST:PORT of a node of a running Redis Cluster")
    ap.add_argument("--base-port", type=int, default=int(os.environ.get("SL_RECORD_PORT", "20850")),
                    help="first of the 7 ports for the servers this script starts (default 20850)")
    ap.add_argument("--check", action="store_true", help="compare with the files, write nothing")
    args = ap.parse_args()
    files = args.files or sorted(os.path.join(HERE, d, f) for d in ("cases", "commands")
                                 for f in os.listdir(os.path.join(HERE, d)) if f.endswith(".json"))
    methods = {m["method"]: m for m in speclib.load()["methods"]}
    stop = None
    if not (args.plain and args.cluster):
        plain_addr, cluster_addr, stop = start_servers(args.base_port)
    else:
        plain_addr, cluster_addr = args.plain, args.cluster
    bad = 0
    try:
        plain, cluster = Plain(plain_addr), Cluster(cluster_addr)
        names = set()
        for path in files:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            for case in doc["cases"]:
                if case["name"] in names:
                    raise RecordError("duplicate case name %r" % case["name"])
                names.add(case["name"])
                if "calls" in case:
                    cmds = spec_commands(case, methods)
                    if args.check and case.get("commands") != cmds:
                        print("DIFFERS: %s (%s): commands are not what the spec encodes its calls to"
                              % (case["name"], os.path.basename(path)))
                        bad += 1
                    case["commands"] = cmds
                exp = record_case(case, plain, cluster)
                if "calls" in case:
                    check_types(case, methods, case["_raw"])
                del case["_raw"]
                if args.check and case.get("expected") != exp:
                    print("DIFFERS: %s (%s)" % (case["name"], os.path.basename(path)))
                    bad += 1
                case["expected"] = exp
            if not args.check:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(dump_file(doc))
            print("%s %s: %d cases" % ("checked" if args.check else "recorded", os.path.relpath(path, ROOT), len(doc["cases"])))
    except RecordError as e:
        print("record.py: %s" % e, file=sys.stderr)
        return 1
    finally:
        if stop:
            stop()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
