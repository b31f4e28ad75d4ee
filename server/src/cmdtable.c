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
#include "script.h"

#define W SV_CMD_WRITE
#define R SV_CMD_READONLY
#define F SV_CMD_FAST
#define D SV_CMD_DENYOOM
#define M SV_CMD_MOVABLE
#define A SV_CMD_ADMIN
#define L (SV_CMD_LOADING | SV_CMD_STALE)

static int sintercard_keys(int argc, sv_str *argv, int *keys, int max)
{
    long long n;
    if (argc < 2 || !sv_str2ll(argv[1].p, argv[1].len, &n) || n < 1 || n > argc - 2) return -1;
    int k = 0;
    for (int i = 0; i < n && k < max; i++) keys[k++] = 2 + i;
    return k;
}

#define C(name, arity, flags, first, last, step, acl) {#name, sv_cmd_##name, arity, flags, first, last, step, acl, NULL}

static const sv_cmd table[] = {
    /* strings */
    C(get, 2, R | F, 1, 1, 1, "@read @string @fast"),
    C(set, -3, W | D, 1, 1, 1, "@write @string @slow"),
    C(setnx, 3, W | D | F, 1, 1, 1, "@write @string @fast"),
    C(setex, 4, W | D, 1, 1, 1, "@write @string @slow"),
    C(psetex, 4, W | D, 1, 1, 1, "@write @string @slow"),
    C(getset, 3, W | D | F, 1, 1, 1, "@write @string @fast"),
    C(getdel, 2, W | F, 1, 1, 1, "@write @string @fast"),
    C(getex, -2, W | F, 1, 1, 1, "@write @string @fast"),
    C(mget, -2, R | F, 1, -1, 1, "@read @string @fast"),
    C(mset, -3, W | D, 1, -1, 2, "@write @string @slow"),
    C(msetnx, -3, W | D, 1, -1, 2, "@write @string @slow"),
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
    C(del, -2, W, 1, -1, 1, "@keyspace @write @slow"),
    {"unlink", sv_cmd_del, -2, W | F, 1, -1, 1, "@keyspace @write @fast", NULL},
    C(exists, -2, R | F, 1, -1, 1, "@keyspace @read @fast"),
    C(type, 2, R | F, 1, 1, 1, "@keyspace @read @fast"),
    C(rename, 3, W, 1, 2, 1, "@keyspace @write @slow"),
    C(renamenx, 3, W | F, 1, 2, 1, "@keyspace @write @fast"),
    C(keys, 2, R, 0, 0, 0, "@keyspace @read @slow @dangerous"),
    C(scan, -2, R, 0, 0, 0, "@keyspace @read @slow"),
    C(randomkey, 1, R, 0, 0, 0, "@keyspace @read @slow"),
    C(touch, -2, R | F, 1, -1, 1, "@keyspace @read @fast"),
    C(expire, -3, W | F, 1, 1, 1, "@keyspace @write @fast"),
    C(pexpire, -3, W | F, 1, 1, 1, "@keyspace @write @fast"),
    C(expireat, -3, W | F, 1, 1, 1, "@keyspace @write @fast"),
    C(pexpireat, -3, W | F, 1, 1, 1, "@keyspace @write @fast"),
    C(ttl, 2, R | F, 1, 1, 1, "@keyspace @read @fast"),
    C(pttl, 2, R | F, 1, 1, 1, "@keyspace @read @fast"),
    C(persist, 2, W | F, 1, 1, 1, "@keyspace @write @fast"),
    C(expiretime, 2, R | F, 1, 1, 1, "@keyspace @read @fast"),
    C(pexpiretime, 2, R | F, 1, 1, 1, "@keyspace @read @fast"),
    C(dbsize, 1, R | F, 0, 0, 0, "@keyspace @read @fast"),
    C(flushall, -1, W, 0, 0, 0, "@keyspace @write @slow @dangerous"),
    {"flushdb", sv_cmd_flushall, -1, W, 0, 0, 0, "@keyspace @write @slow @dangerous", NULL},
    /* lists */
    C(lpush, -3, W | D | F, 1, 1, 1, "@write @list @fast"),
    C(rpush, -3, W | D | F, 1, 1, 1, "@write @list @fast"),
    C(lpushx, -3, W | D | F, 1, 1, 1, "@write @list @fast"),
    C(rpushx, -3, W | D | F, 1, 1, 1, "@write @list @fast"),
    C(lpop, -2, W | F, 1, 1, 1, "@write @list @fast"),
    C(rpop, -2, W | F, 1, 1, 1, "@write @list @fast"),
    C(llen, 2, R | F, 1, 1, 1, "@read @list @fast"),
    C(lrange, 4, R, 1, 1, 1, "@read @list @slow"),
    C(lindex, 3, R, 1, 1, 1, "@read @list @slow"),
    C(lset, 4, W | D, 1, 1, 1, "@write @list @slow"),
    C(linsert, 5, W | D, 1, 1, 1, "@write @list @slow"),
    C(lrem, 4, W, 1, 1, 1, "@write @list @slow"),
    C(ltrim, 4, W, 1, 1, 1, "@write @list @slow"),
    C(lpos, -3, R, 1, 1, 1, "@read @list @slow"),
    C(lmove, 5, W | D, 1, 2, 1, "@write @list @slow"),
    C(rpoplpush, 3, W | D, 1, 2, 1, "@write @list @slow"),
    /* hashes */
    C(hset, -4, W | D | F, 1, 1, 1, "@write @hash @fast"),
    C(hsetnx, 4, W | D | F, 1, 1, 1, "@write @hash @fast"),
    C(hget, 3, R | F, 1, 1, 1, "@read @hash @fast"),
    C(hmget, -3, R | F, 1, 1, 1, "@read @hash @fast"),
    C(hmset, -4, W | D | F, 1, 1, 1, "@write @hash @fast"),
    C(hdel, -3, W | F, 1, 1, 1, "@write @hash @fast"),
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
    C(sadd, -3, W | D | F, 1, 1, 1, "@write @set @fast"),
    C(srem, -3, W | F, 1, 1, 1, "@write @set @fast"),
    C(smembers, 2, R, 1, 1, 1, "@read @set @slow"),
    C(sismember, 3, R | F, 1, 1, 1, "@read @set @fast"),
    C(smismember, -3, R | F, 1, 1, 1, "@read @set @fast"),
    C(scard, 2, R | F, 1, 1, 1, "@read @set @fast"),
    C(spop, -2, W | F, 1, 1, 1, "@write @set @fast"),
    C(srandmember, -2, R, 1, 1, 1, "@read @set @slow"),
    C(smove, 4, W | F, 1, 2, 1, "@write @set @fast"),
    C(sinter, -2, R, 1, -1, 1, "@read @set @slow"),
    C(sunion, -2, R, 1, -1, 1, "@read @set @slow"),
    C(sdiff, -2, R, 1, -1, 1, "@read @set @slow"),
    C(sinterstore, -3, W | D, 1, -1, 1, "@write @set @slow"),
    C(sunionstore, -3, W | D, 1, -1, 1, "@write @set @slow"),
    C(sdiffstore, -3, W | D, 1, -1, 1, "@write @set @slow"),
    {"sintercard", sv_cmd_sintercard, -3, R | M, 0, 0, 0, "@read @set @slow", sintercard_keys},
    C(sscan, -3, R, 1, 1, 1, "@read @set @slow"),
    /* sorted sets */
    C(zadd, -4, W | D | F, 1, 1, 1, "@write @sortedset @fast"),
    C(zrem, -3, W | F, 1, 1, 1, "@write @sortedset @fast"),
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
    C(zpopmin, -2, W | F, 1, 1, 1, "@write @sortedset @fast"),
    C(zpopmax, -2, W | F, 1, 1, 1, "@write @sortedset @fast"),
    C(zremrangebyrank, 4, W, 1, 1, 1, "@write @sortedset @slow"),
    C(zremrangebyscore, 4, W, 1, 1, 1, "@write @sortedset @slow"),
    C(zremrangebylex, 4, W, 1, 1, 1, "@write @sortedset @slow"),
    C(zscan, -3, R, 1, 1, 1, "@read @sortedset @slow"),
    /* connection and server */
    C(ping, -1, F, 0, 0, 0, "@fast @connection"),
    C(echo, 2, F, 0, 0, 0, "@fast @connection"),
    C(quit, -1, F | L, 0, 0, 0, "@fast @connection"),
    C(select, 2, F | L, 0, 0, 0, "@fast @connection"),
    C(hello, -1, F | L, 0, 0, 0, "@fast @connection"),
    C(auth, -2, F | L, 0, 0, 0, "@fast @connection"),
    C(client, -2, L, 0, 0, 0, "@slow @connection"),
    C(info, -1, L, 0, 0, 0, "@slow @dangerous"),
    C(config, -2, A | L, 0, 0, 0, "@admin @slow @dangerous"),
    C(command, -1, L, 0, 0, 0, "@slow @connection"),
    C(function, -2, W | SV_CMD_NOSCRIPT, 0, 0, 0, "@write @slow @scripting"),
    /* scripting (script.c): not WRITE themselves, so the log gets the commands a
     * script ran (its effects), never the script */
    {"eval", sv_cmd_eval, -3, SV_CMD_NOSCRIPT | SV_CMD_STALE | M, 0, 0, 0, "@slow @scripting", sv_script_getkeys},
    {"evalsha", sv_cmd_evalsha, -3, SV_CMD_NOSCRIPT | SV_CMD_STALE | M, 0, 0, 0, "@slow @scripting", sv_script_getkeys},
    {"eval_ro", sv_cmd_eval_ro, -3, SV_CMD_NOSCRIPT | SV_CMD_STALE | R | M, 0, 0, 0, "@slow @scripting", sv_script_getkeys},
    {"evalsha_ro", sv_cmd_evalsha_ro, -3, SV_CMD_NOSCRIPT | SV_CMD_STALE | R | M, 0, 0, 0, "@slow @scripting", sv_script_getkeys},
    {"fcall", sv_cmd_fcall, -3, SV_CMD_NOSCRIPT | SV_CMD_STALE | M, 0, 0, 0, "@slow @scripting", sv_script_getkeys},
    {"fcall_ro", sv_cmd_fcall_ro, -3, SV_CMD_NOSCRIPT | SV_CMD_STALE | R | M, 0, 0, 0, "@slow @scripting", sv_script_getkeys},
    C(script, -2, SV_CMD_NOSCRIPT, 0, 0, 0, "@slow @scripting"),
    C(shutdown, -1, A | SV_CMD_NOSCRIPT | L, 0, 0, 0, "@admin @slow @dangerous"),
    C(bgrewriteaof, 1, A, 0, 0, 0, "@admin @slow @dangerous"),
    C(time, 1, F | L, 0, 0, 0, "@fast"),
    C(reset, 1, F | L, 0, 0, 0, "@fast @connection"),
    C(cluster, -2, 0, 0, 0, 0, "@slow"),
    C(readonly, 1, F | L, 0, 0, 0, "@fast @connection"),
    {"readwrite", sv_cmd_readonly, 1, F | L, 0, 0, 0, "@fast @connection", NULL},
    {"asking", sv_cmd_readonly, 1, F, 0, 0, 0, "@fast @connection", NULL},
    /* internal (last: COMMAND lists the table up to NPUBLIC): a shard coordinating a
     * cross-shard RENAME moves the value with them. WRITE, so a log of write
     * commands replays them; their argv carries everything (no pointers). */
    {"slotlane.take", sv_cmd_slotlane_take, 2, W | F | SV_CMD_INTERNAL, 1, 1, 1, "@keyspace @write", NULL},
    {"slotlane.restore", sv_cmd_slotlane_restore, -4, W | D | SV_CMD_INTERNAL, 1, 1, 1, "@keyspace @write", NULL},
};

#define NCMDS (sizeof(table) / sizeof(table[0]))
#define NPUBLIC (NCMDS - 2)
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
    for (size_t i = 0; i < NCMDS; i++) {
        unsigned h = name_hash(table[i].name, strlen(table[i].name)) & (LOOKUP_SIZE - 1);
        while (lookup_table[h]) h = (h + 1) & (LOOKUP_SIZE - 1);
        lookup_table[h] = &table[i];
    }
}

const sv_cmd *sv_cmd_table(size_t *n)
{
    *n = NPUBLIC;
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

void sv_execute(sv_ctx *c, int argc, sv_str *argv)
{
    const sv_cmd *cmd = sv_cmd_lookup(argv[0].p, argv[0].len);
    if (!cmd) {
        unknown_command(c, argc, argv);
        return;
    }
    c->sess->last_cmd = cmd->name;
    if ((cmd->arity > 0 && argc != cmd->arity) || argc < -cmd->arity) {
        sv_add_arity_error(c, cmd->name);
        return;
    }
    if (sv_cfg.shards > 1 && !c->noroute && (cmd->first || cmd->getkeys) && !route(c, cmd, argc, argv)) return;
    c->sh->stats.commands++;
    if (c->sh->aof && (cmd->flags & SV_CMD_WRITE)) {
        /* durability: what a write changed goes to the shard's log (aof.c) */
        size_t off = c->r.out->len;
        cmd->fn(c, argc, argv);
        sv_aof_feed(c, cmd, argc, argv, off);
        return;
    }
    cmd->fn(c, argc, argv);
}
