/* main: load the settings, start one thread per shard, wait for SIGTERM or SIGINT,
 * then stop every shard, join and free everything (clean under ASan and valgrind). */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "aof.h"
#include "config.h"
#include "params.h"
#include "fwd.h"
#include "pubsub.h"
#include "shard.h"

/* As Redis does at start: maxclients needs that many open files; when even the hard
 * limit is too low, maxclients is lowered to fit and logged, so a client past it
 * gets "max number of clients reached" instead of an accept() failing with EMFILE. */
static void adjust_fd_limit(void)
{
    int fit = sv_fd_limit_clients(sv_cfg.maxclients);
    if (fit >= sv_cfg.maxclients) return;
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    /* a warning when the user asked for that many; the default only adapts */
    sv_log(sv_cfg.maxclients == SV_MAXCLIENTS_DEFAULT ? SV_LOG_NOTICE : SV_LOG_WARNING,
           "open files limit %llu (hard %llu) is too low for --maxclients %d on %d shard%s: "
           "maxclients lowered to %d (raise ulimit -n to %llu)",
           (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, sv_cfg.maxclients, sv_cfg.shards,
           sv_cfg.shards > 1 ? "s" : "", fit,
           (unsigned long long)sv_cfg.maxclients * (unsigned long long)sv_cfg.shards + SV_FD_RESERVED(sv_cfg.shards));
    sv_cfg.maxclients = fit;
}

int main(int argc, char **argv)
{
    sv_config_load(argc, argv);
    adjust_fd_limit();
    sv_params_init(); /* after the limit: CONFIG GET maxclients says what is in force */
    sv_clock_init();
    sv_hash_seed((uint64_t)sv_ustime() ^ ((uint64_t)getpid() << 32));
    sv_cmdtable_init();
    signal(SIGPIPE, SIG_IGN);

    /* shard threads inherit this mask: only the main thread takes the signals */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    int n = sv_cfg.shards;
    sv_shards = sv_calloc((size_t)n, sizeof(sv_shard));
    for (int i = 0; i < n; i++) {
        int r = sv_shard_init(&sv_shards[i], i);
        if (r) {
            fprintf(stderr, "slotlane-server: cannot start shard %d: %s\n", i, uv_strerror(r));
            for (int j = 0; j <= i; j++) sv_shard_destroy(&sv_shards[j]);
            sv_fwd_cleanup();
    sv_pubsub_cleanup();
            free(sv_shards);
            sv_config_free();
            return 1;
        }
    }
    /* the logs are replayed before any port is open */
    if (sv_aof_startup() != 0) {
        for (int j = 0; j < n; j++) sv_shard_destroy(&sv_shards[j]);
        sv_fwd_cleanup();
    sv_pubsub_cleanup();
        free(sv_shards);
        sv_config_free();
        return 1;
    }
    for (int i = 0; i < n; i++) {
        int r = sv_shard_listen(&sv_shards[i]);
        if (r) {
            fprintf(stderr, "slotlane-server: cannot listen on %s:%d: %s\n", sv_cfg.bind, sv_shards[i].port ? sv_shards[i].port : sv_cfg.port, uv_strerror(r));
            for (int j = 0; j < n; j++) sv_shard_destroy(&sv_shards[j]);
            sv_fwd_cleanup();
    sv_pubsub_cleanup();
            free(sv_shards);
            sv_config_free();
            return 1;
        }
    }
    for (int i = 0; i < n; i++) sv_shard_start(&sv_shards[i]);
    if (sv_cfg.port_mode == 1)
        sv_log(SV_LOG_NOTICE, "slotlane-server ready: %d shard%s, one port %s:%d, announce %s", n, n > 1 ? "s" : "",
               sv_cfg.bind, sv_cfg.port, sv_cfg.announce);
    else
        sv_log(SV_LOG_NOTICE, "slotlane-server ready: %d shard%s, per-shard ports %s:%d-%d, announce %s%s", n,
               n > 1 ? "s" : "", sv_cfg.bind, sv_cfg.port, sv_cfg.port + n - 1, sv_cfg.announce,
               sv_cfg.misrouted ? ", misrouted keys forwarded" : "");

    int sig = 0;
    sigwait(&set, &sig);
    sv_log(SV_LOG_NOTICE, "received %s, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
    atomic_store(&sv_stop_requested, 1);
    for (int i = 0; i < n; i++) sv_shard_stop(&sv_shards[i]);
    for (int i = 0; i < n; i++) sv_shard_wait(&sv_shards[i]);
    sv_fwd_cleanup();
    sv_pubsub_cleanup();
    for (int i = 0; i < n; i++) sv_shard_free(&sv_shards[i]);
    free(sv_shards);
    sv_config_free();
    sv_log(SV_LOG_NOTICE, "bye");
    return 0;
}
