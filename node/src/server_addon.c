/* slotlane_server Node addon: the embedded slotlane-server (slotlane_server.h) for
 * require('slotlane/testing'). Three calls: start(options) -> {handle, url, ports},
 * stop(handle), free on collection. The server runs its own threads and loops (uv loops of
 * its own, on the node binary's libuv); nothing here touches Node's loop, so a test's
 * event loop is never blocked by the server and the server never waits for JavaScript.
 * stop() joins the shard threads: they never call into JavaScript, so it cannot deadlock. */
#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>
#include <stdlib.h>
#include <string.h>

#include "slotlane_server.h"

#define CHECK(call)                                                                    \
    do {                                                                               \
        if ((call) != napi_ok) {                                                       \
            napi_throw_error(env, NULL, "slotlane/testing: N-API call failed: " #call); \
            return NULL;                                                               \
        }                                                                              \
    } while (0)

typedef struct nserver {
    sl_server *s;
} nserver;

static void finalize(napi_env env, void *data, void *hint)
{
    (void)env;
    (void)hint;
    nserver *n = data;
    sl_server_free(n->s); /* stops it first when the test forgot to */
    free(n);
}

/* opts[name] as an int (def when absent); -1 and a thrown error for a non-number */
static int get_int(napi_env env, napi_value opts, const char *name, int def, int *out)
{
    bool has = false;
    napi_value v;
    *out = def;
    if (napi_has_named_property(env, opts, name, &has) != napi_ok || !has) return 0;
    napi_get_named_property(env, opts, name, &v);
    napi_valuetype t;
    napi_typeof(env, v, &t);
    if (t == napi_undefined) return 0;
    if (t != napi_number) {
        napi_throw_type_error(env, NULL, "slotlane/testing: a numeric option is not a number");
        return -1;
    }
    int32_t i;
    napi_get_value_int32(env, v, &i);
    *out = i;
    return 0;
}

/* opts[name] as a malloc'd string (NULL when absent) */
static int get_str(napi_env env, napi_value v, char **out)
{
    napi_valuetype t;
    napi_typeof(env, v, &t);
    *out = NULL;
    if (t == napi_undefined || t == napi_null) return 0;
    if (t != napi_string) {
        napi_throw_type_error(env, NULL, "slotlane/testing: a string option is not a string");
        return -1;
    }
    size_t n;
    napi_get_value_string_utf8(env, v, NULL, 0, &n);
    *out = malloc(n + 1);
    napi_get_value_string_utf8(env, v, *out, n + 1, &n);
    return 0;
}

static int get_named_str(napi_env env, napi_value opts, const char *name, char **out)
{
    bool has = false;
    *out = NULL;
    if (napi_has_named_property(env, opts, name, &has) != napi_ok || !has) return 0;
    napi_value v;
    napi_get_named_property(env, opts, name, &v);
    return get_str(env, v, out);
}

/* start({shards, portMode, misrouted, durability, dir, bind, port, settings: [name, value, ...]})
 * with the numeric codes of slotlane_server.h (lib/testing.js maps the names). */
static napi_value start(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value opts;
    CHECK(napi_get_cb_info(env, info, &argc, &opts, NULL, NULL));
    sl_server_options o = SL_SERVER_OPTIONS_INIT;
    char *dir = NULL, *bind = NULL, **settings = NULL;
    uint32_t nsettings = 0;
    napi_value result = NULL;
    if (get_int(env, opts, "shards", 4, &o.shards) || get_int(env, opts, "portMode", 0, &o.port_mode) ||
        get_int(env, opts, "misrouted", 0, &o.misrouted) || get_int(env, opts, "durability", 0, &o.durability) ||
        get_int(env, opts, "port", 0, &o.port) || get_int(env, opts, "logLevel", SL_SERVER_LOG_WARNING, &o.log_level) ||
        get_named_str(env, opts, "dir", &dir) || get_named_str(env, opts, "bind", &bind))
        goto out;
    bool has = false;
    napi_has_named_property(env, opts, "settings", &has);
    if (has) {
        napi_value arr;
        napi_get_named_property(env, opts, "settings", &arr);
        if (napi_get_array_length(env, arr, &nsettings) != napi_ok) {
            napi_throw_type_error(env, NULL, "slotlane/testing: settings is not an array");
            goto out;
        }
        settings = calloc(nsettings ? nsettings : 1, sizeof(char *));
        for (uint32_t i = 0; i < nsettings; i++) {
            napi_value v;
            napi_get_element(env, arr, i, &v);
            if (get_str(env, v, &settings[i])) goto out;
        }
    }
    o.dir = dir;
    o.bind = bind;
    o.settings = (const char *const *)settings;
    o.nsettings = nsettings;
    sl_server *s;
    char err[512];
    if (sl_server_start(&s, &o, err, sizeof err) != 0) {
        napi_throw_error(env, "ERR_SLOTLANE_SERVER", err);
        goto out;
    }
    nserver *n = malloc(sizeof *n);
    n->s = s;
    napi_value handle, url, ports;
    char buf[128];
    sl_server_url(s, buf, sizeof buf);
    napi_create_object(env, &result);
    napi_create_external(env, n, finalize, NULL, &handle);
    napi_create_string_utf8(env, buf, NAPI_AUTO_LENGTH, &url);
    napi_create_array_with_length(env, (size_t)sl_server_shards(s), &ports);
    for (int i = 0; i < sl_server_shards(s); i++) {
        napi_value p;
        napi_create_int32(env, sl_server_port(s, i), &p);
        napi_set_element(env, ports, (uint32_t)i, p);
    }
    napi_set_named_property(env, result, "handle", handle);
    napi_set_named_property(env, result, "url", url);
    napi_set_named_property(env, result, "ports", ports);
out:
    free(dir);
    free(bind);
    for (uint32_t i = 0; settings && i < nsettings; i++) free(settings[i]);
    free(settings);
    return result;
}

static napi_value stop(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value h;
    CHECK(napi_get_cb_info(env, info, &argc, &h, NULL, NULL));
    nserver *n;
    CHECK(napi_get_value_external(env, h, (void **)&n));
    sl_server_stop(n->s); /* joins the shard threads; a second stop is a no-op */
    return NULL;
}

static napi_value init(napi_env env, napi_value exports)
{
    napi_property_descriptor d[] = {
        {"start", NULL, start, NULL, NULL, NULL, napi_default, NULL},
        {"stop", NULL, stop, NULL, NULL, NULL, napi_default, NULL},
    };
    CHECK(napi_define_properties(env, exports, sizeof d / sizeof d[0], d));
    return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
