/* t_server: connection and server commands — PING ECHO QUIT SELECT HELLO AUTH CLIENT
 * INFO CONFIG COMMAND FUNCTION TIME — with Redis 7.0 replies. */
#include <stdio.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "config.h"
#include "conn.h"
#include "server.h"
#include "aof.h"

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
    } else if (sv_eq(sub, "list") && (argc == 2 || (argc == 4 && sv_eq(argv[2], "type")))) {
        sv_buf b = {0};
        int64_t now = sv_mstime();
        for (sv_conn *k = c->sh->conns; k; k = k->next) sv_conn_describe(k, &b, now);
        sv_add_verbatim(&c->r, b.data ? b.data : "", b.len);
        sv_buf_free(&b);
    } else if (sv_eq(sub, "info") && argc == 2) {
        sv_buf b = {0};
        for (sv_conn *k = c->sh->conns; k; k = k->next)
            if (&k->sess == s) sv_conn_describe(k, &b, sv_mstime());
        sv_add_verbatim(&c->r, b.data ? b.data : "", b.len);
        sv_buf_free(&b);
    } else if (sv_eq(sub, "help")) {
        sv_add_array(&c->r, 1);
        sv_add_status(&c->r, "CLIENT SETNAME|GETNAME|ID|SETINFO|LIST|INFO");
    } else if (sv_eq(sub, "setname") || sv_eq(sub, "getname") || sv_eq(sub, "id") || sv_eq(sub, "setinfo") ||
               sv_eq(sub, "list") || sv_eq(sub, "info")) {
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
 * that found a target's forward queue full (their connection paused). */
static uint64_t fwd_sum(int which)
{
    uint64_t t = 0;
    for (int i = 0; sv_shards && i < sv_cfg.shards; i++) {
        sv_shard *s = &sv_shards[i];
        atomic_uint_fast64_t *v = which == 0   ? &s->fwd_commands
                                  : which == 1 ? &s->fwd_wakeups
                                  : which == 2 ? &s->fwd_executed
                                               : &s->fwd_queue_full;
        t += atomic_load_explicit(v, memory_order_relaxed);
    }
    return t;
}

static void info_section(sv_ctx *c, sv_buf *b, const char *name)
{
    char tmp[2048];
    int n = 0;
    sv_shard *sh = c->sh;
    if (!strcmp(name, "server")) {
        struct utsname u;
        uname(&u);
        int64_t now = sv_mstime();
        n = snprintf(tmp, sizeof(tmp),
                     "# Server\r\nredis_version:%s\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\n"
                     "redis_build_id:0\r\nredis_mode:cluster\r\nserver_name:slotlane-server\r\nos:%s %s %s\r\n"
                     "arch_bits:64\r\nmultiplexing_api:epoll\r\nprocess_id:%d\r\nrun_id:%s\r\ntcp_port:%d\r\n"
                     "server_time_usec:%lld\r\nuptime_in_seconds:%lld\r\nuptime_in_days:%lld\r\n"
                     "executable:slotlane-server\r\nconfig_file:\r\nshard_index:%d\r\nshards:%d\r\n\r\n",
                     SV_VERSION, u.sysname, u.release, u.machine, (int)getpid(), sh->node_id, sh->port,
                     (long long)sv_ustime(), (long long)(now - sh->start_ms) / 1000,
                     (long long)(now - sh->start_ms) / 86400000, sh->index, sv_cfg.shards);
    } else if (!strcmp(name, "clients")) {
        n = snprintf(tmp, sizeof(tmp),
                     "# Clients\r\nconnected_clients:%d\r\ncluster_connections:0\r\nmaxclients:%d\r\n"
                     "blocked_clients:0\r\ntracking_clients:0\r\ntotal_watched_keys:%llu\r\n\r\n",
                     sh->nclients, sv_cfg.maxclients, (unsigned long long)sh->nwatched); /* this shard's */
    } else if (!strcmp(name, "stats")) {
        n = snprintf(tmp, sizeof(tmp),
                     "# Stats\r\ntotal_connections_received:%llu\r\ntotal_commands_processed:%llu\r\n"
                     "total_net_input_bytes:%llu\r\ntotal_net_output_bytes:%llu\r\nrejected_connections:%llu\r\n"
                     "expired_keys:%llu\r\nevicted_keys:0\r\nkeyspace_hits:%llu\r\nkeyspace_misses:%llu\r\n"
                     "forwarded_commands:%llu\r\nforward_wakeups:%llu\r\nforwarded_executed:%llu\r\n"
                     "forward_queue_full:%llu\r\n\r\n",
                     (unsigned long long)sh->stats.connections, (unsigned long long)sh->stats.commands,
                     (unsigned long long)sh->stats.net_in, (unsigned long long)sh->stats.net_out,
                     (unsigned long long)sh->stats.rejected, (unsigned long long)sh->stats.expired_keys,
                     (unsigned long long)sh->stats.keyspace_hits, (unsigned long long)sh->stats.keyspace_misses,
                     (unsigned long long)fwd_sum(0), (unsigned long long)fwd_sum(1), (unsigned long long)fwd_sum(2),
                     (unsigned long long)fwd_sum(3));
    } else if (!strcmp(name, "keyspace")) {
        n = snprintf(tmp, sizeof(tmp), "# Keyspace\r\n");
        if (sv_dict_size(&sh->keys))
            n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, "db0:keys=%llu,expires=%zu,avg_ttl=0\r\n",
                          (unsigned long long)sv_dict_size(&sh->keys), sh->nexpiring);
        n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, "\r\n");
    } else if (!strcmp(name, "cluster")) {
        n = snprintf(tmp, sizeof(tmp), "# Cluster\r\ncluster_enabled:1\r\n\r\n");
    } else if (!strcmp(name, "persistence")) {
        n = 0;
        sv_aof_info(b);
    } else if (!strcmp(name, "replication")) {
        n = snprintf(tmp, sizeof(tmp), "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n\r\n");
    } else if (!strcmp(name, "memory")) {
        n = snprintf(tmp, sizeof(tmp), "# Memory\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n\r\n");
    }
    sv_buf_append(b, tmp, (size_t)n);
}

void sv_cmd_info(sv_ctx *c, int argc, sv_str *argv)
{
    static const char *all[] = {"server", "clients", "memory", "persistence", "stats", "replication", "cluster", "keyspace"};
    sv_buf b = {0};
    if (argc == 1) {
        for (size_t i = 0; i < 8; i++) info_section(c, &b, all[i]);
    } else {
        int want[8] = {0};
        for (int j = 1; j < argc; j++) {
            if (sv_eq(argv[j], "all") || sv_eq(argv[j], "everything") || sv_eq(argv[j], "default"))
                for (int i = 0; i < 8; i++) want[i] = 1;
            for (int i = 0; i < 8; i++)
                if (sv_eq(argv[j], all[i])) want[i] = 1;
        }
        for (int i = 0; i < 8; i++)
            if (want[i]) info_section(c, &b, all[i]);
    }
    /* Redis ends without the trailing blank line's extra CRLF */
    if (b.len >= 2) b.len -= 2;
    sv_add_verbatim(&c->r, b.data ? b.data : "", b.len);
    sv_buf_free(&b);
}

/* ---- CONFIG ---- */

static const char *loglevel_names[] = {"debug", "verbose", "notice", "warning"};

static void config_value(const char *name, char *out, size_t cap)
{
    out[0] = 0;
    if (!strcmp(name, "maxclients")) snprintf(out, cap, "%d", sv_cfg.maxclients);
    else if (!strcmp(name, "port")) snprintf(out, cap, "%d", sv_cfg.port);
    else if (!strcmp(name, "bind")) snprintf(out, cap, "%s", sv_cfg.bind);
    else if (!strcmp(name, "cluster-announce-ip")) snprintf(out, cap, "%s", sv_cfg.announce);
    else if (!strcmp(name, "cluster-enabled")) snprintf(out, cap, "yes");
    else if (!strcmp(name, "save")) out[0] = 0;
    else if (!strcmp(name, "appendonly")) snprintf(out, cap, "%s", sv_cfg.durability ? "yes" : "no");
    else if (!strcmp(name, "appendfsync")) snprintf(out, cap, "%s", sv_cfg.durability == 2 ? "always" : "everysec");
    else if (!strcmp(name, "dir")) snprintf(out, cap, "%s", sv_cfg.dir);
    else if (!strcmp(name, "loglevel")) snprintf(out, cap, "%s", loglevel_names[sv_cfg.loglevel]);
    else if (!strcmp(name, "databases")) snprintf(out, cap, "1");
    else if (!strcmp(name, "proto-max-bulk-len")) snprintf(out, cap, "%lld", SV_BULK_MAX);
    else if (!strcmp(name, "client-query-buffer-limit")) snprintf(out, cap, "%lld", SV_QUERYBUF_MAX);
    else if (!strcmp(name, "client-output-buffer-limit"))
        snprintf(out, cap, "normal %lld %lld 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
                 sv_cfg.output_limit, sv_cfg.output_limit);
    else if (!strcmp(name, "maxmemory")) snprintf(out, cap, "0");
    else if (!strcmp(name, "timeout")) snprintf(out, cap, "0");
    else if (!strcmp(name, "auto-aof-rewrite-percentage")) snprintf(out, cap, "%d", sv_cfg.aof_rewrite_pct);
    else if (!strcmp(name, "auto-aof-rewrite-min-size")) snprintf(out, cap, "%lld", sv_cfg.aof_rewrite_min);
    else if (!strcmp(name, "busy-reply-threshold") || !strcmp(name, "lua-time-limit"))
        snprintf(out, cap, "%lld", sv_cfg.busy_reply_ms);
}

static const char *config_names[] = {"maxclients", "port", "bind", "cluster-announce-ip", "cluster-enabled", "save",
                                     "appendonly", "appendfsync", "dir", "loglevel", "databases", "proto-max-bulk-len",
                                     "client-query-buffer-limit", "client-output-buffer-limit", "maxmemory", "timeout",
                                     "auto-aof-rewrite-percentage", "auto-aof-rewrite-min-size", "busy-reply-threshold",
                                     "lua-time-limit"};
#define NCONFIG (sizeof(config_names) / sizeof(config_names[0]))

void sv_cmd_config(sv_ctx *c, int argc, sv_str *argv)
{
    sv_str sub = argv[1];
    if (sv_eq(sub, "get") && argc >= 3) {
        int match[NCONFIG] = {0};
        long long n = 0;
        for (int j = 2; j < argc; j++)
            for (size_t i = 0; i < NCONFIG; i++)
                if (!match[i] && sv_glob(argv[j].p, argv[j].len, config_names[i], strlen(config_names[i]), 1)) {
                    match[i] = 1;
                    n++;
                }
        sv_add_map(&c->r, n);
        for (size_t i = 0; i < NCONFIG; i++) {
            if (!match[i]) continue;
            char v[1200];
            config_value(config_names[i], v, sizeof(v));
            sv_add_bulk_cstr(&c->r, config_names[i]);
            sv_add_bulk_cstr(&c->r, v);
        }
    } else if (sv_eq(sub, "set") && argc >= 4 && argc % 2 == 0) {
        /* settings are process-wide and read by every shard thread; only those
         * read atomically enough to change at run time are settable */
        for (int j = 2; j < argc; j += 2) {
            sv_str k = argv[j], v = argv[j + 1];
            if (sv_eq(k, "maxclients")) {
                long long m;
                if (!sv_str2ll(v.p, v.len, &m) || m < 1 || m > 1000000) {
                    sv_add_errorf(&c->r, "CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 1000000 inclusive");
                    return;
                }
                int fit = m > sv_cfg.maxclients ? sv_fd_limit_clients((int)m) : (int)m;
                if (fit < m) { /* as Redis: more than the open-files limit allows is refused */
                    sv_add_errorf(&c->r, "CONFIG SET failed (possibly related to argument 'maxclients') - The operating system is not able to handle the specified number of clients, try with %d", fit);
                    return;
                }
                sv_cfg.maxclients = (int)m;
            } else if (sv_eq(k, "loglevel")) {
                int found = -1;
                for (int i = 0; i < 4; i++)
                    if (sv_eq(v, loglevel_names[i])) found = i;
                if (found < 0) {
                    sv_add_error(&c->r, "CONFIG SET failed (possibly related to argument 'loglevel') - argument(s) must be one of the following: debug, verbose, notice, warning, nothing");
                    return;
                }
                sv_cfg.loglevel = found;
            } else if (sv_eq(k, "busy-reply-threshold") || sv_eq(k, "lua-time-limit")) {
                long long m;
                if (!sv_str2ll(v.p, v.len, &m) || m < 0) {
                    sv_add_errorf(&c->r, "CONFIG SET failed (possibly related to argument '%.*s') - argument couldn't be parsed into an integer",
                                  (int)k.len, k.p);
                    return;
                }
                sv_cfg.busy_reply_ms = m;
            } else if (sv_eq(k, "save") || sv_eq(k, "appendonly") || sv_eq(k, "timeout")) {
                /* accepted for client compatibility (test harnesses set them); no effect */
            } else {
                sv_add_errorf(&c->r, "Unknown option or number of arguments for CONFIG SET - '%.*s'",
                              (int)(k.len > 128 ? 128 : k.len), k.p);
                return;
            }
        }
        sv_add_ok(&c->r);
    } else if (sv_eq(sub, "resetstat") && argc == 2) {
        memset(&c->sh->stats, 0, sizeof(c->sh->stats));
        sv_add_ok(&c->r);
    } else if (sv_eq(sub, "get") || sv_eq(sub, "set") || sv_eq(sub, "resetstat")) {
        char name[32];
        snprintf(name, sizeof(name), "config|%s", sv_eq(sub, "get") ? "get" : sv_eq(sub, "set") ? "set" : "resetstat");
        sv_add_arity_error(c, name);
    } else {
        unknown_subcommand(c, sub, "CONFIG");
    }
}

/* ---- COMMAND ---- */

static void add_flag_set(sv_ctx *c, int flags)
{
    const char *names[12];
    int n = 0;
    if (flags & SV_CMD_WRITE) names[n++] = "write";
    if (flags & SV_CMD_READONLY) names[n++] = "readonly";
    if (flags & SV_CMD_DENYOOM) names[n++] = "denyoom";
    if (flags & SV_CMD_ADMIN) names[n++] = "admin";
    if (flags & SV_CMD_PUBSUB) names[n++] = "pubsub";
    if (flags & SV_CMD_NOSCRIPT) names[n++] = "noscript";
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
    set_name(c->sess, (sv_str){"", 0});
    if (c->sess->tx) { /* out of MULTI, nothing watched (fwd.c released other shards' watches) */
        sv_tx_clear_queue(c->sess->tx);
        sv_tx_drop_watches(c->sh, c->sess->tx, -1);
    }
    c->sess->proto = 2;
    c->r.proto = 2;
    sv_add_status(&c->r, "RESET");
}
