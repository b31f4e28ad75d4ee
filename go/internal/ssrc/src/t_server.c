#define _GNU_SOURCE /* RUSAGE_THREAD */
/* t_server: connection and server commands — PING ECHO QUIT SELECT HELLO AUTH CLIENT
 * INFO CONFIG COMMAND FUNCTION TIME — with Redis 7.0 replies. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "config.h"
#include "conn.h"
#include "server.h"
#include "pause.h"
#include "tracking.h"
#include "aof.h"
#include "blocking.h"
#include "notify.h"
#include "pubsub.h"
#include "params.h"

static void unknown_subcommand(sv_ctx *c, sv_str sub, const char *cmd)
{
    sv_add_errorf(&c->r, "unknown subcommand '%.*s'. Try %s HELP.", (int)(sub.len > 128 ? 128 : sub.len), sub.p, cmd);
}

void sv_cmd_ping(sv_ctx *c, int argc, sv_str *argv)
{
    if (argc > 2) {
        sv_add_arity_error(c, "ping");
        return;
    }
    if (c->r.proto == 2 && sv_pubsub_subscribed(c->sess)) { /* a subscribed RESP2 client: a message-shaped pong */
        sv_add_array(&c->r, 2);
        sv_add_bulk(&c->r, "pong", 4);
        if (argc == 1) sv_add_bulk(&c->r, "", 0);
        else sv_add_bulk(&c->r, argv[1].p, argv[1].len);
        return;
    }
    if (argc == 1) sv_add_status(&c->r, "PONG");
    else sv_add_bulk(&c->r, argv[1].p, argv[1].len);
}

void sv_cmd_echo(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_add_bulk(&c->r, argv[1].p, argv[1].len);
}

void sv_cmd_quit(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    (void)argv;
    sv_add_ok(&c->r);
    c->close_after = 1;
}

void sv_cmd_select(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    long long id;
    if (!sv_str2ll(argv[1].p, argv[1].len, &id) || id < INT32_MIN || id > INT32_MAX) {
        sv_add_error(&c->r, "invalid DB index");
        return;
    }
    if (id != 0) {
        sv_add_error(&c->r, "SELECT is not allowed in cluster mode");
        return;
    }
    sv_add_ok(&c->r);
}

/* No password is configured: the default user accepts any password, as Redis with
 * "nopass"; other user names fail. Returns 1 when authenticated. */
static int check_auth(sv_ctx *c, sv_str user, sv_str pass, int has_user)
{
    (void)pass;
    if (!has_user) {
        sv_add_error(&c->r, "AUTH <password> called without any password configured for the default user. Are you sure "
                            "your configuration is correct?");
        return 0;
    }
    if (!(user.len == 7 && memcmp(user.p, "default", 7) == 0)) {
        sv_add_error(&c->r, "-WRONGPASS invalid username-password pair or user is disabled.");
        return 0;
    }
    return 1;
}

void sv_cmd_auth(sv_ctx *c, int argc, sv_str *argv)
{
    if (argc > 3) {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return;
    }
    if (argc == 2) check_auth(c, argv[1], argv[1], 0);
    else if (check_auth(c, argv[1], argv[2], 1)) sv_add_ok(&c->r);
}

static int valid_client_name(sv_str n)
{
    for (size_t i = 0; i < n.len; i++)
        if (n.p[i] < '!' || n.p[i] > '~') return 0;
    return 1;
}

static void set_name(sv_session *s, sv_str n)
{
    free(s->name);
    s->name = n.len ? sv_memdup(n.p, n.len) : NULL;
}

void sv_cmd_hello(sv_ctx *c, int argc, sv_str *argv)
{
    long long ver = 0;
    int next = 1;
    if (argc >= 2) {
        if (!sv_str2ll(argv[1].p, argv[1].len, &ver)) {
            sv_add_error(&c->r, "Protocol version is not an integer or out of range");
            return;
        }
        next = 2;
        if (ver < 2 || ver > 3) {
            sv_add_error(&c->r, "-NOPROTO unsupported protocol version");
            return;
        }
    }
    sv_str *name = NULL;
    for (int j = next; j < argc; j++) {
        int more = argc - 1 - j;
        if (sv_eq(argv[j], "auth") && more >= 2) {
            if (!check_auth(c, argv[j + 1], argv[j + 2], 1)) return;
            j += 2;
        } else if (sv_eq(argv[j], "setname") && more) {
            if (!valid_client_name(argv[j + 1])) {
                sv_add_error(&c->r, "Client names cannot contain spaces, newlines or special characters.");
                return;
            }
            name = &argv[j + 1];
            j++;
        } else {
            sv_add_errorf(&c->r, "Syntax error in HELLO option '%.*s'", (int)(argv[j].len > 128 ? 128 : argv[j].len),
                          argv[j].p);
            return;
        }
    }
    if (name) set_name(c->sess, *name);
    if (ver) {
        c->sess->proto = (int)ver;
        c->r.proto = (int)ver;
    }
    sv_add_map(&c->r, 7);
    sv_add_bulk_cstr(&c->r, "server");
    sv_add_bulk_cstr(&c->r, "redis");
    sv_add_bulk_cstr(&c->r, "version");
    sv_add_bulk_cstr(&c->r, SV_VERSION);
    sv_add_bulk_cstr(&c->r, "proto");
    sv_add_int(&c->r, c->sess->proto);
    sv_add_bulk_cstr(&c->r, "id");
    sv_add_int(&c->r, (long long)c->sess->id);
    sv_add_bulk_cstr(&c->r, "mode");
    sv_add_bulk_cstr(&c->r, "cluster");
    sv_add_bulk_cstr(&c->r, "role");
    sv_add_bulk_cstr(&c->r, "master");
    sv_add_bulk_cstr(&c->r, "modules");
    sv_add_empty_array(&c->r);
}

/* CLIENT TYPE names: 0 normal, 1 master, 2 replica (slave), 3 pubsub; -1 unknown. */
static int client_type(sv_str t)
{
    if (sv_eq(t, "normal")) return 0;
    if (sv_eq(t, "master")) return 1;
    if (sv_eq(t, "replica") || sv_eq(t, "slave")) return 2;
    if (sv_eq(t, "pubsub")) return 3;
    return -1;
}

static int str_is(sv_str a, const char *s) { return a.len == strlen(s) && !memcmp(a.p, s, a.len); }

/* CLIENT KILL addr (old form: OK or "No such client") or by filters (the count), among
 * the connections of this shard. The caller itself is closed after its reply. */
static void client_kill(sv_ctx *c, int argc, sv_str *argv)
{
    sv_str addr = {0}, laddr = {0};
    long long id = 0;
    int type = -1, skipme = 1, has_addr = 0, has_laddr = 0, old = argc == 3;
    if (old) {
        addr = argv[2];
        has_addr = 1;
        skipme = 0;
    } else {
        if (argc % 2 == 1) {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            return;
        }
        for (int j = 2; j + 1 < argc; j += 2) {
            sv_str o = argv[j], v = argv[j + 1];
            if (sv_eq(o, "id")) {
                if (!sv_str2ll(v.p, v.len, &id) || id <= 0) {
                    sv_add_error(&c->r, "client-id should be greater than 0");
                    return;
                }
            } else if (sv_eq(o, "type")) {
                if ((type = client_type(v)) < 0) {
                    sv_add_errorf(&c->r, "Unknown client type '%.*s'", (int)(v.len > 128 ? 128 : v.len), v.p);
                    return;
                }
            } else if (sv_eq(o, "addr")) {
                addr = v;
                has_addr = 1;
            } else if (sv_eq(o, "laddr")) {
                laddr = v;
                has_laddr = 1;
            } else if (sv_eq(o, "user")) {
                if (!str_is(v, "default")) {
                    sv_add_errorf(&c->r, "No such user '%.*s'", (int)(v.len > 128 ? 128 : v.len), v.p);
                    return;
                }
            } else if (sv_eq(o, "skipme")) {
                if (sv_eq(v, "yes")) skipme = 1;
                else if (sv_eq(v, "no")) skipme = 0;
                else {
                    sv_add_error(&c->r, SV_ERR_SYNTAX);
                    return;
                }
            } else {
                sv_add_error(&c->r, SV_ERR_SYNTAX);
                return;
            }
        }
    }
    long long killed = 0;
    sv_conn *next;
    for (sv_conn *k = c->sh->conns; k; k = next) {
        next = k->next;
        if (k->closing || (id && k->sess.id != (uint64_t)id) || (type >= 0 && type != 0)) continue;
        if ((has_addr && !str_is(addr, k->sess.addr)) || (has_laddr && !str_is(laddr, k->sess.laddr))) continue;
        if (&k->sess == c->sess) {
            if (skipme) continue;
            c->close_after = 1;
        } else {
            sv_conn_close(k);
        }
        killed++;
    }
    if (old) {
        if (killed) sv_add_ok(&c->r);
        else sv_add_error(&c->r, "No such client");
    } else {
        sv_add_int(&c->r, killed);
    }
}

/* CLIENT LIST is about the connections of the shard that runs it. */
void sv_cmd_client(sv_ctx *c, int argc, sv_str *argv)
{
    sv_str sub = argv[1];
    sv_session *s = c->sess;
    if (sv_eq(sub, "setname") && argc == 3) {
        if (!valid_client_name(argv[2])) {
            sv_add_error(&c->r, "Client names cannot contain spaces, newlines or special characters.");
            return;
        }
        set_name(s, argv[2]);
        sv_add_ok(&c->r);
    } else if (sv_eq(sub, "getname") && argc == 2) {
        if (s->name) sv_add_bulk_cstr(&c->r, s->name);
        else sv_add_null(&c->r);
    } else if (sv_eq(sub, "id") && argc == 2) {
        sv_add_int(&c->r, (long long)s->id);
    } else if (sv_eq(sub, "setinfo") && argc == 4) {
        char **slot;
        if (sv_eq(argv[2], "lib-name")) slot = &s->lib_name;
        else if (sv_eq(argv[2], "lib-ver")) slot = &s->lib_ver;
        else {
            sv_add_errorf(&c->r, "Unrecognized option '%.*s'", (int)(argv[2].len > 128 ? 128 : argv[2].len), argv[2].p);
            return;
        }
        if (!valid_client_name(argv[3])) {
            sv_add_error(&c->r, "lib-name and lib-ver cannot contain spaces, newlines or special characters.");
            return;
        }
        free(*slot);
        *slot = argv[3].len ? sv_memdup(argv[3].p, argv[3].len) : NULL;
        sv_add_ok(&c->r);
    } else if (sv_eq(sub, "list") && (argc == 2 || (argc == 4 && sv_eq(argv[2], "type")) ||
                                      (argc >= 4 && sv_eq(argv[2], "id")))) {
        if (argc == 4 && sv_eq(argv[2], "type") && client_type(argv[3]) < 0) {
            sv_add_errorf(&c->r, "Unknown client type '%.*s'", (int)(argv[3].len > 128 ? 128 : argv[3].len), argv[3].p);
            return;
        }
        int want_id = argc >= 4 && sv_eq(argv[2], "id");
        for (int j = 3; want_id && j < argc; j++) {
            long long id;
            if (!sv_str2ll(argv[j].p, argv[j].len, &id) || id < 1) {
                sv_add_error(&c->r, "Invalid client ID");
                return;
            }
        }
        /* every client here is of type normal */
        int none = argc == 4 && sv_eq(argv[2], "type") && client_type(argv[3]) != 0;
        sv_buf b = {0};
        int64_t now = sv_mstime();
        for (sv_conn *k = c->sh->conns; k && !none; k = k->next) {
            int match = !want_id;
            for (int j = 3; want_id && j < argc && !match; j++) {
                long long id = 0;
                sv_str2ll(argv[j].p, argv[j].len, &id);
                match = (uint64_t)id == k->sess.id;
            }
            if (match) sv_conn_describe(k, &b, now);
        }
        sv_add_verbatim(&c->r, b.data ? b.data : "", b.len);
        sv_buf_free(&b);
    } else if (sv_eq(sub, "info") && argc == 2) {
        sv_buf b = {0};
        for (sv_conn *k = c->sh->conns; k; k = k->next)
            if (&k->sess == s) sv_conn_describe(k, &b, sv_mstime());
        sv_add_verbatim(&c->r, b.data ? b.data : "", b.len);
        sv_buf_free(&b);
    } else if (sv_eq(sub, "kill") && argc >= 3) {
        client_kill(c, argc, argv);
    } else if (sv_eq(sub, "no-evict") && argc == 3) {
        if (sv_eq(argv[2], "on") || sv_eq(argv[2], "off")) sv_add_ok(&c->r); /* nothing is evicted here */
        else sv_add_error(&c->r, SV_ERR_SYNTAX);
    } else if (sv_eq(sub, "reply") && argc == 3) {
        /* no reply to OFF and SKIP (conn.c drops what they would write) */
        if (sv_eq(argv[2], "on")) {
            s->reply_off = s->reply_skip = s->reply_skip_next = 0;
            sv_add_ok(&c->r);
        } else if (sv_eq(argv[2], "off")) {
            s->reply_off = 1;
        } else if (sv_eq(argv[2], "skip")) {
            if (!s->reply_off) s->reply_skip_next = 1;
        } else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
        }
    } else if (sv_eq(sub, "pause") && (argc == 3 || argc == 4)) {
        sv_client_pause(c, argc, argv);
    } else if (sv_eq(sub, "unpause") && argc == 2) {
        sv_client_unpause(c);
    } else if (sv_eq(sub, "getredir") && argc == 2) {
        sv_client_getredir(c);
    } else if (sv_eq(sub, "tracking") && argc >= 3) {
        sv_client_tracking(c, argc, argv);
    } else if (sv_eq(sub, "caching") && argc >= 3) {
        sv_client_caching(c, argc, argv);
    } else if (sv_eq(sub, "trackinginfo") && argc == 2) {
        sv_client_trackinginfo(c);
    } else if (sv_eq(sub, "unblock") && (argc == 3 || argc == 4)) {
        long long id;
        if (!sv_get_ll(c, argv[2], &id)) return;
        int error = 0;
        if (argc == 4) {
            if (sv_eq(argv[3], "error")) error = 1;
            else if (!sv_eq(argv[3], "timeout")) {
                sv_add_error(&c->r, "CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
                return;
            }
        }
        sv_block_unblock_any(c, (uint64_t)id, error);
    } else if (sv_eq(sub, "help") && argc == 2) {
        static const char *const help[] = {
            "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CACHING (YES|NO)",
            "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
            "GETREDIR",
            "    Return the client ID we are redirecting to when tracking is enabled.",
            "GETNAME",
            "    Return the name of the current connection.",
            "ID",
            "    Return the ID of the current connection.",
            "INFO",
            "    Return information about the current client connection.",
            "KILL <ip:port>",
            "    Kill connection made from <ip:port>.",
            "KILL <option> <value> [<option> <value> [...]]",
            "    Kill connections. Options are:",
            "    * ADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made from the specified address",
            "    * LADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made to specified local address",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Kill connections by type.",
            "    * USER <username>",
            "      Kill connections authenticated by <username>.",
            "    * SKIPME (YES|NO)",
            "      Skip killing current connection (default: yes).",
            "LIST [options ...]",
            "    Return information about client connections. Options:",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Return clients of specified type.",
            "UNPAUSE",
            "    Stop the current client pause, resuming traffic.",
            "PAUSE <timeout> [WRITE|ALL]",
            "    Suspend all, or just write, clients for <timeout> milliseconds.",
            "REPLY (ON|OFF|SKIP)",
            "    Control the replies sent to the current connection.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
            "UNBLOCK <clientid> [TIMEOUT|ERROR]",
            "    Unblock the specified blocked client.",
            "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
            "         [OPTIN] [OPTOUT] [NOLOOP]",
            "    Control server assisted client side caching.",
            "TRACKINGINFO",
            "    Report tracking status for the current connection.",
            "NO-EVICT (ON|OFF)",
            "    Protect current client connection from eviction.",
            "HELP",
            "    Prints this help."};
        sv_add_array(&c->r, (long long)(sizeof(help) / sizeof(help[0])));
        for (size_t i = 0; i < sizeof(help) / sizeof(help[0]); i++) sv_add_status(&c->r, help[i]);
    } else if (sv_eq(sub, "kill") || sv_eq(sub, "no-evict") || sv_eq(sub, "getredir") || sv_eq(sub, "unblock") ||
               (sv_eq(sub, "pause") && argc < 3) || sv_eq(sub, "unpause") || sv_eq(sub, "reply") ||
               sv_eq(sub, "tracking") || sv_eq(sub, "caching") || sv_eq(sub, "trackinginfo")) {
        char name[64];
        snprintf(name, sizeof(name), "client|%.*s", (int)(sub.len > 32 ? 32 : sub.len), sub.p);
        for (char *p = name; *p; p++) *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
        sv_add_arity_error(c, name);
    } else if (sv_eq(sub, "setname") || sv_eq(sub, "getname") || sv_eq(sub, "id") || sv_eq(sub, "setinfo") ||
               sv_eq(sub, "list") || sv_eq(sub, "info") || sv_eq(sub, "unblock")) {
        char name[64];
        snprintf(name, sizeof(name), "client|%.*s", (int)(sub.len > 32 ? 32 : sub.len), sub.p);
        for (char *p = name; *p; p++) *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
        if (sv_eq(sub, "list")) sv_add_error(&c->r, SV_ERR_SYNTAX);
        else sv_add_arity_error(c, name);
    } else {
        unknown_subcommand(c, sub, "CLIENT");
    }
}

/* Forwarding counters, totals over every shard: 0 commands sent to another shard,
 * 1 cross-thread wakeups (uv_async_send), 2 forwarded commands executed, 3 commands
 * that found a target's forward queue full (their connection paused), 4 forwarded
 * commands answered by a busy script's shard (-BUSY, or the KILL they carried). */
static uint64_t fwd_sum(int which)
{
    uint64_t t = 0;
    for (int i = 0; sv_shards && i < sv_cfg.shards; i++) {
        sv_shard *s = &sv_shards[i];
        atomic_uint_fast64_t *v = which == 0   ? &s->fwd_commands
                                  : which == 1 ? &s->fwd_wakeups
                                  : which == 2 ? &s->fwd_executed
                                  : which == 3 ? &s->fwd_queue_full
                                               : &s->fwd_busy_replies;
        t += atomic_load_explicit(v, memory_order_relaxed);
    }
    return t;
}

/* Clients parked on keys, every shard (a forwarded one counts where it is parked). */
static int blocked_total(void)
{
    int n = 0;
    for (int i = 0; i < sv_cfg.shards; i++) n += sv_block_count(&sv_shards[i]) + sv_pause_held(&sv_shards[i]);
    return n;
}


/* Parts of cross-shard XREAD BLOCKs parked, every shard (fwd_multi.c: one per owner
 * shard of a coordinated read, the client counted once in blocked_clients). */
static int blocked_parts_total(void)
{
    int n = 0;
    for (int i = 0; i < sv_cfg.shards; i++) n += sv_block_parts_count(&sv_shards[i]);
    return n;
}

/* Redis's bytesToHuman. */
static void human(char *out, size_t cap, double n)
{
    const char *u = "BKMGTP";
    int i = 0;
    while (n >= 1024 && i < 5) {
        n /= 1024;
        i++;
    }
    if (i == 0) snprintf(out, cap, "%lluB", (unsigned long long)n);
    else snprintf(out, cap, "%.2f%c", n, u[i]);
}

static void bprintf(sv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(sv_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[4096];
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0) sv_buf_append(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static double tv_sec(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

/* The section names in Redis 7.0's order; default: every one but commandstats and latencystats. */
static const char *sections[] = {"server", "clients", "memory", "persistence", "stats", "replication", "cpu",
                                 "modules", "commandstats", "errorstats", "latencystats", "cluster", "keyspace"};
#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

/* A percentile of a command's call times from its power-of-two buckets (the bucket's upper bound, µs). */
static double percentile(const sv_cmdstat *st, double pct)
{
    uint64_t total = 0, cum = 0;
    for (int b = 0; b < SV_LAT_BUCKETS; b++) total += st->hist[b];
    if (!total) return 0;
    double want = pct / 100.0 * (double)total;
    for (int b = 0; b < SV_LAT_BUCKETS; b++) {
        cum += st->hist[b];
        if ((double)cum >= want) return (double)(1LL << b);
    }
    return (double)(1LL << (SV_LAT_BUCKETS - 1));
}

static void info_section(sv_ctx *c, sv_buf *b, const char *name)
{
    sv_shard *sh = c->sh;
    char h1[32], h2[32], h3[32], h4[32];
    if (!strcmp(name, "server")) {
        struct utsname u;
        uname(&u);
        int64_t now = sv_mstime();
        char exe[1024] = "";
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        exe[n > 0 ? n : 0] = 0;
        bprintf(b,
                "# Server\r\nredis_version:%s\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\n"
                "redis_build_id:0\r\nredis_mode:cluster\r\nos:%s %s %s\r\narch_bits:64\r\n"
                "monotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:epoll\r\natomicvar_api:c11-builtin\r\n"
                "gcc_version:%d.%d.%d\r\nprocess_id:%d\r\nprocess_supervised:no\r\nrun_id:%s\r\ntcp_port:%d\r\n"
                "server_time_usec:%lld\r\nuptime_in_seconds:%lld\r\nuptime_in_days:%lld\r\nhz:%lld\r\n"
                "configured_hz:%lld\r\nlru_clock:%lld\r\nexecutable:%s\r\nconfig_file:%s\r\nio_threads_active:0\r\n"
                "server_name:slotlane-server\r\nshard_index:%d\r\nshards:%d\r\n\r\n",
                SV_VERSION, u.sysname, u.release, u.machine,
#ifdef __GNUC__
                __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__,
#else
                0, 0, 0,
#endif
                (int)getpid(), sh->node_id, sh->port, (long long)sv_ustime(), (long long)(now - sh->start_ms) / 1000,
                (long long)(now - sh->start_ms) / 86400000, sv_param_ll(SV_PARAM_HZ), sv_param_ll(SV_PARAM_HZ),
                (long long)((now / 1000) & 0xFFFFFF), exe, sv_cfg.config_file ? sv_cfg.config_file : "", sh->index,
                sv_cfg.shards);
    } else if (!strcmp(name, "clients")) {
        size_t in = 0, out = 0;
        for (sv_conn *k = sh->conns; k; k = k->next) {
            if (k->rbuf.cap > in) in = k->rbuf.cap;
            if (sv_conn_unsent(k) > out) out = sv_conn_unsent(k);
        }
        bprintf(b,
                "# Clients\r\nconnected_clients:%d\r\ncluster_connections:0\r\nmaxclients:%d\r\n"
                "client_recent_max_input_buffer:%zu\r\nclient_recent_max_output_buffer:%zu\r\nblocked_clients:%d\r\n"
                "tracking_clients:%d\r\nclients_in_timeout_table:0\r\ntotal_watched_keys:%llu\r\n"
                "blocked_parts:%d\r\n\r\n",
                sh->nclients, sv_cfg.maxclients, in, out, blocked_total(), sv_tracking_clients(sh),
                (unsigned long long)sh->nwatched, /* this shard's */
                blocked_parts_total());
    } else if (!strcmp(name, "memory")) {
        sv_memover o;
        sv_memory_overhead(sh, &o);
        sv_meminfo m = o.m;
        long long maxmem = sv_param_ll(SV_PARAM_MAXMEMORY);
        char policy[64];
        sv_params_value("maxmemory-policy", policy, sizeof(policy));
        human(h1, sizeof(h1), (double)m.used);
        human(h2, sizeof(h2), (double)m.rss);
        human(h3, sizeof(h3), (double)m.peak);
        human(h4, sizeof(h4), (double)m.total_system);
        char hmax[32];
        human(hmax, sizeof(hmax), (double)maxmem);
        long long dataset = o.dataset, net = m.used > m.startup ? m.used - m.startup : 0;
        bprintf(b,
                "# Memory\r\nused_memory:%lld\r\nused_memory_human:%s\r\nused_memory_rss:%lld\r\n"
                "used_memory_rss_human:%s\r\nused_memory_peak:%lld\r\nused_memory_peak_human:%s\r\n"
                "used_memory_peak_perc:%.2f%%\r\nused_memory_overhead:%lld\r\nused_memory_startup:%lld\r\n"
                "used_memory_dataset:%lld\r\nused_memory_dataset_perc:%.2f%%\r\nallocator_allocated:%lld\r\n"
                "allocator_active:%lld\r\nallocator_resident:%lld\r\ntotal_system_memory:%lld\r\n"
                "total_system_memory_human:%s\r\n",
                m.used, h1, m.rss, h2, m.peak, h3, m.peak ? 100.0 * (double)m.used / (double)m.peak : 0, o.total,
                m.startup, dataset, net ? 100.0 * (double)dataset / (double)net : 0, m.used, m.active, m.rss,
                m.total_system, h4);
        bprintf(b,
                "used_memory_lua:0\r\nused_memory_vm_eval:0\r\nused_memory_lua_human:0B\r\n"
                "used_memory_scripts_eval:0\r\nnumber_of_cached_scripts:0\r\nnumber_of_functions:0\r\n"
                "number_of_libraries:0\r\nused_memory_vm_functions:0\r\nused_memory_vm_total:0\r\n"
                "used_memory_vm_total_human:0B\r\nused_memory_functions:0\r\nused_memory_scripts:0\r\n"
                "used_memory_scripts_human:0B\r\nmaxmemory:%lld\r\nmaxmemory_human:%s\r\nmaxmemory_policy:%s\r\n"
                "allocator_frag_ratio:%.2f\r\nallocator_frag_bytes:%lld\r\nallocator_rss_ratio:%.2f\r\n"
                "allocator_rss_bytes:%lld\r\nrss_overhead_ratio:1.00\r\nrss_overhead_bytes:0\r\n"
                "mem_fragmentation_ratio:%.2f\r\nmem_fragmentation_bytes:%lld\r\nmem_not_counted_for_evict:0\r\n"
                "mem_replication_backlog:0\r\nmem_total_replication_buffers:0\r\nmem_clients_slaves:0\r\n"
                "mem_clients_normal:%lld\r\nmem_cluster_links:0\r\nmem_aof_buffer:0\r\nmem_allocator:libc\r\n"
                "active_defrag_running:0\r\nlazyfree_pending_objects:0\r\nlazyfreed_objects:0\r\n\r\n",
                maxmem, hmax, policy, m.used ? (double)m.active / (double)m.used : 0, m.active - m.used,
                m.active ? (double)m.rss / (double)m.active : 0, m.rss - m.active,
                m.used ? (double)m.rss / (double)m.used : 0, m.rss - m.used, o.clients);
    } else if (!strcmp(name, "persistence")) {
        /* the log's own fields (aof.c), then Redis's others */
        size_t start = b->len;
        sv_aof_info(b);
        if (b->len >= start + 2) b->len -= 2;
        bprintf(b,
                "async_loading:0\r\ncurrent_cow_peak:0\r\ncurrent_cow_size:0\r\ncurrent_cow_size_age:0\r\n"
                "current_fork_perc:0.00\r\ncurrent_save_keys_processed:0\r\ncurrent_save_keys_total:0\r\n"
                "rdb_bgsave_in_progress:0\r\nrdb_last_save_time:%lld\r\nrdb_last_bgsave_status:ok\r\n"
                "rdb_last_bgsave_time_sec:-1\r\nrdb_current_bgsave_time_sec:-1\r\nrdb_saves:0\r\n"
                "rdb_last_cow_size:0\r\nrdb_last_load_keys_expired:0\r\nrdb_last_load_keys_loaded:0\r\n"
                "aof_last_rewrite_time_sec:-1\r\naof_current_rewrite_time_sec:-1\r\n"
                "aof_rewrites_consecutive_failures:0\r\naof_last_write_status:ok\r\naof_last_cow_size:0\r\n"
                "module_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n\r\n",
                (long long)(sh->start_ms / 1000));
    } else if (!strcmp(name, "stats")) {
        double ops, in_kbps, out_kbps;
        sv_stats_instantaneous(sh, &ops, &in_kbps, &out_kbps);
        uint64_t ps_sent, ps_wake, ps_recv;
        sv_pubsub_stats(&ps_sent, &ps_wake, &ps_recv);
        long long ps_ch, ps_pat, ps_sch;
        sv_pubsub_info_counts(&ps_ch, &ps_pat, &ps_sch);
        bprintf(b,
                "# Stats\r\ntotal_connections_received:%llu\r\ntotal_commands_processed:%llu\r\n"
                "instantaneous_ops_per_sec:%lld\r\ntotal_net_input_bytes:%llu\r\ntotal_net_output_bytes:%llu\r\n"
                "total_net_repl_input_bytes:0\r\ntotal_net_repl_output_bytes:0\r\ninstantaneous_input_kbps:%.2f\r\n"
                "instantaneous_output_kbps:%.2f\r\ninstantaneous_input_repl_kbps:0.00\r\n"
                "instantaneous_output_repl_kbps:0.00\r\nrejected_connections:%llu\r\nsync_full:0\r\n"
                "sync_partial_ok:0\r\nsync_partial_err:0\r\nexpired_keys:%llu\r\nexpired_stale_perc:0.00\r\n"
                "expired_time_cap_reached_count:0\r\nexpire_cycle_cpu_milliseconds:0\r\nevicted_keys:0\r\n"
                "evicted_clients:0\r\ntotal_eviction_exceeded_time:0\r\ncurrent_eviction_exceeded_time:0\r\n"
                "keyspace_hits:%llu\r\nkeyspace_misses:%llu\r\n",
                (unsigned long long)sh->stats.connections, (unsigned long long)sh->stats.commands, (long long)ops,
                (unsigned long long)sh->stats.net_in, (unsigned long long)sh->stats.net_out, in_kbps, out_kbps,
                (unsigned long long)sh->stats.rejected, (unsigned long long)sh->stats.expired_keys,
                (unsigned long long)sh->stats.keyspace_hits, (unsigned long long)sh->stats.keyspace_misses);
        bprintf(b,
                "pubsub_channels:%lld\r\npubsub_patterns:%lld\r\npubsubshard_channels:%lld\r\nlatest_fork_usec:0\r\n"
                "total_forks:0\r\nmigrate_cached_sockets:0\r\nslave_expires_tracked_keys:0\r\nactive_defrag_hits:0\r\n"
                "active_defrag_misses:0\r\nactive_defrag_key_hits:0\r\nactive_defrag_key_misses:0\r\n"
                "total_active_defrag_time:0\r\ncurrent_active_defrag_time:0\r\ntracking_total_keys:0\r\n"
                "tracking_total_items:0\r\ntracking_total_prefixes:0\r\nunexpected_error_replies:0\r\n"
                "total_error_replies:%llu\r\ndump_payload_sanitizations:0\r\ntotal_reads_processed:0\r\n"
                "total_writes_processed:0\r\nio_threaded_reads_processed:0\r\nio_threaded_writes_processed:0\r\n"
                "reply_buffer_shrinks:0\r\nreply_buffer_expands:0\r\n"
                "forwarded_commands:%llu\r\nforward_wakeups:%llu\r\nforwarded_executed:%llu\r\n"
                "forward_queue_full:%llu\r\nforwarded_busy_replies:%llu\r\npubsub_shard_messages_sent:%llu\r\n"
                "pubsub_shard_wakeups:%llu\r\npubsub_shard_messages_received:%llu\r\n\r\n",
                ps_ch, ps_pat, ps_sch, (unsigned long long)sh->stats.error_replies, (unsigned long long)fwd_sum(0),
                (unsigned long long)fwd_sum(1), (unsigned long long)fwd_sum(2), (unsigned long long)fwd_sum(3),
                (unsigned long long)fwd_sum(4),
                (unsigned long long)ps_sent, (unsigned long long)ps_wake, (unsigned long long)ps_recv);
    } else if (!strcmp(name, "replication")) {
        bprintf(b,
                "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\n"
                "master_replid:%s\r\nmaster_replid2:0000000000000000000000000000000000000000\r\n"
                "master_repl_offset:0\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\n"
                "repl_backlog_size:1048576\r\nrepl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n\r\n",
                sh->node_id);
    } else if (!strcmp(name, "cpu")) {
        struct rusage self, children, thread;
        getrusage(RUSAGE_SELF, &self);
        getrusage(RUSAGE_CHILDREN, &children);
        getrusage(RUSAGE_THREAD, &thread); /* the answering shard's thread */
        bprintf(b,
                "# CPU\r\nused_cpu_sys:%.6f\r\nused_cpu_user:%.6f\r\nused_cpu_sys_children:%.6f\r\n"
                "used_cpu_user_children:%.6f\r\nused_cpu_sys_main_thread:%.6f\r\nused_cpu_user_main_thread:%.6f\r\n\r\n",
                tv_sec(self.ru_stime), tv_sec(self.ru_utime), tv_sec(children.ru_stime), tv_sec(children.ru_utime),
                tv_sec(thread.ru_stime), tv_sec(thread.ru_utime));
    } else if (!strcmp(name, "modules")) {
        bprintf(b, "# Modules\r\n\r\n");
    } else if (!strcmp(name, "commandstats")) {
        bprintf(b, "# Commandstats\r\n");
        for (size_t i = 0; sh->cmdstats && i < sv_cmdstat_count(); i++) {
            const sv_cmdstat *st = &sh->cmdstats[i];
            if (!st->calls && !st->failed && !st->rejected) continue;
            bprintf(b, "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,rejected_calls=%llu,failed_calls=%llu\r\n",
                    sv_cmdstat_name(i), (unsigned long long)st->calls, (unsigned long long)st->usec,
                    st->calls ? (double)st->usec / (double)st->calls : 0, (unsigned long long)st->rejected,
                    (unsigned long long)st->failed);
        }
        bprintf(b, "\r\n");
    } else if (!strcmp(name, "errorstats")) {
        bprintf(b, "# Errorstats\r\n");
        for (int i = 0; i < sh->nerrstats; i++)
            bprintf(b, "errorstat_%s:count=%llu\r\n", sh->errstats[i].name, (unsigned long long)sh->errstats[i].count);
        bprintf(b, "\r\n");
    } else if (!strcmp(name, "latencystats")) {
        bprintf(b, "# Latencystats\r\n");
        for (size_t i = 0; sh->cmdstats && i < sv_cmdstat_count(); i++) {
            const sv_cmdstat *st = &sh->cmdstats[i];
            if (!st->calls) continue;
            bprintf(b, "latency_percentiles_usec_%s:p50=%.3f,p99=%.3f,p99.9=%.3f\r\n", sv_cmdstat_name(i),
                    percentile(st, 50), percentile(st, 99), percentile(st, 99.9));
        }
        bprintf(b, "\r\n");
    } else if (!strcmp(name, "cluster")) {
        bprintf(b, "# Cluster\r\ncluster_enabled:1\r\n\r\n");
    } else if (!strcmp(name, "keyspace")) {
        bprintf(b, "# Keyspace\r\n");
        if (sv_dict_size(&sh->keys))
            bprintf(b, "db0:keys=%llu,expires=%zu,avg_ttl=0\r\n", (unsigned long long)sv_dict_size(&sh->keys),
                    sh->nexpiring);
        bprintf(b, "\r\n");
    }
}

void sv_cmd_info(sv_ctx *c, int argc, sv_str *argv)
{
    int want[NSECTIONS] = {0};
    for (size_t i = 0; i < NSECTIONS; i++) want[i] = argc == 1 && i != 8 && i != 10;
    for (int j = 1; j < argc; j++) {
        int all = sv_eq(argv[j], "all") || sv_eq(argv[j], "everything");
        int def = sv_eq(argv[j], "default");
        for (size_t i = 0; i < NSECTIONS; i++)
            if (all || (def && i != 8 && i != 10) || sv_eq(argv[j], sections[i])) want[i] = 1;
    }
    sv_buf b = {0};
    for (size_t i = 0; i < NSECTIONS; i++)
        if (want[i]) info_section(c, &b, sections[i]);
    /* Redis ends without the trailing blank line's extra CRLF */
    if (b.len >= 2) b.len -= 2;
    sv_add_verbatim(&c->r, b.data ? b.data : "", b.len);
    sv_buf_free(&b);
}

/* ---- CONFIG (the parameters: params.c) ---- */

/* Redis's memory values: a number with an optional k kb m mb g gb suffix. */
static int parse_memory(const char *s, size_t n, long long *out)
{
    static const struct { const char *suf; long long mul; } units[] = {
        {"kb", 1024}, {"mb", 1024 * 1024}, {"gb", 1024LL * 1024 * 1024}, {"k", 1000}, {"m", 1000000}, {"g", 1000000000}, {"b", 1}};
    long long mul = 1;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        size_t l = strlen(units[i].suf);
        if (n > l && strncasecmp(s + n - l, units[i].suf, l) == 0) {
            mul = units[i].mul;
            n -= l;
            break;
        }
    }
    long long v;
    if (!sv_str2ll(s, n, &v) || v < 0 || v > LLONG_MAX / mul) return 0;
    *out = v * mul;
    return 1;
}

/* client-output-buffer-limit "<class> <hard> <soft> <secs> ..." applied (params.c calls
 * it with the canonical value on CONFIG SET and at startup): normal (the limit of every
 * client; a hard limit of 0 means --output-limit's value, which protects the server)
 * and pubsub (subscribers); the soft limit is kept for CONFIG GET, only the hard one
 * drops a client. */
const char *sv_set_output_limits(sv_str v)
{
    static long long flag_limit = -1; /* --output-limit, as set before the first CONFIG value */
    if (flag_limit < 0) flag_limit = sv_cfg.output_limit;
    char buf[1024];
    if (v.len >= sizeof(buf)) return "Wrong number of arguments in buffer limit configuration.";
    memcpy(buf, v.p, v.len);
    buf[v.len] = 0;
    char *tok[64];
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && n < 64; t = strtok_r(NULL, " ", &save)) tok[n++] = t;
    if (n == 0 || n % 4) return "Wrong number of arguments in buffer limit configuration.";
    long long vals[16][3];
    for (int i = 0; i < n; i += 4) {
        if (strcasecmp(tok[i], "normal") && strcasecmp(tok[i], "slave") && strcasecmp(tok[i], "replica") &&
            strcasecmp(tok[i], "pubsub"))
            return "Invalid client class specified in buffer limit configuration.";
        for (int j = 0; j < 3; j++)
            if (!parse_memory(tok[i + 1 + j], strlen(tok[i + 1 + j]), &vals[i / 4][j]))
                return "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
    }
    for (int i = 0; i < n; i += 4) {
        long long *x = vals[i / 4];
        if (!strcasecmp(tok[i], "normal")) {
            sv_cfg.output_limit = x[0] ? x[0] : flag_limit;
        } else if (!strcasecmp(tok[i], "pubsub")) {
            sv_pubsub_limit = x[0];
            sv_pubsub_soft_limit = x[1];
            sv_pubsub_soft_secs = x[2];
        }
    }
    return NULL;
}

void sv_cmd_config(sv_ctx *c, int argc, sv_str *argv)
{
    sv_str sub = argv[1];
    if (sv_eq(sub, "get") && argc >= 3) {
        sv_params_get(c, argc - 2, argv + 2);
    } else if (sv_eq(sub, "set") && argc >= 4 && argc % 2 == 0) {
        sv_params_set(c, (argc - 2) / 2, argv + 2);
    } else if (sv_eq(sub, "set") && argc >= 4) {
        sv_add_error(&c->r, SV_ERR_SYNTAX); /* a name without its value */
    } else if (sv_eq(sub, "resetstat") && argc == 2) {
        sv_stats_reset(c->sh);
        sv_add_ok(&c->r);
    } else if (sv_eq(sub, "rewrite") && argc == 2) {
        sv_params_rewrite(c);
    } else if (sv_eq(sub, "help") && argc == 2) {
        static const char *help[] = {
            "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
            "HELP",
            "    Prints this help."};
        sv_add_array(&c->r, (long long)(sizeof(help) / sizeof(help[0])));
        for (size_t i = 0; i < sizeof(help) / sizeof(help[0]); i++) sv_add_status(&c->r, help[i]);
    } else if (sv_eq(sub, "get") || sv_eq(sub, "set") || sv_eq(sub, "resetstat") || sv_eq(sub, "rewrite") ||
               sv_eq(sub, "help")) {
        char name[32];
        snprintf(name, sizeof(name), "config|%.*s", (int)sub.len, sub.p);
        for (char *p = name; *p; p++) *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
        sv_add_arity_error(c, name);
    } else {
        unknown_subcommand(c, sub, "CONFIG");
    }
}

/* ---- COMMAND ---- */

static void add_flag_set(sv_ctx *c, int flags)
{
    const char *names[16];
    int n = 0;
    if (flags & SV_CMD_WRITE) names[n++] = "write";
    if (flags & SV_CMD_READONLY) names[n++] = "readonly";
    if (flags & SV_CMD_DENYOOM) names[n++] = "denyoom";
    if (flags & SV_CMD_ADMIN) names[n++] = "admin";
    if (flags & SV_CMD_PUBSUB) names[n++] = "pubsub";
    if (flags & SV_CMD_NOSCRIPT) names[n++] = "noscript";
    if (flags & SV_CMD_BLOCKING) names[n++] = "blocking";
    if (flags & SV_CMD_LOADING) names[n++] = "loading";
    if (flags & SV_CMD_STALE) names[n++] = "stale";
    if (flags & SV_CMD_FAST) names[n++] = "fast";
    if (flags & SV_CMD_MOVABLE) names[n++] = "movablekeys";
    sv_add_set(&c->r, n);
    for (int i = 0; i < n; i++) sv_add_status(&c->r, names[i]);
}

static void add_command_entry(sv_ctx *c, const sv_cmd *cmd)
{
    sv_add_array(&c->r, 10);
    sv_add_bulk_cstr(&c->r, cmd->name);
    sv_add_int(&c->r, cmd->arity);
    add_flag_set(c, cmd->flags);
    sv_add_int(&c->r, cmd->first);
    sv_add_int(&c->r, cmd->last);
    sv_add_int(&c->r, cmd->step);
    /* ACL categories */
    const char *p = cmd->acl ? cmd->acl : "";
    int n = 0;
    for (const char *q = p; *q;) {
        while (*q == ' ') q++;
        if (!*q) break;
        n++;
        while (*q && *q != ' ') q++;
    }
    sv_add_set(&c->r, n);
    for (const char *q = p; *q;) {
        while (*q == ' ') q++;
        if (!*q) break;
        const char *s = q;
        while (*q && *q != ' ') q++;
        sv_add_raw(&c->r, "+", 1);
        sv_add_raw(&c->r, s, (size_t)(q - s));
        sv_add_raw(&c->r, "\r\n", 2);
    }
    sv_add_set(&c->r, 0); /* tips */
    sv_add_empty_array(&c->r); /* key specs */
    sv_add_empty_array(&c->r); /* subcommands */
}

void sv_cmd_command(sv_ctx *c, int argc, sv_str *argv)
{
    size_t n;
    const sv_cmd *table = sv_cmd_table(&n);
    if (argc == 1) {
        sv_add_array(&c->r, (long long)n);
        for (size_t i = 0; i < n; i++) add_command_entry(c, &table[i]);
        return;
    }
    sv_str sub = argv[1];
    if (sv_eq(sub, "count") && argc == 2) {
        sv_add_int(&c->r, (long long)n);
    } else if (sv_eq(sub, "info")) {
        if (argc == 2) {
            sv_add_array(&c->r, (long long)n);
            for (size_t i = 0; i < n; i++) add_command_entry(c, &table[i]);
            return;
        }
        sv_add_array(&c->r, argc - 2);
        for (int j = 2; j < argc; j++) {
            const sv_cmd *cmd = sv_cmd_lookup_public(argv[j].p, argv[j].len);
            if (cmd) add_command_entry(c, cmd);
            else sv_add_null(&c->r);
        }
    } else if (sv_eq(sub, "docs")) {
        long long count = 0;
        if (argc == 2) count = (long long)n;
        else
            for (int j = 2; j < argc; j++) count += sv_cmd_lookup_public(argv[j].p, argv[j].len) != NULL;
        sv_add_map(&c->r, count);
        for (size_t i = 0; i < (argc == 2 ? n : (size_t)(argc - 2)); i++) {
            const sv_cmd *cmd = argc == 2 ? &table[i] : sv_cmd_lookup_public(argv[i + 2].p, argv[i + 2].len);
            if (!cmd) continue;
            sv_add_bulk_cstr(&c->r, cmd->name);
            sv_add_map(&c->r, 3);
            sv_add_bulk_cstr(&c->r, "summary");
            sv_add_bulk_cstr(&c->r, "");
            sv_add_bulk_cstr(&c->r, "since");
            sv_add_bulk_cstr(&c->r, "1.0.0");
            sv_add_bulk_cstr(&c->r, "group");
            sv_add_bulk_cstr(&c->r, "generic");
        }
    } else if (sv_eq(sub, "list") && argc == 2) {
        sv_add_array(&c->r, (long long)n);
        for (size_t i = 0; i < n; i++) sv_add_bulk_cstr(&c->r, table[i].name);
    } else if (sv_eq(sub, "getkeys") && argc < 4) {
        sv_add_arity_error(c, "command|getkeys");
    } else if (sv_eq(sub, "getkeys")) {
        const sv_cmd *cmd = sv_cmd_lookup_public(argv[2].p, argv[2].len);
        int cargc = argc - 2;
        if (!cmd) {
            sv_add_error(&c->r, "Invalid command specified");
            return;
        }
        if ((cmd->arity > 0 && cmd->arity != cargc) || cargc < -cmd->arity) {
            sv_add_error(&c->r, "Invalid number of arguments specified for command");
            return;
        }
        int keys[256];
        int k = sv_cmd_keypos(cmd, cargc, argv + 2, keys, 256);
        if (k <= 0) {
            sv_add_error(&c->r, "The command has no key arguments");
            return;
        }
        sv_add_array(&c->r, k);
        for (int i = 0; i < k; i++) sv_add_bulk(&c->r, argv[2 + keys[i]].p, argv[2 + keys[i]].len);
    } else if (sv_eq(sub, "help")) {
        sv_add_array(&c->r, 1);
        sv_add_status(&c->r, "COMMAND [COUNT|INFO|DOCS|LIST|GETKEYS]");
    } else {
        unknown_subcommand(c, sub, "COMMAND");
    }
}

void sv_cmd_time(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    (void)argv;
    int64_t us = sv_ustime();
    sv_add_array(&c->r, 2);
    sv_add_bulk_ll(&c->r, us / 1000000);
    sv_add_bulk_ll(&c->r, us % 1000000);
}

void sv_cmd_reset(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    (void)argv;
    /* what Redis 7.0's clearClientConnectionState resets: tracking, the database (one
     * here), the protocol, the transaction and watches, every subscription, the name,
     * CLIENT REPLY OFF (a SKIP of this very command still applies, as in Redis) */
    set_name(c->sess, (sv_str){"", 0});
    sv_tracking_off(c->sh, c->sess);
    c->sess->reply_off = c->sess->reply_skip_next = 0;
    sv_pubsub_unsubscribe_all(c->sh, c->sess);
    if (c->sess->tx) { /* out of MULTI, nothing watched (fwd.c released other shards' watches) */
        sv_tx_clear_queue(c->sess->tx);
        sv_tx_drop_watches(c->sh, c->sess->tx, -1);
    }
    c->sess->proto = 2;
    c->r.proto = 2;
    sv_add_status(&c->r, "RESET");
}
