/* addon.h: what the addon's modules share (addon.c: the client and its connect options;
 * pubsub.c: the subscriber). */
#ifndef SL_NODE_ADDON_H
#define SL_NODE_ADDON_H

#include <node_api.h>
#include <stdint.h>

#include "slotlane.h"

/* The connect options of lib/index.js's checkOptions, parsed on the JS thread; the
 * options struct is completed (and TLS made) off it, in a worker. */
typedef struct connect_work {
    napi_async_work work;
    napi_ref cb, recv, fn;
    char *url, *username, *password;
    int tls_on, tls_verify;           /* options.tls (lib/index.js checked it) */
    char *tls_ca, *tls_cert, *tls_key, *tls_servername;
    sl_client_options opts;
    struct nevents *events;           /* options.onEvent's delivery (addon.c), or NULL */
    sl_client *client;
    int rc;
    char err[512];
} connect_work;

/* A failed N-API call throws (unless an exception is pending) and returns NULL. */
#define CHECK(call)                                                                  \
    do {                                                                             \
        if ((call) != napi_ok) {                                                     \
            throw_last(env, #call);                                                  \
            return NULL;                                                             \
        }                                                                            \
    } while (0)

void throw_last(napi_env env, const char *what);
/* A new Buffer of cap bytes held by *ref (the old reference dropped); *ptr its memory.
 * NULL on failure. */
napi_value new_output_buffer(napi_env env, size_t cap, uint8_t **ptr, napi_ref *ref);
napi_value make_int(napi_env env, int64_t v);
/* Parses opts (a checked options object) into a new connect_work; NULL after throwing. */
connect_work *connect_parse(napi_env env, napi_value opts);
/* Completes w->opts (strings, TLS: *tls is the caller's reference to free after use);
 * 0, or w->rc with w->err. Any thread. */
int connect_prepare(connect_work *w, sl_tls **tls);
void free_connect_work(napi_env env, connect_work *w);

/* pubsub.c: defines the subscriber's functions on exports. */
napi_status pubsub_init(napi_env env, napi_value exports);

#endif
