/* The subscriber for JavaScript (lib/pubsub.js): the core's sl_subscriber (its own
 * connections and thread) whose queue descriptor Node's loop watches with a uv_poll_t.
 * When it is readable, the queue is drained in batches into two reused Buffers (32-byte
 * records, their bytes) and JavaScript is called once per batch; it decodes the records
 * with a DataView and emits them. pause() stops watching (the async iterator's
 * backpressure: the core's bounded queue then fills and applies its overflow policy).
 *
 * Lifetime: the JS PubSub holds an external (this struct) and is held strongly while open
 * (an open subscriber keeps the process alive, as a subscribed ioredis connection does).
 * close() stops the poll and closes the handle; its close callback frees the core's
 * subscriber (joining its thread) and drops the references. Env teardown closes it too. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "addon.h"
#include "slotlane.h"

typedef struct nsub {
    napi_env env;
    sl_subscriber *s;
    uv_poll_t poll;
    int polling;
    int closing;                 /* close() ran: the handle is being closed */
    int finalized;               /* the external was collected */
    int freed;                   /* the handle closed, the core subscriber freed */
    napi_ref recv, fn;           /* the JS PubSub and its records function (strong while open) */
    napi_ref recs_ref, data_ref;
    uint8_t *recs, *data;
    size_t recs_cap, data_cap;   /* records, bytes */
    napi_async_context actx;
    napi_async_cleanup_hook_handle cleanup;
} nsub;

typedef struct sub_work {
    connect_work *cw;
    sl_subscriber_options so;
    sl_subscriber *s;
} sub_work;

static nsub *get_sub(napi_env env, napi_value v)
{
    napi_valuetype t;
    void *p = NULL;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_external || napi_get_value_external(env, v, &p) != napi_ok ||
        !p) {
        napi_throw_type_error(env, NULL, "slotlane addon: not a subscriber handle");
        return NULL;
    }
    return p;
}

static void on_poll_closed(uv_handle_t *h)
{
    nsub *ns = h->data;
    sl_subscriber_free(ns->s);
    ns->s = NULL;
    ns->freed = 1;
    napi_env env = ns->env;
    if (ns->recv) napi_delete_reference(env, ns->recv);
    if (ns->fn) napi_delete_reference(env, ns->fn);
    if (ns->recs_ref) napi_delete_reference(env, ns->recs_ref);
    if (ns->data_ref) napi_delete_reference(env, ns->data_ref);
    ns->recv = ns->fn = ns->recs_ref = ns->data_ref = NULL;
    if (ns->actx) napi_async_destroy(env, ns->actx);
    ns->actx = NULL;
    if (ns->cleanup) napi_remove_async_cleanup_hook(ns->cleanup);
    ns->cleanup = NULL;
    if (ns->finalized) free(ns);
}

static void start_close(nsub *ns)
{
    if (ns->closing) return;
    ns->closing = 1;
    sl_subscriber_close(ns->s);
    if (ns->polling) uv_poll_stop(&ns->poll);
    ns->polling = 0;
    uv_close((uv_handle_t *)&ns->poll, on_poll_closed);
}

static void on_teardown(napi_async_cleanup_hook_handle h, void *arg)
{
    (void)h;
    nsub *ns = arg;
    ns->finalized = 1; /* no JS any more: free at the close callback */
    start_close(ns);
}

static void on_finalize(napi_env env, void *data, void *hint)
{
    (void)env;
    (void)hint;
    nsub *ns = data;
    ns->finalized = 1;
    if (ns->freed) {
        free(ns);
        return;
    }
    start_close(ns);
}

/* Drains the queue in batches (at most 16 per wake-up, so one busy subscriber cannot keep the
 * loop) and hands each to JavaScript. */
static void on_readable(uv_poll_t *h, int status, int events)
{
    (void)events;
    nsub *ns = h->data;
    napi_env env = ns->env;
    (void)status;
    for (int round = 0; round < 16 && !ns->closing && ns->polling; round++) {
        size_t n = 0, used = 0;
        int rc = sl_subscriber_drain(ns->s, 0, (sl_message *)(void *)ns->recs, ns->recs_cap, ns->data, ns->data_cap,
                                     &n, &used);
        if (rc == SL_ETOOSMALL) {
            napi_handle_scope scope;
            napi_open_handle_scope(env, &scope);
            size_t cap = ns->data_cap * 2 > used ? ns->data_cap * 2 : used;
            int bad = new_output_buffer(env, cap, &ns->data, &ns->data_ref) == NULL;
            napi_close_handle_scope(env, scope);
            if (bad) return;
            ns->data_cap = cap;
            continue;
        }
        if (rc != 0 || n == 0) return;
        napi_handle_scope scope;
        napi_open_handle_scope(env, &scope);
        napi_value recv, fn, argv[3];
        napi_get_reference_value(env, ns->recv, &recv);
        napi_get_reference_value(env, ns->fn, &fn);
        napi_get_reference_value(env, ns->recs_ref, &argv[0]);
        napi_get_reference_value(env, ns->data_ref, &argv[1]);
        argv[2] = make_int(env, (int64_t)n);
        napi_make_callback(env, ns->actx, recv, fn, 3, argv, NULL);
        napi_close_handle_scope(env, scope);
        if (n < ns->recs_cap) return; /* the queue is empty now */
    }
}

static void sub_execute(napi_env env, void *data)
{
    (void)env;
    sub_work *w = data;
    sl_tls *tls = NULL;
    if (connect_prepare(w->cw, &tls)) return;
    w->cw->rc = sl_subscriber_new(&w->s, &w->cw->opts, &w->so, w->cw->err, sizeof w->cw->err);
    sl_tls_free(tls);
}

static void sub_complete(napi_env env, napi_status status, void *data)
{
    sub_work *w = data;
    connect_work *cw = w->cw;
    napi_value cb, global, argv[2];
    napi_get_reference_value(env, cw->cb, &cb);
    napi_get_global(env, &global);
    int rc = status != napi_ok ? SL_ECANCELLED : cw->rc;
    const char *why = cw->err[0] ? cw->err : sl_strerror(rc);
    nsub *ns = NULL;
    uv_loop_t *loop = NULL;
    if (rc == 0) {
        ns = calloc(1, sizeof *ns);
        if (!ns) {
            rc = SL_ENOMEM;
            why = "out of memory";
        } else if (napi_get_uv_event_loop(env, &loop) != napi_ok ||
                   uv_poll_init(loop, &ns->poll, sl_subscriber_fd(w->s)) != 0) {
            rc = SL_ESTATE;
            why = "cannot watch the subscriber's descriptor";
            free(ns);
            ns = NULL;
        }
    }
    if (rc != 0) {
        sl_subscriber_free(w->s);
        napi_value m;
        napi_create_string_utf8(env, why, NAPI_AUTO_LENGTH, &m);
        argv[0] = make_int(env, rc);
        argv[1] = m;
        napi_call_function(env, global, cb, 2, argv, NULL);
        free_connect_work(env, cw);
        free(w);
        return;
    }
    ns->env = env;
    ns->s = w->s;
    ns->poll.data = ns;
    napi_value recv, fn, name;
    napi_get_reference_value(env, cw->recv, &recv);
    napi_get_reference_value(env, cw->fn, &fn);
    napi_create_reference(env, recv, 1, &ns->recv);
    napi_create_reference(env, fn, 1, &ns->fn);
    napi_create_string_utf8(env, "slotlane:pubsub", NAPI_AUTO_LENGTH, &name);
    napi_async_init(env, NULL, name, &ns->actx);
    ns->recs_cap = 256;
    ns->data_cap = 1 << 16;
    new_output_buffer(env, ns->recs_cap * sizeof(sl_message), &ns->recs, &ns->recs_ref);
    new_output_buffer(env, ns->data_cap, &ns->data, &ns->data_ref);
    napi_add_async_cleanup_hook(env, on_teardown, ns, &ns->cleanup);
    uv_poll_start(&ns->poll, UV_READABLE, on_readable);
    ns->polling = 1;
    napi_value ext;
    napi_create_external(env, ns, on_finalize, NULL, &ext);
    argv[0] = make_int(env, 0);
    argv[1] = ext;
    napi_call_function(env, global, cb, 2, argv, NULL);
    free_connect_work(env, cw);
    free(w);
}

/* subNew(connectOpts, {maxQueueBytes, healthCheckInterval}, recv, onRecords, cb):
 * cb(code, handleOrMessage); onRecords(recs, data, count) on recv per drained batch. */
static napi_value js_sub_new(napi_env env, napi_callback_info info)
{
    size_t argc = 5;
    napi_value argv[5];
    CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 5) {
        napi_throw_type_error(env, NULL, "slotlane addon: subNew(opts, subOpts, recv, onRecords, cb)");
        return NULL;
    }
    sub_work *w = calloc(1, sizeof *w);
    if (!w) {
        napi_throw_error(env, NULL, "out of memory");
        return NULL;
    }
    w->cw = connect_parse(env, argv[0]);
    if (!w->cw) {
        free(w);
        return NULL;
    }
    sl_subscriber_options so = SL_SUBSCRIBER_OPTIONS_INIT;
    napi_value v;
    double d = 0;
    napi_valuetype t;
    if (napi_get_named_property(env, argv[1], "maxQueueBytes", &v) == napi_ok && napi_typeof(env, v, &t) == napi_ok &&
        t == napi_number && napi_get_value_double(env, v, &d) == napi_ok && d > 0)
        so.max_queue_bytes = (uint64_t)d;
    if (napi_get_named_property(env, argv[1], "healthCheckInterval", &v) == napi_ok &&
        napi_typeof(env, v, &t) == napi_ok && t == napi_number && napi_get_value_double(env, v, &d) == napi_ok)
        so.health_check_interval_ms = d == 0 ? -1 : (int)d;
    w->so = so;
    napi_create_reference(env, argv[2], 1, &w->cw->recv);
    napi_create_reference(env, argv[3], 1, &w->cw->fn);
    napi_create_reference(env, argv[4], 1, &w->cw->cb);
    napi_value name;
    napi_create_string_utf8(env, "slotlane:subscriber", NAPI_AUTO_LENGTH, &name);
    if (napi_create_async_work(env, NULL, name, sub_execute, sub_complete, w, &w->cw->work) != napi_ok ||
        napi_queue_async_work(env, w->cw->work) != napi_ok) {
        free_connect_work(env, w->cw);
        free(w);
        throw_last(env, "napi_queue_async_work");
        return NULL;
    }
    return NULL;
}

/* subOp(handle, subscribe 0|1, kind, name Buffer | null) -> code */
static napi_value js_sub_op(napi_env env, napi_callback_info info)
{
    size_t argc = 4;
    napi_value argv[4];
    CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 4) {
        napi_throw_type_error(env, NULL, "slotlane addon: subOp(handle, subscribe, kind, name)");
        return NULL;
    }
    nsub *ns = get_sub(env, argv[0]);
    if (!ns) return NULL;
    if (ns->closing) return make_int(env, SL_ESTATE);
    int32_t sub = 0, kind = 0;
    CHECK(napi_get_value_int32(env, argv[1], &sub));
    CHECK(napi_get_value_int32(env, argv[2], &kind));
    napi_valuetype t;
    CHECK(napi_typeof(env, argv[3], &t));
    void *p = NULL;
    size_t len = 0;
    if (t != napi_null && t != napi_undefined) CHECK(napi_get_buffer_info(env, argv[3], &p, &len));
    if (p == NULL && t != napi_null && t != napi_undefined) p = (void *)""; /* an empty Buffer: the empty name */
    int rc = sub ? sl_subscriber_subscribe(ns->s, kind, p, len) : sl_subscriber_unsubscribe(ns->s, kind, p, len);
    return make_int(env, rc);
}

/* subPause(handle, paused): stop or resume watching the queue. */
static napi_value js_sub_pause(napi_env env, napi_callback_info info)
{
    size_t argc = 2;
    napi_value argv[2];
    CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    nsub *ns = get_sub(env, argv[0]);
    if (!ns) return NULL;
    bool paused = false;
    CHECK(napi_get_value_bool(env, argv[1], &paused));
    if (ns->closing) return NULL;
    if (paused && ns->polling) {
        uv_poll_stop(&ns->poll);
        ns->polling = 0;
    } else if (!paused && !ns->polling) {
        uv_poll_start(&ns->poll, UV_READABLE, on_readable);
        ns->polling = 1;
    }
    return NULL;
}

static napi_value js_sub_close(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1];
    CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    nsub *ns = get_sub(env, argv[0]);
    if (!ns) return NULL;
    start_close(ns);
    return NULL;
}

/* subStats(handle) -> [messages, dropped, connectionLosses, resubscribed, pings, refreshes,
 * confirmed, queuedBytes, bytesRead] */
static napi_value js_sub_stats(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1];
    CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    nsub *ns = get_sub(env, argv[0]);
    if (!ns) return NULL;
    sl_subscriber_stats st;
    memset(&st, 0, sizeof st);
    st.version = SL_SUBSCRIBER_STATS_VERSION;
    st.size = sizeof st;
    if (ns->s && !ns->freed) sl_subscriber_stats_get(ns->s, &st);
    const uint64_t f[] = {st.messages, st.dropped, st.connection_losses, st.resubscribed,
                          st.pings, st.refreshes, st.confirmed, st.queued_bytes, st.bytes_read};
    napi_value arr;
    CHECK(napi_create_array_with_length(env, 9, &arr));
    for (uint32_t i = 0; i < 9; i++) CHECK(napi_set_element(env, arr, i, make_int(env, (int64_t)f[i])));
    return arr;
}

/* subLayout() -> [sizeof, kind, flags, channel_len, pattern_len, payload_len, count, offset] */
static napi_value js_sub_layout(napi_env env, napi_callback_info info)
{
    (void)info;
    const int64_t f[] = {(int64_t)sizeof(sl_message),
                         (int64_t)offsetof(sl_message, kind),
                         (int64_t)offsetof(sl_message, flags),
                         (int64_t)offsetof(sl_message, channel_len),
                         (int64_t)offsetof(sl_message, pattern_len),
                         (int64_t)offsetof(sl_message, payload_len),
                         (int64_t)offsetof(sl_message, count),
                         (int64_t)offsetof(sl_message, offset)};
    napi_value arr;
    CHECK(napi_create_array_with_length(env, 8, &arr));
    for (uint32_t i = 0; i < 8; i++) CHECK(napi_set_element(env, arr, i, make_int(env, f[i])));
    return arr;
}

napi_status pubsub_init(napi_env env, napi_value exports)
{
    napi_property_descriptor d[] = {
        {"subNew", NULL, js_sub_new, NULL, NULL, NULL, napi_default, NULL},
        {"subOp", NULL, js_sub_op, NULL, NULL, NULL, napi_default, NULL},
        {"subPause", NULL, js_sub_pause, NULL, NULL, NULL, napi_default, NULL},
        {"subClose", NULL, js_sub_close, NULL, NULL, NULL, napi_default, NULL},
        {"subStats", NULL, js_sub_stats, NULL, NULL, NULL, napi_default, NULL},
        {"subLayout", NULL, js_sub_layout, NULL, NULL, NULL, napi_default, NULL},
    };
    return napi_define_properties(env, exports, sizeof d / sizeof d[0], d);
}
