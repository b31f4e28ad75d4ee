/* embed_cluster: a 4-shard slotlane-server inside this process on ephemeral ports, and
 * the slotlane client routing keys of every shard to it — what a C test suite does to
 * get a real cluster on loopback. Exit code 0 when every key read back its value.
 *
 *   cc embed_cluster.c -lslotlane_server_lib -lslotlane ... (server/CMakeLists.txt builds it)
 */
#include <stdio.h>
#include <string.h>

#include <slotlane.h>
#include <slotlane_server.h>

int main(void)
{
    char err[256], url[64];
    sl_server_options so = SL_SERVER_OPTIONS_INIT;
    so.shards = 4;                       /* per-shard ports, -MOVED as Redis Cluster */
    sl_server *srv;
    if (sl_server_start(&srv, &so, err, sizeof err) != 0) {
        fprintf(stderr, "server: %s\n", err);
        return 1;
    }
    sl_server_url(srv, url, sizeof url);
    printf("cluster at %s, shard ports", url);
    for (int i = 0; i < sl_server_shards(srv); i++) printf(" %d", sl_server_port(srv, i));
    printf("\n");

    sl_client_options co = SL_CLIENT_OPTIONS_INIT;
    co.url = url;                        /* one seed: the client discovers the 4 shards */
    sl_client *c;
    int rc = sl_client_new(&c, &co, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "client: %s\n", err);
        sl_server_free(srv);
        return 1;
    }
    int bad = 0;
    for (int i = 0; i < 100 && !bad; i++) {
        char key[32], val[32];
        snprintf(key, sizeof key, "key:%d", i);
        snprintf(val, sizeof val, "value-%d", i);
        const char *set[] = {"SET", key, val}, *get[] = {"GET", key};
        const sl_reply *r;
        const uint8_t *data;
        if (sl_client_command(c, NULL, 3, set, NULL, &r, &data) != 0) bad = 1;
        else if (sl_client_command(c, NULL, 2, get, NULL, &r, &data) != 0 || r->type != SL_REPLY_STRING ||
                 r->len != strlen(val) || memcmp(data + r->offset, val, r->len) != 0)
            bad = 1;
    }
    printf(bad ? "a key did not read back: %s\n" : "100 keys over 4 shards read back%s\n", bad ? sl_client_errmsg(c) : "");
    sl_client_free(c);
    sl_server_free(srv);                 /* stops the shards and waits for their threads */
    return bad;
}
