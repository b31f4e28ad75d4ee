//! Raw FFI declarations for `libslotlane`, the C core of the slotlane Redis-protocol
//! client: one declaration per item of `core/include/slotlane.h`, with the C names.
//!
//! The declarations are written by hand; `tests/abi.rs` compiles a C file generated
//! from them against the real header (every signature, constant, struct size and
//! field offset), so they cannot drift. The documentation of each item is the comment
//! in `slotlane.h`. Use the safe crate `slotlane` unless you need the C API itself.
#![allow(non_camel_case_types)]
#![no_std]

use core::ffi::{c_char, c_int, c_uint, c_void};

// ------------------------------------------------------------------ version
pub const SL_VERSION_MAJOR: c_int = 0;
pub const SL_VERSION_MINOR: c_int = 1;
pub const SL_VERSION_PATCH: c_int = 0;

// ------------------------------------------------------------------- errors
/// `sl_error_code` (an `int`-sized C enum).
pub type sl_error_code = c_int;
pub const SL_OK: sl_error_code = 0;
pub const SL_EINVAL: sl_error_code = -1;
pub const SL_ENOMEM: sl_error_code = -2;
pub const SL_EIO: sl_error_code = -3;
pub const SL_ETIMEOUT: sl_error_code = -4;
pub const SL_EPROTO: sl_error_code = -5;
pub const SL_ESERVER: sl_error_code = -6;
pub const SL_EREDIRECT: sl_error_code = -7;
pub const SL_ECANCELLED: sl_error_code = -8;
pub const SL_ECLUSTER: sl_error_code = -9;
pub const SL_ETOOSMALL: sl_error_code = -10;
pub const SL_EUNSUPPORTED: sl_error_code = -11;
pub const SL_ESTATE: sl_error_code = -12;
pub const SL_EBUSY: sl_error_code = -13;
pub const SL_EFORK: sl_error_code = -14;
pub const SL_ETLS: sl_error_code = -15;
pub const SL_EBLOCKING: sl_error_code = -24;
pub const SL_EWATCHMOVED: sl_error_code = -25;
pub const SL_EABORTED: sl_error_code = -26;

// ---------------------------------------------------------------- allocator
pub const SL_ALLOCATOR_VERSION: c_uint = 1;

/// Set `version` to `SL_ALLOCATOR_VERSION` and `size` to `size_of::<sl_allocator>()`
/// (the core refuses anything else with `SL_EINVAL`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sl_allocator {
    pub version: c_uint,
    pub size: c_uint,
    pub malloc_fn: Option<unsafe extern "C" fn(size: usize, ctx: *mut c_void) -> *mut c_void>,
    pub realloc_fn: Option<
        unsafe extern "C" fn(ptr: *mut c_void, size: usize, ctx: *mut c_void) -> *mut c_void,
    >,
    pub free_fn: Option<unsafe extern "C" fn(ptr: *mut c_void, ctx: *mut c_void)>,
    pub ctx: *mut c_void,
}

// ------------------------------------------------------------------ options
/// `sl_mode` (an `int`-sized C enum).
pub type sl_mode = c_int;
pub const SL_MODE_AUTO: sl_mode = 0;
pub const SL_MODE_PLAIN: sl_mode = 1;
pub const SL_MODE_CLUSTER: sl_mode = 2;

// ---------------------------------------------------------------------- TLS
/// Opaque: `sl_tls` (a shared, refcounted TLS configuration; any thread).
#[repr(C)]
pub struct sl_tls {
    _private: [u8; 0],
}
/// `sl_tls_verify` (an `int`-sized C enum).
pub type sl_tls_verify = c_int;
pub const SL_TLS_VERIFY_FULL: sl_tls_verify = 0;
pub const SL_TLS_VERIFY_CHAIN: sl_tls_verify = 1;
pub const SL_TLS_VERIFY_NONE_INSECURE: sl_tls_verify = 2;
/// `sl_tls_node_names` (an `int`-sized C enum).
pub type sl_tls_node_names = c_int;
pub const SL_TLS_NODES_ADDRESS: sl_tls_node_names = 0;
pub const SL_TLS_NODES_HOSTNAME: sl_tls_node_names = 1;
pub const SL_TLS_NODES_SERVER_NAME: sl_tls_node_names = 2;
pub const SL_TLS_NODES_CHAIN_ONLY: sl_tls_node_names = 3;

pub const SL_TLS_OPTIONS_VERSION: c_uint = 1;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sl_tls_options {
    pub version: c_uint,
    pub size: c_uint,
    pub ca_file: *const c_char,
    pub ca_dir: *const c_char,
    pub ca_pem: *const c_char,
    pub ca_pem_len: usize,
    pub system_roots: c_int,
    pub cert_file: *const c_char,
    pub key_file: *const c_char,
    pub cert_pem: *const c_char,
    pub cert_pem_len: usize,
    pub key_pem: *const c_char,
    pub key_pem_len: usize,
    pub verify: sl_tls_verify,
    pub server_name: *const c_char,
    pub node_names: sl_tls_node_names,
}

/// `sl_read_from` (an `int`-sized C enum): where read-only commands go.
pub type sl_read_from = c_int;
pub const SL_READ_PRIMARY: sl_read_from = 0;
pub const SL_READ_PREFER_REPLICA: sl_read_from = 1;
pub const SL_READ_REPLICAS_ROUND_ROBIN: sl_read_from = 2;

/// `sl_event_type` (an `int`-sized C enum): what the event callback reports.
pub type sl_event_type = c_int;
pub const SL_EVENT_TOPOLOGY_CHANGED: sl_event_type = 1;
pub const SL_EVENT_NODE_DOWN: sl_event_type = 2;
pub const SL_EVENT_NODE_UP: sl_event_type = 3;
pub const SL_EVENT_FAILOVER: sl_event_type = 4;

/// `sl_event_fn`: called on the thread running the client's executions; must not call
/// the client (slotlane.h).
pub type sl_event_fn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, type_: sl_event_type, addr: *const c_char)>;

pub const SL_CLIENT_OPTIONS_VERSION: c_uint = 4;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sl_client_options {
    pub version: c_uint,
    pub size: c_uint,
    pub url: *const c_char,
    pub mode: sl_mode,
    pub username: *const c_char,
    pub password: *const c_char,
    pub db: c_int,
    pub resp_version: c_int,
    pub connect_timeout_ms: c_int,
    pub command_timeout_ms: c_int,
    pub max_redirects: c_int,
    pub refresh_interval_ms: c_int,
    pub reconnect_min_ms: c_int,
    pub reconnect_max_ms: c_int,
    pub allocator: *const sl_allocator,
    pub max_bulk_len: u64,
    pub max_aggregate_len: u64,
    pub max_depth: c_int,
    pub max_inflight_batches: c_uint,
    pub max_inflight_bytes: u64,
    pub tls: *mut sl_tls,
    pub blocking_grace_ms: c_int,
    pub lease_idle_max: c_int,
    pub read_from: sl_read_from,
    pub retry_writes: c_int,
    pub on_event: sl_event_fn,
    pub on_event_ctx: *mut c_void,
}

// ------------------------------------------------------------------- client
/// Opaque: `sl_client`.
#[repr(C)]
pub struct sl_client {
    _private: [u8; 0],
    _not_send_sync: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}
/// Opaque: `sl_batch`.
#[repr(C)]
pub struct sl_batch {
    _private: [u8; 0],
    _not_send_sync: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

pub const SL_STATS_VERSION: c_uint = 2;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct sl_stats {
    pub version: c_uint,
    pub size: c_uint,
    pub commands: u64,
    pub moved: u64,
    pub ask: u64,
    pub tryagain: u64,
    pub refreshes: u64,
    pub connects: u64,
    pub reconnects: u64,
    pub bytes_written: u64,
    pub bytes_read: u64,
    pub nodes: u64,
    pub failovers: u64,
    pub refreshes_moved: u64,
    pub refreshes_lost: u64,
    pub retries: u64,
    pub replica_reads: u64,
    pub nodes_down: u64,
}

// ------------------------------------------------------------------ routing
/// `sl_route_kind` (an `int`-sized C enum).
pub type sl_route_kind = c_int;
pub const SL_ROUTE_KEY: sl_route_kind = 0;
pub const SL_ROUTE_ALL_PRIMARIES: sl_route_kind = 1;
pub const SL_ROUTE_NODE: sl_route_kind = 2;
pub const SL_ROUTE_SLOT: sl_route_kind = 3;
pub const SL_ROUTE_RANDOM: sl_route_kind = 4;

pub const SL_ROUTE_VERSION: c_uint = 1;

/// Set `version` to `SL_ROUTE_VERSION` and `size` to `size_of::<sl_route>()` (as
/// `SL_ROUTE_INIT` does; the core refuses anything else with `SL_EINVAL`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sl_route {
    pub version: c_uint,
    pub size: c_uint,
    pub kind: sl_route_kind,
    pub slot: c_int,
    pub node: *const c_char,
}

// ---------------------------------------------------------------- the node list
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sl_node_info {
    pub addr: *const c_char,
    pub is_primary: c_int,
    pub primary: c_int,
    pub nranges: usize,
    pub ranges: *const u16,
}

// ---------------------------------------------------------------- cluster-wide SCAN
pub const SL_SCAN_OPTIONS_VERSION: c_uint = 1;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sl_scan_options {
    pub version: c_uint,
    pub size: c_uint,
    pub match_: *const c_char,
    pub match_len: usize,
    pub type_: *const c_char,
    pub count: c_int,
}

/// Opaque: `sl_session`.
#[repr(C)]
pub struct sl_session {
    _private: [u8; 0],
    _not_send_sync: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

/// Opaque: `sl_scan`.
#[repr(C)]
pub struct sl_scan {
    _private: [u8; 0],
    _not_send_sync: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

// ---------------------------------------------------------------- the batch
/// `sl_reply_type` (an `int`-sized C enum; stored as `u8` in `sl_reply::type_`).
pub type sl_reply_type = c_int;
pub const SL_REPLY_STRING: sl_reply_type = 1;
pub const SL_REPLY_STATUS: sl_reply_type = 2;
pub const SL_REPLY_ERROR: sl_reply_type = 3;
pub const SL_REPLY_INTEGER: sl_reply_type = 4;
pub const SL_REPLY_NIL: sl_reply_type = 5;
pub const SL_REPLY_ARRAY: sl_reply_type = 6;
pub const SL_REPLY_MAP: sl_reply_type = 7;
pub const SL_REPLY_SET: sl_reply_type = 8;
pub const SL_REPLY_DOUBLE: sl_reply_type = 9;
pub const SL_REPLY_BOOL: sl_reply_type = 10;
pub const SL_REPLY_BIGNUM: sl_reply_type = 11;
pub const SL_REPLY_VERB: sl_reply_type = 12;
pub const SL_REPLY_PUSH: sl_reply_type = 13;

/// `sl_err_kind` (an `int`-sized C enum; stored as `u8` in `sl_reply::flags`).
pub type sl_err_kind = c_int;
pub const SL_ERR_SERVER: sl_err_kind = 0;
pub const SL_ERR_IO: sl_err_kind = 1;
pub const SL_ERR_TIMEOUT: sl_err_kind = 2;
pub const SL_ERR_REDIRECTS: sl_err_kind = 3;
pub const SL_ERR_PROTOCOL: sl_err_kind = 4;
pub const SL_ERR_CANCELLED: sl_err_kind = 5;
pub const SL_ERR_CLUSTER: sl_err_kind = 6;
pub const SL_ERR_ARGUMENT: sl_err_kind = 7;

#[repr(C)]
#[derive(Clone, Copy)]
pub union sl_reply_value {
    pub integer: i64,
    pub dbl: f64,
}

/// One 24-byte reply record. `type_` is the C field `type`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct sl_reply {
    pub type_: u8,
    pub flags: u8,
    pub reserved: u16,
    pub len: u32,
    pub value: sl_reply_value,
    pub offset: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct sl_sizes {
    pub records: u64,
    pub data: u64,
    pub commands: u64,
    pub errors: u64,
}

extern "C" {
    pub fn sl_version() -> *const c_char;
    pub fn sl_strerror(code: c_int) -> *const c_char;

    pub fn sl_tls_options_init(opts: *mut sl_tls_options, version: c_uint) -> c_int;
    pub fn sl_tls_supported() -> c_int;
    pub fn sl_tls_new(
        out: *mut *mut sl_tls,
        opts: *const sl_tls_options,
        errmsg: *mut c_char,
        errmsg_cap: usize,
    ) -> c_int;
    pub fn sl_tls_free(tls: *mut sl_tls);
    pub fn sl_client_options_init(opts: *mut sl_client_options, version: c_uint) -> c_int;
    pub fn sl_client_new(
        out: *mut *mut sl_client,
        opts: *const sl_client_options,
        errmsg: *mut c_char,
        errmsg_cap: usize,
    ) -> c_int;
    pub fn sl_client_free(client: *mut sl_client);
    pub fn sl_client_errmsg(client: *const sl_client) -> *const c_char;
    pub fn sl_client_mode(client: *const sl_client) -> c_int;
    pub fn sl_client_cancel(client: *mut sl_client);
    pub fn sl_client_refresh(client: *mut sl_client) -> c_int;
    pub fn sl_client_stats(client: *const sl_client, stats: *mut sl_stats) -> c_int;

    pub fn sl_batch_new(client: *mut sl_client, out: *mut *mut sl_batch) -> c_int;
    pub fn sl_batch_free(batch: *mut sl_batch);
    pub fn sl_batch_reset(batch: *mut sl_batch);
    pub fn sl_batch_append(
        batch: *mut sl_batch,
        route: *const sl_route,
        cmds: *const c_void,
        len: usize,
        count: usize,
    ) -> c_int;
    pub fn sl_batch_append_argv(
        batch: *mut sl_batch,
        route: *const sl_route,
        argc: c_int,
        argv: *const *const c_char,
        argvlen: *const usize,
    ) -> c_int;
    pub fn sl_batch_count(batch: *const sl_batch) -> usize;
    pub fn sl_batch_exec(batch: *mut sl_batch, timeout_ms: c_int, sizes: *mut sl_sizes) -> c_int;
    pub fn sl_batch_replies(
        batch: *const sl_batch,
        nrecords: *mut usize,
        data: *mut *const u8,
        data_len: *mut usize,
    ) -> *const sl_reply;
    pub fn sl_batch_copy_out(
        batch: *const sl_batch,
        records: *mut c_void,
        records_cap: usize,
        data: *mut c_void,
        data_cap: usize,
        sizes: *mut sl_sizes,
    ) -> c_int;
    pub fn sl_batch_run(
        batch: *mut sl_batch,
        cmds: *const c_void,
        len: usize,
        count: usize,
        timeout_ms: c_int,
        records: *mut c_void,
        records_cap: usize,
        data: *mut c_void,
        data_cap: usize,
        sizes: *mut sl_sizes,
    ) -> c_int;

    pub fn sl_client_command(
        client: *mut sl_client,
        route: *const sl_route,
        argc: c_int,
        argv: *const *const c_char,
        argvlen: *const usize,
        reply: *mut *const sl_reply,
        data: *mut *const u8,
    ) -> c_int;

    pub fn sl_client_nodes(
        client: *mut sl_client,
        nodes: *mut *mut sl_node_info,
        count: *mut usize,
    ) -> c_int;
    pub fn sl_client_nodes_free(client: *mut sl_client, nodes: *mut sl_node_info);

    pub fn sl_scan_new(
        client: *mut sl_client,
        opts: *const sl_scan_options,
        out: *mut *mut sl_scan,
    ) -> c_int;
    pub fn sl_scan_next(scan: *mut sl_scan, batch: *mut sl_batch, done: *mut c_int) -> c_int;
    pub fn sl_scan_done(scan: *const sl_scan) -> c_int;
    pub fn sl_scan_errmsg(scan: *const sl_scan) -> *const c_char;
    pub fn sl_scan_free(scan: *mut sl_scan);

    pub fn sl_script_sha1(body: *const c_void, len: usize, out: *mut c_char);
    pub fn sl_batch_run_script(
        batch: *mut sl_batch,
        body: *const c_void,
        body_len: usize,
        cmd: *const c_void,
        len: usize,
        timeout_ms: c_int,
        records: *mut c_void,
        records_cap: usize,
        data: *mut c_void,
        data_cap: usize,
        sizes: *mut sl_sizes,
    ) -> c_int;

    pub fn sl_session_new(client: *mut sl_client, out: *mut *mut sl_session) -> c_int;
    pub fn sl_session_exec(
        session: *mut sl_session,
        batch: *mut sl_batch,
        timeout_ms: c_int,
        sizes: *mut sl_sizes,
    ) -> c_int;
    pub fn sl_session_run(
        session: *mut sl_session,
        batch: *mut sl_batch,
        cmds: *const c_void,
        len: usize,
        count: usize,
        timeout_ms: c_int,
        records: *mut c_void,
        records_cap: usize,
        data: *mut c_void,
        data_cap: usize,
        sizes: *mut sl_sizes,
    ) -> c_int;
    pub fn sl_session_slot(session: *const sl_session) -> c_int;
    pub fn sl_session_watching(session: *const sl_session) -> c_int;
    pub fn sl_session_close(session: *mut sl_session) -> c_int;

    pub fn sl_command_blocking(
        argc: c_int,
        argv: *const *const c_char,
        argvlen: *const usize,
        block_ms: *mut i64,
        by_args: *mut c_int,
    ) -> c_int;
    pub fn sl_key_slot(key: *const c_void, len: usize) -> c_int;
    pub fn sl_client_set_push_handler(
        client: *mut sl_client,
        f: sl_push_fn,
        ctx: *mut c_void,
    ) -> c_int;
    pub fn sl_subscriber_new(
        out: *mut *mut sl_subscriber,
        copts: *const sl_client_options,
        sopts: *const sl_subscriber_options,
        errmsg: *mut c_char,
        errmsg_cap: usize,
    ) -> c_int;
    pub fn sl_subscriber_subscribe(
        sub: *mut sl_subscriber,
        kind: c_int,
        name: *const c_void,
        len: usize,
    ) -> c_int;
    pub fn sl_subscriber_unsubscribe(
        sub: *mut sl_subscriber,
        kind: c_int,
        name: *const c_void,
        len: usize,
    ) -> c_int;
    pub fn sl_subscriber_fd(sub: *const sl_subscriber) -> c_int;
    pub fn sl_subscriber_drain(
        sub: *mut sl_subscriber,
        timeout_ms: c_int,
        msgs: *mut sl_message,
        cap: usize,
        data: *mut c_void,
        data_cap: usize,
        count: *mut usize,
        data_len: *mut usize,
    ) -> c_int;
    pub fn sl_subscriber_stats_get(
        sub: *const sl_subscriber,
        stats: *mut sl_subscriber_stats,
    ) -> c_int;
    pub fn sl_subscriber_close(sub: *mut sl_subscriber);
    pub fn sl_subscriber_free(sub: *mut sl_subscriber);
}

// ------------------------------------------------- slotlane_uv.h: the core's loop thread
// and completion queues (the "uv" part, built with libuv from pkg-config). The caller's-
// loop functions (sl_client_attach_loop...) take a uv_loop_t and are not declared here.

/// Opaque: `sl_loop` (the core's loop thread).
#[repr(C)]
pub struct sl_loop {
    _private: [u8; 0],
    _not_send_sync: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}
/// Opaque: `sl_cq` (a completion queue).
#[repr(C)]
pub struct sl_cq {
    _private: [u8; 0],
    _not_send_sync: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

/// `sl_completion`: one completed submission.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sl_completion {
    pub batch: *mut sl_batch,
    pub token: *mut c_void,
    pub status: c_int,
    pub reserved: c_int,
    pub sizes: sl_sizes,
}

pub const SL_SUBMIT_WAIT: c_int = 0;
pub const SL_SUBMIT_FAIL_FAST: c_int = 1;

extern "C" {
    pub fn sl_loop_new(out: *mut *mut sl_loop) -> c_int;
    pub fn sl_loop_detach(l: *mut sl_loop, client: *mut sl_client) -> c_int;
    pub fn sl_loop_free(l: *mut sl_loop);
    pub fn sl_cq_new(out: *mut *mut sl_cq) -> c_int;
    pub fn sl_cq_free(cq: *mut sl_cq);
    pub fn sl_cq_fd(cq: *const sl_cq) -> c_int;
    pub fn sl_cq_drain(cq: *mut sl_cq, out: *mut sl_completion, cap: usize) -> usize;
    pub fn sl_cq_wait(
        cq: *mut sl_cq,
        out: *mut sl_completion,
        cap: usize,
        timeout_ms: c_int,
    ) -> usize;
    pub fn sl_loop_submit_cq(
        l: *mut sl_loop,
        batch: *mut sl_batch,
        timeout_ms: c_int,
        cq: *mut sl_cq,
        token: *mut c_void,
        flags: c_int,
    ) -> c_int;
    pub fn sl_batch_cancel(batch: *mut sl_batch) -> c_int;
    pub fn sl_loop_submit_scan_cq(
        l: *mut sl_loop,
        scan: *mut sl_scan,
        batch: *mut sl_batch,
        timeout_ms: c_int,
        cq: *mut sl_cq,
        token: *mut c_void,
        flags: c_int,
    ) -> c_int;
    pub fn sl_loop_submit_script_cq(
        l: *mut sl_loop,
        batch: *mut sl_batch,
        body: *const c_void,
        body_len: usize,
        timeout_ms: c_int,
        cq: *mut sl_cq,
        token: *mut c_void,
        flags: c_int,
    ) -> c_int;
}

// ---------------------------------------------------------------- pub/sub
/// Opaque: `sl_subscriber`.
#[repr(C)]
pub struct sl_subscriber {
    _private: [u8; 0],
    _not_send_sync: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

/// `sl_sub_kind` (an `int`-sized C enum).
pub type sl_sub_kind = c_int;
pub const SL_SUB_CHANNEL: sl_sub_kind = 0;
pub const SL_SUB_PATTERN: sl_sub_kind = 1;
pub const SL_SUB_SHARD: sl_sub_kind = 2;

/// `sl_message_kind` (an `int`-sized C enum; stored as `u8` in `sl_message::kind`).
pub type sl_message_kind = c_int;
pub const SL_MSG_MESSAGE: sl_message_kind = 1;
pub const SL_MSG_PMESSAGE: sl_message_kind = 2;
pub const SL_MSG_SMESSAGE: sl_message_kind = 3;
pub const SL_MSG_SUBSCRIBE: sl_message_kind = 4;
pub const SL_MSG_PSUBSCRIBE: sl_message_kind = 5;
pub const SL_MSG_SSUBSCRIBE: sl_message_kind = 6;
pub const SL_MSG_UNSUBSCRIBE: sl_message_kind = 7;
pub const SL_MSG_PUNSUBSCRIBE: sl_message_kind = 8;
pub const SL_MSG_SUNSUBSCRIBE: sl_message_kind = 9;
pub const SL_MSG_RESUBSCRIBED: sl_message_kind = 10;
pub const SL_MSG_OVERFLOW: sl_message_kind = 11;
pub const SL_MSG_CONNECTION_LOST: sl_message_kind = 12;
pub const SL_MSG_ERROR: sl_message_kind = 13;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct sl_message {
    pub kind: u8,
    pub flags: u8,
    pub reserved: u16,
    pub channel_len: u32,
    pub pattern_len: u32,
    pub payload_len: u32,
    pub count: i64,
    pub offset: u64,
}

pub const SL_SUBSCRIBER_OPTIONS_VERSION: c_uint = 1;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sl_subscriber_options {
    pub version: c_uint,
    pub size: c_uint,
    pub max_queue_bytes: u64,
    pub health_check_interval_ms: c_int,
}

pub const SL_SUBSCRIBER_STATS_VERSION: c_uint = 1;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct sl_subscriber_stats {
    pub version: c_uint,
    pub size: c_uint,
    pub messages: u64,
    pub dropped: u64,
    pub connection_losses: u64,
    pub resubscribed: u64,
    pub pings: u64,
    pub refreshes: u64,
    pub confirmed: u64,
    pub queued_bytes: u64,
    pub bytes_read: u64,
}

/// `sl_push_fn`: out-of-band pushes of command connections.
pub type sl_push_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        node: *const c_char,
        records: *const sl_reply,
        count: usize,
        data: *const u8,
    ),
>;

/// The defaults of `SL_CLIENT_OPTIONS_INIT` (the macro's values, checked against the
/// header by `tests/abi.rs`), for callers that want them without a call.
pub const SL_CLIENT_OPTIONS_INIT: sl_client_options = sl_client_options {
    version: SL_CLIENT_OPTIONS_VERSION,
    size: core::mem::size_of::<sl_client_options>() as c_uint,
    url: core::ptr::null(),
    mode: SL_MODE_AUTO,
    username: core::ptr::null(),
    password: core::ptr::null(),
    db: -1,
    resp_version: 2,
    connect_timeout_ms: 2000,
    command_timeout_ms: 5000,
    max_redirects: 5,
    refresh_interval_ms: 0,
    reconnect_min_ms: 10,
    reconnect_max_ms: 1000,
    allocator: core::ptr::null(),
    max_bulk_len: 512 << 20,
    max_aggregate_len: 1 << 30,
    max_depth: 32,
    max_inflight_batches: 4096,
    max_inflight_bytes: 64 << 20,
    tls: core::ptr::null_mut(),
    blocking_grace_ms: 1000,
    lease_idle_max: 4,
    read_from: SL_READ_PRIMARY,
    retry_writes: 0,
    on_event: None,
    on_event_ctx: core::ptr::null_mut(),
};

/// The embeddable slotlane-server (`server/include/slotlane_server.h`), compiled in with the
/// feature `server`: the declarations the testing helper of `slotlane` uses, checked
/// against the header's sizes in this crate's tests.
#[cfg(feature = "server")]
pub mod server {
    use core::ffi::{c_char, c_int, c_uint, c_void};

    pub const SL_SERVER_OPTIONS_VERSION: c_uint = 1;
    pub const SL_SERVER_OK: c_int = 0;
    pub const SL_SERVER_EINVAL: c_int = -1;
    pub const SL_SERVER_EBIND: c_int = -2;
    pub const SL_SERVER_EDIR: c_int = -3;
    pub const SL_SERVER_ESTATE: c_int = -4;

    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct sl_server_options {
        pub version: c_uint,
        pub size: c_uint,
        pub shards: c_int,
        pub port_mode: c_int,
        pub misrouted: c_int,
        pub durability: c_int,
        pub dir: *const c_char,
        pub bind: *const c_char,
        pub port: c_int,
        pub log_level: c_int,
        pub log_fn: Option<unsafe extern "C" fn(ud: *mut c_void, level: c_int, msg: *const c_char)>,
        pub log_ud: *mut c_void,
        pub settings: *const *const c_char,
        pub nsettings: usize,
    }

    #[repr(C)]
    pub struct sl_server {
        _private: [u8; 0],
    }

    extern "C" {
        pub fn sl_server_options_init(opts: *mut sl_server_options, version: c_uint) -> c_int;
        pub fn sl_server_start(
            out: *mut *mut sl_server,
            opts: *const sl_server_options,
            errmsg: *mut c_char,
            errmsg_cap: usize,
        ) -> c_int;
        pub fn sl_server_shards(s: *const sl_server) -> c_int;
        pub fn sl_server_port(s: *const sl_server, i: c_int) -> c_int;
        pub fn sl_server_url(s: *const sl_server, buf: *mut c_char, cap: usize) -> c_int;
        pub fn sl_server_stop(s: *mut sl_server);
        pub fn sl_server_free(s: *mut sl_server);
    }
}
