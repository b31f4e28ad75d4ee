/* instance: one server's life — its state (sv_server, server.h), start and stop — and
 * the public API of slotlane_server.h over it. The executable (main.c) adds flag
 * parsing, the open-files limit and signal handling; nothing here touches a process
 * setting, so several instances run side by side in a host process. */
#define _GNU_SOURCE
#include "instance.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "aof.h"
#include "blocking.h"
#include "config.h"
#include "fwd.h"
#include "params.h"
#include "pubsub.h"
#include "shard.h"
#include "slotlane_server.h"

_Thread_local sv_server *sv_cur;

void sv_server_init_state(sv_server *s)
{
    memset(s, 0, sizeof(*s));
    atomic_init(&s->next_client_id, 1);
    atomic_init(&s->active_expire, 1);
    atomic_init(&s->lfu_log_factor, 10);
    atomic_init(&s->pubsub_limit, 33554432);
    atomic_init(&s->pubsub_soft_limit, 8388608);
    atomic_init(&s->pubsub_soft_secs, 60);
    s->aof_lock_fd = -1;
    uv_mutex_init(&s->pause_lock);
    sv_params_init_state(s);
    sv_block_init_state(s);
    sv_tracking_init_state(s);
    sv_server *prev = sv_cur;
    sv_cur = s;
    sv_pubsub_init();
    sv_cur = prev;
}

void sv_server_free_state(sv_server *s)
{
    sv_pubsub_free_state(s);
    sv_tracking_free_state(s);
    sv_block_free_state(s);
    sv_params_free_state(s);
    uv_mutex_destroy(&s->pause_lock);
}

static sv_server test_server;
static pthread_once_t test_once = PTHREAD_ONCE_INIT;
static void test_server_init(void) { sv_server_init_state(&test_server); }

sv_server *sv_server_for_tests(void)
{
    pthread_once(&test_once, test_server_init);
    sv_cur = &test_server;
    return &test_server;
}

/* What every instance of the process shares and never changes after: the command
 * table, the clock's calibration, the hash seed. */
static pthread_once_t process_once = PTHREAD_ONCE_INIT;
static void process_init(void)
{
    sv_clock_init();
    sv_hash_seed((uint64_t)sv_ustime() ^ ((uint64_t)getpid() << 32));
    sv_cmdtable_init();
}

/* Every shard made so far (and the shard array) goes; the caller's sv_cur is s. */
static void discard_shards(sv_server *s, int made)
{
    for (int j = 0; j < made; j++) sv_shard_destroy(&s->shards[j]);
    sv_fwd_cleanup();
    sv_pubsub_cleanup();
    free(s->shards);
    s->shards = NULL;
}

/* The port the kernel gave a listener bound to port 0. */
static int bound_port(sv_shard *sh)
{
    struct sockaddr_storage a;
    int len = sizeof(a);
    if (uv_tcp_getsockname(&sh->listener, (struct sockaddr *)&a, &len) != 0) return 0;
    if (a.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
    return ntohs(((struct sockaddr_in *)&a)->sin_port);
}

int sv_instance_start(sv_server *s, char *err, size_t cap)
{
    sv_server *prev = sv_cur;
    sv_cur = s;
    pthread_once(&process_once, process_init);
    sv_params_init(); /* CONFIG GET says what is in force */
    int n = sv_cfg.shards, rc = 0;
    s->shards = sv_calloc((size_t)n, sizeof(sv_shard));
    for (int i = 0; i < n; i++) {
        int r = sv_shard_init(&s->shards[i], i);
        if (r) {
            snprintf(err, cap, "cannot start shard %d: %s", i, uv_strerror(r));
            discard_shards(s, i + 1);
            rc = SV_START_EBIND;
            goto out;
        }
    }
    /* the logs are replayed before any port is open */
    if (sv_aof_startup(err, cap) != 0) {
        discard_shards(s, n);
        rc = SV_START_EDIR;
        goto out;
    }
    int ephemeral = sv_cfg.port == 0;
    for (int i = 0; i < n; i++) {
        sv_shard *sh = &s->shards[i];
        if (ephemeral && sv_cfg.port_mode == 1 && i > 0) sh->port = s->shards[0].port;
        int r = sv_shard_listen(sh);
        if (r) {
            snprintf(err, cap, "cannot listen on %s:%d: %s", sv_cfg.bind, sh->port ? sh->port : sv_cfg.port, uv_strerror(r));
            discard_shards(s, n);
            rc = SV_START_EBIND;
            goto out;
        }
        if (sh->port == 0) {
            sh->port = bound_port(sh);
            sv_cluster_init_shard(sh); /* the node id derives from the port */
        }
    }
    if (ephemeral) sv_cfg.port = s->shards[0].port;
    /* the shard threads inherit this mask: signals stay with the host's threads, and a
     * write to a closed socket fails with EPIPE instead of raising SIGPIPE */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGPIPE);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    for (int i = 0; i < n; i++) sv_shard_start(&s->shards[i]);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
out:
    sv_cur = prev;
    return rc;
}

void sv_instance_stop(sv_server *s)
{
    if (!s->shards) return;
    sv_server *prev = sv_cur;
    sv_cur = s;
    int n = sv_cfg.shards;
    atomic_store(&sv_stop_requested, 1);
    for (int i = 0; i < n; i++) sv_shard_stop(&s->shards[i]);
    for (int i = 0; i < n; i++) sv_shard_wait(&s->shards[i]);
    sv_fwd_cleanup();
    sv_pubsub_cleanup();
    for (int i = 0; i < n; i++) sv_shard_free(&s->shards[i]);
    free(s->shards);
    s->shards = NULL;
    sv_cur = prev;
}

void sv_instance_free(sv_server *s)
{
    sv_server *prev = sv_cur;
    sv_cur = s;
    sv_config_free();
    sv_server_free_state(s);
    sv_cur = prev;
}

/* ---- slotlane_server.h ---- */

struct sl_server {
    sv_server srv;
    int nports;
    int *ports; /* kept after stop */
};

static const sl_server_options defaults_v1 = SL_SERVER_OPTIONS_INIT;

int sl_server_options_init(sl_server_options *opts, unsigned int version)
{
    if (!opts || version != SL_SERVER_OPTIONS_VERSION) return SL_SERVER_EINVAL;
    *opts = defaults_v1;
    return SL_SERVER_OK;
}

static int fail(char *err, size_t cap, int rc, const char *msg)
{
    if (err && cap) snprintf(err, cap, "%s", msg);
    return rc;
}

/* The options into sv_cfg (sv_cur is the new instance); NULL or the error. */
static const char *apply_options(const sl_server_options *o, char *buf, size_t cap)
{
    if (o->shards < 1 || o->shards > SV_MAX_SHARDS) return "shards must be 1..256";
    if (o->port_mode != SL_SERVER_PER_SHARD && o->port_mode != SL_SERVER_ONE_PORT) return "bad port_mode";
    if (o->misrouted != SL_SERVER_MOVED && o->misrouted != SL_SERVER_FORWARD) return "bad misrouted";
    if (o->durability < SL_SERVER_MEMORY || o->durability > SL_SERVER_ALWAYS) return "bad durability";
    if (o->port < 0 || o->port > 65535) return "port must be 0..65535";
    if (o->log_level < SL_SERVER_LOG_DEBUG || o->log_level > SL_SERVER_LOG_NONE) return "bad log_level";
    if (o->nsettings % 2 || (o->nsettings && !o->settings)) return "settings must be name/value pairs";
    sv_cfg.shards = o->shards;
    sv_cfg.port_mode = o->port_mode;
    sv_cfg.misrouted = o->misrouted;
    sv_cfg.durability = o->durability;
    sv_cfg.port = o->port;
    sv_cfg.loglevel = o->log_level;
    if (o->dir) {
        if (strlen(o->dir) >= sizeof(sv_cfg.dir)) return "dir is too long";
        snprintf(sv_cfg.dir, sizeof(sv_cfg.dir), "%s", o->dir);
    }
    if (o->bind) {
        if (strlen(o->bind) >= sizeof(sv_cfg.bind)) return "bind is too long";
        snprintf(sv_cfg.bind, sizeof(sv_cfg.bind), "%s", o->bind);
    }
    for (size_t i = 0; i + 1 < o->nsettings; i += 2) {
        const char *name = o->settings[i], *value = o->settings[i + 1];
        if (!name || !value) return "a setting's name or value is NULL";
        if (!strcmp(name, "config") || !strcmp(name, "cpus")) return "config and cpus are not settings of an embedded server";
        char e[256];
        if (sv_config_set(name, value, e, sizeof(e))) {
            snprintf(buf, cap, "setting %s: %s", name, e);
            return buf;
        }
    }
    /* an ephemeral base port passes the range check of the executable's --port */
    return sv_config_finish();
}

int sl_server_start(sl_server **out, const sl_server_options *opts, char *errmsg, size_t errmsg_cap)
{
    if (!out) return fail(errmsg, errmsg_cap, SL_SERVER_EINVAL, "out is NULL");
    *out = NULL;
    sl_server_options o = defaults_v1;
    if (opts) {
        if (opts->version == 0 || opts->version > SL_SERVER_OPTIONS_VERSION ||
            opts->size < offsetof(sl_server_options, nsettings) + sizeof(size_t))
            return fail(errmsg, errmsg_cap, SL_SERVER_EINVAL, "unknown options version or size");
        memcpy(&o, opts, opts->size < sizeof o ? opts->size : sizeof o);
    }
    sl_server *s = sv_calloc(1, sizeof(*s));
    sv_server_init_state(&s->srv);
    s->srv.embedded = 1;
    s->srv.log_fn = o.log_fn;
    s->srv.log_ud = o.log_ud;
    sv_server *prev = sv_cur;
    sv_cur = &s->srv;
    sv_config_defaults();
    char buf[512];
    const char *bad = apply_options(&o, buf, sizeof buf);
    sv_cur = prev;
    if (bad) {
        fail(errmsg, errmsg_cap, SL_SERVER_EINVAL, bad);
        sv_instance_free(&s->srv);
        free(s);
        return SL_SERVER_EINVAL;
    }
    int rc = sv_instance_start(&s->srv, buf, sizeof buf);
    if (rc) {
        fail(errmsg, errmsg_cap, rc == SV_START_EDIR ? SL_SERVER_EDIR : SL_SERVER_EBIND, buf);
        sv_instance_free(&s->srv);
        free(s);
        return rc == SV_START_EDIR ? SL_SERVER_EDIR : SL_SERVER_EBIND;
    }
    s->nports = s->srv.cfg.shards;
    s->ports = sv_calloc((size_t)s->nports, sizeof(int));
    for (int i = 0; i < s->nports; i++) s->ports[i] = s->srv.shards[i].port;
    *out = s;
    return SL_SERVER_OK;
}

int sl_server_shards(const sl_server *s) { return s ? s->nports : 0; }

int sl_server_port(const sl_server *s, int i) { return s && i >= 0 && i < s->nports ? s->ports[i] : 0; }

int sl_server_url(const sl_server *s, char *buf, size_t cap)
{
    if (!s || !s->nports) return SL_SERVER_ESTATE;
    const char *host = s->srv.cfg.announce;
    int v6 = strchr(host, ':') != NULL;
    return snprintf(buf, cap, "redis://%s%s%s:%d", v6 ? "[" : "", host, v6 ? "]" : "", s->ports[0]);
}

void sl_server_stop(sl_server *s)
{
    if (s) sv_instance_stop(&s->srv);
}

void sl_server_free(sl_server *s)
{
    if (!s) return;
    sv_instance_stop(&s->srv);
    sv_instance_free(&s->srv);
    free(s->ports);
    free(s);
}
