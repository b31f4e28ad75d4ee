/* cmdtable: the command table (name, arity, flags, key positions as COMMAND reports
 * them) and sv_execute, which checks arity and cluster routing and dispatches.
 *
 * Routing rule: with one shard the shard owns every slot and behaves like a
 * standalone Redis (multi-key commands may span slots). With several shards it is
 * exactly Redis Cluster: keys in different slots get CROSSSLOT, a key owned by
 * another shard gets MOVED. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "server.h"
#include "tracking.h"
#include "aof.h"
#include "notify.h"
#include "pubsub.h"
#include "script.h"

/* The policy fields at the end of sv_cmd are zero (the default policy) in every entry
 * that does not name them: entries written positionally, as C(...) does, leave them
 * out on purpose. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define W SV_CMD_WRITE
#define R SV_CMD_READONLY
#define F SV_CMD_FAST
#define D SV_CMD_DENYOOM
#define M SV_CMD_MOVABLE
#define A SV_CMD_ADMIN
#define L (SV_CMD_LOADING | SV_CMD_STALE)
#define B SV_CMD_BLOCKING
#define P SV_CMD_PUBSUB
#define NS SV_CMD_NOSCRIPT

/* numkeys at argv[1], keys after it (ZUNION ZINTER ZDIFF ZINTERCARD SINTERCARD LMPOP ZMPOP) */
static int numkeys1_keys(int argc, sv_str *argv, int *keys, int max) { return sv_numkeys_keys(argc, argv, 1, 0, keys, max); }

/* BLMPOP/BZMPOP timeout numkeys key... LEFT|RIGHT|MIN|MAX: the direction must follow */
static int bmpop_keys(int argc, sv_str *argv, int *keys, int max) { return sv_numkeys_keys(argc, argv, 2, 1, keys, max); }

/* GEORADIUS/GEORADIUSBYMEMBER: the source, and the key after STORE or STOREDIST */
static int georadius_keys(int argc, sv_str *argv, int *keys, int max, int base)
{
    int k = 0;
    if (max > 0) keys[k++] = 1;
    for (int i = base; i + 1 < argc && k < max; i++)
        if (sv_eq(argv[i], "store") || sv_eq(argv[i], "storedist")) {
            keys[k++] = i + 1;
            i++;
        }
    return k;
}
static int georadius_keys6(int argc, sv_str *argv, int *keys, int max) { return georadius_keys(argc, argv, keys, max, 6); }
static int georadius_keys5(int argc, sv_str *argv, int *keys, int max) { return georadius_keys(argc, argv, keys, max, 5); }

/* SORT: the key, and the key after STORE */
static int sort_keys(int argc, sv_str *argv, int *keys, int max)
{
    int k = 0;
    if (max > 0) keys[k++] = 1;
    for (int i = 2; i + 1 < argc && k < max; i++) {
        if (sv_eq(argv[i], "store")) keys[k++] = ++i;
        else if (sv_eq(argv[i], "by") || sv_eq(argv[i], "get")) i++;
        else if (sv_eq(argv[i], "limit")) i += 2;
    }
    return k;
}

/* the destination at argv[1], numkeys at argv[2], keys after it (the *STORE forms) */
static int numkeys2_keys(int argc, sv_str *argv, int *keys, int max)
{
    if (max < 1) return 0;
    int k = sv_numkeys_keys(argc, argv, 2, 0, keys + 1, max - 1);
    if (k < 0) return -1;
    keys[0] = 1;
    return k + 1;
}

/* XREAD/XREADGROUP: the keys are the first half of what follows STREAMS */
static int xread_keys(int argc, sv_str *argv, int *keys, int max)
{
    for (int i = 1; i < argc; i++)
        if (sv_eq(argv[i], "streams")) {
            int rest = argc - i - 1;
            if (rest <= 0 || rest % 2) return -1;
            int k = 0;
            for (int j = 0; j < rest / 2 && k < max; j++) keys[k++] = i + 1 + j;
            return k;
        }
    return -1;
}

/* OBJECT <sub> <key>: a key only in that form (wrong arity is answered before routing, as Redis) */
static int object_keys(int argc, sv_str *argv, int *keys, int max)
{
    (void)argv;
    if (argc != 3 || max < 1) return 0;
    keys[0] = 2;
    return 1;
}

/* MEMORY USAGE <key> [SAMPLES n] */
static int memory_keys(int argc, sv_str *argv, int *keys, int max)
{
    if (argc < 3 || max < 1 || !sv_eq(argv[1], "usage")) return 0;
    keys[0] = 2;
    return 1;
}

/* DEBUG OBJECT <key>: routed to the key's shard (the other subcommands have none) */
static int debug_keys(int argc, sv_str *argv, int *keys, int max)
{
    if (argc != 3 || max < 1 || !sv_eq(argv[1], "object")) return 0;
    keys[0] = 2;
    return 1;
}

#define C(name, arity, flags, first, last, step, acl) {#name, sv_cmd_##name, arity, flags, first, last, step, acl, NULL}
/* The same with a policy other than the default: designated fields of sv_cmd after
 * the positional ones, e.g. CP(expire, ..., .aof = SV_AOF_TTL, .touch = SV_TOUCH_NOOP_ZERO). */
#define CP(name, arity, flags, first, last, step, acl, ...) \
    {#name, sv_cmd_##name, arity, flags, first, last, step, acl, NULL, __VA_ARGS__}
#define NOOP0 .touch = SV_TOUCH_NOOP_ZERO
/* keyspace notifications (notify.h): the fixed event on argv[1], or a function that fires them */
#define EV(cls, name, rule) .ev_class = cls, .event = name, .ev_rule = rule
#define EVF(cls, fn, rule) .ev_class = cls, .ev_fire = fn, .ev_rule = rule
/* ... or the reason it fires none from here: inside the command (sv_notify), or none at all, as Redis */
#define EVIN(cls) .ev_class = cls, .ev_rule = SV_EV_INSIDE
#define EVNONE .ev_rule = SV_EV_NONE

static const sv_cmd table[] = {
    /* strings */
    C(get, 2, R | F, 1, 1, 1, "@read @string @fast"),
    /* SET SETEX PSETEX GETSET MSET MSETNX DEL UNLINK SMOVE fire their events inside (notify.h) */
    CP(set, -3, W | D, 1, 1, 1, "@write @string @slow", .aof = SV_AOF_SET, .touch = SV_TOUCH_SET, EVIN(SV_N_STRING)),
    CP(setnx, 3, W | D | F, 1, 1, 1, "@write @string @fast", NOOP0, EV(SV_N_STRING, "set", SV_EV_POS)),
    CP(setex, 4, W | D, 1, 1, 1, "@write @string @slow", .aof = SV_AOF_STRING, EVIN(SV_N_STRING)),
    CP(psetex, 4, W | D, 1, 1, 1, "@write @string @slow", .aof = SV_AOF_STRING, EVIN(SV_N_STRING)),
    CP(getset, 3, W | D | F, 1, 1, 1, "@write @string @fast", EVIN(SV_N_STRING)),
    CP(getdel, 2, W | F, 1, 1, 1, "@write @string @fast", NOOP0, EV(SV_N_GENERIC, "del", SV_EV_NONNULL)),
    CP(getex, -2, W | F, 1, 1, 1, "@write @string @fast", .aof = SV_AOF_GETEX, .touch = SV_TOUCH_NOOP_ZERO | SV_TOUCH_OPTIONS, EVF(SV_N_GENERIC, sv_ev_getex, SV_EV_NONNULL)),
    CP(mget, -2, R | F, 1, -1, 1, "@read @string @fast", .split = SV_SPLIT_MGET),
    CP(mset, -3, W | D, 1, -1, 2, "@write @string @slow", .split = SV_SPLIT_PAIRS_OK, EVIN(SV_N_STRING)),
    CP(msetnx, -3, W | D, 1, -1, 2, "@write @string @slow", .coord = SV_COORD_MSETNX, NOOP0, EVIN(SV_N_STRING)),
    CP(append, 3, W | D | F, 1, 1, 1, "@write @string @fast", EV(SV_N_STRING, "append", SV_EV_ANY)),
    C(strlen, 2, R | F, 1, 1, 1, "@read @string @fast"),
    C(getrange, 4, R, 1, 1, 1, "@read @string @slow"),
    CP(setrange, 4, W | D, 1, 1, 1, "@write @string @slow", EV(SV_N_STRING, "setrange", SV_EV_ANY)),
    CP(incr, 2, W | D | F, 1, 1, 1, "@write @string @fast", EV(SV_N_STRING, "incrby", SV_EV_ANY)),
    CP(decr, 2, W | D | F, 1, 1, 1, "@write @string @fast", EV(SV_N_STRING, "incrby", SV_EV_ANY)),
    CP(incrby, 3, W | D | F, 1, 1, 1, "@write @string @fast", EV(SV_N_STRING, "incrby", SV_EV_ANY)),
    CP(decrby, 3, W | D | F, 1, 1, 1, "@write @string @fast", EV(SV_N_STRING, "incrby", SV_EV_ANY)),
    CP(incrbyfloat, 3, W | D | F, 1, 1, 1, "@write @string @fast", EV(SV_N_STRING, "incrbyfloat", SV_EV_ANY)),
    CP(lcs, -3, R, 1, 2, 1, "@read @string @slow", .coord = SV_COORD_GATHER),
    {"substr", sv_cmd_getrange, 4, R, 1, 1, 1, "@read @string @slow", NULL},
    /* bitmaps */
    CP(setbit, 4, W | D, 1, 1, 1, "@write @bitmap @slow", EV(SV_N_STRING, "setbit", SV_EV_ANY)),
    C(getbit, 3, R | F, 1, 1, 1, "@read @bitmap @fast"),
    C(bitcount, -2, R, 1, 1, 1, "@read @bitmap @slow"),
    C(bitpos, -3, R, 1, 1, 1, "@read @bitmap @slow"),
    CP(bitop, -4, W | D, 2, -1, 1, "@write @bitmap @slow", .coord = SV_COORD_GATHER, .touch = SV_TOUCH_FIRST, .pflags = SV_P_KEYMISS, EVF(SV_N_STRING, sv_ev_bitop, SV_EV_POS)),
    CP(bitfield, -2, W | D, 1, 1, 1, "@write @bitmap @slow", EVIN(SV_N_STRING) /* "setbit" when an op wrote */),
    C(bitfield_ro, -2, R | F, 1, 1, 1, "@read @bitmap @fast"),
    /* geo */
    CP(geoadd, -5, W | D, 1, 1, 1, "@write @geo @slow", EVIN(SV_N_ZSET) /* ZADD's events: it runs ZADD */),
    C(geopos, -2, R, 1, 1, 1, "@read @geo @slow"),
    C(geodist, -4, R, 1, 1, 1, "@read @geo @slow"),
    C(geohash, -2, R, 1, 1, 1, "@read @geo @slow"),
    {"georadius", sv_cmd_georadius, -6, W | D | M, 1, 1, 1, "@write @geo @slow", georadius_keys6,
     .coord = SV_COORD_GATHER, .touch = SV_TOUCH_NONE /* signals what it changed itself */, .pflags = SV_P_KEYMISS, EVF(SV_N_ZSET, sv_ev_georadius, SV_EV_POS)},
    {"georadiusbymember", sv_cmd_georadiusbymember, -5, W | D | M, 1, 1, 1, "@write @geo @slow", georadius_keys5,
     .coord = SV_COORD_GATHER, .touch = SV_TOUCH_NONE /* signals what it changed itself */, .pflags = SV_P_KEYMISS, EVF(SV_N_ZSET, sv_ev_georadius, SV_EV_POS)},
    C(georadius_ro, -6, R, 1, 1, 1, "@read @geo @slow"),
    C(georadiusbymember_ro, -5, R, 1, 1, 1, "@read @geo @slow"),
    C(geosearch, -7, R, 1, 1, 1, "@read @geo @slow"),
    CP(geosearchstore, -8, W | D, 1, 2, 1, "@write @geo @slow", .coord = SV_COORD_GATHER, .touch = SV_TOUCH_FIRST, .pflags = SV_P_KEYMISS, EV(SV_N_ZSET, "geosearchstore", SV_EV_POS)),
    /* HyperLogLog */
    CP(pfadd, -2, W | D | F, 1, 1, 1, "@write @hyperloglog @fast", NOOP0, EV(SV_N_STRING, "pfadd", SV_EV_POS)),
    CP(pfcount, -2, R, 1, -1, 1, "@read @hyperloglog @slow", .coord = SV_COORD_GATHER),
    CP(pfmerge, -2, W | D, 1, -1, 1, "@write @hyperloglog @slow", .coord = SV_COORD_GATHER, .touch = SV_TOUCH_FIRST, .pflags = SV_P_KEYMISS, EV(SV_N_STRING, "pfadd", SV_EV_ANY)),
    CP(pfdebug, 3, W | A, 2, 2, 1, "@write @hyperloglog @admin @slow @dangerous", EVNONE),
    C(pfselftest, 1, A, 0, 0, 0, "@hyperloglog @admin @slow @dangerous"),
    /* keys */
    CP(del, -2, W, 1, -1, 1, "@keyspace @write @slow", .split = SV_SPLIT_SUM, NOOP0, EVIN(SV_N_GENERIC)),
    {"unlink", sv_cmd_del, -2, W | F, 1, -1, 1, "@keyspace @write @fast", NULL, .split = SV_SPLIT_SUM, NOOP0, EVIN(SV_N_GENERIC)},
    CP(exists, -2, R | F, 1, -1, 1, "@keyspace @read @fast", .split = SV_SPLIT_SUM),
    C(type, 2, R | F, 1, 1, 1, "@keyspace @read @fast"),
    CP(rename, 3, W, 1, 2, 1, "@keyspace @write @slow", .coord = SV_COORD_RENAME, EVF(SV_N_GENERIC, sv_ev_rename, SV_EV_ANY)),
    CP(renamenx, 3, W | F, 1, 2, 1, "@keyspace @write @fast", .coord = SV_COORD_RENAMENX, NOOP0, EVF(SV_N_GENERIC, sv_ev_rename, SV_EV_POS)),
    CP(keys, 2, R, 0, 0, 0, "@keyspace @read @slow @dangerous", .fan = SV_FAN_CONCAT, .pflags = SV_P_KEYSPACE),
    CP(scan, -2, R, 0, 0, 0, "@keyspace @read @slow", .pflags = SV_P_KEYSPACE),
    CP(randomkey, 1, R, 0, 0, 0, "@keyspace @read @slow", .pflags = SV_P_KEYSPACE),
    CP(touch, -2, R | F, 1, -1, 1, "@keyspace @read @fast", .split = SV_SPLIT_SUM),
    CP(expire, -3, W | F, 1, 1, 1, "@keyspace @write @fast", .aof = SV_AOF_TTL, NOOP0, EVF(SV_N_GENERIC, sv_ev_expire, SV_EV_POS)),
    CP(pexpire, -3, W | F, 1, 1, 1, "@keyspace @write @fast", .aof = SV_AOF_TTL, NOOP0, EVF(SV_N_GENERIC, sv_ev_expire, SV_EV_POS)),
    CP(expireat, -3, W | F, 1, 1, 1, "@keyspace @write @fast", .aof = SV_AOF_TTL, NOOP0, EVF(SV_N_GENERIC, sv_ev_expire, SV_EV_POS)),
    CP(pexpireat, -3, W | F, 1, 1, 1, "@keyspace @write @fast", .aof = SV_AOF_TTL, NOOP0, EVF(SV_N_GENERIC, sv_ev_expire, SV_EV_POS)),
    C(ttl, 2, R | F, 1, 1, 1, "@keyspace @read @fast"),
    C(pttl, 2, R | F, 1, 1, 1, "@keyspace @read @fast"),
    CP(persist, 2, W | F, 1, 1, 1, "@keyspace @write @fast", NOOP0, EV(SV_N_GENERIC, "persist", SV_EV_POS)),
    C(expiretime, 2, R | F, 1, 1, 1, "@keyspace @read @fast"),
    C(pexpiretime, 2, R | F, 1, 1, 1, "@keyspace @read @fast"),
    CP(copy, -3, W | D, 1, 2, 1, "@keyspace @write @slow", .coord = SV_COORD_GATHER, .touch = SV_TOUCH_NONE /* signals what it changed itself */,
       EVF(SV_N_GENERIC, sv_ev_copy, SV_EV_POS)),
    CP(move, 3, W | F, 1, 1, 1, "@keyspace @write @fast", EVNONE /* refused as a cluster node: nothing moves */),
    {"sort", sv_cmd_sort, -2, W | D | M, 1, 1, 1, "@write @set @sortedset @list @slow @dangerous", sort_keys,
     .coord = SV_COORD_GATHER, .touch = SV_TOUCH_NONE /* signals what it changed itself */, .pflags = SV_P_KEYMISS, EVF(SV_N_LIST, sv_ev_sort, SV_EV_POS)},
    C(sort_ro, -2, R, 1, 1, 1, "@read @set @sortedset @list @slow @dangerous"),
    CP(dbsize, 1, R | F, 0, 0, 0, "@keyspace @read @fast", .fan = SV_FAN_SUM, .pflags = SV_P_KEYSPACE),
    CP(flushall, -1, W, 0, 0, 0, "@keyspace @write @slow @dangerous", .fan = SV_FAN_OK, .touch = SV_TOUCH_NONE, .pflags = SV_P_KEYSPACE, EVNONE),
    {"flushdb", sv_cmd_flushall, -1, W, 0, 0, 0, "@keyspace @write @slow @dangerous", NULL,
     .fan = SV_FAN_OK, .touch = SV_TOUCH_NONE, .pflags = SV_P_KEYSPACE, EVNONE},
    /* lists */
    CP(lpush, -3, W | D | F, 1, 1, 1, "@write @list @fast", EV(SV_N_LIST, "lpush", SV_EV_ANY)),
    CP(rpush, -3, W | D | F, 1, 1, 1, "@write @list @fast", EV(SV_N_LIST, "rpush", SV_EV_ANY)),
    CP(lpushx, -3, W | D | F, 1, 1, 1, "@write @list @fast", NOOP0, EV(SV_N_LIST, "lpush", SV_EV_POS)),
    CP(rpushx, -3, W | D | F, 1, 1, 1, "@write @list @fast", NOOP0, EV(SV_N_LIST, "rpush", SV_EV_POS)),
    CP(lpop, -2, W | F, 1, 1, 1, "@write @list @fast", NOOP0, EV(SV_N_LIST, "lpop", SV_EV_NONNULL)),
    CP(rpop, -2, W | F, 1, 1, 1, "@write @list @fast", NOOP0, EV(SV_N_LIST, "rpop", SV_EV_NONNULL)),
    C(llen, 2, R | F, 1, 1, 1, "@read @list @fast"),
    C(lrange, 4, R, 1, 1, 1, "@read @list @slow"),
    C(lindex, 3, R, 1, 1, 1, "@read @list @slow"),
    CP(lset, 4, W | D, 1, 1, 1, "@write @list @slow", EV(SV_N_LIST, "lset", SV_EV_ANY)),
    CP(linsert, 5, W | D, 1, 1, 1, "@write @list @slow", NOOP0, EV(SV_N_LIST, "linsert", SV_EV_POS)),
    CP(lrem, 4, W, 1, 1, 1, "@write @list @slow", NOOP0, EV(SV_N_LIST, "lrem", SV_EV_POS)),
    CP(ltrim, 4, W, 1, 1, 1, "@write @list @slow", EV(SV_N_LIST, "ltrim", SV_EV_ANY)),
    C(lpos, -3, R, 1, 1, 1, "@read @list @slow"),
    CP(lmove, 5, W | D, 1, 2, 1, "@write @list @slow", .coord = SV_COORD_LMOVE, NOOP0, EVF(SV_N_LIST, sv_ev_lmove, SV_EV_NONNULL)),
    CP(rpoplpush, 3, W | D, 1, 2, 1, "@write @list @slow", .coord = SV_COORD_RPOPLPUSH, NOOP0, EVF(SV_N_LIST, sv_ev_lmove, SV_EV_NONNULL)),
    CP(blpop, -3, W | B | SV_CMD_NOSCRIPT, 1, -2, 1, "@write @list @slow @blocking", NOOP0, EVF(SV_N_LIST, sv_ev_blpop, SV_EV_NONNULL)),
    CP(brpop, -3, W | B | SV_CMD_NOSCRIPT, 1, -2, 1, "@write @list @slow @blocking", NOOP0, EVF(SV_N_LIST, sv_ev_blpop, SV_EV_NONNULL)),
    CP(brpoplpush, 4, W | D | B | SV_CMD_NOSCRIPT, 1, 2, 1, "@write @list @slow @blocking", NOOP0, EVF(SV_N_LIST, sv_ev_lmove, SV_EV_NONNULL)),
    CP(blmove, 6, W | D | B | SV_CMD_NOSCRIPT, 1, 2, 1, "@write @list @slow @blocking", NOOP0, EVF(SV_N_LIST, sv_ev_lmove, SV_EV_NONNULL)),
    {"blmpop", sv_cmd_blmpop, -5, W | B | M, 0, 0, 0, "@write @list @slow @blocking", bmpop_keys, NOOP0, EVF(SV_N_LIST, sv_ev_blmpop, SV_EV_NONNULL)},
    {"lmpop", sv_cmd_lmpop, -4, W | M, 0, 0, 0, "@write @list @slow", numkeys1_keys,
     .coord = SV_COORD_GATHER, .touch = SV_TOUCH_NONE /* signals what it changed itself */, EVF(SV_N_LIST, sv_ev_lmpop, SV_EV_NONNULL)},
    /* hashes */
    CP(hset, -4, W | D | F, 1, 1, 1, "@write @hash @fast", EV(SV_N_HASH, "hset", SV_EV_ANY)),
    CP(hsetnx, 4, W | D | F, 1, 1, 1, "@write @hash @fast", NOOP0, EV(SV_N_HASH, "hset", SV_EV_POS)),
    C(hget, 3, R | F, 1, 1, 1, "@read @hash @fast"),
    C(hmget, -3, R | F, 1, 1, 1, "@read @hash @fast"),
    CP(hmset, -4, W | D | F, 1, 1, 1, "@write @hash @fast", EV(SV_N_HASH, "hset", SV_EV_ANY)),
    CP(hdel, -3, W | F, 1, 1, 1, "@write @hash @fast", NOOP0, EV(SV_N_HASH, "hdel", SV_EV_POS)),
    C(hlen, 2, R | F, 1, 1, 1, "@read @hash @fast"),
    C(hexists, 3, R | F, 1, 1, 1, "@read @hash @fast"),
    C(hgetall, 2, R, 1, 1, 1, "@read @hash @slow"),
    C(hkeys, 2, R, 1, 1, 1, "@read @hash @slow"),
    C(hvals, 2, R, 1, 1, 1, "@read @hash @slow"),
    CP(hincrby, 4, W | D | F, 1, 1, 1, "@write @hash @fast", EV(SV_N_HASH, "hincrby", SV_EV_ANY)),
    CP(hincrbyfloat, 4, W | D | F, 1, 1, 1, "@write @hash @fast", EV(SV_N_HASH, "hincrbyfloat", SV_EV_ANY)),
    C(hstrlen, 3, R | F, 1, 1, 1, "@read @hash @fast"),
    C(hrandfield, -2, R, 1, 1, 1, "@read @hash @slow"),
    C(hscan, -3, R, 1, 1, 1, "@read @hash @slow"),
    /* sets */
    CP(sadd, -3, W | D | F, 1, 1, 1, "@write @set @fast", NOOP0, EV(SV_N_SET, "sadd", SV_EV_POS)),
    CP(srem, -3, W | F, 1, 1, 1, "@write @set @fast", NOOP0, EV(SV_N_SET, "srem", SV_EV_POS)),
    C(smembers, 2, R, 1, 1, 1, "@read @set @slow"),
    C(sismember, 3, R | F, 1, 1, 1, "@read @set @fast"),
    C(smismember, -3, R | F, 1, 1, 1, "@read @set @fast"),
    C(scard, 2, R | F, 1, 1, 1, "@read @set @fast"),
    CP(spop, -2, W | F, 1, 1, 1, "@write @set @fast", .aof = SV_AOF_SREM_REPLY, NOOP0, EV(SV_N_SET, "spop", SV_EV_NONNULL)),
    C(srandmember, -2, R, 1, 1, 1, "@read @set @slow"),
    CP(smove, 4, W | F, 1, 2, 1, "@write @set @fast", .coord = SV_COORD_SMOVE, NOOP0, EVIN(SV_N_SET)),
    CP(sinter, -2, R, 1, -1, 1, "@read @set @slow", .coord = SV_COORD_SINTER),
    CP(sunion, -2, R, 1, -1, 1, "@read @set @slow", .coord = SV_COORD_SUNION),
    CP(sdiff, -2, R, 1, -1, 1, "@read @set @slow", .coord = SV_COORD_SDIFF),
    CP(sinterstore, -3, W | D, 1, -1, 1, "@write @set @slow", .coord = SV_COORD_SINTERSTORE, .touch = SV_TOUCH_FIRST, .pflags = SV_P_KEYMISS, EV(SV_N_SET, "sinterstore", SV_EV_POS)),
    CP(sunionstore, -3, W | D, 1, -1, 1, "@write @set @slow", .coord = SV_COORD_SUNIONSTORE, .touch = SV_TOUCH_FIRST, .pflags = SV_P_KEYMISS, EV(SV_N_SET, "sunionstore", SV_EV_POS)),
    CP(sdiffstore, -3, W | D, 1, -1, 1, "@write @set @slow", .coord = SV_COORD_SDIFFSTORE, .touch = SV_TOUCH_FIRST, .pflags = SV_P_KEYMISS, EV(SV_N_SET, "sdiffstore", SV_EV_POS)),
    {"sintercard", sv_cmd_sintercard, -3, R | M, 0, 0, 0, "@read @set @slow", numkeys1_keys, .coord = SV_COORD_SINTERCARD},
    C(sscan, -3, R, 1, 1, 1, "@read @set @slow"),
    /* sorted sets */
    CP(zadd, -4, W | D | F, 1, 1, 1, "@write @sortedset @fast", EVIN(SV_N_ZSET) /* "zadd"/"zincr" when a member was added or updated */),
    CP(zrem, -3, W | F, 1, 1, 1, "@write @sortedset @fast", NOOP0, EV(SV_N_ZSET, "zrem", SV_EV_POS)),
    C(zscore, 3, R | F, 1, 1, 1, "@read @sortedset @fast"),
    C(zmscore, -3, R | F, 1, 1, 1, "@read @sortedset @fast"),
    CP(zincrby, 4, W | D | F, 1, 1, 1, "@write @sortedset @fast", EV(SV_N_ZSET, "zincr", SV_EV_ANY)),
    C(zcard, 2, R | F, 1, 1, 1, "@read @sortedset @fast"),
    C(zcount, 4, R | F, 1, 1, 1, "@read @sortedset @fast"),
    C(zlexcount, 4, R | F, 1, 1, 1, "@read @sortedset @fast"),
    C(zrank, 3, R | F, 1, 1, 1, "@read @sortedset @fast"),
    C(zrevrank, 3, R | F, 1, 1, 1, "@read @sortedset @fast"),
    C(zrange, -4, R, 1, 1, 1, "@read @sortedset @slow"),
    C(zrevrange, -4, R, 1, 1, 1, "@read @sortedset @slow"),
    CP(zrangestore, -5, W | D, 1, 2, 1, "@write @sortedset @slow", .coord = SV_COORD_GATHER, .touch = SV_TOUCH_FIRST, .pflags = SV_P_KEYMISS, EV(SV_N_ZSET, "zrangestore", SV_EV_POS)),
    C(zrangebyscore, -4, R, 1, 1, 1, "@read @sortedset @slow"),
    C(zrevrangebyscore, -4, R, 1, 1, 1, "@read @sortedset @slow"),
    C(zrangebylex, -4, R, 1, 1, 1, "@read @sortedset @slow"),
    C(zrevrangebylex, -4, R, 1, 1, 1, "@read @sortedset @slow"),
    CP(zpopmin, -2, W | F, 1, 1, 1, "@write @sortedset @fast", NOOP0, EV(SV_N_ZSET, "zpopmin", SV_EV_NONNULL)),
    CP(zpopmax, -2, W | F, 1, 1, 1, "@write @sortedset @fast", NOOP0, EV(SV_N_ZSET, "zpopmax", SV_EV_NONNULL)),
    CP(zremrangebyrank, 4, W, 1, 1, 1, "@write @sortedset @slow", NOOP0, EV(SV_N_ZSET, "zremrangebyrank", SV_EV_POS)),
    CP(zremrangebyscore, 4, W, 1, 1, 1, "@write @sortedset @slow", NOOP0, EV(SV_N_ZSET, "zremrangebyscore", SV_EV_POS)),
    CP(zremrangebylex, 4, W, 1, 1, 1, "@write @sortedset @slow", NOOP0, EV(SV_N_ZSET, "zremrangebylex", SV_EV_POS)),
    C(zscan, -3, R, 1, 1, 1, "@read @sortedset @slow"),
    C(zrandmember, -2, R, 1, 1, 1, "@read @sortedset @slow"),
    {"zmpop", sv_cmd_zmpop, -4, W | M, 0, 0, 0, "@write @sortedset @slow", numkeys1_keys,
     .coord = SV_COORD_GATHER, .touch = SV_TOUCH_NONE /* signals what it changed itself */, EVF(SV_N_ZSET, sv_ev_zmpop, SV_EV_NONNULL)},
    {"zunion", sv_cmd_zunion, -3, R | M, 0, 0, 0, "@read @sortedset @slow", numkeys1_keys,
     .coord = SV_COORD_GATHER},
    {"zinter", sv_cmd_zinter, -3, R | M, 0, 0, 0, "@read @sortedset @slow", numkeys1_keys,
     .coord = SV_COORD_GATHER},
    {"zdiff", sv_cmd_zdiff, -3, R | M, 0, 0, 0, "@read @sortedset @slow", numkeys1_keys,
     .coord = SV_COORD_GATHER},
    {"zintercard", sv_cmd_zintercard, -3, R | M, 0, 0, 0, "@read @sortedset @slow", numkeys1_keys,
     .coord = SV_COORD_GATHER},
    {"zunionstore", sv_cmd_zunionstore, -4, W | D | M, 1, 1, 1, "@write @sortedset @slow", numkeys2_keys,
     .coord = SV_COORD_GATHER, .touch = SV_TOUCH_FIRST, .pflags = SV_P_KEYMISS, EV(SV_N_ZSET, "zunionstore", SV_EV_POS)},
    {"zinterstore", sv_cmd_zinterstore, -4, W | D | M, 1, 1, 1, "@write @sortedset @slow", numkeys2_keys,
     .coord = SV_COORD_GATHER, .touch = SV_TOUCH_FIRST, .pflags = SV_P_KEYMISS, EV(SV_N_ZSET, "zinterstore", SV_EV_POS)},
    {"zdiffstore", sv_cmd_zdiffstore, -4, W | D | M, 1, 1, 1, "@write @sortedset @slow", numkeys2_keys,
     .coord = SV_COORD_GATHER, .touch = SV_TOUCH_FIRST, .pflags = SV_P_KEYMISS, EV(SV_N_ZSET, "zdiffstore", SV_EV_POS)},
    /* streams: the writes that log what they did themselves have .aof NONE
     * (t_stream.c); Redis signals (WATCH) only entries added, deleted or trimmed */
    CP(xadd, -5, W | D | F, 1, 1, 1, "@write @stream @fast", .aof = SV_AOF_NONE, NOOP0, EVIN(SV_N_STREAM)),
    C(xlen, 2, R | F, 1, 1, 1, "@read @stream @fast"),
    C(xrange, -4, R, 1, 1, 1, "@read @stream @slow"),
    C(xrevrange, -4, R, 1, 1, 1, "@read @stream @slow"),
    CP(xdel, -3, W | F, 1, 1, 1, "@write @stream @fast", NOOP0, EVIN(SV_N_STREAM)),
    CP(xtrim, -4, W, 1, 1, 1, "@write @stream @slow", .aof = SV_AOF_NONE, NOOP0, EVIN(SV_N_STREAM)),
    {"xread", sv_cmd_xread, -4, R | B | M, 0, 0, 0, "@read @stream @slow @blocking", xread_keys, .coord = SV_COORD_XREAD},
    {"xreadgroup", sv_cmd_xreadgroup, -7, W | B | M, 0, 0, 0, "@write @stream @slow @blocking", xread_keys,
     .aof = SV_AOF_NONE, .touch = SV_TOUCH_NONE, .coord = SV_COORD_XREAD,
     .pflags = SV_P_KEYMISS /* its key lookups are reads in Redis: a missing key fires "keymiss" before NOGROUP */, EVIN(SV_N_STREAM)},
    CP(xgroup, -2, W, 2, 2, 1, "@write @stream @slow", .aof = SV_AOF_NONE, .touch = SV_TOUCH_NONE, EVIN(SV_N_STREAM)),
    CP(xack, -4, W | F, 1, 1, 1, "@write @stream @fast", .touch = SV_TOUCH_NONE, EVNONE),
    C(xpending, -3, R, 1, 1, 1, "@read @stream @slow"),
    CP(xclaim, -6, W | F, 1, 1, 1, "@write @stream @fast", .aof = SV_AOF_NONE, .touch = SV_TOUCH_NONE, EVIN(SV_N_STREAM)),
    CP(xautoclaim, -6, W | F, 1, 1, 1, "@write @stream @fast", .aof = SV_AOF_NONE, .touch = SV_TOUCH_NONE, EVIN(SV_N_STREAM)),
    C(xinfo, -2, R, 2, 2, 1, "@read @stream @slow"),
    CP(xsetid, -3, W | D | F, 1, 1, 1, "@write @stream @fast", .touch = SV_TOUCH_NONE, EVIN(SV_N_STREAM)),
    CP(bzpopmin, -3, W | F | B | SV_CMD_NOSCRIPT, 1, -2, 1, "@write @sortedset @fast @blocking", NOOP0, EVF(SV_N_ZSET, sv_ev_bzpop, SV_EV_NONNULL)),
    CP(bzpopmax, -3, W | F | B | SV_CMD_NOSCRIPT, 1, -2, 1, "@write @sortedset @fast @blocking", NOOP0, EVF(SV_N_ZSET, sv_ev_bzpop, SV_EV_NONNULL)),
    {"bzmpop", sv_cmd_bzmpop, -5, W | B | M, 0, 0, 0, "@write @sortedset @slow @blocking", bmpop_keys, NOOP0, EVF(SV_N_ZSET, sv_ev_bzmpop, SV_EV_NONNULL)},
    /* pub/sub */
    C(subscribe, -2, P | SV_CMD_NOSCRIPT | L, 0, 0, 0, "@pubsub @slow"),
    C(psubscribe, -2, P | SV_CMD_NOSCRIPT | L, 0, 0, 0, "@pubsub @slow"),
    C(unsubscribe, -1, P | SV_CMD_NOSCRIPT | L, 0, 0, 0, "@pubsub @slow"),
    C(punsubscribe, -1, P | SV_CMD_NOSCRIPT | L, 0, 0, 0, "@pubsub @slow"),
    C(ssubscribe, -2, P | SV_CMD_NOSCRIPT | L, 1, -1, 1, "@pubsub @slow"),
    C(sunsubscribe, -1, P | SV_CMD_NOSCRIPT | L, 1, -1, 1, "@pubsub @slow"),
    C(publish, 3, P | L | F, 0, 0, 0, "@pubsub @fast"),
    C(spublish, 3, P | L | F, 1, 1, 1, "@pubsub @fast"),
    C(pubsub, -2, 0, 0, 0, 0, "@slow"),
    /* connection and server */
    C(ping, -1, F, 0, 0, 0, "@fast @connection"),
    C(echo, 2, F, 0, 0, 0, "@fast @connection"),
    CP(quit, -1, F | L, 0, 0, 0, "@fast @connection", .multi = SV_MULTI_NOW),
    C(select, 2, F | L, 0, 0, 0, "@fast @connection"),
    C(hello, -1, F | L, 0, 0, 0, "@fast @connection"),
    C(auth, -2, F | L, 0, 0, 0, "@fast @connection"),
    C(client, -2, L, 0, 0, 0, "@slow @connection"),
    C(info, -1, L, 0, 0, 0, "@slow @dangerous"),
    C(config, -2, A | L, 0, 0, 0, "@admin @slow @dangerous"),
    C(command, -1, L, 0, 0, 0, "@slow @connection"),
    /* scripting (script.c). FUNCTION is WRITE so LOAD/DELETE/FLUSH/RESTORE reach the
     * log (SV_AOF_FUNCTION: only those); it changes no key. The script commands are
     * not WRITE themselves: the log gets the commands a script ran (its effects, one
     * unit), never the script. In one-port mode FUNCTION and SCRIPT's state-changing
     * subcommands run on every shard (SV_FAN_SAME). */
    CP(function, -2, W | SV_CMD_NOSCRIPT, 0, 0, 0, "@write @slow @scripting", .aof = SV_AOF_FUNCTION,
       .fan = SV_FAN_SAME, .touch = SV_TOUCH_NONE, EVNONE),
    CP(script, -2, SV_CMD_NOSCRIPT, 0, 0, 0, "@slow @scripting", .fan = SV_FAN_SAME),
    {"eval", sv_cmd_eval, -3, SV_CMD_NOSCRIPT | SV_CMD_STALE | M, 0, 0, 0, "@slow @scripting", sv_script_getkeys},
    {"evalsha", sv_cmd_evalsha, -3, SV_CMD_NOSCRIPT | SV_CMD_STALE | M, 0, 0, 0, "@slow @scripting", sv_script_getkeys},
    {"eval_ro", sv_cmd_eval_ro, -3, SV_CMD_NOSCRIPT | SV_CMD_STALE | R | M, 0, 0, 0, "@slow @scripting", sv_script_getkeys},
    {"evalsha_ro", sv_cmd_evalsha_ro, -3, SV_CMD_NOSCRIPT | SV_CMD_STALE | R | M, 0, 0, 0, "@slow @scripting", sv_script_getkeys},
    {"fcall", sv_cmd_fcall, -3, SV_CMD_NOSCRIPT | SV_CMD_STALE | M, 0, 0, 0, "@slow @scripting", sv_script_getkeys},
    {"fcall_ro", sv_cmd_fcall_ro, -3, SV_CMD_NOSCRIPT | SV_CMD_STALE | R | M, 0, 0, 0, "@slow @scripting", sv_script_getkeys},
    C(shutdown, -1, A | SV_CMD_NOSCRIPT | L, 0, 0, 0, "@admin @slow @dangerous"),
    C(bgrewriteaof, 1, A, 0, 0, 0, "@admin @slow @dangerous"),
    C(time, 1, F | L, 0, 0, 0, "@fast"),
    {"object", sv_cmd_object, -2, R, 2, 2, 1, "@keyspace @read @slow", object_keys},
    {"debug", sv_cmd_debug, -2, A | NS | L, 0, 0, 0, "@admin @slow @dangerous", debug_keys},
    C(slowlog, -2, A | L, 0, 0, 0, "@admin @slow @dangerous"),
    C(latency, -2, A | NS | L, 0, 0, 0, "@admin @slow @dangerous"),
    C(role, 1, NS | L | F, 0, 0, 0, "@admin @fast @dangerous"),
    C(wait, 3, NS, 0, 0, 0, "@slow @connection"),
    C(lastsave, 1, L | F, 0, 0, 0, "@admin @fast @dangerous"),
    {"memory", sv_cmd_memory, -2, R, 2, 2, 1, "@slow", memory_keys},
    CP(reset, 1, F | L, 0, 0, 0, "@fast @connection", .multi = SV_MULTI_NOW, .pflags = SV_P_TX_RELEASE),
    CP(cluster, -2, 0, 0, 0, 0, "@slow", .fan = SV_FAN_SLOT_ARG, .pflags = SV_P_KEYSPACE),
    C(readonly, 1, F | L, 0, 0, 0, "@fast @connection"),
    {"readwrite", sv_cmd_readonly, 1, F | L, 0, 0, 0, "@fast @connection", NULL},
    {"asking", sv_cmd_readonly, 1, F, 0, 0, 0, "@fast @connection", NULL},
    /* transactions */
    CP(multi, 1, NS | L | F, 0, 0, 0, "@fast @transaction", .multi = SV_MULTI_NOW),
    CP(exec, 1, NS | L, 0, 0, 0, "@slow @transaction", .multi = SV_MULTI_NOW,
       .pflags = SV_P_TX_EXEC | SV_P_KEYSPACE),
    CP(discard, 1, NS | L | F, 0, 0, 0, "@fast @transaction", .multi = SV_MULTI_NOW, .pflags = SV_P_TX_RELEASE),
    CP(watch, -2, NS | L | F, 1, -1, 1, "@fast @transaction", .multi = SV_MULTI_NOW, .coord = SV_COORD_WATCH),
    CP(unwatch, 1, NS | L | F, 0, 0, 0, "@fast @transaction", .pflags = SV_P_TX_RELEASE),
    /* internal (last: COMMAND lists the table up to the first of them): a shard coordinating a
     * cross-shard RENAME moves the value with them. WRITE, so a log of write
     * commands replays them; their argv carries everything (no pointers). */
    {"slotlane.take", sv_cmd_slotlane_take, 2, W | F | SV_CMD_INTERNAL, 1, 1, 1, "@keyspace @write", NULL, EVNONE},
    {"slotlane.restore", sv_cmd_slotlane_restore, -4, W | D | SV_CMD_INTERNAL, 1, 1, 1, "@keyspace @write", NULL, EVNONE},
    /* a transaction received by another shard (multi.c): watches kept here, the
     * unit run here; not WRITE themselves (the commands they run log themselves) */
    {"slotlane.watch", sv_cmd_slotlane_watch, -2, F | SV_CMD_INTERNAL, 1, -1, 1, "@transaction", NULL,
     .multi = SV_MULTI_DENY},
    {"slotlane.unwatch", sv_cmd_slotlane_unwatch, -2, F | SV_CMD_INTERNAL, 1, -1, 1, "@transaction", NULL,
     .multi = SV_MULTI_DENY},
    {"slotlane.exec", sv_cmd_slotlane_exec, -3, SV_CMD_INTERNAL, 0, 0, 0, "@transaction", NULL,
     .multi = SV_MULTI_DENY, .touch = SV_TOUCH_NONE},
    {"slotlane.dump", sv_cmd_slotlane_dump, 2, R | F | SV_CMD_INTERNAL, 1, 1, 1, "@keyspace @read", NULL},
    /* a rewritten log recreates streams exactly with these (t_stream.c) */
    {"slotlane.xmeta", sv_cmd_slotlane_xmeta, -5, W | D | SV_CMD_INTERNAL, 1, 1, 1, "@stream @write", NULL, EVNONE},
    {"slotlane.xpel", sv_cmd_slotlane_xpel, -5, W | D | SV_CMD_INTERNAL, 1, 1, 1, "@stream @write", NULL, EVNONE},
    /* the steps of a cross-shard RENAME: slotlane.take and slotlane.restore firing
     * Redis's "rename_from" and "rename_to" instead of the steps' own events */
    {"slotlane.rename_from", sv_cmd_slotlane_rename_from, 2, W | F | SV_CMD_INTERNAL, 1, 1, 1, "@keyspace @write", NULL,
     EVF(SV_N_GENERIC, sv_ev_rename_step, SV_EV_NONNULL)},
    {"slotlane.rename_to", sv_cmd_slotlane_rename_to, -4, W | D | SV_CMD_INTERNAL, 1, 1, 1, "@keyspace @write", NULL,
     EVF(SV_N_GENERIC, sv_ev_rename_step, SV_EV_ANY)},
    /* a cross-shard XREAD/XREADGROUP's checks and `$` IDs, and its parked parts'
     * release (fwd_multi.c) */
    {"slotlane.xprep", sv_cmd_slotlane_xprep, -4, R | SV_CMD_INTERNAL, 3, -1, 1, "@stream @read", NULL},
    {"slotlane.xcancel", sv_cmd_slotlane_xcancel, 2, R | SV_CMD_INTERNAL, 0, 0, 0, "@stream @read", NULL},
    /* the probes of the coordinated MSETNX RENAMENX LMOVE SMOVE: EXISTS and TYPE that,
     * as every internal read, fire no "keymiss" (the command Redis runs reads nothing) */
    {"slotlane.exists", sv_cmd_exists, -2, R | F | SV_CMD_INTERNAL, 1, -1, 1, "@keyspace @read", NULL},
    {"slotlane.type", sv_cmd_type, 2, R | F | SV_CMD_INTERNAL, 1, 1, 1, "@keyspace @read", NULL},
};

#define NCMDS (sizeof(table) / sizeof(table[0]))
static size_t npublic; /* the internal commands come last: the table up to the first one */
#define LOOKUP_SIZE 1024
_Static_assert(NCMDS * 2 <= LOOKUP_SIZE, "the command lookup table must stay at most half full");
static const sv_cmd *lookup_table[LOOKUP_SIZE];

static unsigned name_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)tolower((unsigned char)s[i])) * 16777619u;
    return h;
}

static void subcommands_init(void);

void sv_cmdtable_init(void)
{
    /* idempotent: tests call it once per case, and a second fill must not probe a
     * table already holding every command (it would never find a free slot) */
    memset(lookup_table, 0, sizeof(lookup_table));
    npublic = 0;
    while (npublic < NCMDS && !(table[npublic].flags & SV_CMD_INTERNAL)) npublic++;
    for (size_t i = 0; i < NCMDS; i++) {
        unsigned h = name_hash(table[i].name, strlen(table[i].name)) & (LOOKUP_SIZE - 1);
        while (lookup_table[h]) h = (h + 1) & (LOOKUP_SIZE - 1);
        lookup_table[h] = &table[i];
    }
    subcommands_init();
}

size_t sv_cmd_index(const sv_cmd *cmd) { return (size_t)(cmd - table); }
size_t sv_cmd_count(void) { return NCMDS; }
const sv_cmd *sv_cmd_at(size_t i) { return &table[i]; }

const sv_cmd *sv_cmd_table(size_t *n)
{
    *n = npublic;
    return table;
}

const sv_cmd *sv_cmd_lookup_public(const char *name, size_t len)
{
    const sv_cmd *c = sv_cmd_lookup(name, len);
    return c && (c->flags & SV_CMD_INTERNAL) ? NULL : c;
}

const sv_cmd *sv_cmd_lookup(const char *name, size_t len)
{
    if (len == 0 || len > 32) return NULL;
    unsigned h = name_hash(name, len) & (LOOKUP_SIZE - 1);
    for (const sv_cmd *c; (c = lookup_table[h]); h = (h + 1) & (LOOKUP_SIZE - 1)) {
        if (strlen(c->name) != len) continue;
        size_t i = 0;
        while (i < len && tolower((unsigned char)name[i]) == c->name[i]) i++;
        if (i == len) return c;
    }
    return NULL;
}

/* ---- per-subcommand statistics ----
 * Redis 7.0's subcommands, which INFO commandstats/latencystats and LATENCY HISTOGRAM
 * count under 7.0's names (`config|get`); grouped by container. Their counters follow
 * the commands' in sv_shard.cmdstats (slots NCMDS + k). CLIENT SETINFO is 7.2's,
 * answered here too. */
static const char *const subcommands[] = {
    "client|caching", "client|getname", "client|getredir", "client|help", "client|id", "client|info",
    "client|kill", "client|list", "client|no-evict", "client|pause", "client|reply", "client|setinfo",
    "client|setname", "client|tracking", "client|trackinginfo", "client|unblock", "client|unpause",
    "cluster|addslots", "cluster|addslotsrange", "cluster|bumpepoch", "cluster|count-failure-reports",
    "cluster|countkeysinslot", "cluster|delslots", "cluster|delslotsrange", "cluster|failover",
    "cluster|flushslots", "cluster|forget", "cluster|getkeysinslot", "cluster|help", "cluster|info",
    "cluster|keyslot", "cluster|links", "cluster|meet", "cluster|myid", "cluster|nodes", "cluster|replicas",
    "cluster|replicate", "cluster|reset", "cluster|saveconfig", "cluster|set-config-epoch", "cluster|setslot",
    "cluster|shards", "cluster|slaves", "cluster|slots",
    "command|count", "command|docs", "command|getkeys", "command|getkeysandflags", "command|help",
    "command|info", "command|list",
    "config|get", "config|help", "config|resetstat", "config|rewrite", "config|set",
    "function|delete", "function|dump", "function|flush", "function|help", "function|kill", "function|list",
    "function|load", "function|restore", "function|stats",
    "latency|doctor", "latency|graph", "latency|help", "latency|histogram", "latency|history", "latency|latest",
    "latency|reset",
    "memory|doctor", "memory|help", "memory|malloc-stats", "memory|purge", "memory|stats", "memory|usage",
    "object|encoding", "object|freq", "object|help", "object|idletime", "object|refcount",
    "pubsub|channels", "pubsub|help", "pubsub|numpat", "pubsub|numsub", "pubsub|shardchannels",
    "pubsub|shardnumsub",
    "script|debug", "script|exists", "script|flush", "script|help", "script|kill", "script|load",
    "slowlog|get", "slowlog|help", "slowlog|len", "slowlog|reset",
    "xgroup|create", "xgroup|createconsumer", "xgroup|delconsumer", "xgroup|destroy", "xgroup|help",
    "xgroup|setid",
    "xinfo|consumers", "xinfo|groups", "xinfo|help", "xinfo|stream"};
#define NSUBS (sizeof(subcommands) / sizeof(subcommands[0]))
static uint16_t sub_first[NCMDS]; /* a container's first subcommand, sub_n[] of them */
static uint8_t sub_n[NCMDS];

static void subcommands_init(void)
{
    memset(sub_n, 0, sizeof(sub_n));
    for (size_t k = 0; k < NSUBS; k++) {
        const char *bar = strchr(subcommands[k], '|');
        const sv_cmd *c = sv_cmd_lookup(subcommands[k], (size_t)(bar - subcommands[k]));
        size_t i = sv_cmd_index(c);
        if (!sub_n[i]) sub_first[i] = (uint16_t)k;
        sub_n[i]++;
    }
}

size_t sv_cmdstat_count(void) { return NCMDS + NSUBS; }
const char *sv_cmdstat_name(size_t i) { return i < NCMDS ? table[i].name : subcommands[i - NCMDS]; }
int sv_cmdstat_listed(size_t i) { return i >= NCMDS || !(table[i].flags & SV_CMD_INTERNAL); }

/* the subcommand of container i named s, or -1 */
static long find_sub(size_t i, const char *s, size_t len)
{
    for (size_t k = sub_first[i]; k < (size_t)sub_first[i] + sub_n[i]; k++) {
        const char *name = strchr(subcommands[k], '|') + 1;
        if (strlen(name) != len) continue;
        size_t j = 0;
        while (j < len && tolower((unsigned char)s[j]) == name[j]) j++;
        if (j == len) return (long)k;
    }
    return -1;
}

size_t sv_cmdstat_slot(const sv_cmd *cmd, int argc, const sv_str *argv)
{
    size_t i = sv_cmd_index(cmd);
    if (!sub_n[i] || argc < 2) return i;
    long k = find_sub(i, argv[1].p, argv[1].len);
    return k < 0 ? SIZE_MAX : NCMDS + (size_t)k;
}

size_t sv_cmdstat_lookup(const char *name, size_t len, size_t *n)
{
    const char *bar = memchr(name, '|', len);
    const sv_cmd *c = sv_cmd_lookup_public(name, bar ? (size_t)(bar - name) : len);
    *n = 0;
    if (!c) return 0;
    size_t i = sv_cmd_index(c);
    if (bar) {
        long k = sub_n[i] ? find_sub(i, bar + 1, len - (size_t)(bar + 1 - name)) : -1;
        *n = k >= 0;
        return k >= 0 ? NCMDS + (size_t)k : 0;
    }
    *n = sub_n[i] ? sub_n[i] : 1;
    return sub_n[i] ? NCMDS + sub_first[i] : i;
}

int sv_cmd_keypos(const sv_cmd *cmd, int argc, sv_str *argv, int *keys, int max)
{
    if (cmd->getkeys) return cmd->getkeys(argc, argv, keys, max);
    if (cmd->first == 0) return 0;
    int last = cmd->last < 0 ? argc + cmd->last : cmd->last;
    int n = 0;
    for (int i = cmd->first; i <= last && i < argc && n < max; i += cmd->step) keys[n++] = i;
    return n;
}

static void unknown_command(sv_ctx *c, int argc, sv_str *argv)
{
    char args[300];
    size_t al = 0;
    args[0] = 0;
    for (int i = 1; i < argc && al < 128; i++) {
        int room = 128 - (int)al;
        int n = (int)(argv[i].len < (size_t)room ? argv[i].len : (size_t)room);
        const char *nul = memchr(argv[i].p, 0, (size_t)n);
        if (nul) n = (int)(nul - argv[i].p);
        al += (size_t)snprintf(args + al, sizeof(args) - al, "'%.*s' ", n, argv[i].p);
    }
    int nl = (int)(argv[0].len > 128 ? 128 : argv[0].len);
    const char *nul = memchr(argv[0].p, 0, (size_t)nl);
    if (nul) nl = (int)(nul - argv[0].p);
    sv_add_errorf(&c->r, "unknown command '%.*s', with args beginning with: %s", nl, argv[0].p, args);
}

/* Returns 1 when the command may run here; otherwise replied MOVED/CROSSSLOT. */
static int route(sv_ctx *c, const sv_cmd *cmd, int argc, sv_str *argv)
{
    int keys[64];
    int n;
    int *kp = keys;
    int *heap = NULL;
    if (argc > 64) kp = heap = sv_malloc(sizeof(int) * (size_t)argc);
    n = sv_cmd_keypos(cmd, argc, argv, kp, argc > 64 ? argc : 64);
    int ok = 1;
    if (n > 0 && sv_cfg.misrouted) {
        /* forwarding: a shard runs any command whose keys it owns, whatever their
         * slots; keys on several shards were split or refused before we got here */
        for (int i = 0; i < n && ok; i++)
            if (sv_slot_owner(sl__key_slot(argv[kp[i]].p, argv[kp[i]].len)) != c->sh->index) {
                sv_add_error(&c->r, "-CROSSSLOT Keys in request don't hash to the same slot");
                ok = 0;
            }
    } else if (n > 0) {
        unsigned slot = sl__key_slot(argv[kp[0]].p, argv[kp[0]].len);
        for (int i = 1; i < n; i++)
            if (sl__key_slot(argv[kp[i]].p, argv[kp[i]].len) != slot) {
                sv_add_error(&c->r, "-CROSSSLOT Keys in request don't hash to the same slot");
                ok = 0;
                break;
            }
        if (ok) {
            int owner = sv_slot_owner(slot);
            if (owner != c->sh->index) {
                sv_add_errorf(&c->r, "-MOVED %u %s:%d", slot, sv_cfg.announce, sv_shards[owner].port);
                ok = 0;
            }
        }
    }
    free(heap);
    return ok;
}

/* Did a WRITE command's reply say it changed nothing (its .touch policy)? */
static int unchanged(const sv_cmd *cmd, int argc, sv_str *argv, const char *r, size_t n)
{
    if (n == 0 || r[0] == '-' || r[0] == '!') return 1; /* an error changed nothing */
    if ((cmd->touch & SV_TOUCH_OPTIONS) && argc == 2) return 1;
    int null = (n >= 3 && r[0] == '_') || (n >= 5 && (r[0] == '$' || r[0] == '*') && r[1] == '-' && r[2] == '1');
    if (cmd->touch & SV_TOUCH_NOOP_ZERO) {
        if (null) return 1;
        if (n >= 4 && (r[0] == ':' || r[0] == '*') && r[1] == '0' && r[2] == '\r') return 1;
        if (n >= 5 && r[0] == ':' && r[1] == '-' && r[2] == '1' && r[3] == '\r') return 1; /* LINSERT: no pivot */
    }
    if ((cmd->touch & SV_TOUCH_SET) && null) {
        for (int i = 3; i < argc; i++)
            if (sv_eq(argv[i], "get")) return 0;
        return 1; /* NX or XX not met */
    }
    return 0;
}

/* After a WRITE command: sv_signal_modified_key for the keys it modified. */
static void signal_written(sv_ctx *c, const sv_cmd *cmd, int argc, sv_str *argv, size_t off)
{
    if ((cmd->touch & SV_TOUCH_NONE) || (!cmd->first && !cmd->getkeys)) return;
    if (unchanged(cmd, argc, argv, c->r.out->data + off, c->r.out->len - off)) return;
    int keys[64];
    int *kp = argc > 64 ? sv_malloc(sizeof(int) * (size_t)argc) : keys;
    int n = sv_cmd_keypos(cmd, argc, argv, kp, argc > 64 ? argc : 64);
    if (n > 0 && (cmd->touch & SV_TOUCH_FIRST)) n = 1;
    for (int i = 0; i < n; i++) sv_signal_modified_key(c->sh, argv[kp[i]]);
    if (kp != keys) free(kp);
}

/* The call's accounting (INFO commandstats/errorstats/latencystats, SLOWLOG): two
 * reads of the TSC (sv_ticks) and a few adds into the command's own counters. */
static void account(sv_ctx *c, const sv_cmd *cmd, int argc, sv_str *argv, uint64_t t0, size_t off)
{
    sv_shard *sh = c->sh;
    if (!sh->cmdstats) return; /* a scratch shard (re-split at startup, unit tests) keeps none */
    int64_t us = sv_ticks_us(sv_ticks() - t0);
    if (us < 0) us = 0;
    size_t slot = sv_cmdstat_slot(cmd, argc, argv);
    if (slot == SIZE_MAX) { /* an unknown subcommand: Redis rejects it before the call, errorstats count it */
        if (c->r.out->len > off && c->r.out->data[off] == '-') sv_stats_error(sh, c->r.out->data + off, c->r.out->len - off);
        return;
    }
    sv_cmdstat *st = &sh->cmdstats[slot];
    st->calls++;
    st->usec += (uint64_t)us;
    int b = us ? 64 - __builtin_clzll((unsigned long long)us) : 0; /* < 2^b µs */
    st->hist[b < SV_LAT_BUCKETS ? b : SV_LAT_BUCKETS - 1]++;
    if (c->r.out->len > off && c->r.out->data[off] == '-') {
        st->failed++;
        sv_stats_error(sh, c->r.out->data + off, c->r.out->len - off);
    }
    sv_slowlog_push(c, argc, argv, us);
}

void sv_call(sv_ctx *c, const sv_cmd *cmd, int argc, sv_str *argv)
{
    c->sh->stats.commands++;
    size_t off = c->r.out->len;
    uint64_t t0 = sv_ticks();
    int reads = sv_notify_reads; /* (EXEC and scripts call commands inside theirs) */
    if (!(cmd->flags & SV_CMD_WRITE)) {
        sv_notify_reads = !(cmd->flags & SV_CMD_INTERNAL); /* (a step: its command's lookups decide) */
        cmd->fn(c, argc, argv);
        sv_notify_reads = reads;
        if (c->sess && c->sess->trk) sv_tracking_after_call(c, cmd, argc, argv); /* the keys it read */
        account(c, cmd, argc, argv, t0, off);
        return;
    }
    sv_notify_reads = (cmd->pflags & SV_P_KEYMISS) != 0;
    int ntf = sv_notify_flags != 0; /* keyspace notifications: queued inside, published after (notify.c) */
    if (ntf) sv_notify_begin(c->sh);
    cmd->fn(c, argc, argv);
    if (!c->blocked) { /* (a parked command changed nothing yet) */
        /* durability: what a write changed goes to the shard's log (aof.c) */
        if (c->sh->aof) sv_aof_feed(c, cmd, argc, argv, off);
        signal_written(c, cmd, argc, argv, off);
    }
    if (ntf) sv_notify_end(c, cmd, argc, argv, off);
    sv_notify_reads = reads;
    account(c, cmd, argc, argv, t0, off);
}

/* A command refused before it ran (arity, MOVED, CROSSSLOT, not allowed in MULTI). */
static void rejected(sv_ctx *c, const sv_cmd *cmd, int argc, sv_str *argv, size_t off)
{
    if (!c->sh->cmdstats) return;
    size_t slot = cmd ? sv_cmdstat_slot(cmd, argc, argv) : SIZE_MAX;
    if (slot != SIZE_MAX) c->sh->cmdstats[slot].rejected++;
    if (c->r.out->len > off) sv_stats_error(c->sh, c->r.out->data + off, c->r.out->len - off);
}

void sv_execute(sv_ctx *c, int argc, sv_str *argv)
{
    const sv_cmd *cmd = sv_cmd_lookup(argv[0].p, argv[0].len);
    size_t off = c->r.out->len;
    if (!cmd) {
        unknown_command(c, argc, argv);
        rejected(c, NULL, argc, argv, off);
        sv_tx_flag_error(c);
        return;
    }
    c->sess->last_cmd = cmd->name;
    if ((cmd->arity > 0 && argc != cmd->arity) || argc < -cmd->arity) {
        sv_add_arity_error(c, cmd->name);
        rejected(c, cmd, argc, argv, off);
        sv_tx_flag_error(c);
        return;
    }
    int queue = c->sess->tx && c->sess->tx->in_multi && cmd->multi != SV_MULTI_NOW;
    if (queue && cmd->multi == SV_MULTI_DENY) {
        sv_add_error(&c->r, "Command not allowed inside a transaction");
        rejected(c, cmd, argc, argv, off);
        sv_tx_flag_error(c);
        return;
    }
    if (sv_cfg.shards > 1 && !c->noroute && (cmd->first || cmd->getkeys) && !route(c, cmd, argc, argv)) {
        rejected(c, cmd, argc, argv, off);
        sv_tx_flag_error(c); /* MOVED or CROSSSLOT of a queued command fails the transaction, as in Redis Cluster */
        return;
    }
    if (c->sess->ps && sv_pubsub_resp2_restricted(c->sess) && !sv_pubsub_allowed_cmd(cmd->fn)) {
        /* named as Redis names it: a container command with its subcommand */
        static const char *containers[] = {"client", "config", "command", "cluster", "function", "pubsub", "object"};
        char name[80];
        snprintf(name, sizeof(name), "%s", cmd->name);
        for (size_t i = 0; i < sizeof(containers) / sizeof(containers[0]) && argc >= 2; i++)
            if (!strcmp(cmd->name, containers[i])) {
                size_t l = strlen(name), sl = argv[1].len > 32 ? 32 : argv[1].len;
                name[l++] = '|';
                for (size_t j = 0; j < sl; j++) name[l++] = (char)tolower((unsigned char)argv[1].p[j]);
                name[l] = 0;
            }
        sv_add_errorf(&c->r, "Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", name);
        return;
    }
    if (queue) {
        sv_tx_queue(c, cmd, argc, argv); /* multi.c */
        return;
    }
    sv_call(c, cmd, argc, argv);
}
