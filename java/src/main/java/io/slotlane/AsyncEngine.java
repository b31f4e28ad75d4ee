package io.slotlane;

import io.slotlane.internal.slotlane;
import io.slotlane.internal.slotlaneConstants;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The process's asynchronous engine, shared by every {@link AsyncClient}: the core's loop
 * thread ({@code sl_loop}, which multiplexes every client's batches on one connection per
 * node), one completion queue ({@code sl_cq}) and one completion thread, a Java thread (so
 * attached to the JVM once) blocked in {@code sl_cq_wait} that takes up to 64 completions per
 * wake-up, decodes their replies and hands each future's completion to its client's executor.
 * It never runs user code (nor does the loop thread). Started on first use; lives as long as
 * the process (as Rust's aio and Python's asyncio engines do).
 */
final class AsyncEngine {
    private static final int CAP = 64, COMPLETION = 56; // sl_completion: batch, token, status, reserved, sl_sizes
    private static volatile AsyncEngine instance;

    final long loop;
    final long cq;
    private final ConcurrentHashMap<Long, AsyncOp> ops = new ConcurrentHashMap<>();
    private final AtomicLong tokens = new AtomicLong();
    private final Thread thread;
    // the completion thread's own memory
    private final ByteBuffer comp;
    private final long compAddr;
    private final ByteBuffer sizes;
    private final long sizesAddr;
    private ByteBuffer rec, data;
    private long recAddr, dataAddr;
    final ReplyDecoder dec = new ReplyDecoder();

    static {
        if (slotlaneConstants.SL_COMPLETION_SIZE != COMPLETION)
            throw new LinkageError("slotlane: sl_completion is " + slotlaneConstants.SL_COMPLETION_SIZE + " bytes, not " + COMPLETION);
    }

    static AsyncEngine get() {
        AsyncEngine e = instance;
        if (e != null) return e;
        synchronized (AsyncEngine.class) {
            if (instance == null) instance = new AsyncEngine();
            return instance;
        }
    }

    private AsyncEngine() {
        ByteBuffer out = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
        long outAddr = slotlane.sl_java_buffer_address(out);
        int rc = slotlane.sl_loop_new(outAddr);
        if (rc != 0) throw CoreHandle.failure(rc, "could not start the core's loop thread", null);
        loop = out.getLong(0);
        rc = slotlane.sl_cq_new(outAddr);
        if (rc != 0) {
            slotlane.sl_loop_free(loop);
            throw CoreHandle.failure(rc, "could not make a completion queue", null);
        }
        cq = out.getLong(0);
        comp = ByteBuffer.allocateDirect(CAP * COMPLETION).order(ByteOrder.nativeOrder());
        compAddr = slotlane.sl_java_buffer_address(comp);
        sizes = ByteBuffer.allocateDirect(32).order(ByteOrder.nativeOrder());
        sizesAddr = slotlane.sl_java_buffer_address(sizes);
        growRecords(256 * ReplyDecoder.RECORD);
        growData(16 * 1024);
        thread = new Thread(this::dispatch, "slotlane-completions");
        thread.setDaemon(true);
        thread.start();
    }

    /** A token for an operation about to be submitted; it is looked up when it completes. */
    long register(AsyncOp op) {
        long t = tokens.incrementAndGet();
        ops.put(t, op);
        return t;
    }

    /** Forgets a token whose submission was refused (it will never complete). */
    void unregister(long token) {
        ops.remove(token);
    }

    private void dispatch() {
        for (;;) {
            int n = (int) slotlane.sl_cq_wait(cq, compAddr, CAP, -1);
            for (int i = 0; i < n; i++) {
                int off = i * COMPLETION;
                AsyncOp op = ops.remove(comp.getLong(off + 8));
                if (op == null) continue; // cannot happen: every accepted submission is registered
                int status = comp.getInt(off + 16);
                long records = comp.getLong(off + 24), bytes = comp.getLong(off + 32), commands = comp.getLong(off + 40);
                try {
                    op.completed(this, status, records, bytes, commands);
                } catch (Throwable t) { // never lose the thread: the future fails instead
                    op.future.completeExceptionally(t);
                }
            }
        }
    }

    /**
     * Copies a completed batch's replies into this thread's buffers and leaves the decoder on
     * them; the failure of the copy, or 0. Completion thread only.
     */
    int copyOut(long batch, long records, long bytes) {
        if (records * ReplyDecoder.RECORD > Integer.MAX_VALUE || bytes > Integer.MAX_VALUE)
            throw new ProtocolException(ErrorKind.PROTOCOL, "slotlane: replies exceed 2 GiB");
        if (records * ReplyDecoder.RECORD > rec.capacity()) growRecords((int) (records * ReplyDecoder.RECORD));
        if (bytes > data.capacity()) growData((int) bytes);
        int rc = slotlane.sl_batch_copy_out(batch, recAddr, rec.capacity(), dataAddr, data.capacity(), sizesAddr);
        if (rc != 0) return rc;
        dec.reset(rec, data, (int) sizes.getLong(0));
        return 0;
    }

    private void growRecords(int bytes) {
        rec = CoreHandle.grownRecords(rec, bytes);
        recAddr = slotlane.sl_java_buffer_address(rec);
    }

    private void growData(int bytes) {
        data = CoreHandle.grownData(data, bytes);
        dataAddr = slotlane.sl_java_buffer_address(data);
    }
}
