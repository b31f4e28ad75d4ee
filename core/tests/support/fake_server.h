/* fake_server: an in-process, scriptable fake Redis node for the engine's tests.
 *
 * Each node runs one thread (poll-based) that listens on 127.0.0.1 with an ephemeral
 * port, accepts any number of connections and parses RESP requests with its own small
 * parser (it shares no code with core/src). By default it behaves like a tiny Redis:
 * an in-memory key/value store for GET SET INCR DEL MGET MSET EXISTS SCAN, plus PING ECHO
 * HELLO AUTH SELECT ASKING READONLY READWRITE CLIENT COMMAND INFO DBSIZE FLUSHALL and
 * CLUSTER SLOTS/SHARDS/NODES/MYID/INFO/KEYSLOT answering a configurable slot map.
 *
 * In cluster mode (fs_set_slots) a node also enforces ownership like Redis Cluster:
 * a key command for a slot it does not own gets "-MOVED slot 127.0.0.1:port" (unless
 * ASKING came just before it on the same connection), keys of several slots get
 * -CROSSSLOT, and a slot nobody owns gets -CLUSTERDOWN.
 *
 * Scripted rules (fs_add_rule) override the default answer per command name and/or key,
 * for the next N matches or always: reply raw bytes (redirects, errors, malformed bytes),
 * close the connection before replying or after K bytes of the reply, or stall the
 * connection (hold its reply and everything after it) until fs_release() or for some ms.
 *
 * Counters (per command name and key, connections, bytes) and the control functions are
 * thread-safe: every call takes the node's mutex. The fs_wait_* calls block (on a
 * condition variable, not by sleeping) until the node reaches a state or a timeout passes.
 * All of this is test-support code: failures to set up (socket, thread) abort the test
 * program with a message, since a test cannot proceed without its server. */
#ifndef SL_FAKE_SERVER_H
#define SL_FAKE_SERVER_H

#include <stddef.h>
#include <stdint.h>

typedef struct fs_node fs_node;

/* One range of a slot map: slots [start, end] are served by the node listening on port.
 * host NULL means "127.0.0.1" (or "" when the answering node has empty_host set). */
typedef struct fs_range {
    int start;
    int end;
    int port;
} fs_range;

/* What a rule does when it matches. */
typedef enum fs_action {
    FS_REPLY = 0,       /* answer reply[0, reply_len) (raw bytes, written as they are) */
    FS_CLOSE = 1,       /* close the connection instead of answering (earlier replies are
                           written first; requests after it on that connection are dropped) */
    FS_CLOSE_AFTER = 2, /* write the first close_after bytes of the answer (reply if set,
                           else the default answer), then close: "close mid-reply" */
    FS_STALL = 3        /* hold the answer (reply if set, else the default one) and every
                           later request of that connection until fs_release() or, when
                           stall_ms > 0, until stall_ms have passed */
} fs_action;

typedef struct fs_rule {
    const char *cmd;    /* command name, any case; "CLUSTER SLOTS" form matches a
                           subcommand (name + argv[1], any case); NULL: any command */
    const char *key;    /* argv[1] exactly (argv[2] for the "NAME SUB" form); NULL: any */
    int times;          /* how many matches before the rule is spent; 0: always */
    fs_action action;
    const char *reply;  /* raw answer bytes; NULL: the default answer */
    size_t reply_len;   /* 0: strlen(reply) */
    size_t close_after; /* FS_CLOSE_AFTER: bytes of the answer written before closing */
    int stall_ms;       /* FS_STALL: 0 = until fs_release() */
} fs_rule;

/* Starts a node (a plain server: CLUSTER commands answer an error until fs_set_slots).
 * Never NULL (aborts when the socket or thread cannot be created). */
fs_node *fs_start(void);

/* Stops the node's thread, closes every socket and frees the node. NULL is a no-op. */
void fs_stop(fs_node *n);

/* The port the node listens on. */
int fs_port(const fs_node *n);

/* The node's id as CLUSTER SLOTS / NODES report it (40 hex chars, from the port). */
const char *fs_id(const fs_node *n);

/* Cluster mode: the slot map this node reports (copied) and enforces. count 0 turns
 * cluster mode off again (CLUSTER * answers "-ERR This instance has cluster support
 * disabled", no ownership checks). To make one discovery form fail while the others
 * answer (testing the CLUSTER SHARDS / CLUSTER NODES fallbacks), add a rule:
 * fs_add_reply(n, "CLUSTER SLOTS", NULL, 0, "-ERR unknown subcommand 'SLOTS'.\r\n"). */
void fs_set_slots(fs_node *n, const fs_range *ranges, size_t count);

/* Whether ownership is enforced in cluster mode (-MOVED/-CROSSSLOT/-CLUSTERDOWN); on by
 * default. */
void fs_set_enforce(fs_node *n, int on);

/* Report "" as every node's host in CLUSTER SLOTS/SHARDS/NODES ("the address asked"). */
void fs_set_empty_host(fs_node *n, int on);

/* Require AUTH with this password (NULL: none required, AUTH answers +OK). */
void fs_set_password(fs_node *n, const char *password);

/* TLS mode (a build with the tls part, SL_WITH_TLS): connections accepted from now on
 * speak TLS with this certificate (files are read now; aborts when they cannot be).
 * client_ca_file not NULL: a client certificate of that CA is required (mutual TLS).
 * stall_handshake: read the ClientHello and never answer (a handshake that hangs).
 * NULL: plaintext again. Returns 0, or -1 in a build without TLS. */
typedef struct fs_tls {
    const char *cert_file;
    const char *key_file;
    const char *client_ca_file;
    int stall_handshake;
} fs_tls;
int fs_set_tls(fs_node *n, const fs_tls *tls);
uint64_t fs_tls_handshakes(fs_node *n);  /* TLS handshakes completed */
uint64_t fs_tls_failures(fs_node *n);    /* TLS handshakes the server failed (bad client cert...) */

/* Adds a rule (copied) after the existing ones; rules are tried in order and the first
 * live match wins. Returns the rule's id. */
int fs_add_rule(fs_node *n, const fs_rule *rule);

/* Convenience: reply these raw bytes to cmd/key for the next `times` matches (0: always). */
int fs_add_reply(fs_node *n, const char *cmd, const char *key, int times, const char *reply);

/* Removes one rule, or every rule. */
void fs_remove_rule(fs_node *n, int id);
void fs_clear_rules(fs_node *n);

/* How many times rule id has matched so far. */
uint64_t fs_rule_hits(fs_node *n, int id);

/* Releases every connection stalled by an FS_STALL rule (their held answers are written). */
void fs_release(fs_node *n);

/* Closes every client connection of the node now (as if the server dropped them). */
void fs_drop_connections(fs_node *n);

/* Requests received matching cmd (as in fs_rule: "GET", "CLUSTER SLOTS", NULL = any) and
 * key (NULL = any). Counted when parsed, whatever the answer. */
uint64_t fs_count(fs_node *n, const char *cmd, const char *key);

/* Like fs_count, counting only requests that came right after an ASKING on the same
 * connection. */
uint64_t fs_count_asking(fs_node *n, const char *cmd, const char *key);

/* The arrival times (fs_now_us) of the requests matching cmd/key, oldest first: writes at
 * most cap of them to out and returns how many matched. */
size_t fs_times(fs_node *n, const char *cmd, const char *key, int64_t *out, size_t cap);

uint64_t fs_connections(fs_node *n);     /* connections accepted */
uint64_t fs_open_connections(fs_node *n);/* connections currently open */
uint64_t fs_bytes_received(fs_node *n);
int fs_stalled(fs_node *n);              /* connections currently stalled */

/* Forgets the request log and counters (rules, slot map and keys stay). */
void fs_reset_counters(fs_node *n);

/* Empties the node's key/value store. */
void fs_flush(fs_node *n);

/* Sets a key directly in the node's store (bypassing the protocol and the counters). */
void fs_store_set(fs_node *n, const char *key, const char *value);

/* Removes a key from the node's store (as fs_store_set, bypassing the protocol). */
void fs_store_del(fs_node *n, const char *key);

/* Waits until fs_count(n, cmd, key) >= atleast; 0, or -1 after timeout_ms. */
int fs_wait_count(fs_node *n, const char *cmd, const char *key, uint64_t atleast, int timeout_ms);

/* Waits until at most `atmost` client connections are open; 0, or -1 after timeout_ms. */
int fs_wait_open_connections(fs_node *n, uint64_t atmost, int timeout_ms);

/* Waits until at least `atleast` connections are stalled; 0, or -1 after timeout_ms. */
int fs_wait_stalled(fs_node *n, int atleast, int timeout_ms);

/* Pub/sub: SUBSCRIBE PSUBSCRIBE SSUBSCRIBE (ownership checked like a key in cluster mode),
 * their UNSUBSCRIBEs, PUBLISH and SPUBLISH answer as Redis (RESP3 connections get pushes),
 * PING on a subscribed RESP2 connection answers ["pong", ""], and fs_set_slots unsubscribes
 * (with a "sunsubscribe" push) shard channels whose slot left the node, as Redis does.
 * fs_publish delivers from the test (shard 0: PUBLISH, 1: SPUBLISH) and returns the
 * receivers; fs_push_raw appends raw bytes to every connection that has a subscription (a
 * message in pieces, malformed bytes); fs_subscriptions counts the node's subscriptions. */
long long fs_publish(fs_node *n, int shard, const char *channel, const void *msg, size_t len);
void fs_push_raw(fs_node *n, const void *bytes, size_t len);
size_t fs_subscriptions(fs_node *n);

/* ------------------------------------------------------------ a fake cluster */

#define FS_MAX_NODES 8

typedef struct fs_cluster {
    int n;
    fs_node *nodes[FS_MAX_NODES];
} fs_cluster;

/* Starts count nodes (<= FS_MAX_NODES) and gives them all the same slot map: the 16384
 * slots split in count contiguous, nearly equal ranges, in node order. */
void fs_cluster_start(fs_cluster *c, int count);

/* Gives every node of the cluster the same slot map. */
void fs_cluster_set_map(fs_cluster *c, const fs_range *ranges, size_t count);

/* Which node of the cluster a slot belongs to by the even split of fs_cluster_start
 * (index), without asking the nodes. */
int fs_cluster_default_owner(const fs_cluster *c, int slot);

/* Sums fs_count over the cluster's nodes. */
uint64_t fs_cluster_count(fs_cluster *c, const char *cmd, const char *key);

void fs_cluster_stop(fs_cluster *c);

/* The cluster slot of a key (an independent CRC16-XMODEM, {hash tag} aware). */
int fs_key_slot(const char *key, size_t len);

/* Finds a key "<prefix><n>" (n counting from 0) whose slot lies in [lo, hi]; writes it to
 * buf (cap bytes) and returns its slot. */
int fs_find_key(const char *prefix, int lo, int hi, char *buf, size_t cap);

/* A port on 127.0.0.1 where nothing listens (a socket bound but not listening, so
 * connects are refused and no one else can take the port). Close with fs_dead_port_close. */
typedef struct fs_dead_port {
    int fd;
    int port;
    int filler;         /* fs_blackhole_open: the connection that fills the backlog */
} fs_dead_port;
void fs_dead_port_open(fs_dead_port *d);

/* A port on 127.0.0.1 where connects hang (SYNs dropped): a listening socket that never
 * accepts, with its backlog filled. A connect there ends only by the client's timeout. */
void fs_blackhole_open(fs_dead_port *d);

/* Closes a dead port or a black hole. */
void fs_dead_port_close(fs_dead_port *d);

/* Monotonic milliseconds and microseconds. */
int64_t fs_now_ms(void);
int64_t fs_now_us(void);

#endif
