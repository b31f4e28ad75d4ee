/* shard: see shard.h. Nothing here is shared between shards: each loop owns its
 * connections and its keyspace, so the data path takes no locks. */
#define _GNU_SOURCE
#include "shard.h"

#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>
#include <sched.h>
#include <stdio.h>

#include "aof.h"
#include "blocking.h"
#include "conn.h"
#include "fwd.h"
#include "notify.h"
#include "pause.h"
#include "pubsub.h"
#include "script.h"


static void on_connection(uv_stream_t *server, int status)
{
    sv_shard *sh = server->data;
    if (status < 0) {
        sv_log(SV_LOG_WARNING, "shard %d: accept error: %s", sh->index, uv_strerror(status));
        return;
    }
    sv_conn_accept(sh);
}

static void on_cron(uv_timer_t *t)
{
    sv_shard *sh = t->data;
    /* active expiry: a small time budget every 100 ms keeps expired keys from piling up */
    /* (not while clients are paused: Redis expires nothing then) */
    if (atomic_load_explicit(&sv_active_expire, memory_order_relaxed) && sv_pause_now() == SV_PAUSE_OFF)
        sv_expire_cycle(sh, 10000);
    sv_stats_sample(sh);
    sv_aof_cron(sh);
    sv_block_cron(sh); /* waiters whose client left while parked at this shard */
}

static void close_noop(uv_handle_t *h) { (void)h; }

static void on_stop(uv_async_t *a)
{
    sv_shard *sh = a->data;
    sh->stopping = 1;
    while (sh->conns) sv_conn_close(sh->conns);
    sv_block_close_shard(sh); /* before forwarding closes: parked requests answer */
    sv_fwd_close_shard(sh);
    sv_pubsub_close_shard(sh);
    sv_pause_close_shard(sh);
    sv_aof_close_shard(sh);
    if (sh->listening) uv_close((uv_handle_t *)&sh->listener, close_noop);
    uv_timer_stop(&sh->cron);
    uv_close((uv_handle_t *)&sh->cron, close_noop);
    uv_close((uv_handle_t *)&sh->stop, close_noop);
}

void sv_shard_init_data(sv_shard *sh, int index)
{
    memset(sh, 0, sizeof(*sh));
    sh->srv = sv_cur;
    sh->index = index;
    /* port 0: the kernel chooses when the shard listens (instance.c reads it back) */
    sh->port = sv_cfg.port == 0 ? 0 : sv_cfg.port_mode == 1 ? sv_cfg.port : sv_cfg.port + index;
    sh->start_ms = sv_mstime();
    sh->now_ms = sh->start_ms;
    sv_dict_init(&sh->keys);
    sh->slot_keys = sv_calloc(SL_SLOTS, sizeof(uint32_t));
    sv_cluster_init_shard(sh);
    sv_stats_init(sh);
}

int sv_shard_init(sv_shard *sh, int index)
{
    sv_shard_init_data(sh, index);
    int r = uv_loop_init(&sh->loop);
    if (r) return r;
    uv_async_init(&sh->loop, &sh->stop, on_stop);
    sh->stop.data = sh;
    uv_timer_init(&sh->loop, &sh->cron);
    sh->cron.data = sh;
    if (sv_cfg.misrouted && sv_cfg.shards > 1) sv_fwd_init_shard(sh);
    sv_block_init_shard(sh);
    sv_pubsub_init_shard(sh);
    sv_pause_init_shard(sh);
    return 0;
}

int sv_shard_listen(sv_shard *sh)
{
    int r;
    uv_tcp_init(&sh->loop, &sh->listener);
    sh->listener.data = sh;
    sh->listening = 1;
    struct sockaddr_storage addr;
    if (strchr(sv_cfg.bind, ':')) r = uv_ip6_addr(sv_cfg.bind, sh->port, (struct sockaddr_in6 *)&addr);
    else r = uv_ip4_addr(sv_cfg.bind, sh->port, (struct sockaddr_in *)&addr);
    if (r) return r;
    if (sv_cfg.port_mode == 1) {
        /* one port: every shard binds its own socket with SO_REUSEPORT and the kernel
         * spreads the connections (libuv 1.44 has no flag for it: make the socket here) */
        int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) return uv_translate_sys_error(errno);
        int one = 1;
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
            setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0 ||
            bind(fd, (struct sockaddr *)&addr,
                 addr.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in)) != 0) {
            r = uv_translate_sys_error(errno);
            close(fd);
            return r;
        }
        r = uv_tcp_open(&sh->listener, fd);
        if (r) {
            close(fd);
            return r;
        }
    } else {
        r = uv_tcp_bind(&sh->listener, (struct sockaddr *)&addr, 0);
        if (r) return r;
    }
    r = uv_listen((uv_stream_t *)&sh->listener, 511, on_connection);
    return r;
}

static void thread_main(void *arg)
{
    sv_shard *sh = arg;
    sv_cur = sh->srv; /* this thread works for this instance for its whole life */
    if (sv_cfg.ncpus > 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(sv_cfg.cpus[sh->index % sv_cfg.ncpus], &set);
        int r = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
        if (r) sv_log(SV_LOG_WARNING, "shard %d: cannot pin to CPU %d", sh->index, sv_cfg.cpus[sh->index % sv_cfg.ncpus]);
    }
    sv_rand_seed((uint64_t)sv_ustime() ^ ((uint64_t)(sh->index + 1) * 0x9E3779B97F4A7C15ull));
    uv_timer_start(&sh->cron, on_cron, 100, 100);
    uv_run(&sh->loop, UV_RUN_DEFAULT);
}

int sv_shard_start(sv_shard *sh) { return uv_thread_create(&sh->thread, thread_main, sh); }

void sv_shard_stop(sv_shard *sh) { uv_async_send(&sh->stop); }

static void free_shard(sv_shard *sh)
{
    sv_notify_free_shard(sh);
    sv_aof_free(sh);
    sv_db_free(sh);
    sv_script_free_shard(sh);
    sv_stats_free(sh);
    if (uv_loop_close(&sh->loop) != 0) sv_log(SV_LOG_WARNING, "shard %d: loop closed with open handles", sh->index);
}

void sv_shard_join(sv_shard *sh)
{
    uv_thread_join(&sh->thread);
    free_shard(sh);
}

void sv_shard_wait(sv_shard *sh) { uv_thread_join(&sh->thread); }

void sv_shard_free(sv_shard *sh) { free_shard(sh); }

void sv_shard_destroy(sv_shard *sh)
{
    /* close whatever was initialised, then run the loop so the closes complete */
    on_stop(&sh->stop);
    uv_run(&sh->loop, UV_RUN_DEFAULT);
    free_shard(sh);
}
