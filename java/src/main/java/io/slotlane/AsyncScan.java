package io.slotlane;

import io.slotlane.internal.slotlane;
import io.slotlane.internal.slotlaneConstants;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * Every key of a cluster (every primary; the one node in plain mode) in pages, each a
 * {@link CompletableFuture}: the asynchronous form of {@link ScanIterable}, over the core's
 * cluster SCAN ({@code sl_scan_*}) whose steps run on the core's loop thread
 * ({@code sl_loop_submit_scan_cq}): nothing blocks the calling thread.
 *
 * <pre>{@code
 * try (AsyncScan scan = asyncClient.scan("user:*", 1000, null)) {
 *     scan.forEach(key -> seen.add(key)).join();             // every page, keys on the executor
 * }
 * // or page by page:
 * AsyncScan s = asyncClient.scan(null, 0, "hash");
 * s.next().thenAccept(page -> { ... page.keys() ... if (!page.last()) ... s.next() ... });
 * }</pre>
 *
 * <p>The core tracks slots, not node cursors: across a reshard or a failover every key that
 * existed throughout is returned at least once, and a key of a moved slot may come twice.
 * One page is in flight at a time ({@link #next()} while one is throws
 * {@link IllegalStateException}); the futures complete on the client's executor.
 * {@code cancel(true)} on a page's future cancels that page in the core (the scan stays
 * usable: the next page returns what the cancelled one would have). {@link #close()} frees
 * the scan (at once, or when a page in flight completes); a scan left open is freed with its
 * client. Thread-safe.
 */
public final class AsyncScan implements AutoCloseable {
    /**
     * One page of keys.
     *
     * @param keys the keys of this page (maybe none: a page can be empty before the end)
     * @param last whether every slot has been scanned (no later page holds a key)
     */
    public record Page(List<byte[]> keys, boolean last) {
    }

    private final AsyncClient client;
    private long scan; // 0 once freed; guarded by this
    private boolean inflight, closed, last;

    AsyncScan(AsyncClient client, long scan) {
        this.client = client;
        this.scan = scan;
    }

    /** The options' strings and struct in native memory for sl_scan_new (which copies them). */
    static long create(long coreClient, String match, int count, String type) {
        if (count < 0) throw new IllegalArgumentException("count must not be negative");
        if (match != null && match.isEmpty()) throw new IllegalArgumentException("an empty MATCH pattern");
        if (type != null && type.isEmpty()) throw new IllegalArgumentException("an empty TYPE");
        byte[] m = match == null ? new byte[0] : match.getBytes(StandardCharsets.UTF_8);
        byte[] t = type == null ? new byte[0] : type.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocateDirect(48 + m.length + t.length + 2).order(ByteOrder.nativeOrder());
        long a = slotlane.sl_java_buffer_address(b);
        int mOff = 48, tOff = 48 + m.length + 1;
        b.put(mOff, m);
        b.put(tOff, t);
        b.put(tOff + t.length, (byte) 0);
        b.putInt(0, slotlaneConstants.SL_SCAN_OPTIONS_VERSION); // sl_scan_options: version, size, match, match_len, type, count
        b.putInt(4, 40);
        b.putLong(8, match == null ? 0 : a + mOff);
        b.putLong(16, m.length);
        b.putLong(24, type == null ? 0 : a + tOff);
        b.putInt(32, count);
        b.putLong(40, 0); // the out-parameter
        int rc = slotlane.sl_scan_new(coreClient, a, a + 40);
        if (rc != 0) throw CoreHandle.failure(rc, slotlane.sl_strerror(rc), null);
        return b.getLong(40);
    }

    /**
     * Fetches the next page.
     *
     * @return the page's future (completed at once with an empty last page after the last)
     * @throws IllegalStateException while a page is in flight, after {@link #close()}, or
     *         when the client is closed
     */
    public CompletableFuture<Page> next() {
        synchronized (this) {
            if (closed) throw new IllegalStateException("the scan is closed");
            if (inflight) throw new IllegalStateException("a page of this scan is in flight: wait for its future");
            if (last) return CompletableFuture.completedFuture(new Page(List.of(), true));
            inflight = true;
        }
        try {
            return client.submitScan(this, scan);
        } catch (RuntimeException | Error e) {
            synchronized (this) {
                inflight = false;
            }
            throw e;
        }
    }

    /**
     * @return whether a page said it was the last (every slot has been scanned)
     */
    public synchronized boolean isDone() {
        return last;
    }

    /**
     * Fetches every page to the end and hands each key to action (on the client's executor,
     * one page after the other, in order); then closes the scan.
     *
     * @param action what to do with each key
     * @return the future of the number of keys seen; a page's failure fails it
     */
    public CompletableFuture<Long> forEach(Consumer<byte[]> action) {
        Cmd.notNull(action, "action");
        CompletableFuture<Long> done = new CompletableFuture<>();
        AtomicLong n = new AtomicLong();
        step(action, n, done);
        return done;
    }

    private void step(Consumer<byte[]> action, AtomicLong n, CompletableFuture<Long> done) {
        CompletableFuture<Page> f;
        try {
            f = next();
        } catch (RuntimeException e) {
            close();
            done.completeExceptionally(e);
            return;
        }
        f.whenComplete((page, err) -> {
            if (err != null) {
                close();
                done.completeExceptionally(err);
                return;
            }
            try {
                for (byte[] k : page.keys()) action.accept(k);
            } catch (RuntimeException e) {
                close();
                done.completeExceptionally(e);
                return;
            }
            n.addAndGet(page.keys().size());
            if (page.last()) {
                close();
                done.complete(n.get());
            } else {
                step(action, n, done);
            }
        });
    }

    /**
     * On the completion thread: a page completed with status. Returns the page, or throws its
     * failure; the scan is freed here when it was closed while the page was in flight.
     */
    Page completed(AsyncEngine e, long batch, int status, long records, long bytes) {
        synchronized (this) {
            inflight = false;
            try {
                if (scan == 0) throw new CancelledException(ErrorKind.CANCELLED, "the scan was freed");
                if (status != 0) {
                    String msg = slotlane.sl_scan_errmsg(scan);
                    throw Errors.ofCode(status, msg == null || msg.isEmpty() ? slotlane.sl_strerror(status) : msg);
                }
                int rc = e.copyOut(batch, records, bytes);
                if (rc != 0) throw Errors.ofCode(rc, slotlane.sl_strerror(rc));
                Object v = e.dec.next(true);
                if (v instanceof SlotlaneException) throw (SlotlaneException) v;
                List<byte[]> keys = new ArrayList<>();
                if (v instanceof List) for (Object k : (List<?>) v) keys.add((byte[]) k);
                last = slotlane.sl_scan_done(scan) != 0;
                return new Page(keys, last);
            } finally {
                if (closed) free();
            }
        }
    }

    /** A submission refused: no page is in flight. */
    synchronized void refused() {
        inflight = false;
        if (closed) free();
    }

    /** Frees the scan (once); no page may be in flight. Guarded by this. */
    private void free() {
        if (scan != 0) {
            slotlane.sl_scan_free(scan);
            scan = 0;
            client.forget(this);
        }
    }

    /** The client's last reference is going: frees the scan if nothing did (no page is in flight then). */
    synchronized void freeWithClient() {
        closed = true;
        if (scan != 0) {
            slotlane.sl_scan_free(scan);
            scan = 0;
        }
    }

    /**
     * Frees the scan: at once, or when the page in flight completes (its future still
     * completes). Idempotent.
     */
    @Override
    public synchronized void close() {
        closed = true;
        if (!inflight) free();
    }

    @Override
    public synchronized String toString() {
        return "AsyncScan{" + (scan == 0 ? "freed" : inflight ? "a page in flight" : last ? "done" : "open") + "}";
    }
}
