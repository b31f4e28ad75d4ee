/* main: the slotlane-server executable over the library (instance.c): load the
 * settings from the flags, fit the open-files limit, start the instance, wait for
 * SIGTERM or SIGINT, then stop it and free everything (clean under ASan and valgrind). */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "instance.h"

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
    static sv_server srv;
    sv_server_init_state(&srv);
    sv_cur = &srv;
    sv_config_load(argc, argv);
    adjust_fd_limit();
    signal(SIGPIPE, SIG_IGN);

    /* blocked before the shard threads exist: only the main thread takes the signals */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    char err[512];
    int rc = sv_instance_start(&srv, err, sizeof err);
    if (rc) {
        fprintf(stderr, "slotlane-server: %s\n", err);
        sv_instance_free(&srv);
        return 1;
    }
    int n = sv_cfg.shards;
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
    sv_instance_stop(&srv);
    sv_instance_free(&srv);
    sv_log(SV_LOG_NOTICE, "bye");
    return 0;
}
