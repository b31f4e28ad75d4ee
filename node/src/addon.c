/* slotlane Node addon: a thin N-API layer over libslotlane's async engine (slotlane_uv.h)
 * driven by Node's own libuv loop.
 *
 * The crossing is the batch ABI of DESIGN.md: JavaScript encodes a tick's commands as
 * concatenated RESP into one reused Buffer and makes one native call per flush (exec),
 * which appends them to a pooled sl_batch and starts sl_batch_exec_async. The completion
 * callback runs on the loop thread, copies the 24-byte reply records and the data into
 * the client's two reused output Buffers (growing them on SL_ETOOSMALL: the replies stay
 * in the batch, nothing is re-sent) and calls JavaScript once per batch with
 * napi_make_callback; JavaScript decodes the records with a DataView. No JS object is
 * built here per reply.
 *
 * Lifetime: the JS client holds an external (this struct). The receiver and the reply
 * function are held strongly only while a batch is in flight, so an idle client can be
 * collected; its finalizer detaches and frees. close() detaches at once (executions in
 * flight complete with SL_ECANCELLED records first). Env teardown (process exit, a Worker
 * ending) detaches in an async cleanup hook and frees from the detach callback. */
#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "addon.h"
#include "slotlane.h"
#include "slotlane_uv.h"

#define REC_SIZE 24

typedef struct nclient nclient;

/* options.onEvent: the core's on_event (sl_event_fn) runs on the thread running the
 * client's executions — connect's worker thread during discovery, Node's loop thread after
 * — from inside the library, where JavaScript must not run. The connect's events are kept
 * and delivered by connect_complete before it reports the outcome; each later one is handed
 * to a threadsafe function, which calls JavaScript on the loop thread later, from a callback
 * of its own. The threadsafe function is unref'd (it keeps no process alive) and may be
 * finalized by Node at env teardown before the core client is freed: `gone` (under mu) then
 * stops the core's later events. Freed by the last of: the tsfn's finalizer, the core
 * client's end (events_core_done, after sl_client_free: no event can come after). */
typedef struct nevent {
    struct nevent *next;
    int type;
    char addr[];
} nevent;

typedef struct nevents {
    uv_mutex_t mu;
    napi_threadsafe_function tsfn;
    int gone;                  /* the tsfn was finalized */
    int core_done;             /* the core client is freed */
    /* Until connect_complete: the connect's events (its worker thread) are kept here and
     * delivered there, before connect()'s outcome, in order. */
    int collecting;
    nevent *first, **last;
    napi_ref fn;               /* the JS function, for that delivery (then deleted) */
} nevents;

static void events_on_core(void *ctx, sl_event_type type, const char *addr)
{
    nevents *ev = ctx;
    size_t n = strlen(addr ? addr : "");
    uv_mutex_lock(&ev->mu);
    if (!ev->gone) {
        nevent *e = malloc(sizeof *e + n + 1);
        if (e) { /* out of memory: the event is lost (stats() still counts it) */
            e->next = NULL;
            e->type = (int)type;
            memcpy(e->addr, addr ? addr : "", n + 1);
            if (ev->collecting) {
                *ev->last = e;
                ev->last = &e->next;
            } else if (napi_call_threadsafe_function(ev->tsfn, e, napi_tsfn_nonblocking) != napi_ok) {
                free(e);
            }
        }
    }
    uv_mutex_unlock(&ev->mu);
}

/* On the loop thread: onEvent(type, addr) (the JS side names the type and catches what
 * the user's function throws). */
static void events_call_js(napi_env env, napi_value fn, void *context, void *data)
{
    (void)context;
    nevent *e = data;
    if (env && fn) {
        napi_handle_scope scope;
        if (napi_open_handle_scope(env, &scope) == napi_ok) {
            napi_value argv[2], undef;
            napi_get_undefined(env, &undef);
            napi_create_int32(env, e->type, &argv[0]);
            napi_create_string_utf8(env, e->addr, NAPI_AUTO_LENGTH, &argv[1]);
            if (napi_call_function(env, undef, fn, 2, argv, NULL) == napi_pending_exception) {
                napi_value exc;
                if (napi_get_and_clear_last_exception(env, &exc) == napi_ok) napi_fatal_exception(env, exc);
            }
            napi_close_handle_scope(env, scope);
        }
    }
    free(e);
}

/* connect_complete, before it reports the outcome: the connect's events, then every later
 * one goes through the threadsafe function. */
static void events_connected(napi_env env, nevents *ev, int call)
{
    if (!ev) return;
    uv_mutex_lock(&ev->mu);
    nevent *e = ev->first;
    ev->first = NULL;
    ev->last = &ev->first;
    ev->collecting = 0;
    uv_mutex_unlock(&ev->mu);
    napi_value fn = NULL;
    if (call && ev->fn) napi_get_reference_value(env, ev->fn, &fn);
    while (e) {
        nevent *next = e->next;
        events_call_js(env, fn, NULL, e); /* frees e */
        e = next;
    }
    if (ev->fn) napi_delete_reference(env, ev->fn);
    ev->fn = NULL;
}

static void events_finalize(napi_env env, void *data, void *hint)
{
    (void)env;
    (void)hint;
    nevents *ev = data;
    uv_mutex_lock(&ev->mu);
    ev->gone = 1;
    int done = ev->core_done;
    uv_mutex_unlock(&ev->mu);
    if (done) {
        uv_mutex_destroy(&ev->mu);
        free(ev);
    }
}

/* Makes the delivery of fn (a JS function) and points opts' on_event at it; NULL after
 * throwing. */
static nevents *events_new(napi_env env, napi_value fn, sl_client_options *opts)
{
    nevents *ev = calloc(1, sizeof *ev);
    if (!ev || uv_mutex_init(&ev->mu) != 0) {
        free(ev);
        napi_throw_error(env, NULL, "slotlane addon: out of memory");
        return NULL;
    }
    napi_value name;
    napi_create_string_utf8(env, "slotlane:event", NAPI_AUTO_LENGTH, &name);
    if (napi_create_threadsafe_function(env, fn, NULL, name, 0, 1, ev, events_finalize, NULL, events_call_js,
                                        &ev->tsfn) != napi_ok) {
        uv_mutex_destroy(&ev->mu);
        free(ev);
        throw_last(env, "napi_create_threadsafe_function");
        return NULL;
    }
    napi_unref_threadsafe_function(env, ev->tsfn);
    ev->collecting = 1;
    ev->last = &ev->first;
    napi_create_reference(env, fn, 1, &ev->fn);
    opts->on_event = events_on_core;
    opts->on_event_ctx = ev;
    return ev;
}

/* The core client of ev is freed (no more events): on the loop thread. */
static void events_core_done(napi_env env, nevents *ev)
{
    if (!ev) return;
    if (ev->collecting) events_connected(env, ev, 0); /* a connect that never completed: dropped */
    uv_mutex_lock(&ev->mu);
    ev->core_done = 1;
    int gone = ev->gone;
    uv_mutex_unlock(&ev->mu);
    if (gone) {
        uv_mutex_destroy(&ev->mu);
        free(ev);
    } else {
        napi_release_threadsafe_function(ev->tsfn, napi_tsfn_release); /* what is queued still comes; the finalizer frees ev */
    }
}

typedef struct nslot {
    sl_batch *b;
    nclient *nc;
    int index;
    int busy;
    void *body;                /* scriptExec: the script's copy, until the completion */
} nslot;

struct nclient {
    napi_env env;
    sl_client *c;
    nslot **slots;
    int nslots;
    int inflight;
    napi_ref recv;             /* the JS client: receiver of on-reply calls */
    napi_ref fn;               /* its reply function */
    napi_ref recs_ref, data_ref;
    uint8_t *recs, *data;
    size_t recs_cap, data_cap;
    napi_async_context actx;
    napi_async_cleanup_hook_handle cleanup;
    int detaching;             /* detach started */
    int detached;              /* detach done, core memory freed */
    int finalized;             /* the external was collected */
    int tearing;               /* env teardown: call no JS */
    sl_scan **scans;           /* scanNew's iterators by id (NULL: free), freed before the client */
    int nscans;
    nevents *events;           /* options.onEvent, or NULL: after the core client */
};

/* ------------------------------------------------------------------ helpers */

void throw_last(napi_env env, const char *what)
{
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (pending) return;
    const napi_extended_error_info *info = NULL;
    napi_get_last_error_info(env, &info);
    char msg[256];
    snprintf(msg, sizeof msg, "slotlane addon: %s failed: %s", what,
             info && info->error_message ? info->error_message : "unknown N-API error");
    napi_throw_error(env, NULL, msg);
}

napi_value make_int(napi_env env, int64_t v)
{
    napi_value r;
    napi_create_int64(env, v, &r);
    return r;
}

static nclient *get_client(napi_env env, napi_value v)
{
    napi_valuetype t;
    void *p = NULL;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_external ||
        napi_get_value_external(env, v, &p) != napi_ok || !p) {
        napi_throw_type_error(env, NULL, "slotlane addon: not a client handle");
        return NULL;
    }
    return p;
}

/* Copies a JS string argument (or returns NULL for undefined/null) into malloc'd memory. */
static int get_opt_string(napi_env env, napi_value v, char **out)
{
    napi_valuetype t;
    *out = NULL;
    if (napi_typeof(env, v, &t) != napi_ok) return -1;
    if (t == napi_undefined || t == napi_null) return 0;
    if (t != napi_string) return -1;
    size_t n = 0;
    if (napi_get_value_string_utf8(env, v, NULL, 0, &n) != napi_ok) return -1;
    *out = malloc(n + 1);
    if (!*out) return -1;
    napi_get_value_string_utf8(env, v, *out, n + 1, &n);
    return 0;
}

static int get_int_prop(napi_env env, napi_value obj, const char *name, int *out)
{
    napi_value v;
    napi_valuetype t;
    if (napi_get_named_property(env, obj, name, &v) != napi_ok) return -1;
    if (napi_typeof(env, v, &t) != napi_ok) return -1;
    if (t == napi_undefined) return 0;
    if (t != napi_number) return -1;
    int32_t i;
    napi_get_value_int32(env, v, &i);
    *out = i;
    return 0;
}

/* ------------------------------------------------------------------ lifetime */

static void free_core(nclient *nc)
{
    for (int i = 0; i < nc->nscans; i++) sl_scan_free(nc->scans[i]);
    free(nc->scans);
    nc->scans = NULL;
    nc->nscans = 0;
    for (int i = 0; i < nc->nslots; i++) {
        sl_batch_free(nc->slots[i]->b);
        free(nc->slots[i]);
    }
    free(nc->slots);
    nc->slots = NULL;
    nc->nslots = 0;
    sl_client_free(nc->c);
    nc->c = NULL;
    events_core_done(nc->env, nc->events);
    nc->events = NULL;
}

static void release_js(nclient *nc)
{
    napi_env env = nc->env;
    if (nc->recv) napi_delete_reference(env, nc->recv);
    if (nc->fn) napi_delete_reference(env, nc->fn);
    if (nc->recs_ref) napi_delete_reference(env, nc->recs_ref);
    if (nc->data_ref) napi_delete_reference(env, nc->data_ref);
    nc->recv = nc->fn = nc->recs_ref = nc->data_ref = NULL;
    nc->recs = nc->data = NULL;
    if (nc->actx) napi_async_destroy(env, nc->actx);
    nc->actx = NULL;
}

static void on_detached(sl_client *c, void *arg)
{
    (void)c;
    nclient *nc = arg;
    free_core(nc);
    nc->detached = 1;
    if (!nc->tearing) release_js(nc);
    if (nc->cleanup) {
        napi_async_cleanup_hook_handle h = nc->cleanup;
        nc->cleanup = NULL;
        napi_remove_async_cleanup_hook(h);
    }
    if (nc->finalized) free(nc);
}

static int start_detach(nclient *nc)
{
    if (nc->detaching) return 0;
    nc->detaching = 1;
    return sl_client_detach_loop(nc->c, on_detached, nc);
}

static void on_teardown(napi_async_cleanup_hook_handle h, void *arg)
{
    nclient *nc = arg;
    (void)h;
    nc->tearing = 1;
    if (nc->detached) {
        nc->cleanup = NULL;
        napi_remove_async_cleanup_hook(h);
        return;
    }
    if (nc->detaching) return; /* on_detached removes the hook */
    start_detach(nc);
}

static void on_finalize(napi_env env, void *data, void *hint)
{
    (void)env;
    (void)hint;
    nclient *nc = data;
    nc->finalized = 1;
    if (nc->detached) {
        free(nc);
        return;
    }
    if (!nc->detaching) start_detach(nc);
    /* on_detached frees nc */
}

/* ------------------------------------------------------------------ connect */

void free_connect_work(napi_env env, connect_work *w)
{
    if (w->cb) napi_delete_reference(env, w->cb);
    if (w->recv) napi_delete_reference(env, w->recv);
    if (w->fn) napi_delete_reference(env, w->fn);
    if (w->work) napi_delete_async_work(env, w->work);
    sl_client_free(w->client); /* (NULL unless a failed connect left it) before its events */
    events_core_done(env, w->events);
    free(w->url);
    free(w->username);
    free(w->password);
    free(w->tls_ca);
    free(w->tls_cert);
    free(w->tls_key);
    free(w->tls_servername);
    free(w);
}

int connect_prepare(connect_work *w, sl_tls **tlsp)
{
    *tlsp = NULL;
    w->opts.url = w->url;
    w->opts.username = w->username;
    w->opts.password = w->password;
    w->err[0] = 0;
    sl_tls *tls = NULL;
    if (w->tls_on) { /* PEM text, parsed here off the JS thread; the client takes its own reference */
        sl_tls_options t = SL_TLS_OPTIONS_INIT;
        t.ca_pem = w->tls_ca;
        t.cert_pem = w->tls_cert;
        t.key_pem = w->tls_key;
        t.server_name = w->tls_servername;
        t.verify = (sl_tls_verify)w->tls_verify;
        w->rc = sl_tls_new(&tls, &t, w->err, sizeof w->err);
        if (w->rc) return w->rc;
        w->opts.tls = tls;
    }
    *tlsp = tls;
    return 0;
}

static void connect_execute(napi_env env, void *data)
{
    (void)env;
    connect_work *w = data;
    sl_tls *tls = NULL;
    if (connect_prepare(w, &tls)) return;
    w->rc = sl_client_new(&w->client, &w->opts, w->err, sizeof w->err);
    sl_tls_free(tls);
}

napi_value new_output_buffer(napi_env env, size_t cap, uint8_t **ptr, napi_ref *ref)
{
    napi_value buf;
    void *p = NULL;
    if (napi_create_buffer(env, cap, &p, &buf) != napi_ok) return NULL;
    if (*ref) napi_delete_reference(env, *ref);
    if (napi_create_reference(env, buf, 1, ref) != napi_ok) return NULL;
    *ptr = p;
    return buf;
}

static void connect_complete(napi_env env, napi_status status, void *data)
{
    connect_work *w = data;
    events_connected(env, w->events, status == napi_ok); /* the connect's events come first */
    napi_value cb, global, argv[3];
    napi_get_reference_value(env, w->cb, &cb);
    napi_get_global(env, &global);
    napi_get_undefined(env, &argv[1]);
    napi_get_undefined(env, &argv[2]);
    if (status != napi_ok || w->rc != 0) {
        sl_client_free(w->client);
        w->client = NULL;
        char msg[600];
        snprintf(msg, sizeof msg, "%s", w->rc ? (w->err[0] ? w->err : sl_strerror(w->rc)) : "cancelled");
        napi_value m;
        napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &m);
        argv[0] = make_int(env, w->rc ? w->rc : SL_ECANCELLED);
        argv[1] = m;
        napi_call_function(env, global, cb, 2, argv, NULL);
        free_connect_work(env, w);
        return;
    }
    nclient *nc = calloc(1, sizeof *nc);
    uv_loop_t *loop = NULL;
    int rc = nc ? 0 : SL_ENOMEM;
    if (rc == 0 && napi_get_uv_event_loop(env, &loop) != napi_ok) rc = SL_ESTATE;
    if (rc == 0) rc = sl_client_attach_loop(w->client, loop);
    if (rc != 0) {
        char msg[300];
        snprintf(msg, sizeof msg, "attaching to the event loop failed: %s",
                 rc == SL_ENOMEM ? sl_strerror(rc) : sl_client_errmsg(w->client));
        sl_client_free(w->client);
        w->client = NULL;
        free(nc);
        napi_value m;
        napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &m);
        argv[0] = make_int(env, rc);
        argv[1] = m;
        napi_call_function(env, global, cb, 2, argv, NULL);
        free_connect_work(env, w);
        return;
    }
    nc->env = env;
    nc->c = w->client;
    w->client = NULL;
    nc->events = w->events;
    w->events = NULL;
    /* weak until a batch is in flight */
    napi_value recv, fn, name;
    napi_get_reference_value(env, w->recv, &recv);
    napi_get_reference_value(env, w->fn, &fn);
    napi_create_reference(env, recv, 0, &nc->recv);
    napi_create_reference(env, fn, 0, &nc->fn);
    napi_create_string_utf8(env, "slotlane:batch", NAPI_AUTO_LENGTH, &name);
    napi_async_init(env, NULL, name, &nc->actx);
    napi_value recs = new_output_buffer(env, 64 * REC_SIZE, &nc->recs, &nc->recs_ref);
    napi_value dat = new_output_buffer(env, 4096, &nc->data, &nc->data_ref);
    nc->recs_cap = 64 * REC_SIZE;
    nc->data_cap = 4096;
    napi_add_async_cleanup_hook(env, on_teardown, nc, &nc->cleanup);
    napi_value ext;
    napi_create_external(env, nc, on_finalize, NULL, &ext);
    (void)recs;
    (void)dat;
    argv[0] = make_int(env, 0);
    argv[1] = ext;
    argv[2] = make_int(env, sl_client_mode(nc->c));
    napi_call_function(env, global, cb, 3, argv, NULL);
    free_connect_work(env, w);
}

/* connect(opts, recv, onReply, cb): opts {url, mode, username, password, db, resp,
 * connectTimeout, commandTimeout, maxRedirects, readFrom (sl_read_from), retryWrites (0/1),
 * tls, onEvent (js_connect: a function(type, addr))}; cb(code, handleOrMessage, mode). */
connect_work *connect_parse(napi_env env, napi_value opts)
{
    napi_value argv[1] = {opts};
    connect_work *w = calloc(1, sizeof *w);
    if (!w) {
        napi_throw_error(env, NULL, "out of memory");
        return NULL;
    }
    sl_client_options_init(&w->opts, SL_CLIENT_OPTIONS_VERSION);
    napi_value v;
    int bad = 0;
    napi_get_named_property(env, argv[0], "url", &v);
    bad |= get_opt_string(env, v, &w->url);
    napi_get_named_property(env, argv[0], "username", &v);
    bad |= get_opt_string(env, v, &w->username);
    napi_get_named_property(env, argv[0], "password", &v);
    bad |= get_opt_string(env, v, &w->password);
    int mode = 0;
    bad |= get_int_prop(env, argv[0], "mode", &mode);
    w->opts.mode = (sl_mode)mode;
    bad |= get_int_prop(env, argv[0], "db", &w->opts.db);
    bad |= get_int_prop(env, argv[0], "resp", &w->opts.resp_version);
    bad |= get_int_prop(env, argv[0], "connectTimeout", &w->opts.connect_timeout_ms);
    bad |= get_int_prop(env, argv[0], "commandTimeout", &w->opts.command_timeout_ms);
    bad |= get_int_prop(env, argv[0], "maxRedirects", &w->opts.max_redirects);
    int read_from = 0, retry_writes = 0;
    bad |= get_int_prop(env, argv[0], "readFrom", &read_from);
    bad |= get_int_prop(env, argv[0], "retryWrites", &retry_writes);
    w->opts.read_from = (sl_read_from)read_from;
    w->opts.retry_writes = retry_writes;
    napi_value tls;
    napi_valuetype tt;
    napi_get_named_property(env, argv[0], "tls", &tls);
    if (napi_typeof(env, tls, &tt) == napi_ok && tt == napi_object) {
        w->tls_on = 1;
        napi_get_named_property(env, tls, "ca", &v);
        bad |= get_opt_string(env, v, &w->tls_ca);
        napi_get_named_property(env, tls, "cert", &v);
        bad |= get_opt_string(env, v, &w->tls_cert);
        napi_get_named_property(env, tls, "key", &v);
        bad |= get_opt_string(env, v, &w->tls_key);
        napi_get_named_property(env, tls, "servername", &v);
        bad |= get_opt_string(env, v, &w->tls_servername);
        bad |= get_int_prop(env, tls, "verify", &w->tls_verify);
    }
    if (bad) {
        free_connect_work(env, w);
        napi_throw_type_error(env, NULL, "slotlane addon: bad connect options");
        return NULL;
    }
    return w;
}

static napi_value js_connect(napi_env env, napi_callback_info info)
{
    size_t argc = 4;
    napi_value argv[4];
    CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 4) {
        napi_throw_type_error(env, NULL, "slotlane addon: connect(opts, recv, onReply, cb)");
        return NULL;
    }
    connect_work *w = connect_parse(env, argv[0]);
    if (!w) return NULL;
    napi_value name, on_event;
    napi_valuetype et = napi_undefined;
    if (napi_get_named_property(env, argv[0], "onEvent", &on_event) == napi_ok) napi_typeof(env, on_event, &et);
    if (et == napi_function && !(w->events = events_new(env, on_event, &w->opts))) {
        free_connect_work(env, w);
        return NULL;
    }
    napi_create_reference(env, argv[1], 1, &w->recv);
    napi_create_reference(env, argv[2], 1, &w->fn);
    napi_create_reference(env, argv[3], 1, &w->cb);
    napi_create_string_utf8(env, "slotlane:connect", NAPI_AUTO_LENGTH, &name);
    if (napi_create_async_work(env, NULL, name, connect_execute, connect_complete, w, &w->work) != napi_ok ||
        napi_queue_async_work(env, w->work) != napi_ok) {
        free_connect_work(env, w);
        throw_last(env, "napi_queue_async_work");
        return NULL;
    }
    return NULL;
}

/* ------------------------------------------------------------------ exec */

static void call_js(nclient *nc, int index, int status, const sl_sizes *sz)
{
    napi_env env = nc->env;
    napi_handle_scope scope;
    if (napi_open_handle_scope(env, &scope) != napi_ok) return;
    napi_value recv, fn, argv[6], result;
    napi_get_reference_value(env, nc->recv, &recv);
    napi_get_reference_value(env, nc->fn, &fn);
    napi_get_reference_value(env, nc->recs_ref, &argv[4]);
    napi_get_reference_value(env, nc->data_ref, &argv[5]);
    napi_create_int32(env, index, &argv[0]);
    napi_create_int32(env, status, &argv[1]);
    napi_create_double(env, (double)sz->records, &argv[2]);
    napi_create_double(env, (double)sz->commands, &argv[3]);
    if (--nc->inflight == 0) {
        uint32_t n;
        napi_reference_unref(env, nc->recv, &n);
        napi_reference_unref(env, nc->fn, &n);
    }
    if (recv && fn) {
        napi_status st = napi_make_callback(env, nc->actx, recv, fn, 6, argv, &result);
        if (st == napi_pending_exception) {
            napi_value exc;
            if (napi_get_and_clear_last_exception(env, &exc) == napi_ok) napi_fatal_exception(env, exc);
        }
    }
    napi_close_handle_scope(env, scope);
}

static void on_done(sl_batch *b, int status, const sl_sizes *sizes, void *arg)
{
    (void)sizes;
    nslot *s = arg;
    nclient *nc = s->nc;
    free(s->body);
    s->body = NULL;
    if (nc->tearing || !nc->recv) {
        s->busy = 0;
        nc->inflight--;
        return;
    }
    napi_env env = nc->env;
    sl_sizes sz;
    int rc = sl_batch_copy_out(b, nc->recs, nc->recs_cap, nc->data, nc->data_cap, &sz);
    if (rc == SL_ETOOSMALL) {
        napi_handle_scope scope;
        napi_open_handle_scope(env, &scope);
        size_t need_r = (size_t)sz.records * REC_SIZE, need_d = (size_t)sz.data;
        if (need_r > nc->recs_cap) {
            size_t cap = nc->recs_cap * 2;
            while (cap < need_r) cap *= 2;
            if (new_output_buffer(env, cap, &nc->recs, &nc->recs_ref)) nc->recs_cap = cap;
        }
        if (need_d > nc->data_cap) {
            size_t cap = nc->data_cap * 2;
            while (cap < need_d) cap *= 2;
            if (new_output_buffer(env, cap, &nc->data, &nc->data_ref)) nc->data_cap = cap;
        }
        napi_close_handle_scope(env, scope);
        rc = sl_batch_copy_out(b, nc->recs, nc->recs_cap, nc->data, nc->data_cap, &sz);
    }
    s->busy = 0;
    if (rc != 0) {
        /* could not grow the buffers: report the failure with no records */
        memset(&sz, 0, sizeof sz);
        status = rc;
    }
    call_js(nc, s->index, status, &sz);
}

static nslot *free_slot(nclient *nc)
{
    for (int i = 0; i < nc->nslots; i++)
        if (!nc->slots[i]->busy) return nc->slots[i];
    nslot **grown = realloc(nc->slots, sizeof *grown * (size_t)(nc->nslots + 1));
    if (!grown) return NULL;
    nc->slots = grown;
    nslot *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    if (sl_batch_new(nc->c, &s->b) != 0) {
        free(s);
        return NULL;
    }
    s->nc = nc;
    s->index = nc->nslots;
    nc->slots[nc->nslots++] = s;
    return s;
}

/* exec(handle, buf, len, count, timeout_ms[, segments]) -> slot index (>= 0) or a negative
 * SL_E code (then errmsg(handle) tells why). segments: a flat array of
 * [offset, len, count, routeKind, slot, node] per sl_batch_append call, for routed commands. */
static napi_value js_exec(napi_env env, napi_callback_info info)
{
    size_t argc = 6;
    napi_value argv[6];
    CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    nclient *nc = get_client(env, argv[0]);
    if (!nc) return NULL;
    if (!nc->c || nc->detaching) return make_int(env, SL_ESTATE);
    void *buf;
    size_t buflen;
    CHECK(napi_get_buffer_info(env, argv[1], &buf, &buflen));
    int64_t len, count;
    int32_t timeout;
    CHECK(napi_get_value_int64(env, argv[2], &len));
    CHECK(napi_get_value_int64(env, argv[3], &count));
    CHECK(napi_get_value_int32(env, argv[4], &timeout));
    if (len < 0 || (size_t)len > buflen || count <= 0) return make_int(env, SL_EINVAL);
    nslot *s = free_slot(nc);
    if (!s) return make_int(env, SL_ENOMEM);
    int rc = 0;
    napi_valuetype t = napi_undefined;
    if (argc >= 6) napi_typeof(env, argv[5], &t);
    if (t != napi_object) {
        rc = sl_batch_append(s->b, NULL, buf, (size_t)len, (size_t)count);
    } else {
        uint32_t n;
        CHECK(napi_get_array_length(env, argv[5], &n));
        for (uint32_t i = 0; i + 5 < n + 0 && rc == 0; i += 6) {
            napi_value e[6];
            for (uint32_t k = 0; k < 6; k++) CHECK(napi_get_element(env, argv[5], i + k, &e[k]));
            int64_t off, slen, scount;
            int32_t kind, slot;
            CHECK(napi_get_value_int64(env, e[0], &off));
            CHECK(napi_get_value_int64(env, e[1], &slen));
            CHECK(napi_get_value_int64(env, e[2], &scount));
            CHECK(napi_get_value_int32(env, e[3], &kind));
            CHECK(napi_get_value_int32(env, e[4], &slot));
            char node[300] = "";
            napi_valuetype nt;
            napi_typeof(env, e[5], &nt);
            if (nt == napi_string) {
                size_t nl;
                napi_get_value_string_utf8(env, e[5], node, sizeof node, &nl);
            }
            if (off < 0 || slen < 0 || (size_t)(off + slen) > (size_t)len) {
                rc = SL_EINVAL;
                break;
            }
            sl_route route = SL_ROUTE_INIT;
            route.kind = (sl_route_kind)kind;
            route.slot = slot;
            route.node = node;
            rc = sl_batch_append(s->b, kind < 0 ? NULL : &route, (const char *)buf + off, (size_t)slen,
                                 (size_t)scount);
        }
    }
    if (rc == 0) rc = sl_batch_exec_async(s->b, timeout, on_done, s);
    if (rc != 0) {
        sl_batch_reset(s->b);
        return make_int(env, rc);
    }
    s->busy = 1;
    if (nc->inflight++ == 0) {
        uint32_t n;
        napi_reference_ref(env, nc->recv, &n);
        napi_reference_ref(env, nc->fn, &n);
    }
    return make_int(env, s->index);
}

/* Marks slot s in flight before a start that may complete at once (a chain whose first
 * step needs no round trip calls back from inside its start): the completion then finds the
 * counts right. undo_start when the start failed. */
static void begin_start(napi_env env, nclient *nc, nslot *s)
{
    s->busy = 1;
    if (nc->inflight++ == 0) {
        uint32_t n;
        napi_reference_ref(env, nc->recv, &n);
        napi_reference_ref(env, nc->fn, &n);
    }
}

static void undo_start(napi_env env, nclient *nc, nslot *s)
{
    s->busy = 0;
    free(s->body);
    s->body = NULL;
    sl_batch_reset(s->b);
    if (--nc->inflight == 0) {
        uint32_t n;
        napi_reference_unref(env, nc->recv, &n);
        napi_reference_unref(env, nc->fn, &n);
    }
}

/* The scan of id, or NULL. */
static sl_scan *scan_of(nclient *nc, int32_t id)
{
    return nc->c && id >= 0 && id < nc->nscans ? nc->scans[id] : NULL;
}

/* The client and the scan id of a call's two arguments; NULL (an exception pending) when
 * the first is not a client. */
static nclient *client_and_id(napi_env env, napi_callback_info info, int32_t *id)
{
    size_t argc = 2;
    napi_value argv[2];
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok ||
        napi_get_value_int32(env, argv[1], id) != napi_ok) {
        throw_last(env, "scan arguments");
        return NULL;
    }
    return get_client(env, argv[0]);
}

/* scanNew(handle, match (Buffer or null), count, type (string or null)) -> an id (>= 0) or a
 * negative SL_E code (errmsg(handle) tells why). The scan lives until scanFree or the client. */
static napi_value js_scan_new(napi_env env, napi_callback_info info)
{
    size_t argc = 4;
    napi_value argv[4];
    CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    nclient *nc = get_client(env, argv[0]);
    if (!nc) return NULL;
    if (!nc->c || nc->detaching) return make_int(env, SL_ESTATE);
    sl_scan_options o = SL_SCAN_OPTIONS_INIT;
    napi_valuetype t;
    CHECK(napi_typeof(env, argv[1], &t));
    if (t == napi_object) {
        void *m;
        size_t ml;
        CHECK(napi_get_buffer_info(env, argv[1], &m, &ml));
        o.match = m;
        o.match_len = ml;
        if (ml == 0) o.match = "";
    }
    int32_t count;
    CHECK(napi_get_value_int32(env, argv[2], &count));
    o.count = count;
    char *type = NULL;
    if (get_opt_string(env, argv[3], &type) != 0) return make_int(env, SL_EINVAL);
    o.type = type;
    int id = 0;
    while (id < nc->nscans && nc->scans[id]) id++;
    if (id == nc->nscans) {
        sl_scan **grown = realloc(nc->scans, sizeof *grown * (size_t)(nc->nscans + 1));
        if (!grown) {
            free(type);
            return make_int(env, SL_ENOMEM);
        }
        nc->scans = grown;
        nc->scans[nc->nscans++] = NULL;
    }
    int rc = sl_scan_new(nc->c, &o, &nc->scans[id]);
    free(type);
    return make_int(env, rc ? rc : id);
}

/* scanNext(handle, id) -> the slot whose completion carries the page (one array reply), or a
 * negative SL_E code. A failed page completes with its code and no records:
 * scanErrmsg(handle, id) says why. */
static napi_value js_scan_next(napi_env env, napi_callback_info info)
{
    int32_t id;
    nclient *nc = client_and_id(env, info, &id);
    if (!nc) return NULL;
    sl_scan *scan = scan_of(nc, id);
    if (!scan || nc->detaching) return make_int(env, scan ? SL_ESTATE : SL_EINVAL);
    nslot *s = free_slot(nc);
    if (!s) return make_int(env, SL_ENOMEM);
    begin_start(env, nc, s);
    int rc = sl_scan_next_async(scan, s->b, 0, on_done, s);
    if (rc != 0) {
        undo_start(env, nc, s);
        return make_int(env, rc);
    }
    return make_int(env, s->index);
}

/* scanDone(handle, id): true once every slot has been scanned. */
static napi_value js_scan_done(napi_env env, napi_callback_info info)
{
    int32_t id;
    napi_value r;
    nclient *nc = client_and_id(env, info, &id);
    if (!nc) return NULL;
    CHECK(napi_get_boolean(env, sl_scan_done(scan_of(nc, id)) != 0, &r));
    return r;
}

static napi_value js_scan_errmsg(napi_env env, napi_callback_info info)
{
    int32_t id;
    napi_value r;
    nclient *nc = client_and_id(env, info, &id);
    if (!nc) return NULL;
    sl_scan *scan = scan_of(nc, id);
    CHECK(napi_create_string_utf8(env, scan ? sl_scan_errmsg(scan) : "the scan is closed", NAPI_AUTO_LENGTH, &r));
    return r;
}

/* scanFree(handle, id): not while a page of it is in flight (JS frees after the last). */
static napi_value js_scan_free(napi_env env, napi_callback_info info)
{
    int32_t id;
    nclient *nc = client_and_id(env, info, &id);
    if (nc && scan_of(nc, id)) {
        sl_scan_free(nc->scans[id]);
        nc->scans[id] = NULL;
    }
    return NULL;
}

/* scriptExec(handle, buf, len, body) -> slot index or a negative SL_E code: buf[0, len) is one
 * EVALSHA/EVALSHA_RO; a node that answers NOSCRIPT loads body (copied) and runs it once more
 * (sl_script_exec_async). The completion carries the one reply, as exec's. */
static napi_value js_script_exec(napi_env env, napi_callback_info info)
{
    size_t argc = 4;
    napi_value argv[4];
    CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    nclient *nc = get_client(env, argv[0]);
    if (!nc) return NULL;
    if (!nc->c || nc->detaching) return make_int(env, SL_ESTATE);
    void *buf, *body;
    size_t buflen, body_len;
    int64_t len;
    CHECK(napi_get_buffer_info(env, argv[1], &buf, &buflen));
    CHECK(napi_get_value_int64(env, argv[2], &len));
    CHECK(napi_get_buffer_info(env, argv[3], &body, &body_len));
    if (len <= 0 || (size_t)len > buflen) return make_int(env, SL_EINVAL);
    nslot *s = free_slot(nc);
    if (!s) return make_int(env, SL_ENOMEM);
    begin_start(env, nc, s);
    s->body = malloc(body_len ? body_len : 1);
    int rc = s->body ? sl_batch_append(s->b, NULL, buf, (size_t)len, 1) : SL_ENOMEM;
    if (rc == 0) {
        memcpy(s->body, body, body_len);
        rc = sl_script_exec_async(s->b, s->body, body_len, 0, on_done, s);
    }
    if (rc != 0) {
        undo_start(env, nc, s);
        return make_int(env, rc);
    }
    return make_int(env, s->index);
}

/* cancel(handle, slot): cancels that slot's batch in flight (sl_batch_cancel: its commands
 * get cancelled records, the replies it is still owed are dropped on their connections, the
 * other batches are untouched); its completion then comes as usual. 0, or SL_EINVAL for a
 * slot that is not in flight. */
static napi_value js_cancel(napi_env env, napi_callback_info info)
{
    size_t argc = 2;
    napi_value argv[2];
    CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    nclient *nc = get_client(env, argv[0]);
    if (!nc) return NULL;
    int32_t idx;
    CHECK(napi_get_value_int32(env, argv[1], &idx));
    if (!nc->c || idx < 0 || idx >= nc->nslots || !nc->slots[idx]->busy) return make_int(env, SL_EINVAL);
    return make_int(env, sl_batch_cancel(nc->slots[idx]->b));
}

/* ------------------------------------------------------------------ the rest */

static napi_value js_close(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1];
    CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    nclient *nc = get_client(env, argv[0]);
    if (!nc) return NULL;
    if (nc->detaching || !nc->c) return make_int(env, 0);
    return make_int(env, start_detach(nc));
}

static napi_value js_errmsg(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1], r;
    CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    nclient *nc = get_client(env, argv[0]);
    if (!nc) return NULL;
    CHECK(napi_create_string_utf8(env, nc->c ? sl_client_errmsg(nc->c) : "client is closed", NAPI_AUTO_LENGTH, &r));
    return r;
}

/* The open client of a call's one argument; NULL (an exception pending) when the argument is
 * not a client or the client is closed. */
static nclient *open_client_arg(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1];
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) {
        throw_last(env, "napi_get_cb_info");
        return NULL;
    }
    nclient *nc = get_client(env, argv[0]);
    if (nc && !nc->c) {
        napi_throw_error(env, NULL, "client is closed");
        return NULL;
    }
    return nc;
}

static napi_value js_stats(napi_env env, napi_callback_info info)
{
    napi_value arr;
    nclient *nc = open_client_arg(env, info);
    if (!nc) return NULL;
    sl_stats st;
    memset(&st, 0, sizeof st);
    st.version = SL_STATS_VERSION;
    st.size = sizeof st;
    sl_client_stats(nc->c, &st);
    const uint64_t f[] = {st.commands, st.moved, st.ask, st.tryagain, st.refreshes,
                          st.connects, st.reconnects, st.bytes_written, st.bytes_read, st.nodes,
                          st.failovers, st.refreshes_moved, st.refreshes_lost, st.retries,
                          st.replica_reads, st.nodes_down};
    const uint32_t nf = (uint32_t)(sizeof f / sizeof f[0]);
    CHECK(napi_create_array_with_length(env, nf, &arr));
    for (uint32_t i = 0; i < nf; i++) {
        napi_value v;
        CHECK(napi_create_double(env, (double)f[i], &v));
        CHECK(napi_set_element(env, arr, i, v));
    }
    return arr;
}

/* The node list (sl_client_nodes): an array of [addr, isPrimary, primaryIndex, [first, last, ...]].
 * No I/O: the topology as the client knows it. */
static napi_value js_nodes(napi_env env, napi_callback_info info)
{
    napi_value arr;
    nclient *nc = open_client_arg(env, info);
    if (!nc) return NULL;
    sl_node_info *nodes;
    size_t n;
    if (sl_client_nodes(nc->c, &nodes, &n) != 0) {
        napi_throw_error(env, NULL, sl_client_errmsg(nc->c));
        return NULL;
    }
    napi_status st = napi_create_array_with_length(env, n, &arr);
    for (size_t i = 0; st == napi_ok && i < n; i++) {
        napi_value e, v, ranges;
        st = napi_create_array_with_length(env, 4, &e);
        if (st == napi_ok) st = napi_create_string_utf8(env, nodes[i].addr, NAPI_AUTO_LENGTH, &v);
        if (st == napi_ok) st = napi_set_element(env, e, 0, v);
        if (st == napi_ok) st = napi_get_boolean(env, nodes[i].is_primary != 0, &v);
        if (st == napi_ok) st = napi_set_element(env, e, 1, v);
        if (st == napi_ok) st = napi_create_int32(env, nodes[i].primary, &v);
        if (st == napi_ok) st = napi_set_element(env, e, 2, v);
        if (st == napi_ok) st = napi_create_array_with_length(env, 2 * nodes[i].nranges, &ranges);
        for (size_t k = 0; st == napi_ok && k < 2 * nodes[i].nranges; k++) {
            if ((st = napi_create_uint32(env, nodes[i].ranges[k], &v)) == napi_ok)
                st = napi_set_element(env, ranges, (uint32_t)k, v);
        }
        if (st == napi_ok) st = napi_set_element(env, e, 3, ranges);
        if (st == napi_ok) st = napi_set_element(env, arr, (uint32_t)i, e);
    }
    sl_client_nodes_free(nc->c, nodes);
    if (st != napi_ok) {
        napi_throw_error(env, NULL, "slotlane: building the node list failed");
        return NULL;
    }
    return arr;
}

static napi_value js_key_slot(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1];
    CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    void *p;
    size_t n;
    CHECK(napi_get_buffer_info(env, argv[0], &p, &n));
    return make_int(env, sl_key_slot(p, n));
}

/* commandBlocking(args) -> [blocks (1/0), byArgs (1/0)]: the core's classification of a
 * command (sl_command_blocking). args: the command's array (strings, Buffers/Uint8Arrays;
 * numbers and bigints as their decimal text; anything else counts as an empty argument:
 * the encoder refuses it afterwards). A negative code in [0] when the core refuses. */
static napi_value js_command_blocking(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1], arr;
    CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    bool is_array = false;
    if (argc < 1 || napi_is_array(env, argv[0], &is_array) != napi_ok || !is_array) {
        napi_throw_type_error(env, NULL, "slotlane addon: commandBlocking(args)");
        return NULL;
    }
    uint32_t n;
    CHECK(napi_get_array_length(env, argv[0], &n));
    if (n == 0 || n > 0x7fffffff) {
        napi_throw_range_error(env, NULL, "slotlane addon: commandBlocking: bad argument count");
        return NULL;
    }
    /* Strings are copied into one block; Buffers are read in place (no JS runs meanwhile). */
    const char **ptrs = calloc(n, sizeof *ptrs);
    size_t *lens = calloc(n, sizeof *lens);
    char *text = NULL;
    size_t text_len = 0, text_cap = 0;
    size_t *text_off = calloc(n, sizeof *text_off); /* (size_t)-1: not in text */
    int rc = ptrs && lens && text_off ? 0 : SL_ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        napi_value v;
        napi_valuetype t;
        bool typed = false;
        text_off[i] = (size_t)-1;
        if (napi_get_element(env, argv[0], i, &v) != napi_ok || napi_typeof(env, v, &t) != napi_ok) {
            rc = SL_EINVAL;
            break;
        }
        if (t == napi_object && napi_is_typedarray(env, v, &typed) == napi_ok && typed) {
            napi_typedarray_type tt;
            size_t len;
            void *data;
            if (napi_get_typedarray_info(env, v, &tt, &len, &data, NULL, NULL) != napi_ok || tt != napi_uint8_array) {
                rc = SL_EINVAL;
                break;
            }
            ptrs[i] = len ? data : "";
            lens[i] = len;
            continue;
        }
        if (t == napi_number || t == napi_bigint) {
            if (napi_coerce_to_string(env, v, &v) != napi_ok) {
                rc = SL_EINVAL;
                break;
            }
            t = napi_string;
        }
        if (t != napi_string) {
            ptrs[i] = "";
            lens[i] = 0;
            continue;
        }
        size_t len = 0;
        if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) {
            rc = SL_EINVAL;
            break;
        }
        if (text_len + len + 1 > text_cap) {
            size_t cap = text_cap ? text_cap * 2 : 256;
            while (cap < text_len + len + 1) cap *= 2;
            char *grown = realloc(text, cap);
            if (!grown) {
                rc = SL_ENOMEM;
                break;
            }
            text = grown;
            text_cap = cap;
        }
        napi_get_value_string_utf8(env, v, text + text_len, len + 1, &len);
        text_off[i] = text_len;
        lens[i] = len;
        text_len += len + 1;
    }
    int by_args = 0;
    if (rc == 0) {
        for (uint32_t i = 0; i < n; i++)
            if (text_off[i] != (size_t)-1) ptrs[i] = text + text_off[i];
        rc = sl_command_blocking((int)n, ptrs, lens, NULL, &by_args);
    }
    free(ptrs);
    free(lens);
    free(text_off);
    free(text);
    CHECK(napi_create_array_with_length(env, 2, &arr));
    CHECK(napi_set_element(env, arr, 0, make_int(env, rc)));
    CHECK(napi_set_element(env, arr, 1, make_int(env, by_args)));
    return arr;
}

static napi_value js_version(napi_env env, napi_callback_info info)
{
    (void)info;
    napi_value r;
    CHECK(napi_create_string_utf8(env, sl_version(), NAPI_AUTO_LENGTH, &r));
    return r;
}

static napi_value js_strerror(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1], r;
    int32_t code;
    CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    CHECK(napi_get_value_int32(env, argv[0], &code));
    CHECK(napi_create_string_utf8(env, sl_strerror(code), NAPI_AUTO_LENGTH, &r));
    return r;
}

/* Layout facts JS checks against its decoder at load time. */
static napi_value js_layout(napi_env env, napi_callback_info info)
{
    (void)info;
    napi_value arr;
    const int64_t f[] = {(int64_t)sizeof(sl_reply), (int64_t)offsetof(sl_reply, type),
                         (int64_t)offsetof(sl_reply, flags), (int64_t)offsetof(sl_reply, len),
                         (int64_t)offsetof(sl_reply, value), (int64_t)offsetof(sl_reply, offset)};
    CHECK(napi_create_array_with_length(env, 6, &arr));
    for (uint32_t i = 0; i < 6; i++) CHECK(napi_set_element(env, arr, i, make_int(env, f[i])));
    return arr;
}

static napi_value init(napi_env env, napi_value exports)
{
    napi_property_descriptor d[] = {
        {"connect", NULL, js_connect, NULL, NULL, NULL, napi_default, NULL},
        {"exec", NULL, js_exec, NULL, NULL, NULL, napi_default, NULL},
        {"close", NULL, js_close, NULL, NULL, NULL, napi_default, NULL},
        {"cancel", NULL, js_cancel, NULL, NULL, NULL, napi_default, NULL},
        {"errmsg", NULL, js_errmsg, NULL, NULL, NULL, napi_default, NULL},
        {"stats", NULL, js_stats, NULL, NULL, NULL, napi_default, NULL},
        {"nodes", NULL, js_nodes, NULL, NULL, NULL, napi_default, NULL},
        {"scanNew", NULL, js_scan_new, NULL, NULL, NULL, napi_default, NULL},
        {"scanNext", NULL, js_scan_next, NULL, NULL, NULL, napi_default, NULL},
        {"scanDone", NULL, js_scan_done, NULL, NULL, NULL, napi_default, NULL},
        {"scanErrmsg", NULL, js_scan_errmsg, NULL, NULL, NULL, napi_default, NULL},
        {"scanFree", NULL, js_scan_free, NULL, NULL, NULL, napi_default, NULL},
        {"scriptExec", NULL, js_script_exec, NULL, NULL, NULL, napi_default, NULL},
        {"keySlot", NULL, js_key_slot, NULL, NULL, NULL, napi_default, NULL},
        {"commandBlocking", NULL, js_command_blocking, NULL, NULL, NULL, napi_default, NULL},
        {"version", NULL, js_version, NULL, NULL, NULL, napi_default, NULL},
        {"strerror", NULL, js_strerror, NULL, NULL, NULL, napi_default, NULL},
        {"layout", NULL, js_layout, NULL, NULL, NULL, napi_default, NULL},
    };
    CHECK(napi_define_properties(env, exports, sizeof d / sizeof d[0], d));
    if (pubsub_init(env, exports) != napi_ok) return NULL;
    return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
