/* notify: keyspace notifications (`notify-keyspace-events`), Redis 7.0's classes and
 * event names, published on `__keyspace@0__:<key>` (message: the event) and
 * `__keyevent@0__:<event>` (message: the key) to the subscribers of every shard.
 *
 * How a command declares its events:
 *   - an event that is fixed for the command (LPUSH: "lpush" on its key) is a policy
 *     of its entry in cmdtable.c: CP(lpush, ..., EV(SV_N_LIST, "lpush", SV_EV_ANY)) —
 *     class, event, and the reply that means "it changed something" (any non-error
 *     reply, a positive integer, a non-null reply); it fires on argv[1] after the
 *     command ran; EVF(class, sv_ev_x, rule) names a function that fires events chosen
 *     by the arguments or the reply instead (BLMPOP LEFT/RIGHT, RENAME's two keys);
 *   - an event that depends on what the command did (DEL: one "del" per key it
 *     removed; RENAME: "rename_from" and "rename_to"; LMOVE: a pop and a push) is
 *     fired inside the command with sv_notify();
 *   - the keyspace fires "del" when an aggregate becomes empty, "expired" when a key
 *     expires and "new" when a key is created (db.c).
 * Inside a command, notifications queue and are published after it, the table's
 * fixed event first (Redis fires the command's event before the "del" of an emptied
 * key). When notifications are off (the default) a command pays one load. */
#ifndef SV_NOTIFY_H
#define SV_NOTIFY_H

#include "server.h"

enum {
    SV_N_KEYSPACE = 1 << 0, /* K */
    SV_N_KEYEVENT = 1 << 1, /* E */
    SV_N_GENERIC = 1 << 2,  /* g */
    SV_N_STRING = 1 << 3,   /* $ */
    SV_N_LIST = 1 << 4,     /* l */
    SV_N_SET = 1 << 5,      /* s */
    SV_N_HASH = 1 << 6,     /* h */
    SV_N_ZSET = 1 << 7,     /* z */
    SV_N_EXPIRED = 1 << 8,  /* x */
    SV_N_EVICTED = 1 << 9,  /* e */
    SV_N_STREAM = 1 << 10,  /* t */
    SV_N_KEY_MISS = 1 << 11, /* m */
    SV_N_MODULE = 1 << 12,  /* d */
    SV_N_NEW = 1 << 13,     /* n */
};
#define SV_N_ALL (SV_N_GENERIC | SV_N_STRING | SV_N_LIST | SV_N_SET | SV_N_HASH | SV_N_ZSET | SV_N_EXPIRED | \
                  SV_N_EVICTED | SV_N_STREAM | SV_N_MODULE)

/* sv_cmd.ev_rule: the reply that means the command changed something; or, for a
 * command whose table entry fires nothing itself, why: SV_EV_INSIDE, it fires its events
 * inside with sv_notify (what they are depends on its work: DEL, SET, MSET, SMOVE,
 * BITFIELD, the streams); SV_EV_NONE, it fires none, as in Redis 7.0 (FLUSHALL, XACK,
 * PFDEBUG, the internal steps). Every WRITE command declares one (test_types.c walks
 * the table). */
enum { SV_EV_ANY = 0, SV_EV_POS, SV_EV_NONNULL, SV_EV_INSIDE, SV_EV_NONE };

/* sv_cmd.ev_fire functions: events chosen by the arguments or the reply */
#define SV_EV_FIRE(name) void sv_ev_##name(sv_ctx *c, int argc, sv_str *argv, const char *r, size_t rlen)
SV_EV_FIRE(blpop); SV_EV_FIRE(blmpop); SV_EV_FIRE(bzpop); SV_EV_FIRE(bzmpop); SV_EV_FIRE(expire);
SV_EV_FIRE(getex); SV_EV_FIRE(rename); SV_EV_FIRE(lmove);
SV_EV_FIRE(rename_step); SV_EV_FIRE(lmpop); SV_EV_FIRE(zmpop); SV_EV_FIRE(bitop); SV_EV_FIRE(copy); SV_EV_FIRE(georadius); SV_EV_FIRE(sort);

#define sv_notify_flags (sv_cur->notify_flags)
/* Set by sv_call while a command whose lookups are reads runs (every non-WRITE command,
 * and the WRITE commands with SV_P_KEYMISS): a lookup that misses fires "keymiss". */
extern _Thread_local int sv_notify_reads;

/* Fires an event of a class on a key (queued while a command runs). */
void sv_notify(sv_shard *sh, int cls, const char *event, sv_str key);
static inline int sv_notify_wanted(int cls)
{
    int f = sv_notify_flags;
    return (f & cls) && (f & (SV_N_KEYSPACE | SV_N_KEYEVENT));
}

/* For sv_execute: around every command (the fixed event from the reply, then the
 * queue). */
void sv_notify_begin(sv_shard *sh);
void sv_notify_end(sv_ctx *c, const sv_cmd *cmd, int argc, sv_str *argv, size_t reply_off);
/* The same for a command run on a scratch keyspace (a gathered cross-shard command,
 * fwd_multi.c): its events are published from the shard pub. */
void sv_notify_end_on(sv_ctx *c, const sv_cmd *cmd, int argc, sv_str *argv, size_t reply_off, sv_shard *pub);

/* CONFIG: parses "KEA..." (0 on an invalid character), and formats flags as Redis. */
int sv_notify_parse(sv_str s, int *flags);
void sv_notify_format(int flags, char *out, size_t cap);

/* Around an inner command whose own events must not show (slotlane.rename_to builds
 * the value with the ordinary command): what is queued after mark, except the
 * classes in keep, is dropped. */
size_t sv_notify_mark(sv_shard *sh);
void sv_notify_drop_since(sv_shard *sh, size_t mark, int keep);

void sv_notify_free_shard(sv_shard *sh);

#endif
