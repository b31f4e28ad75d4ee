// Native.cs — the P/Invoke declarations of libslotlane (core/include/slotlane.h and
// slotlane_uv.h), hand-written and checked against the headers by the test
// NativeSignatureTests (parameter and return types, struct layouts, enum values).
//
// Rules (docs: shared notes "binding crossings", section C#):
//  - pointers as byte*/IntPtr only: never byte[] with [In]/[Out] (Mono copies the whole
//    array in and out at ~2.8 ns a byte), never per-call pinning across the network wait;
//  - every buffer handed to the core lives in unmanaged memory (Marshal.AllocHGlobal);
//  - no [SuppressGCTransition]: sl_batch_run and friends block on the network.
using System;
using System.Runtime.InteropServices;

namespace Slotlane
{
    /// <summary>Mirror of <c>sl_reply</c>: one 24-byte reply record.</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct SlReply
    {
        public byte type;
        public byte flags;
        public ushort reserved;
        public uint len;
        public long value;      // union { int64_t integer; double dbl; }
        public ulong offset;
    }

    /// <summary>Mirror of <c>sl_sizes</c>.</summary>
    /// <summary>Mirror of <c>sl_node_info</c>.</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct SlNodeInfo
    {
        public IntPtr addr;
        public int is_primary;
        public int primary;
        public UIntPtr nranges;
        public IntPtr ranges;
    }

    /// <summary>Mirror of <c>sl_scan_options</c>.</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct SlScanOptions
    {
        public uint version;
        public uint size;
        public IntPtr match;
        public UIntPtr match_len;
        public IntPtr type;
        public int count;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct SlSizes
    {
        public ulong records;
        public ulong data;
        public ulong commands;
        public ulong errors;
    }

    /// <summary>Mirror of <c>sl_stats</c>.</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct SlStats
    {
        public uint version;
        public uint size;
        public ulong commands;
        public ulong moved;
        public ulong ask;
        public ulong tryagain;
        public ulong refreshes;
        public ulong connects;
        public ulong reconnects;
        public ulong bytes_written;
        public ulong bytes_read;
        public ulong nodes;
        public ulong failovers;       // version 2 (replicas)
        public ulong refreshes_moved;
        public ulong refreshes_lost;
        public ulong retries;
        public ulong replica_reads;
        public ulong nodes_down;
    }

    /// <summary>Mirror of <c>sl_route</c> (version 1): <see cref="Native.NewRoute"/> sets version and size.</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct SlRoute
    {
        public uint version;
        public uint size;
        public int kind;
        public int slot;
        public IntPtr node;
    }

    /// <summary>Mirror of <c>sl_client_options</c> (version 4).</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct SlClientOptions
    {
        public uint version;
        public uint size;
        public IntPtr url;
        public int mode;
        public IntPtr username;
        public IntPtr password;
        public int db;
        public int resp_version;
        public int connect_timeout_ms;
        public int command_timeout_ms;
        public int max_redirects;
        public int refresh_interval_ms;
        public int reconnect_min_ms;
        public int reconnect_max_ms;
        public IntPtr allocator;
        public ulong max_bulk_len;
        public ulong max_aggregate_len;
        public int max_depth;
        public uint max_inflight_batches;
        public ulong max_inflight_bytes;
        public IntPtr tls;          // sl_tls *: ClientOptions.Tls (TlsConfig), else NULL
        public int blocking_grace_ms;   // v4: a leased blocking command's grace (default 1000)
        public int lease_idle_max;      // v4: idle leased connections kept per node (default 4)
        public int read_from;       // version 4 (replicas): sl_read_from
        public int retry_writes;
        public IntPtr on_event;     // sl_event_fn: ClientEvents.Callback when ClientOptions.OnEvent is set, else NULL
        public IntPtr on_event_ctx; // the sink's id in ClientEvents (not a pointer)
    }

    /// <summary>Mirror of <c>sl_message</c>: one 32-byte record of a subscriber's queue.</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct SlMessage
    {
        public byte kind;
        public byte flags;
        public ushort reserved;
        public uint channel_len;
        public uint pattern_len;
        public uint payload_len;
        public long count;
        public ulong offset;
    }

    /// <summary>Mirror of <c>sl_subscriber_options</c> (version 1).</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct SlSubscriberOptions
    {
        public uint version;
        public uint size;
        public ulong max_queue_bytes;
        public int health_check_interval_ms;
    }

    /// <summary>Mirror of <c>sl_subscriber_stats</c> (version 1).</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct SlSubscriberStats
    {
        public uint version;
        public uint size;
        public ulong messages;
        public ulong dropped;
        public ulong connection_losses;
        public ulong resubscribed;
        public ulong pings;
        public ulong refreshes;
        public ulong confirmed;
        public ulong queued_bytes;
        public ulong bytes_read;
    }

    /// <summary>Mirror of <c>sl_tls_options</c> (version 1).</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct SlTlsOptions
    {
        public uint version;
        public uint size;
        public IntPtr ca_file;
        public IntPtr ca_dir;
        public IntPtr ca_pem;
        public UIntPtr ca_pem_len;
        public int system_roots;
        public IntPtr cert_file;
        public IntPtr key_file;
        public IntPtr cert_pem;
        public UIntPtr cert_pem_len;
        public IntPtr key_pem;
        public UIntPtr key_pem_len;
        public int verify;
        public IntPtr server_name;
        public int node_names;
    }

    /// <summary>Return codes of the core (<c>sl_error_code</c>).</summary>
    internal enum SlCode
    {
        SL_OK = 0,
        SL_EINVAL = -1,
        SL_ENOMEM = -2,
        SL_EIO = -3,
        SL_ETIMEOUT = -4,
        SL_EPROTO = -5,
        SL_ESERVER = -6,
        SL_EREDIRECT = -7,
        SL_ECANCELLED = -8,
        SL_ECLUSTER = -9,
        SL_ETOOSMALL = -10,
        SL_EUNSUPPORTED = -11,
        SL_ESTATE = -12,
        SL_EBUSY = -13,
        SL_EFORK = -14,
        SL_ETLS = -15,
        SL_EBLOCKING = -24,
        SL_EWATCHMOVED = -25,
        SL_EABORTED = -26,
    }

    /// <summary>Reply record types (<c>sl_reply_type</c>).</summary>
    internal enum SlReplyType
    {
        SL_REPLY_STRING = 1,
        SL_REPLY_STATUS = 2,
        SL_REPLY_ERROR = 3,
        SL_REPLY_INTEGER = 4,
        SL_REPLY_NIL = 5,
        SL_REPLY_ARRAY = 6,
        SL_REPLY_MAP = 7,
        SL_REPLY_SET = 8,
        SL_REPLY_DOUBLE = 9,
        SL_REPLY_BOOL = 10,
        SL_REPLY_BIGNUM = 11,
        SL_REPLY_VERB = 12,
        SL_REPLY_PUSH = 13,
    }

    /// <summary>Mirror of <c>sl_completion</c> (slotlane_uv.h): one batch's completion taken from an <c>sl_cq</c>.</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct SlCompletion
    {
        public IntPtr batch;
        public IntPtr token;
        public int status;
        public int reserved;
        public SlSizes sizes;
    }

    internal static unsafe class Native
    {
        internal const string Lib = "slotlane";

        internal const uint SL_CLIENT_OPTIONS_VERSION = 4;
        internal const uint SL_STATS_VERSION = 2;
        internal const uint SL_ROUTE_VERSION = 1;
        internal const uint SL_TLS_OPTIONS_VERSION = 1;
        internal const uint SL_SUBSCRIBER_OPTIONS_VERSION = 1;
        internal const uint SL_SUBSCRIBER_STATS_VERSION = 1;

        /// <summary><c>SL_ROUTE_INIT</c>: a route by key, its version and size set.</summary>
        internal static SlRoute NewRoute()
        {
            var r = new SlRoute();
            r.version = SL_ROUTE_VERSION;
            r.size = (uint)sizeof(SlRoute);
            return r;
        }

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr sl_version();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr sl_strerror(int code);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_client_options_init(SlClientOptions* opts, uint version);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_client_new(IntPtr* @out, SlClientOptions* opts, byte* errmsg, UIntPtr errmsg_cap);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void sl_client_free(IntPtr client);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_tls_options_init(SlTlsOptions* opts, uint version);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_tls_supported();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_tls_new(IntPtr* @out, SlTlsOptions* opts, byte* errmsg, UIntPtr errmsg_cap);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void sl_tls_free(IntPtr tls);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr sl_client_errmsg(IntPtr client);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_client_mode(IntPtr client);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void sl_client_cancel(IntPtr client);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_client_refresh(IntPtr client);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_client_stats(IntPtr client, SlStats* stats);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_batch_new(IntPtr client, IntPtr* @out);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void sl_batch_free(IntPtr batch);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void sl_batch_reset(IntPtr batch);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_batch_append(IntPtr batch, SlRoute* route, void* cmds, UIntPtr len, UIntPtr count);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern UIntPtr sl_batch_count(IntPtr batch);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_batch_exec(IntPtr batch, int timeout_ms, SlSizes* sizes);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern SlReply* sl_batch_replies(IntPtr batch, UIntPtr* nrecords, byte** data, UIntPtr* data_len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_batch_copy_out(IntPtr batch, void* records, UIntPtr records_cap,
                                                     void* data, UIntPtr data_cap, SlSizes* sizes);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_batch_run(IntPtr batch, void* cmds, UIntPtr len, UIntPtr count, int timeout_ms,
                                                void* records, UIntPtr records_cap, void* data, UIntPtr data_cap,
                                                SlSizes* sizes);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_key_slot(void* key, UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_client_nodes(IntPtr client, IntPtr* nodes, UIntPtr* count);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void sl_client_nodes_free(IntPtr client, IntPtr nodes);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_scan_new(IntPtr client, SlScanOptions* opts, IntPtr* @out);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_scan_next(IntPtr scan, IntPtr batch, int* done);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void sl_scan_free(IntPtr scan);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_scan_done(IntPtr scan);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr sl_scan_errmsg(IntPtr scan);

        // ScanCursor.NextPageAsync: a page of a cluster scan on the process's loop, into its completion queue
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_loop_submit_scan_cq(IntPtr loop, IntPtr scan, IntPtr batch, int timeout_ms, IntPtr cq,
                                                          IntPtr token, int flags);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void sl_script_sha1(void* body, UIntPtr len, byte* @out);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_batch_run_script(IntPtr batch, void* body, UIntPtr body_len, void* cmd, UIntPtr len,
                                                       int timeout_ms, void* records, UIntPtr records_cap, void* data,
                                                       UIntPtr data_cap, SlSizes* sizes);

        // ------------------------------------------------ slotlane_uv.h: the core's loop thread

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_loop_new(IntPtr* @out);

        internal const int SL_SUBMIT_WAIT = 0;
        internal const int SL_SUBMIT_FAIL_FAST = 1;

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_loop_submit_cq(IntPtr loop, IntPtr batch, int timeout_ms, IntPtr cq, IntPtr token, int flags);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_batch_cancel(IntPtr batch);

        // ------------------------------------------------ completion queues

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_cq_new(IntPtr* @out);

        // blocks the dispatcher thread until a completion arrives (never called on another thread)
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern UIntPtr sl_cq_wait(IntPtr cq, SlCompletion* @out, UIntPtr cap, int timeout_ms);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_loop_detach(IntPtr loop, IntPtr client);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void sl_loop_free(IntPtr loop);

        // ------------------------------------------------ pub/sub (Subscriber.cs)

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_subscriber_new(IntPtr* @out, SlClientOptions* copts, SlSubscriberOptions* sopts,
                                                     byte* errmsg, UIntPtr errmsg_cap);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_subscriber_subscribe(IntPtr sub, int kind, void* name, UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_subscriber_unsubscribe(IntPtr sub, int kind, void* name, UIntPtr len);

        // blocks up to timeout_ms (the binding waits in slices: Mono cannot stop a thread inside a P/Invoke at exit)
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_subscriber_drain(IntPtr sub, int timeout_ms, SlMessage* msgs, UIntPtr cap,
                                                       void* data, UIntPtr data_cap, UIntPtr* count, UIntPtr* data_len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_subscriber_stats_get(IntPtr sub, SlSubscriberStats* stats);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void sl_subscriber_close(IntPtr sub);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void sl_subscriber_free(IntPtr sub);

        // transactions (Transaction.cs): sessions pinned to one slot's primary
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_session_new(IntPtr client, IntPtr* @out);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_session_run(IntPtr session, IntPtr batch, void* cmds, UIntPtr len, UIntPtr count,
                                                  int timeout_ms, void* records, UIntPtr records_cap, void* data, UIntPtr data_cap,
                                                  SlSizes* sizes);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_session_slot(IntPtr session);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_session_watching(IntPtr session);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int sl_session_close(IntPtr session);

        /// <summary>Functions of the headers deliberately not bound, with the reason (checked by the tests).</summary>
        internal const uint SL_SCAN_OPTIONS_VERSION = 1;

        internal static readonly string[] NotBound =
        {
            "sl_batch_append_argv",   // the binding encodes RESP itself (one crossing per pipeline)
            "sl_session_exec",        // a transaction's commands go through sl_session_run (one crossing)
            "sl_client_command",      // single commands go through sl_batch_run like pipelines
            "sl_command_blocking",    // the core classifies blocking commands itself when it runs them (for Node's batching)
            "sl_client_attach_loop",  // the caller's-loop engine is for runtimes with a libuv loop (Node)
            "sl_batch_exec_async",
            "sl_client_detach_loop",
            "sl_loop_submit",         // the Task path completes through a completion queue (sl_loop_submit_cq)
            "sl_cq_fd",               // one dispatcher thread waits in sl_cq_wait: no event loop watches a descriptor
            "sl_cq_drain",
            "sl_cq_free",             // the process's one queue lives as long as the process (as its dispatcher)
            // RESP3 pushes on command connections: no C# surface consumes them yet (the Subscriber has its own connections)
            "sl_client_set_push_handler",
            "sl_subscriber_fd",       // the Subscriber waits in sl_subscriber_drain (its poll and listener thread): no event loop watches a descriptor
            "sl_scan_next_async",     // pages on the caller's loop are for runtimes with a libuv loop (Node): C# submits to the process's loop (sl_loop_submit_scan_cq)
            "sl_script_exec_async", "sl_loop_submit_script_cq",
        };

        internal static string PtrToUtf8(IntPtr p)
        {
            if (p == IntPtr.Zero) return string.Empty;
            byte* b = (byte*)p;
            int n = 0;
            while (b[n] != 0) n++;
            return System.Text.Encoding.UTF8.GetString(b, n);
        }
    }
}
