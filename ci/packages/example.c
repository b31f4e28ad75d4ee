/* The C package's example (ci/test-packages.sh builds it against an installed libslotlane,
 * once with pkg-config and once with find_package(slotlane)): 64 SETs and GETs over the
 * cluster at argv[1] in one batch, every reply checked. Prints "c ok ..." on success. */
#include <slotlane.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: %s URL\n", argv[0]); return 2; }
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = argv[1];
    sl_client *c;
    char err[256];
    if (sl_client_new(&c, &o, err, sizeof err) != 0) { fprintf(stderr, "connect: %s\n", err); return 1; }
    sl_batch *b;
    if (sl_batch_new(c, &b) != 0) { fprintf(stderr, "sl_batch_new failed\n"); return 1; }
    enum { N = 32 };
    char keys[N][32], vals[N][32];
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof keys[i], "pkg:c:%d", i);
        snprintf(vals[i], sizeof vals[i], "value-%d", i);
        const char *set[] = {"SET", keys[i], vals[i]};
        sl_batch_append_argv(b, NULL, 3, set, NULL);
    }
    for (int i = 0; i < N; i++) {
        const char *get[] = {"GET", keys[i]};
        sl_batch_append_argv(b, NULL, 2, get, NULL);
    }
    sl_sizes sz;
    int rc = sl_batch_exec(b, 5000, &sz);
    size_t n;
    const uint8_t *data;
    const sl_reply *r = sl_batch_replies(b, &n, &data, NULL);
    if (rc != 0 || n != 2 * N) { fprintf(stderr, "exec: rc %d, %zu records\n", rc, n); return 1; }
    for (int i = 0; i < N; i++) {
        const sl_reply *g = &r[N + i];
        if (r[i].type != SL_REPLY_STATUS || g->type != SL_REPLY_STRING || g->len != strlen(vals[i])
            || memcmp(data + g->offset, vals[i], g->len) != 0) {
            fprintf(stderr, "reply %d is wrong\n", i);
            return 1;
        }
    }
    printf("c ok: %d SET + %d GET, core %s\n", N, N, sl_version());
    sl_batch_free(b);
    sl_client_free(c);
    return 0;
}
