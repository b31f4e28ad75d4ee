/* cmdtable: the command table (name, arity, flags, key positions as COMMAND reports
 * them) and sv_execute, which checks arity and cluster routing and dispatches.
 *
 * Routing rule: with one shard the shard owns every slot and behaves like a
 * standalone Redis (multi-key commands may span slots). With several shards it is
 * exactly Redis Cluster: keys in different slots get CROSSSLOT, a key owned by
 * another shard gets MOVED. */
#include <ctype.h>
#include <stdio.h>

#include "server.h"
#include "aof.h"

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
#define NS SV_CMD_NOSCRIPT

static int sintercard_keys(int argc, sv_str *argv, int *keys, int max)
{
    long long n;
    if (argc < 2 || !sv_str2ll(argv[1].p, argv[1].len, &n) || n < 1 || n > argc - 2) return -1;
    int k = 0;
    for (int i = 0; i < n && k < max; i++) keys[k++] = 2 + i;
    return k;
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

static const sv_cmd table[] = {
    /* strings */
    C(get, 2, R | F, 1, 1, 1, "@read @string @fast"),
    CP(set, -3, W | D, 1, 1, 1, "@write @string @slow", .aof = SV_AOF_SET, .touch = SV_TOUCH_SET),
    CP(setnx, 3, W | D | F, 1, 1, 1, "@write @string @fast", NOOP0),
    CP(setex, 4, W | D, 1, 1, 1, "@write @string @slow", .aof = SV_AOF_STRING),
    CP(psetex, 4, W | D, 1, 1, 1, "@write @string @slow", .aof = SV_AOF_STRING),
    C(getset, 3, W | D | F, 1, 1, 1, "@write @string @fast"),
    CP(getdel, 2, W | F, 1, 1, 1, "@write @string @fast", NOOP0),
    CP(getex, -2, W | F, 1, 1, 1, "@write @string @fast", .aof = SV_AOF_GETEX, .touch = SV_TOUCH_NOOP_ZERO | SV_TOUCH_OPTIONS),
    CP(mget, -2, R | F, 1, -1, 1, "@read @string @fast", .split = SV_SPLIT_MGET),
    CP(mset, -3, W | D, 1, -1, 2, "@write @string @slow", .split = SV_SPLIT_PAIRS_OK),
    CP(msetnx, -3, W | D, 1, -1, 2, "@write @string @slow", .coord = SV_COORD_MSETNX, NOOP0),
    C(append, 3, W | D | F, 1, 1, 1, "@write @string @fast"),
    C(strlen, 2, R | F, 1, 1, 1, "@read @string @fast"),
    C(getrange, 4, R, 1, 1, 1, "@read @string @slow"),
    C(setrange, 4, W | D, 1, 1, 1, "@write @string @slow"),
    C(incr, 2, W | D | F, 1, 1, 1, "@write @string @fast"),
    C(decr, 2, W | D | F, 1, 1, 1, "@write @string @fast"),
    C(incrby, 3, W | D | F, 1, 1, 1, "@write @string @fast"),
    C(decrby, 3, W | D | F, 1, 1, 1, "@write @string @fast"),
    C(incrbyfloat, 3, W | D | F, 1, 1, 1, "@write @string @fast"),
    /* keys */
    CP(del, -2, W, 1, -1, 1, "@keyspace @write @slow", .split = SV_SPLIT_SUM, NOOP0),
    {"unlink", sv_cmd_del, -2, W | F, 1, -1, 1, "@keyspace @write @fast", NULL, .split = SV_SPLIT_SUM, NOOP0},
    CP(exists, -2, R | F, 1, -1, 1, "@keyspace @read @fast", .split = SV_SPLIT_SUM),
    C(type, 2, R | F, 1, 1, 1, "@keyspace @read @fast"),
    CP(rename, 3, W, 1, 2, 1, "@keyspace @write @slow", .coord = SV_COORD_RENAME),
    CP(renamenx, 3, W | F, 1, 2, 1, "@keyspace @write @fast", .coord = SV_COORD_RENAMENX, NOOP0),
    CP(keys, 2, R, 0, 0, 0, "@keyspace @read @slow @dangerous", .fan = SV_FAN_CONCAT, .pflags = SV_P_KEYSPACE),
    CP(scan, -2, R, 0, 0, 0, "@keyspace @read @slow", .pflags = SV_P_KEYSPACE),
    CP(randomkey, 1, R, 0, 0, 0, "@keyspace @read @slow", .pflags = SV_P_KEYSPACE),
    CP(touch, -2, R | F, 1, -1, 1, "@keyspace @read @fast", .split = SV_SPLIT_SUM),
    CP(expire, -3, W | F, 1, 1, 1, "@keyspace @write @fast", .aof = SV_AOF_TTL, NOOP0),
    CP(pexpire, -3, W | F, 1, 1, 1, "@keyspace @write @fast", .aof = SV_AOF_TTL, NOOP0),
    CP(expireat, -3, W | F, 1, 1, 1, "@keyspace @write @fast", .aof = SV_AOF_TTL, NOOP0),
    CP(pexpireat, -3, W | F, 1, 1, 1, "@keyspace @write @fast", .aof = SV_AOF_TTL, NOOP0),
    C(ttl, 2, R | F, 1, 1, 1, "@keyspace @read @fast"),
    C(pttl, 2, R | F, 1, 1, 1, "@keyspace @read @fast"),
    CP(persist, 2, W | F, 1, 1, 1, "@keyspace @write @fast", NOOP0),
    C(expiretime, 2, R | F, 1, 1, 1, "@keyspace @read @fast"),
    C(pexpiretime, 2, R | F, 1, 1, 1, "@keyspace @read @fast"),
    CP(dbsize, 1, R | F, 0, 0, 0, "@keyspace @read @fast", .fan = SV_FAN_SUM, .pflags = SV_P_KEYSPACE),
    CP(flushall, -1, W, 0, 0, 0, "@keyspace @write @slow @dangerous", .fan = SV_FAN_OK, .touch = SV_TOUCH_NONE, .pflags = SV_P_KEYSPACE),
    {"flushdb", sv_cmd_flushall, -1, W, 0, 0, 0, "@keyspace @write @slow @dangerous", NULL,
     .fan = SV_FAN_OK, .touch = SV_TOUCH_NONE, .pflags = SV_P_KEYSPACE},
    /* lists */
    C(lpush, -3, W | D | F, 1, 1, 1, "@write @list @fast"),
    C(rpush, -3, W | D | F, 1, 1, 1, "@write @list @fast"),
    CP(lpushx, -3, W | D | F, 1, 1, 1, "@write @list @fast", NOOP0),
    CP(rpushx, -3, W | D | F, 1, 1, 1, "@write @list @fast", NOOP0),
    CP(lpop, -2, W | F, 1, 1, 1, "@write @list @fast", NOOP0),
    CP(rpop, -2, W | F, 1, 1, 1, "@write @list @fast", NOOP0),
    C(llen, 2, R | F, 1, 1, 1, "@read @list @fast"),
    C(lrange, 4, R, 1, 1, 1, "@read @list @slow"),
    C(lindex, 3, R, 1, 1, 1, "@read @list @slow"),
    C(lset, 4, W | D, 1, 1, 1, "@write @list @slow"),
    CP(linsert, 5, W | D, 1, 1, 1, "@write @list @slow", NOOP0),
    CP(lrem, 4, W, 1, 1, 1, "@write @list @slow", NOOP0),
    C(ltrim, 4, W, 1, 1, 1, "@write @list @slow"),
    C(lpos, -3, R, 1, 1, 1, "@read @list @slow"),
    CP(lmove, 5, W | D, 1, 2, 1, "@write @list @slow", .coord = SV_COORD_LMOVE, NOOP0),
    CP(rpoplpush, 3, W | D, 1, 2, 1, "@write @list @slow", .coord = SV_COORD_RPOPLPUSH, NOOP0),
    /* hashes */
    C(hset, -4, W | D | F, 1, 1, 1, "@write @hash @fast"),
    CP(hsetnx, 4, W | D | F, 1, 1, 1, "@write @hash @fast", NOOP0),
    C(hget, 3, R | F, 1, 1, 1, "@read @hash @fast"),
    C(hmget, -3, R | F, 1, 1, 1, "@read @hash @fast"),
    C(hmset, -4, W | D | F, 1, 1, 1, "@write @hash @fast"),
    CP(hdel, -3, W | F, 1, 1, 1, "@write @hash @fast", NOOP0),
    C(hlen, 2, R | F, 1, 1, 1, "@read @hash @fast"),
    C(hexists, 3, R | F, 1, 1, 1, "@read @hash @fast"),
    C(hgetall, 2, R, 1, 1, 1, "@read @hash @slow"),
    C(hkeys, 2, R, 1, 1, 1, "@read @hash @slow"),
    C(hvals, 2, R, 1, 1, 1, "@read @hash @slow"),
    C(hincrby, 4, W | D | F, 1, 1, 1, "@write @hash @fast"),
    C(hincrbyfloat, 4, W | D | F, 1, 1, 1, "@write @hash @fast"),
    C(hstrlen, 3, R | F, 1, 1, 1, "@read @hash @fast"),
    C(hrandfield, -2, R, 1, 1, 1, "@read @hash @slow"),
    C(hscan, -3, R, 1, 1, 1, "@read @hash @slow"),
    /* sets */
    CP(sadd, -3, W | D | F, 1, 1, 1, "@write @set @fast", NOOP0),
    CP(srem, -3, W | F, 1, 1, 1, "@write @set @fast", NOOP0),
    C(smembers, 2, R, 1, 1, 1, "@read @set @slow"),
    C(sismember, 3, R | F, 1, 1, 1, "@read @set @fast"),
    C(smismember, -3, R | F, 1, 1, 1, "@read @set @fast"),
    C(scard, 2, R | F, 1, 1, 1, "@read @set @fast"),
    CP(spop, -2, W | F, 1, 1, 1, "@write @set @fast", .aof = SV_AOF_SREM_REPLY, NOOP0),
    C(srandmember, -2, R, 1, 1, 1, "@read @set @slow"),
    CP(smove, 4, W | F, 1, 2, 1, "@write @set @fast", .coord = SV_COORD_SMOVE, NOOP0),
    CP(sinter, -2, R, 1, -1, 1, "@read @set @slow", .coord = SV_COORD_SINTER),
    CP(sunion, -2, R, 1, -1, 1, "@read @set @slow", .coord = SV_COORD_SUNION),
    CP(sdiff, -2, R, 1, -1, 1, "@read @set @slow", .coord = SV_COORD_SDIFF),
    CP(sinterstore, -3, W | D, 1, -1, 1, "@write @set @slow", .coord = SV_COORD_SINTERSTORE, .touch = SV_TOUCH_FIRST),
    CP(sunionstore, -3, W | D, 1, -1, 1, "@write @set @slow", .coord = SV_COORD_SUNIONSTORE, .touch = SV_TOUCH_FIRST),
    CP(sdiffstore, -3, W | D, 1, -1, 1, "@write @set @slow", .coord = SV_COORD_SDIFFSTORE, .touch = SV_TOUCH_FIRST),
    {"sintercard", sv_cmd_sintercard, -3, R | M, 0, 0, 0, "@read @set @slow", sintercard_keys, .coord = SV_COORD_SINTERCARD},
    C(sscan, -3, R, 1, 1, 1, "@read @set @slow"),
    /* sorted sets */
    C(zadd, -4, W | D | F, 1, 1, 1, "@write @sortedset @fast"),
    CP(zrem, -3, W | F, 1, 1, 1, "@write @sortedset @fast", NOOP0),
    C(zscore, 3, R | F, 1, 1, 1, "@read @sortedset @fast"),
    C(zmscore, -3, R | F, 1, 1, 1, "@read @sortedset @fast"),
    C(zincrby, 4, W | D | F, 1, 1, 1, "@write @sortedset @fast"),
    C(zcard, 2, R | F, 1, 1, 1, "@read @sortedset @fast"),
    C(zcount, 4, R | F, 1, 1, 1, "@read @sortedset @fast"),
    C(zlexcount, 4, R | F, 1, 1, 1, "@read @sortedset @fast"),
    C(zrank, 3, R | F, 1, 1, 1, "@read @sortedset @fast"),
    C(zrevrank, 3, R | F, 1, 1, 1, "@read @sortedset @fast"),
    C(zrange, -4, R, 1, 1, 1, "@read @sortedset @slow"),
    C(zrevrange, -4, R, 1, 1, 1, "@read @sortedset @slow"),
    C(zrangebyscore, -4, R, 1, 1, 1, "@read @sortedset @slow"),
    C(zrevrangebyscore, -4, R, 1, 1, 1, "@read @sortedset @slow"),
    C(zrangebylex, -4, R, 1, 1, 1, "@read @sortedset @slow"),
    C(zrevrangebylex, -4, R, 1, 1, 1, "@read @sortedset @slow"),
    CP(zpopmin, -2, W | F, 1, 1, 1, "@write @sortedset @fast", NOOP0),
    CP(zpopmax, -2, W | F, 1, 1, 1, "@write @sortedset @fast", NOOP0),
    CP(zremrangebyrank, 4, W, 1, 1, 1, "@write @sortedset @slow", NOOP0),
    CP(zremrangebyscore, 4, W, 1, 1, 1, "@write @sortedset @slow", NOOP0),
    CP(zremrangebylex, 4, W, 1, 1, 1, "@write @sortedset @slow", NOOP0),
    C(zscan, -3, R, 1, 1, 1, "@read @sortedset @slow"),
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
    C(function, -2, W, 0, 0, 0, "@write @slow @scripting"),
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
    C(shutdown, -1, A | NS | L, 0, 0, 0, "@admin @slow @dangerous"),
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
    {"slotlane.take", sv_cmd_slotlane_take, 2, W | F | SV_CMD_INTERNAL, 1, 1, 1, "@keyspace @write", NULL},
    {"slotlane.restore", sv_cmd_slotlane_restore, -4, W | D | SV_CMD_INTERNAL, 1, 1, 1, "@keyspace @write", NULL},
    /* a transaction received by another shard (multi.c): watches kept here, the
     * unit run here; not WRITE themselves (the commands they run log themselves) */
    {"slotlane.watch", sv_cmd_slotlane_watch, -2, F | SV_CMD_INTERNAL, 1, -1, 1, "@transaction", NULL,
     .multi = SV_MULTI_DENY},
    {"slotlane.unwatch", sv_cmd_slotlane_unwatch, -2, F | SV_CMD_INTERNAL, 1, -1, 1, "@transaction", NULL,
     .multi = SV_MULTI_DENY},
    {"slotlane.exec", sv_cmd_slotlane_exec, -3, SV_CMD_INTERNAL, 0, 0, 0, "@transaction", NULL,
     .multi = SV_MULTI_DENY, .touch = SV_TOUCH_NONE},
};

#define NCMDS (sizeof(table) / sizeof(table[0]))
static size_t npublic; /* the internal commands come last: the table up to the first one */
#define LOOKUP_SIZE 1024
static const sv_cmd *lookup_table[LOOKUP_SIZE];

static unsigned name_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)tolower((unsigned char)s[i])) * 16777619u;
    return h;
}

void sv_cmdtable_init(void)
{
    while (npublic < NCMDS && !(table[npublic].flags & SV_CMD_INTERNAL)) npublic++;
    for (size_t i = 0; i < NCMDS; i++) {
        unsigned h = name_hash(table[i].name, strlen(table[i].name)) & (LOOKUP_SIZE - 1);
        while (lookup_table[h]) h = (h + 1) & (LOOKUP_SIZE - 1);
        lookup_table[h] = &table[i];
    }
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
    sv_cmdstat *st = &sh->cmdstats[sv_cmd_index(cmd)];
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
    cmd->fn(c, argc, argv);
    if (cmd->flags & SV_CMD_WRITE) {
        /* durability: what a write changed goes to the shard's log (aof.c) */
        if (c->sh->aof) sv_aof_feed(c, cmd, argc, argv, off);
        signal_written(c, cmd, argc, argv, off);
    }
    account(c, cmd, argc, argv, t0, off);
}

/* A command refused before it ran (arity, MOVED, CROSSSLOT, not allowed in MULTI). */
static void rejected(sv_ctx *c, const sv_cmd *cmd, size_t off)
{
    if (!c->sh->cmdstats) return;
    if (cmd) c->sh->cmdstats[sv_cmd_index(cmd)].rejected++;
    if (c->r.out->len > off) sv_stats_error(c->sh, c->r.out->data + off, c->r.out->len - off);
}

void sv_execute(sv_ctx *c, int argc, sv_str *argv)
{
    const sv_cmd *cmd = sv_cmd_lookup(argv[0].p, argv[0].len);
    size_t off = c->r.out->len;
    if (!cmd) {
        unknown_command(c, argc, argv);
        rejected(c, NULL, off);
        sv_tx_flag_error(c);
        return;
    }
    c->sess->last_cmd = cmd->name;
    if ((cmd->arity > 0 && argc != cmd->arity) || argc < -cmd->arity) {
        sv_add_arity_error(c, cmd->name);
        rejected(c, cmd, off);
        sv_tx_flag_error(c);
        return;
    }
    int queue = c->sess->tx && c->sess->tx->in_multi && cmd->multi != SV_MULTI_NOW;
    if (queue && cmd->multi == SV_MULTI_DENY) {
        sv_add_error(&c->r, "Command not allowed inside a transaction");
        rejected(c, cmd, off);
        sv_tx_flag_error(c);
        return;
    }
    if (sv_cfg.shards > 1 && !c->noroute && (cmd->first || cmd->getkeys) && !route(c, cmd, argc, argv)) {
        rejected(c, cmd, off);
        sv_tx_flag_error(c); /* MOVED or CROSSSLOT of a queued command fails the transaction, as in Redis Cluster */
        return;
    }
    if (queue) {
        sv_tx_queue(c, cmd, argc, argv); /* multi.c */
        return;
    }
    sv_call(c, cmd, argc, argv);
}
