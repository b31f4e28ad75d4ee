package io.slotlane;

import io.slotlane.internal.sl_client_options;
import io.slotlane.internal.sl_error_code;
import io.slotlane.internal.slotlane;
import io.slotlane.internal.slotlaneConstants;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * One core client ({@code sl_client}, its own connections) with its batch and the direct
 * buffers the core writes into: reply records, reply data, and a scratch area for the
 * out-parameters (handles, {@code sl_sizes}, {@code sl_stats}, {@code sl_route}, error
 * text). Used by one thread at a time (the pool hands it out).
 */
final class CoreHandle {
    // scratch layout (bytes)
    private static final int OUT_PTR = 0, SIZES = 8, STATS = 64, ROUTE = 160, ERRMSG = 192, ERRMSG_CAP = 512,
            NODE = 704, NODE_CAP = 256, SCAN_OPTS = 960, DONE = 1000, SHA = 1008, OUT_COUNT = 1056, SCRATCH = 1064;
    static {
        // the layouts this class writes and reads, checked against the compiled header
        if (slotlaneConstants.SL_REPLY_RECORD_SIZE != ReplyDecoder.RECORD || slotlaneConstants.SL_SIZES_SIZE != 32
                || slotlaneConstants.SL_STATS_SIZE != 136 || slotlaneConstants.SL_ROUTE_SIZE != 24)
            throw new LinkageError("slotlane: the native struct layouts differ from the binding's");
    }

    final long client;
    final long batch;
    final CommandBuffer cmd = new CommandBuffer(4096);
    final ReplyDecoder dec = new ReplyDecoder();
    private final ByteBuffer scratch;
    private final long scratchAddr;
    private ByteBuffer rec;
    private long recAddr;
    private ByteBuffer data;
    private long dataAddr;
    private boolean freed;

    private CoreHandle(long client, long batch, ByteBuffer scratch, long scratchAddr) {
        this.client = client;
        this.batch = batch;
        this.scratch = scratch;
        this.scratchAddr = scratchAddr;
        growRecords(1024 * ReplyDecoder.RECORD);
        growData(64 * 1024);
    }

    static CoreHandle open(ClientOptions o) {
        ByteBuffer scratch = ByteBuffer.allocateDirect(SCRATCH).order(ByteOrder.nativeOrder());
        long sa = slotlane.sl_java_buffer_address(scratch);
        long client = newClient(o, scratch, sa);
        int rc = slotlane.sl_batch_new(client, sa + OUT_PTR);
        if (rc != 0) {
            String msg = slotlane.sl_client_errmsg(client);
            slotlane.sl_client_free(client);
            throw failure(rc, msg, o.url);
        }
        return new CoreHandle(client, scratch.getLong(OUT_PTR), scratch, sa);
    }

    /** A new sl_client with the options (connected; discovery done); the caller frees it. */
    static long newClient(ClientOptions o) {
        ByteBuffer scratch = ByteBuffer.allocateDirect(SCRATCH).order(ByteOrder.nativeOrder());
        return newClient(o, scratch, slotlane.sl_java_buffer_address(scratch));
    }

    /** The core's options of o (a proxy object: the caller deletes it). */
    static sl_client_options coreOptions(ClientOptions o) {
        sl_client_options opts = new sl_client_options();
        int rc = slotlane.sl_client_options_init(opts, slotlaneConstants.SL_CLIENT_OPTIONS_VERSION);
        if (rc != 0) {
            opts.delete();
            throw new IllegalStateException("sl_client_options_init: " + slotlane.sl_strerror(rc));
        }
        fill(opts, o);
        return opts;
    }

    private static long newClient(ClientOptions o, ByteBuffer scratch, long sa) {
        sl_client_options opts = coreOptions(o);
        try {
            int rc;
            scratch.putLong(OUT_PTR, 0);
            scratch.put(ERRMSG, (byte) 0);
            rc = slotlane.sl_client_new(sa + OUT_PTR, opts, sa + ERRMSG, ERRMSG_CAP);
            if (rc != 0) {
                String msg = cString(scratch, ERRMSG, ERRMSG_CAP);
                throw failure(rc, msg.isEmpty() ? slotlane.sl_strerror(rc) : msg, o.url);
            }
            return scratch.getLong(OUT_PTR);
        } finally {
            opts.delete();
        }
    }

    private static void fill(sl_client_options opts, ClientOptions o) {
        {
            opts.setUrl(o.url);
            opts.setMode(o.mode.code);
            if (o.username != null) opts.setUsername(o.username);
            if (o.password != null) opts.setPassword(o.password);
            opts.setDb(o.database);
            opts.setResp_version(o.resp);
            opts.setConnect_timeout_ms(o.connectTimeoutMs);
            opts.setCommand_timeout_ms(o.commandTimeoutMs);
            opts.setMax_redirects(o.maxRedirects);
            opts.setRefresh_interval_ms(o.refreshIntervalMs);
            opts.setMax_inflight_batches(o.maxInflightBatches);
            opts.setMax_inflight_bytes(o.maxInflightBytes);
            if (o.tls != null) opts.setTls(o.tls.handle()); // the client takes its own reference
            opts.setRead_from(o.readFrom.code);
            opts.setRetry_writes(o.retryWrites ? 1 : 0);
            opts.setBlocking_grace_ms(o.blockingGraceMs);
            opts.setLease_idle_max(o.leaseIdleMax);
            if (o.events != null) {
                opts.setOn_event(slotlane.sl_java_event_fn());
                opts.setOn_event_ctx(o.events.ref());
            }
        }
    }

    /** SL_MODE_PLAIN or SL_MODE_CLUSTER. */
    int mode() {
        return slotlane.sl_client_mode(client);
    }

    /**
     * Runs the buffer's commands with one sl_batch_run and leaves the decoder on their
     * records. Throws when the execution failed as a whole without records.
     */
    void execute(CommandBuffer b, int timeoutMs) {
        b.flush();
        int rc = slotlane.sl_batch_run(batch, b.addr, b.pos, b.count, timeoutMs, recAddr, rec.capacity(),
                dataAddr, data.capacity(), scratchAddr + SIZES);
        if (rc == sl_error_code.SL_ETOOSMALL) rc = copyOutGrowing();
        finish(rc, b.count);
    }

    /** The same with a routing override: reset, append(route), exec, copy out (a few crossings). */
    void execute(CommandBuffer b, Route route, int timeoutMs) {
        scratch.putInt(ROUTE, slotlaneConstants.SL_ROUTE_VERSION); // sl_route: version, size, kind, slot, node
        scratch.putInt(ROUTE + 4, slotlaneConstants.SL_ROUTE_SIZE);
        scratch.putInt(ROUTE + 8, route.kind);
        scratch.putInt(ROUTE + 12, route.slot);
        long node = 0;
        if (route.node != null) {
            byte[] nb = route.node.getBytes(StandardCharsets.UTF_8);
            if (nb.length >= NODE_CAP) throw new IllegalArgumentException("Route.node: address too long");
            scratch.put(NODE, nb);
            scratch.put(NODE + nb.length, (byte) 0);
            node = scratchAddr + NODE;
        }
        scratch.putLong(ROUTE + 16, node);
        b.flush();
        slotlane.sl_batch_reset(batch);
        int rc = slotlane.sl_batch_append(batch, scratchAddr + ROUTE, b.addr, b.pos, b.count);
        if (rc != 0) throw failure(rc, slotlane.sl_client_errmsg(client), null);
        rc = slotlane.sl_batch_exec(batch, timeoutMs, scratchAddr + SIZES);
        if (rc == sl_error_code.SL_ENOMEM) throw failure(rc, slotlane.sl_client_errmsg(client), null);
        int crc = copyOutGrowing();
        finish(crc != 0 ? crc : rc, b.count);
    }

    private int copyOutGrowing() {
        long needRec = scratch.getLong(SIZES) * ReplyDecoder.RECORD;
        long needData = scratch.getLong(SIZES + 8);
        if (needRec > Integer.MAX_VALUE || needData > Integer.MAX_VALUE)
            throw new ProtocolException(ErrorKind.PROTOCOL, "slotlane: replies exceed 2 GiB");
        if (needRec > rec.capacity()) growRecords((int) needRec);
        if (needData > data.capacity()) growData((int) needData);
        return slotlane.sl_batch_copy_out(batch, recAddr, rec.capacity(), dataAddr, data.capacity(), scratchAddr + SIZES);
    }

    private void finish(int rc, int count) {
        long commands = scratch.getLong(SIZES + 16);
        if (rc != 0 && (rc == sl_error_code.SL_EINVAL || rc == sl_error_code.SL_ENOMEM || rc == sl_error_code.SL_ESTATE
                || rc == sl_error_code.SL_ETOOSMALL || rc == sl_error_code.SL_EUNSUPPORTED || commands != count)) {
            throw failure(rc, slotlane.sl_client_errmsg(client), null);
        }
        dec.reset(rec, data, (int) scratch.getLong(SIZES));
    }

    // ------------------------------------------------------------ sessions

    /** The core's message of the last sessionExecute that did not return 0 (null after a 0). */
    String sessionError;

    /** sl_session_new on this handle's client (nothing sent yet); the caller closes it. */
    long sessionNew() {
        scratch.putLong(OUT_PTR, 0);
        int rc = slotlane.sl_session_new(client, scratchAddr + OUT_PTR);
        if (rc != 0) throw failure(rc, slotlane.sl_client_errmsg(client), null);
        return scratch.getLong(OUT_PTR);
    }

    /**
     * Runs the buffer's commands on the session (reset, append, sl_session_exec, copy out) and
     * leaves the decoder on their records. Returns sl_session_exec's code (0, SL_EABORTED,
     * SL_EWATCHMOVED, SL_ECLUSTER, an execution's code) when there is a record per command;
     * throws when the execution failed as a whole without records (SL_ESTATE: a broken session).
     */
    int sessionExecute(long session, CommandBuffer b, int timeoutMs) {
        b.flush();
        slotlane.sl_batch_reset(batch);
        int rc = slotlane.sl_batch_append(batch, 0, b.addr, b.pos, b.count);
        if (rc != 0) throw failure(rc, slotlane.sl_client_errmsg(client), null);
        rc = slotlane.sl_session_exec(session, batch, timeoutMs, scratchAddr + SIZES);
        if (rc == sl_error_code.SL_ENOMEM || rc == sl_error_code.SL_ESTATE || rc == sl_error_code.SL_EINVAL)
            throw failure(rc, slotlane.sl_client_errmsg(client), null);
        String msg = rc != 0 ? slotlane.sl_client_errmsg(client) : null;
        sessionError = msg == null || msg.isEmpty() ? (rc != 0 ? slotlane.sl_strerror(rc) : null) : msg;
        int crc = copyOutGrowing();
        if (crc != 0 || scratch.getLong(SIZES + 16) != b.count)
            throw failure(crc != 0 ? crc : rc, msg != null ? msg : slotlane.sl_client_errmsg(client), null);
        dec.reset(rec, data, (int) scratch.getLong(SIZES));
        return rc;
    }

    /** The session's pinned slot, or -1. */
    static int sessionSlot(long session) {
        return slotlane.sl_session_slot(session);
    }

    /** Whether the session holds a WATCH or an open MULTI. */
    static boolean sessionWatching(long session) {
        return slotlane.sl_session_watching(session) != 0;
    }

    /** sl_session_close: UNWATCH/DISCARD when needed, the connection back (or closed); 0 or the failed reset's code. */
    static int sessionClose(long session) {
        return slotlane.sl_session_close(session);
    }

    // ------------------------------------------------------------ scan, scripts, nodes

    /** sl_scan_new with MATCH/TYPE (NUL-terminated in opts, a direct buffer kept by the caller) and COUNT. */
    long scanNew(ByteBuffer strings, int matchLen, int typeOff, int count) {
        long sa = scratchAddr;
        long str = strings == null ? 0 : slotlane.sl_java_buffer_address(strings);
        scratch.putInt(SCAN_OPTS, slotlaneConstants.SL_SCAN_OPTIONS_VERSION);
        scratch.putInt(SCAN_OPTS + 4, 40);
        scratch.putLong(SCAN_OPTS + 8, matchLen > 0 ? str : 0);
        scratch.putLong(SCAN_OPTS + 16, matchLen);
        scratch.putLong(SCAN_OPTS + 24, typeOff >= 0 ? str + typeOff : 0);
        scratch.putInt(SCAN_OPTS + 32, count);
        scratch.putLong(OUT_PTR, 0);
        int rc = slotlane.sl_scan_new(client, sa + SCAN_OPTS, sa + OUT_PTR);
        if (rc != 0) throw failure(rc, slotlane.sl_client_errmsg(client), null);
        return scratch.getLong(OUT_PTR);
    }

    /** The scan's next page into the decoder (one reply: an array of keys); true when it was the last. */
    boolean scanNext(long scan) {
        scratch.putInt(DONE, 0);
        int rc = slotlane.sl_scan_next(scan, batch, scratchAddr + DONE);
        if (rc != 0) throw failure(rc, slotlane.sl_client_errmsg(client), null);
        int crc = copyOutGrowing();
        finish(crc, 1);
        return scratch.getInt(DONE) != 0;
    }

    void scanFree(long scan) {
        slotlane.sl_scan_free(scan);
    }

    /** One EVALSHA (the buffer's one command) with the script's body for a NOSCRIPT reload. */
    void runScript(CommandBuffer b, long bodyAddr, int bodyLen, int timeoutMs) {
        b.flush();
        int rc = slotlane.sl_batch_run_script(batch, bodyAddr, bodyLen, b.addr, b.pos, timeoutMs, recAddr,
                rec.capacity(), dataAddr, data.capacity(), scratchAddr + SIZES);
        if (rc == sl_error_code.SL_ETOOSMALL) rc = copyOutGrowing();
        finish(rc, b.count);
    }

    /** The SHA1 of a script body in native memory. */
    String sha1(long bodyAddr, int bodyLen) {
        slotlane.sl_script_sha1(bodyAddr, bodyLen, scratchAddr + SHA);
        return cString(scratch, SHA, 41);
    }

    /** The node list (sl_client_nodes), copied into Java objects and freed. */
    java.util.List<ClusterNode> nodes() {
        int rc = slotlane.sl_client_nodes(client, scratchAddr + OUT_PTR, scratchAddr + OUT_COUNT);
        if (rc != 0) throw failure(rc, slotlane.sl_client_errmsg(client), null);
        long list = scratch.getLong(OUT_PTR);
        int n = (int) scratch.getLong(OUT_COUNT);
        try {
            String[] addr = new String[n];
            for (int i = 0; i < n; i++) addr[i] = slotlane.sl_java_node_addr(list, i);
            java.util.List<ClusterNode> out = new java.util.ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                int nr = (int) slotlane.sl_java_node_field(list, i, 2);
                int[][] ranges = new int[nr][];
                for (int k = 0; k < nr; k++)
                    ranges[k] = new int[] {slotlane.sl_java_node_range(list, i, 2 * k), slotlane.sl_java_node_range(list, i, 2 * k + 1)};
                int p = (int) slotlane.sl_java_node_field(list, i, 1);
                out.add(new ClusterNode(addr[i], slotlane.sl_java_node_field(list, i, 0) != 0,
                        p >= 0 && p < n ? addr[p] : null, ranges));
            }
            return out;
        } finally {
            slotlane.sl_client_nodes_free(client, list);
        }
    }

    /** Reads sl_stats into out[0..9] (added). */
    void addStats(long[] out) {
        if (freed) return;
        // version 1's 88 bytes: the fields read below (the scratch holds no more before ROUTE)
        scratch.putInt(STATS, 1);
        scratch.putInt(STATS + 4, 88);
        int rc = slotlane.sl_client_stats(client, scratchAddr + STATS);
        if (rc != 0) throw failure(rc, slotlane.sl_client_errmsg(client), null);
        for (int i = 0; i < 9; i++) out[i] += scratch.getLong(STATS + 8 + 8 * i);
        out[9] = Math.max(out[9], scratch.getLong(STATS + 8 + 8 * 9));
    }

    void refresh() {
        int rc = slotlane.sl_client_refresh(client);
        if (rc != 0) throw failure(rc, slotlane.sl_client_errmsg(client), null);
    }

    /** Safe from any thread while another runs this handle (sl_client_cancel). */
    void cancel() {
        slotlane.sl_client_cancel(client);
    }

    synchronized void free() {
        if (freed) return;
        freed = true;
        slotlane.sl_batch_free(batch);
        slotlane.sl_client_free(client);
    }

    private void growRecords(int bytes) {
        rec = grownRecords(rec, bytes);
        recAddr = slotlane.sl_java_buffer_address(rec);
    }

    private void growData(int bytes) {
        data = grownData(data, bytes);
        dataAddr = slotlane.sl_java_buffer_address(data);
    }

    /** A record buffer of at least bytes (whole records), at least twice the old one's size. */
    static ByteBuffer grownRecords(ByteBuffer old, int bytes) {
        int cap = Math.max(bytes, old == null ? 0 : old.capacity() * 2);
        cap = (cap + ReplyDecoder.RECORD - 1) / ReplyDecoder.RECORD * ReplyDecoder.RECORD;
        return ByteBuffer.allocateDirect(cap).order(ByteOrder.nativeOrder());
    }

    /** A reply-data buffer of at least bytes, at least twice the old one's size (below 2 GiB). */
    static ByteBuffer grownData(ByteBuffer old, int bytes) {
        int cap = (int) Math.min(Integer.MAX_VALUE - 64, Math.max(bytes, old == null ? 0 : 2L * old.capacity()));
        return ByteBuffer.allocateDirect(cap).order(ByteOrder.nativeOrder());
    }

    static String cString(ByteBuffer b, int off, int cap) {
        int n = 0;
        while (n < cap && b.get(off + n) != 0) n++;
        byte[] s = new byte[n];
        b.get(off, s, 0, n);
        return new String(s, StandardCharsets.UTF_8);
    }

    /** The exception of a failed call of the core as a whole. */
    static RuntimeException failure(int rc, String message, String url) {
        String msg = (message == null || message.isEmpty()) ? slotlane.sl_strerror(rc) : message;
        if (url != null) msg = msg + " (" + url + ")";
        return Errors.ofCode(rc, msg);
    }
}
