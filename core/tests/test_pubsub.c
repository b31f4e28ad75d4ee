/* test_pubsub: the subscriber (slotlane.h "pub/sub") against the in-process fake server:
 * messages, patterns and shard channels in RESP2 and RESP3, binary payloads, pushes split
 * at every byte, a connection killed mid-message, malformed bytes, the health-check PING of
 * a stalled server, the queue bound's overflow record, a shard channel's slot moved to
 * another node (the fake unsubscribes it as Redis does), the wake fd and bad arguments.
 * Every wait ends on an event (a record, a counter of the subscriber or the fake); its
 * limit only turns a hang into a failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fake_server.h"
#include "slotlane.h"

#define WAIT_MS 10000 /* a limit that turns a hang into a failure */

typedef struct rec {
    sl_message m;
    uint8_t bytes[1 << 21];
} rec;

static rec R; /* the last record taken (big: 1 MB payloads) */

/* Takes the next record; fails the test when none comes within WAIT_MS. */
static const sl_message *next(sl_subscriber *s)
{
    size_t n = 0, used = 0;
    int rc = sl_subscriber_drain(s, WAIT_MS, &R.m, 1, R.bytes, sizeof R.bytes, &n, &used);
    assert_int_equal(rc, 0);
    if (n != 1) fail_msg("no record within %d ms", WAIT_MS);
    return &R.m;
}

static const uint8_t *channel_of(const sl_message *m) { return R.bytes + m->offset; }
static const uint8_t *pattern_of(const sl_message *m) { return R.bytes + m->offset + m->channel_len; }
static const uint8_t *payload_of(const sl_message *m) { return R.bytes + m->offset + m->channel_len + m->pattern_len; }

static int bytes_eq(const uint8_t *p, size_t n, const char *s) { return n == strlen(s) && memcmp(p, s, n) == 0; }

/* Takes the next record and checks its kind and channel. */
static const sl_message *expect(sl_subscriber *s, int kind, const char *channel)
{
    const sl_message *m = next(s);
    if (m->kind != kind)
        fail_msg("expected record kind %d, got %d (%.*s)", kind, m->kind, (int)m->payload_len,
                 (const char *)payload_of(m));
    if (channel && !bytes_eq(channel_of(m), m->channel_len, channel))
        fail_msg("expected channel %s, got %.*s", channel, (int)m->channel_len, (const char *)channel_of(m));
    return m;
}

static sl_subscriber_stats stats(sl_subscriber *s)
{
    sl_subscriber_stats st = {SL_SUBSCRIBER_STATS_VERSION, sizeof st, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    assert_int_equal(sl_subscriber_stats_get(s, &st), 0);
    return st;
}

static void pause_1ms(void)
{
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
}

/* Waits until the subscriber has read at least `atleast` bytes (an event: its counter). */
static void wait_read(sl_subscriber *s, uint64_t atleast)
{
    int64_t limit = fs_now_ms() + WAIT_MS;
    while (stats(s).bytes_read < atleast) {
        if (fs_now_ms() > limit) fail_msg("the subscriber never read %llu bytes", (unsigned long long)atleast);
        pause_1ms();
    }
}

static void wait_handled(sl_subscriber *s, uint64_t messages_plus_dropped)
{
    int64_t limit = fs_now_ms() + WAIT_MS;
    for (;;) {
        sl_subscriber_stats st = stats(s);
        if (st.messages + st.dropped >= messages_plus_dropped) return;
        if (fs_now_ms() > limit) fail_msg("the subscriber handled %llu of %llu messages",
                                          (unsigned long long)(st.messages + st.dropped),
                                          (unsigned long long)messages_plus_dropped);
        pause_1ms();
    }
}

static sl_subscriber *new_sub(int port, sl_mode mode, int resp, const sl_subscriber_options *so)
{
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", port);
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = url;
    o.mode = mode;
    o.resp_version = resp;
    o.connect_timeout_ms = 1000;
    o.reconnect_min_ms = 1;
    o.reconnect_max_ms = 20;
    sl_subscriber *s = NULL;
    char err[256] = "";
    int rc = sl_subscriber_new(&s, &o, so, err, sizeof err);
    if (rc) fail_msg("sl_subscriber_new: %d %s", rc, err);
    return s;
}

/* ------------------------------------------------------------------ tests */

static void messages_patterns_binary(int resp)
{
    fs_node *n = fs_start();
    sl_subscriber *s = new_sub(fs_port(n), SL_MODE_PLAIN, resp, NULL);
    assert_int_equal(sl_subscriber_subscribe(s, SL_SUB_CHANNEL, "news", 4), 0);
    assert_int_equal(sl_subscriber_subscribe(s, SL_SUB_CHANNEL, "news", 4), 0); /* already wanted */
    const sl_message *m = expect(s, SL_MSG_SUBSCRIBE, "news");
    assert_int_equal(m->count, 1);
    assert_int_equal(sl_subscriber_subscribe(s, SL_SUB_PATTERN, "ne*", 3), 0);
    m = expect(s, SL_MSG_PSUBSCRIBE, "ne*");
    assert_int_equal(m->count, 2);
    assert_int_equal(sl_subscriber_subscribe(s, SL_SUB_SHARD, "sh", 2), 0);
    expect(s, SL_MSG_SSUBSCRIBE, "sh");

    static const char bin[] = "a\0b\r\n*3\r\n$7\r\nmessage";
    assert_int_equal(fs_publish(n, 0, "news", bin, sizeof bin), 2);
    m = expect(s, SL_MSG_MESSAGE, "news");
    assert_int_equal(m->payload_len, sizeof bin);
    assert_memory_equal(payload_of(m), bin, sizeof bin);
    m = expect(s, SL_MSG_PMESSAGE, "news");
    assert_true(bytes_eq(pattern_of(m), m->pattern_len, "ne*"));
    assert_memory_equal(payload_of(m), bin, sizeof bin);
    assert_int_equal(fs_publish(n, 1, "sh", "x", 1), 1);
    m = expect(s, SL_MSG_SMESSAGE, "sh");
    assert_true(bytes_eq(payload_of(m), m->payload_len, "x"));

    /* a 1 MB payload */
    static uint8_t big[1 << 20];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)(i * 31 + 7);
    fs_publish(n, 1, "sh", big, sizeof big);
    m = expect(s, SL_MSG_SMESSAGE, "sh");
    assert_int_equal(m->payload_len, sizeof big);
    assert_memory_equal(payload_of(m), big, sizeof big);

    assert_int_equal(sl_subscriber_unsubscribe(s, SL_SUB_CHANNEL, "news", 4), 0);
    expect(s, SL_MSG_UNSUBSCRIBE, "news");
    assert_int_equal(sl_subscriber_unsubscribe(s, SL_SUB_PATTERN, NULL, 0), 0); /* all patterns */
    expect(s, SL_MSG_PUNSUBSCRIBE, "ne*");
    assert_int_equal(fs_publish(n, 0, "news", "gone", 4), 0);
    sl_subscriber_stats st = stats(s);
    assert_int_equal(st.messages, 4);
    assert_int_equal(st.confirmed, 1);
    sl_subscriber_free(s);
    fs_stop(n);
}

static void test_messages_resp2(void **state)
{
    (void)state;
    messages_patterns_binary(2);
}

static void test_messages_resp3(void **state)
{
    (void)state;
    messages_patterns_binary(3);
}

/* A message split at every byte reaches the caller whole, once. */
static void test_push_split_every_byte(void **state)
{
    (void)state;
    for (int resp = 2; resp <= 3; resp++) {
        fs_node *n = fs_start();
        sl_subscriber *s = new_sub(fs_port(n), SL_MODE_PLAIN, resp, NULL);
        sl_subscriber_subscribe(s, SL_SUB_CHANNEL, "c", 1);
        expect(s, SL_MSG_SUBSCRIBE, "c");
        const char *msg = resp == 3 ? ">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$5\r\nhe\r\no\r\n"
                                    : "*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$5\r\nhe\r\no\r\n";
        uint64_t base = stats(s).bytes_read;
        size_t len = strlen(msg);
        for (size_t i = 0; i < len; i++) {
            fs_push_raw(n, msg + i, 1);
            wait_read(s, base + i + 1);
            if (i + 1 < len) assert_int_equal(stats(s).messages, 0);
        }
        const sl_message *m = expect(s, SL_MSG_MESSAGE, "c");
        assert_true(bytes_eq(payload_of(m), m->payload_len, "he\r\no"));
        assert_int_equal(stats(s).messages, 1);
        sl_subscriber_free(s);
        fs_stop(n);
    }
}

/* The server closes the connection in the middle of a message: the half message is never
 * delivered, the loss is reported, the subscriptions come back (RESUBSCRIBED) and later
 * messages arrive. */
static void test_killed_mid_message(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    sl_subscriber *s = new_sub(fs_port(n), SL_MODE_PLAIN, 2, NULL);
    sl_subscriber_subscribe(s, SL_SUB_CHANNEL, "c", 1);
    sl_subscriber_subscribe(s, SL_SUB_PATTERN, "p*", 2);
    expect(s, SL_MSG_SUBSCRIBE, "c");
    expect(s, SL_MSG_PSUBSCRIBE, "p*");
    uint64_t base = stats(s).bytes_read;
    const char *half = "*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$10\r\nhalf";
    fs_push_raw(n, half, strlen(half));
    wait_read(s, base + strlen(half));
    fs_drop_connections(n);
    const sl_message *m = expect(s, SL_MSG_CONNECTION_LOST, NULL);
    assert_non_null(strstr((const char *)payload_of(m), "closed by the server"));
    int seen_c = 0, seen_p = 0;
    for (int i = 0; i < 2; i++) {
        m = expect(s, SL_MSG_RESUBSCRIBED, NULL);
        if (bytes_eq(channel_of(m), m->channel_len, "c") && m->flags == SL_SUB_CHANNEL) seen_c++;
        if (bytes_eq(channel_of(m), m->channel_len, "p*") && m->flags == SL_SUB_PATTERN) seen_p++;
    }
    assert_int_equal(seen_c, 1);
    assert_int_equal(seen_p, 1);
    fs_publish(n, 0, "c", "after", 5);
    m = expect(s, SL_MSG_MESSAGE, "c");
    assert_true(bytes_eq(payload_of(m), m->payload_len, "after"));
    sl_subscriber_stats st = stats(s);
    assert_int_equal(st.connection_losses, 1);
    assert_int_equal(st.resubscribed, 2);
    assert_int_equal(st.messages, 1);
    sl_subscriber_free(s);
    fs_stop(n);
}

/* Bytes that are not RESP: a clear error, the connection is replaced, nothing crashes. */
static void test_malformed_push(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    sl_subscriber *s = new_sub(fs_port(n), SL_MODE_PLAIN, 3, NULL);
    sl_subscriber_subscribe(s, SL_SUB_CHANNEL, "c", 1);
    expect(s, SL_MSG_SUBSCRIBE, "c");
    fs_push_raw(n, "?garbage\r\n", 10);
    const sl_message *m = expect(s, SL_MSG_CONNECTION_LOST, NULL);
    assert_non_null(strstr((const char *)payload_of(m), "protocol error"));
    expect(s, SL_MSG_RESUBSCRIBED, "c");
    fs_publish(n, 0, "c", "ok", 2);
    expect(s, SL_MSG_MESSAGE, "c");
    sl_subscriber_free(s);
    fs_stop(n);
}

/* A server that stops answering (PING held): the health check notices and reconnects. */
static void test_health_check_stalled_server(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    sl_subscriber_options so = SL_SUBSCRIBER_OPTIONS_INIT;
    so.health_check_interval_ms = 30;
    sl_subscriber *s = new_sub(fs_port(n), SL_MODE_PLAIN, 2, &so);
    sl_subscriber_subscribe(s, SL_SUB_CHANNEL, "c", 1);
    expect(s, SL_MSG_SUBSCRIBE, "c");
    fs_rule stall = {"PING", NULL, 1, FS_STALL, NULL, 0, 0, 0};
    fs_add_rule(n, &stall);
    const sl_message *m = expect(s, SL_MSG_CONNECTION_LOST, NULL);
    assert_non_null(strstr((const char *)payload_of(m), "health-check PING"));
    expect(s, SL_MSG_RESUBSCRIBED, "c");
    /* the new connection answers its PINGs (a third one is sent only after the second was
     * answered, else the second would fail it): messages still flow, no other loss */
    int64_t limit = fs_now_ms() + WAIT_MS;
    while (stats(s).pings < 3) {
        if (fs_now_ms() > limit) fail_msg("no third health-check PING");
        pause_1ms();
    }
    fs_publish(n, 0, "c", "alive", 5);
    expect(s, SL_MSG_MESSAGE, "c");
    assert_int_equal(stats(s).connection_losses, 1);
    sl_subscriber_free(s);
    fs_stop(n);
}

/* The queue bound: the newest messages are dropped and counted in one OVERFLOW record at
 * the place of the loss; the kept ones are in order; later messages are queued again. */
static void test_overflow_drops_newest(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    sl_subscriber_options so = SL_SUBSCRIBER_OPTIONS_INIT;
    so.max_queue_bytes = 10 * (32 + 1 + 100);
    sl_subscriber *s = new_sub(fs_port(n), SL_MODE_PLAIN, 2, &so);
    sl_subscriber_subscribe(s, SL_SUB_CHANNEL, "c", 1);
    expect(s, SL_MSG_SUBSCRIBE, "c");
    char payload[100];
    for (int i = 0; i < 50; i++) {
        memset(payload, 'a' + i % 26, sizeof payload);
        payload[0] = (char)i;
        fs_publish(n, 0, "c", payload, sizeof payload);
    }
    wait_handled(s, 50);
    sl_subscriber_stats st = stats(s);
    assert_int_equal(st.messages, 10);
    assert_int_equal(st.dropped, 40);
    for (int i = 0; i < 10; i++) {
        const sl_message *m = expect(s, SL_MSG_MESSAGE, "c");
        assert_int_equal(payload_of(m)[0], i);
    }
    const sl_message *m = expect(s, SL_MSG_OVERFLOW, NULL);
    assert_int_equal(m->count, 40);
    fs_publish(n, 0, "c", "next", 4);
    m = expect(s, SL_MSG_MESSAGE, "c");
    assert_true(bytes_eq(payload_of(m), m->payload_len, "next"));
    assert_int_equal(stats(s).queued_bytes, 0);
    sl_subscriber_free(s);
    fs_stop(n);
}

/* A shard channel's slot moves to another node: the old node unsubscribes it (as Redis
 * does), the subscriber refreshes the map, subscribes on the new owner and says so. */
static void test_shard_slot_moved(void **state)
{
    (void)state;
    fs_cluster cl;
    fs_cluster_start(&cl, 2);
    char ch[32];
    int slot = fs_find_key("chan", 0, 8191, ch, sizeof ch); /* node 0's */
    sl_subscriber *s = new_sub(fs_port(cl.nodes[0]), SL_MODE_CLUSTER, 2, NULL);
    sl_subscriber_subscribe(s, SL_SUB_SHARD, ch, strlen(ch));
    sl_subscriber_subscribe(s, SL_SUB_CHANNEL, "all", 3);
    int got_s = 0, got_c = 0;
    for (int i = 0; i < 2; i++) {
        const sl_message *m = next(s);
        got_s += m->kind == SL_MSG_SSUBSCRIBE;
        got_c += m->kind == SL_MSG_SUBSCRIBE;
    }
    assert_int_equal(got_s, 1);
    assert_int_equal(got_c, 1);
    assert_int_equal(fs_publish(cl.nodes[0], 1, ch, "one", 3), 1);
    expect(s, SL_MSG_SMESSAGE, ch);
    /* move the slot to node 1 */
    fs_range map[] = {{0, slot - 1 < 0 ? 0 : slot - 1, fs_port(cl.nodes[0])}, {slot, 16383, fs_port(cl.nodes[1])}};
    const fs_range *use = slot == 0 ? map + 1 : map;
    size_t nuse = slot == 0 ? 1 : 2;
    fs_set_slots(cl.nodes[1], use, nuse);
    fs_set_slots(cl.nodes[0], use, nuse); /* node 0 pushes "sunsubscribe" */
    const sl_message *m = expect(s, SL_MSG_RESUBSCRIBED, ch);
    assert_int_equal(m->flags, SL_SUB_SHARD);
    assert_int_equal(fs_publish(cl.nodes[1], 1, ch, "two", 3), 1);
    m = expect(s, SL_MSG_SMESSAGE, ch);
    assert_true(bytes_eq(payload_of(m), m->payload_len, "two"));
    sl_subscriber_stats st = stats(s);
    assert_true(st.refreshes >= 1);
    assert_int_equal(st.connection_losses, 0);
    assert_int_equal(fs_subscriptions(cl.nodes[0]), 1); /* "all" stayed where it was */
    sl_subscriber_free(s);
    fs_cluster_stop(&cl);
}

/* A shard channel sent to a node that does not own its slot (the map changed before the
 * subscriber learned it): -MOVED, a refresh, then the right node. */
static void test_shard_moved_reply(void **state)
{
    (void)state;
    fs_cluster cl;
    fs_cluster_start(&cl, 2);
    char ch[32];
    int slot = fs_find_key("mv", 100, 8000, ch, sizeof ch);
    sl_subscriber *s = new_sub(fs_port(cl.nodes[0]), SL_MODE_CLUSTER, 3, NULL);
    /* the cluster moves the slot before the subscriber asks */
    fs_range map[] = {{0, slot - 1, fs_port(cl.nodes[0])}, {slot, 16383, fs_port(cl.nodes[1])}};
    fs_set_slots(cl.nodes[0], map, 2);
    fs_set_slots(cl.nodes[1], map, 2);
    sl_subscriber_subscribe(s, SL_SUB_SHARD, ch, strlen(ch));
    expect(s, SL_MSG_SSUBSCRIBE, ch);
    assert_int_equal(fs_count(cl.nodes[0], "SSUBSCRIBE", NULL), 1);
    assert_int_equal(fs_publish(cl.nodes[1], 1, ch, "here", 4), 1);
    expect(s, SL_MSG_SMESSAGE, ch);
    sl_subscriber_free(s);
    fs_cluster_stop(&cl);
}

/* The wake fd is readable exactly while records are queued; small buffers and closed
 * subscribers answer clear codes. */
static void test_fd_and_codes(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    sl_subscriber *s = new_sub(fs_port(n), SL_MODE_PLAIN, 2, NULL);
    assert_int_equal(sl_subscriber_subscribe(s, 7, "x", 1), SL_EINVAL);
    assert_int_equal(sl_subscriber_subscribe(s, SL_SUB_CHANNEL, NULL, 0), SL_EINVAL);
    assert_int_equal(sl_subscriber_subscribe(NULL, SL_SUB_CHANNEL, "x", 1), SL_EINVAL);
    sl_message m;
    uint8_t small[4];
    size_t cnt = 9, used = 9;
    assert_int_equal(sl_subscriber_drain(s, 0, &m, 1, small, sizeof small, &cnt, &used), 0);
    assert_int_equal(cnt, 0);
    int fd = sl_subscriber_fd(s);
    assert_true(fd >= 0);
    struct pollfd p = {fd, POLLIN, 0};
    assert_int_equal(poll(&p, 1, 0), 0);
    sl_subscriber_subscribe(s, SL_SUB_CHANNEL, "longer-name", 11);
    p.revents = 0;
    assert_int_equal(poll(&p, 1, WAIT_MS), 1); /* the confirmation arrived */
    assert_int_equal(sl_subscriber_drain(s, 0, &m, 1, small, sizeof small, &cnt, &used), SL_ETOOSMALL);
    assert_int_equal(used, 11);
    assert_int_equal(cnt, 0);
    p.revents = 0;
    assert_int_equal(poll(&p, 1, 0), 1); /* still queued */
    expect(s, SL_MSG_SUBSCRIBE, "longer-name");
    p.revents = 0;
    assert_int_equal(poll(&p, 1, 0), 0); /* drained */
    /* several records in one drain */
    for (int i = 0; i < 5; i++) fs_publish(n, 0, "longer-name", "m", 1);
    wait_handled(s, 5);
    sl_message ms[8];
    uint8_t data[256];
    assert_int_equal(sl_subscriber_drain(s, 0, ms, 8, data, sizeof data, &cnt, &used), 0);
    assert_int_equal(cnt, 5);
    assert_int_equal(used, 5 * 12);
    assert_int_equal(ms[4].offset, 4 * 12);
    p.revents = 0;
    assert_int_equal(poll(&p, 1, 0), 0);
    sl_subscriber_close(s);
    p.revents = 0;
    assert_int_equal(poll(&p, 1, WAIT_MS), 1); /* a watcher wakes up to see the close */
    assert_int_equal(sl_subscriber_subscribe(s, SL_SUB_CHANNEL, "y", 1), SL_ESTATE);
    assert_int_equal(sl_subscriber_drain(s, -1, ms, 8, data, sizeof data, &cnt, &used), SL_ESTATE);
    sl_subscriber_free(s);
    fs_stop(n);
}

/* Bad options and an unreachable server fail in sl_subscriber_new with a message. */
static void test_new_errors(void **state)
{
    (void)state;
    fs_dead_port d;
    fs_dead_port_open(&d);
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", d.port);
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = url;
    o.mode = SL_MODE_PLAIN;
    o.connect_timeout_ms = 1000;
    sl_subscriber *s = (sl_subscriber *)1;
    char err[256] = "";
    sl_subscriber_options bad = SL_SUBSCRIBER_OPTIONS_INIT;
    bad.size = 4;
    assert_int_equal(sl_subscriber_new(&s, &o, &bad, err, sizeof err), SL_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err, "SL_SUBSCRIBER_OPTIONS_INIT"));
    /* an unreachable server: the private client's first connection fails here */
    assert_int_equal(sl_subscriber_new(&s, &o, NULL, err, sizeof err), SL_EIO);
    assert_null(s);
    assert_non_null(strstr(err, "Connection refused"));
    fs_dead_port_close(&d);
}

typedef struct push_seen {
    int count;
    int type;
    uint32_t children;
    char first[32];
    char second[32];
    char node[64];
} push_seen;

static void on_push(void *ctx, const char *node, const sl_reply *r, size_t n, const uint8_t *data)
{
    push_seen *p = ctx;
    p->count++;
    p->type = r[0].type;
    p->children = r[0].len;
    snprintf(p->node, sizeof p->node, "%s", node);
    if (n > 1) snprintf(p->first, sizeof p->first, "%.*s", (int)r[1].len, (const char *)data + r[1].offset);
    if (n > 3) snprintf(p->second, sizeof p->second, "%.*s", (int)r[3].len, (const char *)data + r[3].offset);
}

/* A RESP3 push on a command connection (client-side caching's invalidate) reaches the push
 * handler; the command's own reply is untouched; without a handler it is dropped. */
static void test_push_handler_command_connection(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", fs_port(n));
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = url;
    o.mode = SL_MODE_PLAIN;
    o.resp_version = 3;
    sl_client *c = NULL;
    assert_int_equal(sl_client_new(&c, &o, NULL, 0), 0);
    push_seen seen;
    memset(&seen, 0, sizeof seen);
    assert_int_equal(sl_client_set_push_handler(NULL, on_push, &seen), SL_EINVAL);
    assert_int_equal(sl_client_set_push_handler(c, on_push, &seen), 0);
    const char *push_then_value = ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n$1\r\nv\r\n";
    fs_add_reply(n, "GET", "k", 2, push_then_value);
    const char *argv[] = {"GET", "k"};
    const sl_reply *r;
    const uint8_t *d;
    assert_int_equal(sl_client_command(c, NULL, 2, argv, NULL, &r, &d), 0);
    assert_int_equal(r->type, SL_REPLY_STRING);
    assert_memory_equal(d + r->offset, "v", 1);
    assert_int_equal(seen.count, 1);
    assert_int_equal(seen.type, SL_REPLY_PUSH);
    assert_int_equal(seen.children, 2);
    assert_string_equal(seen.first, "invalidate");
    assert_string_equal(seen.second, "k");
    assert_string_equal(seen.node, url);
    assert_int_equal(sl_client_set_push_handler(c, NULL, NULL), 0);
    assert_int_equal(sl_client_command(c, NULL, 2, argv, NULL, &r, &d), 0);
    assert_memory_equal(d + r->offset, "v", 1);
    assert_int_equal(seen.count, 1);
    sl_client_free(c);
    fs_stop(n);
}

/* A subscription the server refuses (-LOADING) is reported and sent again after a backoff. */
static void test_refused_subscription_retried(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    fs_add_reply(n, "SUBSCRIBE", NULL, 1, "-LOADING Redis is loading the dataset in memory\r\n");
    sl_subscriber *s = new_sub(fs_port(n), SL_MODE_PLAIN, 2, NULL);
    sl_subscriber_subscribe(s, SL_SUB_CHANNEL, "c", 1);
    const sl_message *m = expect(s, SL_MSG_ERROR, NULL);
    assert_non_null(strstr((const char *)payload_of(m), "LOADING"));
    expect(s, SL_MSG_SUBSCRIBE, "c");
    assert_int_equal(fs_count(n, "SUBSCRIBE", NULL), 2);
    fs_publish(n, 0, "c", "m", 1);
    expect(s, SL_MSG_MESSAGE, "c");
    sl_subscriber_free(s);
    fs_stop(n);
}

/* A reconnect that fails (the handshake is refused: backoff) is tried again when the backoff
 * ends, with no other event to wake the subscriber. */
static void test_reconnect_after_backoff(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    fs_set_password(n, "pw");
    char url[64];
    snprintf(url, sizeof url, "redis://:pw@127.0.0.1:%d", fs_port(n));
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = url;
    o.mode = SL_MODE_PLAIN;
    o.reconnect_min_ms = 1;
    o.reconnect_max_ms = 20;
    sl_subscriber *s = NULL;
    assert_int_equal(sl_subscriber_new(&s, &o, NULL, NULL, 0), 0);
    sl_subscriber_subscribe(s, SL_SUB_CHANNEL, "c", 1);
    expect(s, SL_MSG_SUBSCRIBE, "c");
    uint64_t auths = fs_count(n, "AUTH", NULL);
    fs_set_password(n, "changed");
    fs_drop_connections(n);
    const sl_message *m = expect(s, SL_MSG_CONNECTION_LOST, NULL);
    assert_non_null(strstr((const char *)payload_of(m), "closed by the server"));
    assert_int_equal(fs_wait_count(n, "AUTH", NULL, auths + 2, WAIT_MS), 0); /* refused twice */
    fs_set_password(n, "pw");
    expect(s, SL_MSG_RESUBSCRIBED, "c");
    assert_int_equal(stats(s).connection_losses, 1); /* refused handshakes are no losses */
    sl_subscriber_free(s);
    fs_stop(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_messages_resp2),
        cmocka_unit_test(test_messages_resp3),
        cmocka_unit_test(test_push_split_every_byte),
        cmocka_unit_test(test_killed_mid_message),
        cmocka_unit_test(test_malformed_push),
        cmocka_unit_test(test_health_check_stalled_server),
        cmocka_unit_test(test_overflow_drops_newest),
        cmocka_unit_test(test_shard_slot_moved),
        cmocka_unit_test(test_shard_moved_reply),
        cmocka_unit_test(test_fd_and_codes),
        cmocka_unit_test(test_new_errors),
        cmocka_unit_test(test_push_handler_command_connection),
        cmocka_unit_test(test_refused_subscription_retried),
        cmocka_unit_test(test_reconnect_after_backoff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
