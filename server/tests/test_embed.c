/* Tests of slotlane-server as a library (slotlane_server.h): two servers in one process
 * on ephemeral ports with nothing shared, a server stopped under connected clients, 100
 * starts and stops without leaked threads or file descriptors (memory: the ASan build's
 * leak check), durability=always restarted on the same directory, bad options.
 *
 * Verdicts come from replies and counts. The one bound, a poll of 30 s in read_reply,
 * is only there so that a server that never answers (the bug under test: a hang) fails
 * the test instead of hanging ctest; no answer arrives close to it. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "slotlane_server.h"

/* ---- a minimal RESP client over a blocking socket ---- */

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

/* Sends argv as a RESP array. */
static void send_cmd(int fd, int argc, const char **argv)
{
    char buf[4096];
    int n = snprintf(buf, sizeof buf, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) n += snprintf(buf + n, sizeof buf - (size_t)n, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
    assert_int_equal(send(fd, buf, (size_t)n, MSG_NOSIGNAL), n);
}

/* Reads one reply's bytes up to the first line end (and a bulk's payload): "+OK",
 * "$3 bar", ":1", "-ERR ..."; "" when the server closed the connection, "ERROR" when
 * the read failed. */
static const char *read_reply(int fd)
{
    static char out[4096];
    size_t n = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, 30000);
        assert_true(r == 1); /* an answer or the close: a hang fails here */
        ssize_t k = recv(fd, out + n, sizeof out - 1 - n, 0);
        if (k == 0) {
            out[n] = 0;
            return n ? out : "";
        }
        if (k < 0) return "ERROR";
        n += (size_t)k;
        out[n] = 0;
        char *eol = strstr(out, "\r\n");
        if (!eol) continue;
        if (out[0] == '$' && out[1] != '-') {
            long len = strtol(out + 1, NULL, 10);
            if ((long)(n - (size_t)(eol + 2 - out)) < len + 2) continue;
            memmove(out + (eol - out) + 1, eol + 2, (size_t)len);
            out[eol - out] = ' ';
            out[(eol - out) + 1 + len] = 0;
            return out;
        }
        *eol = 0;
        return out;
    }
}

static const char *cmd(int fd, int argc, const char **argv)
{
    send_cmd(fd, argc, argv);
    return read_reply(fd);
}

#define CMD(fd, ...) cmd(fd, (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), (const char *[]){__VA_ARGS__})

static int count_dir(const char *path)
{
    DIR *d = opendir(path);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n; /* /proc/self/fd: opendir's own fd included, the same in every count */
}

static sl_server *start(int shards, int port_mode, int misrouted)
{
    sl_server_options o = SL_SERVER_OPTIONS_INIT;
    o.shards = shards;
    o.port_mode = port_mode;
    o.misrouted = misrouted;
    sl_server *s = NULL;
    char err[256] = "";
    int rc = sl_server_start(&s, &o, err, sizeof err);
    if (rc) fprintf(stderr, "sl_server_start: %s\n", err);
    assert_int_equal(rc, SL_SERVER_OK);
    assert_non_null(s);
    return s;
}

/* ---- tests ---- */

static void test_two_servers_one_process(void **state)
{
    (void)state;
    sl_server *a = start(4, SL_SERVER_PER_SHARD, SL_SERVER_FORWARD);
    sl_server *b = start(2, SL_SERVER_ONE_PORT, SL_SERVER_MOVED);
    assert_int_equal(sl_server_shards(a), 4);
    assert_int_equal(sl_server_shards(b), 2);
    /* ephemeral: every per-shard port distinct and non-zero; one-port: one port */
    for (int i = 0; i < 4; i++) {
        assert_true(sl_server_port(a, i) > 0);
        for (int j = 0; j < i; j++) assert_int_not_equal(sl_server_port(a, i), sl_server_port(a, j));
        assert_int_not_equal(sl_server_port(a, i), sl_server_port(b, 0));
    }
    assert_int_equal(sl_server_port(b, 0), sl_server_port(b, 1));
    assert_int_equal(sl_server_port(a, 4), 0);
    char url[64];
    int n = sl_server_url(a, url, sizeof url);
    char want[64];
    snprintf(want, sizeof want, "redis://127.0.0.1:%d", sl_server_port(a, 0));
    assert_int_equal(n, (int)strlen(want));
    assert_string_equal(url, want);

    int fa = dial(sl_server_port(a, 1)), fb = dial(sl_server_port(b, 0));
    /* separate keyspaces */
    assert_string_equal(CMD(fa, "SET", "k", "from-a"), "+OK");
    assert_string_equal(CMD(fb, "GET", "k"), "$-1");
    assert_string_equal(CMD(fb, "SET", "k", "from-b"), "+OK");
    assert_string_equal(CMD(fa, "GET", "k"), "$6 from-a");
    /* forwarding through every shard of a: keys of all slots from any port */
    for (int i = 0; i < 32; i++) {
        char key[16];
        snprintf(key, sizeof key, "key:%d", i);
        assert_string_equal(CMD(fa, "SET", key, "v"), "+OK");
    }
    assert_string_equal(CMD(fa, "DBSIZE"), ":33");
    assert_string_equal(CMD(fb, "DBSIZE"), ":1");
    /* separate CONFIG parameters: a's small listpack limit makes its hash a hashtable */
    assert_string_equal(CMD(fa, "CONFIG", "SET", "hash-max-listpack-entries", "3"), "+OK");
    assert_string_equal(CMD(fa, "HSET", "h", "f1", "1", "f2", "2", "f3", "3", "f4", "4"), ":4");
    assert_string_equal(CMD(fb, "HSET", "h", "f1", "1", "f2", "2", "f3", "3", "f4", "4"), ":4");
    assert_string_equal(CMD(fa, "OBJECT", "ENCODING", "h"), "$9 hashtable");
    assert_string_equal(CMD(fb, "OBJECT", "ENCODING", "h"), "$8 listpack");
    /* separate CLIENT PAUSE: b paused for writes does not hold a's writes */
    assert_string_equal(CMD(fb, "CLIENT", "PAUSE", "100000", "WRITE"), "+OK");
    assert_string_equal(CMD(fa, "SET", "during-pause", "1"), "+OK");
    assert_string_equal(CMD(fb, "CLIENT", "UNPAUSE"), "+OK");
    /* separate pub/sub registries: nobody subscribes on a */
    int sub = dial(sl_server_port(b, 0));
    send_cmd(sub, 2, (const char *[]){"SUBSCRIBE", "ch"});
    assert_non_null(strstr(read_reply(sub), "*3"));
    assert_string_equal(CMD(fa, "PUBLISH", "ch", "m"), ":0");
    assert_string_equal(CMD(fb, "PUBLISH", "ch", "m"), ":1");
    close(sub);
    /* SHUTDOWN does not end the host process: refused, the server keeps serving */
    assert_non_null(strstr(CMD(fa, "SHUTDOWN"), "-ERR SHUTDOWN is refused by an embedded server"));
    assert_string_equal(CMD(fa, "PING"), "+PONG");
    close(fa);
    close(fb);
    sl_server_free(a);
    sl_server_free(b);
}

static void test_stop_with_clients_connected(void **state)
{
    (void)state;
    sl_server *s = start(2, SL_SERVER_PER_SHARD, SL_SERVER_MOVED);
    int fds[4];
    for (int i = 0; i < 4; i++) {
        fds[i] = dial(sl_server_port(s, i % 2));
        assert_string_equal(CMD(fds[i], "PING"), "+PONG");
    }
    /* one client in the middle of a blocking command */
    send_cmd(fds[3], 3, (const char *[]){"BLPOP", "nothing", "0"});
    sl_server_stop(s);
    /* every client sees its connection end (EOF or a reset), none waits */
    for (int i = 0; i < 4; i++) {
        const char *r = read_reply(fds[i]);
        assert_true(r[0] == 0 || !strcmp(r, "ERROR"));
        close(fds[i]);
    }
    /* a new connection is refused: the ports are released */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)sl_server_port(s, 0));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), -1);
    assert_int_equal(errno, ECONNREFUSED);
    close(fd);
    sl_server_stop(s); /* a second stop: a no-op */
    assert_true(sl_server_port(s, 0) > 0); /* still answers after stop */
    sl_server_free(s);
}

static void test_start_stop_100_times(void **state)
{
    (void)state;
    /* one round first: what the process makes once (libuv's threadpool for the log's
     * fsync jobs is not started by a memory server, the clock calibration) is made */
    sl_server_free(start(2, SL_SERVER_PER_SHARD, SL_SERVER_FORWARD));
    int fds0 = count_dir("/proc/self/fd"), threads0 = count_dir("/proc/self/task");
    for (int i = 0; i < 100; i++) {
        sl_server *s = start(i % 3 + 1, i % 2 ? SL_SERVER_ONE_PORT : SL_SERVER_PER_SHARD, SL_SERVER_FORWARD);
        int fd = dial(sl_server_port(s, 0));
        assert_string_equal(CMD(fd, "SET", "k", "v"), "+OK");
        sl_server_free(s); /* with the client still connected */
        close(fd);
    }
    int fds1 = count_dir("/proc/self/fd"), threads1 = count_dir("/proc/self/task");
    /* A joined thread can still be listed for a moment: the kernel wakes pthread_join before
     * it releases the task, so a loaded machine shows the last shard thread on its way out.
     * Wait for the kernel to release it (an event: the list shrinking), bounded against a hang. */
    for (long spin = 0; threads1 > threads0 && spin < 2000000; spin++) {
        sched_yield();
        threads1 = count_dir("/proc/self/task");
    }
    print_message("100 starts/stops: fds %d -> %d, threads %d -> %d\n", fds0, fds1, threads0, threads1);
    assert_int_equal(fds1, fds0);
    assert_int_equal(threads1, threads0);
}

static void test_durability_always_restart(void **state)
{
    (void)state;
    char dir[] = "/tmp/sv-embed-XXXXXX";
    assert_non_null(mkdtemp(dir));
    sl_server_options o = SL_SERVER_OPTIONS_INIT;
    o.shards = 3;
    o.misrouted = SL_SERVER_FORWARD;
    o.durability = SL_SERVER_ALWAYS;
    o.dir = dir;
    sl_server *s;
    char err[256];
    assert_int_equal(sl_server_start(&s, &o, err, sizeof err), 0);
    /* a second server on the same directory is refused while the first runs */
    sl_server *t = (sl_server *)&t;
    assert_int_equal(sl_server_start(&t, &o, err, sizeof err), SL_SERVER_EDIR);
    assert_null(t);
    assert_non_null(strstr(err, "is in use by another slotlane-server"));
    int fd = dial(sl_server_port(s, 0));
    for (int i = 0; i < 50; i++) {
        char key[16], val[16];
        snprintf(key, sizeof key, "key:%d", i);
        snprintf(val, sizeof val, "v%d", i);
        assert_string_equal(CMD(fd, "SET", key, val), "+OK");
    }
    assert_string_equal(CMD(fd, "RPUSH", "list", "a", "b"), ":2");
    close(fd);
    sl_server_free(s);

    assert_int_equal(sl_server_start(&s, &o, err, sizeof err), 0);
    fd = dial(sl_server_port(s, 2));
    assert_string_equal(CMD(fd, "DBSIZE"), ":51");
    assert_string_equal(CMD(fd, "GET", "key:17"), "$3 v17");
    assert_string_equal(CMD(fd, "LLEN", "list"), ":2");
    close(fd);
    sl_server_free(s);
    char rm[64];
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    assert_int_equal(system(rm), 0);
}

static void test_bad_options(void **state)
{
    (void)state;
    sl_server *s = (sl_server *)&s;
    char err[256];
    sl_server_options o = SL_SERVER_OPTIONS_INIT;
    o.shards = 0;
    assert_int_equal(sl_server_start(&s, &o, err, sizeof err), SL_SERVER_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err, "shards"));
    o = (sl_server_options)SL_SERVER_OPTIONS_INIT;
    o.version = 99;
    assert_int_equal(sl_server_start(&s, &o, err, sizeof err), SL_SERVER_EINVAL);
    o = (sl_server_options)SL_SERVER_OPTIONS_INIT;
    const char *settings[] = {"maxclients", "many"};
    o.settings = settings;
    o.nsettings = 2;
    assert_int_equal(sl_server_start(&s, &o, err, sizeof err), SL_SERVER_EINVAL);
    assert_non_null(strstr(err, "maxclients"));
    o = (sl_server_options)SL_SERVER_OPTIONS_INIT;
    o.bind = "not-an-address";
    assert_int_equal(sl_server_start(&s, &o, err, sizeof err), SL_SERVER_EBIND);
    /* a busy port */
    sl_server *a = start(1, SL_SERVER_PER_SHARD, SL_SERVER_MOVED);
    o = (sl_server_options)SL_SERVER_OPTIONS_INIT;
    o.port = sl_server_port(a, 0);
    assert_int_equal(sl_server_start(&s, &o, err, sizeof err), SL_SERVER_EBIND);
    assert_null(s);
    sl_server_free(a);
    /* options_init, NULL handles */
    assert_int_equal(sl_server_options_init(&o, SL_SERVER_OPTIONS_VERSION), 0);
    assert_int_equal(o.shards, 1);
    assert_int_equal(sl_server_options_init(&o, 2), SL_SERVER_EINVAL);
    assert_int_equal(sl_server_shards(NULL), 0);
    assert_int_equal(sl_server_url(NULL, err, sizeof err), SL_SERVER_ESTATE);
    sl_server_stop(NULL);
    sl_server_free(NULL);
    /* settings as the flags: a Redis parameter applied */
    o = (sl_server_options)SL_SERVER_OPTIONS_INIT;
    const char *ok[] = {"hash-max-listpack-entries", "3"};
    o.settings = ok;
    o.nsettings = 2;
    assert_int_equal(sl_server_start(&s, &o, err, sizeof err), 0);
    int fd = dial(sl_server_port(s, 0));
    assert_string_equal(CMD(fd, "HSET", "h", "f1", "1", "f2", "2", "f3", "3", "f4", "4"), ":4");
    assert_string_equal(CMD(fd, "OBJECT", "ENCODING", "h"), "$9 hashtable");
    close(fd);
    sl_server_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_servers_one_process),
        cmocka_unit_test(test_stop_with_clients_connected),
        cmocka_unit_test(test_start_stop_100_times),
        cmocka_unit_test(test_durability_always_restart),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
