package io.slotlane;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * Every key of a cluster (every primary; the one node in plain mode), as an
 * {@code Iterable<byte[]>}: {@code for (byte[] key : ScanIterable.of(client, "user:*", 1000, null))}.
 * The core tracks slots, not node cursors: across a reshard or a failover every key that
 * existed throughout is returned at least once, and a key of a moved slot may come twice.
 * Each iterator holds one core handle of the client's pool until it is exhausted or
 * closed ({@link Iter#close()}; try-with-resources).
 */
public final class ScanIterable implements Iterable<byte[]> {
    private final SlotlaneClient client;
    private final byte[] match;
    private final byte[] type;
    private final int count;

    private ScanIterable(SlotlaneClient client, byte[] match, byte[] type, int count) {
        this.client = client;
        this.match = match;
        this.type = type;
        this.count = count;
    }

    /**
     * A scan of every key.
     *
     * @param client the client
     * @param match a glob pattern (MATCH), or null for every key
     * @param count the per-call hint (COUNT), 0 for the server's default
     * @param type a type name (TYPE: "string", "hash"...), or null for any
     * @return the iterable
     */
    public static ScanIterable of(SlotlaneClient client, String match, int count, String type) {
        if (count < 0) throw new IllegalArgumentException("count must not be negative");
        if (match != null && match.isEmpty()) throw new IllegalArgumentException("an empty MATCH pattern");
        return new ScanIterable(client, match == null ? null : match.getBytes(StandardCharsets.UTF_8),
                type == null ? null : type.getBytes(StandardCharsets.UTF_8), count);
    }

    @Override
    public Iter iterator() {
        return new Iter();
    }

    /** The iterator: a page of keys per core call. */
    public final class Iter implements Iterator<byte[]>, AutoCloseable {
        private final ArrayDeque<byte[]> page = new ArrayDeque<>();
        private CoreHandle h;
        private long scan;
        private boolean done;

        Iter() {
            int ml = match == null ? 0 : match.length, tl = type == null ? -1 : type.length;
            ByteBuffer strings = ByteBuffer.allocateDirect(ml + Math.max(tl, 0) + 2).order(ByteOrder.nativeOrder());
            if (match != null) strings.put(0, match);
            int typeOff = -1;
            if (type != null) {
                typeOff = ml + 1;
                strings.put(typeOff, type);
                strings.put(typeOff + type.length, (byte) 0);
            }
            h = client.acquire();
            try {
                synchronized (h) {
                    scan = h.scanNew(strings, ml, typeOff, count);
                }
            } catch (RuntimeException e) {
                client.release(h);
                h = null;
                throw e;
            }
        }

        @Override
        public boolean hasNext() {
            while (page.isEmpty() && !done) fetch();
            return !page.isEmpty();
        }

        @Override
        public byte[] next() {
            if (!hasNext()) throw new NoSuchElementException();
            return page.poll();
        }

        private void fetch() {
            try {
                Object v;
                synchronized (h) {
                    done = h.scanNext(scan);
                    v = h.dec.next(true);
                }
                if (v instanceof List) for (Object k : (List<?>) v) page.add((byte[]) k);
                if (done) close();
            } catch (RuntimeException e) {
                close();
                throw e;
            }
        }

        /** Frees the scan and gives the handle back (also done at the end of the keys). */
        @Override
        public void close() {
            done = true;
            if (h != null) {
                synchronized (h) {
                    h.scanFree(scan);
                }
                client.release(h);
                h = null;
            }
        }
    }
}
