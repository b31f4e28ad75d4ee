package io.slotlane;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Builds Java values from the core's 24-byte reply records ({@code sl_reply}: u8 type, u8
 * flags, u16 reserved, u32 len, i64/f64 value, u64 offset), read with absolute getters of
 * a native-order direct ByteBuffer; aggregates are flattened depth-first.
 *
 * <p>Values: bulk string: {@code String} (UTF-8) or {@code byte[]}; status: {@code String};
 * integer: {@code Long}; nil: {@code null}; array and push: {@code List}; map:
 * {@code LinkedHashMap}; set: {@code LinkedHashSet}; double: {@code Double}; bool:
 * {@code Boolean}; big number: {@code BigInteger}; verbatim: {@link Verbatim}; error: a
 * {@link SlotlaneException} instance (not thrown).
 */
final class ReplyDecoder {
    static final int RECORD = 24;
    static final int STRING = 1, STATUS = 2, ERROR = 3, INTEGER = 4, NIL = 5, ARRAY = 6, MAP = 7, SET = 8,
            DOUBLE = 9, BOOL = 10, BIGNUM = 11, VERB = 12, PUSH = 13;

    private ByteBuffer rec;
    private ByteBuffer data;
    private int idx;
    private int nrec;

    void reset(ByteBuffer records, ByteBuffer data, int nrecords) {
        this.rec = records;
        this.data = data;
        this.idx = 0;
        this.nrec = nrecords;
    }

    /** The next top-level reply as a Java value; bulk strings as byte[] when asBytes. */
    Object next(boolean asBytes) {
        if (idx >= nrec) throw new IllegalStateException("slotlane: fewer reply records than commands");
        int o = idx++ * RECORD;
        ByteBuffer r = rec;
        int type = r.get(o) & 0xff;
        switch (type) {
            case STRING:
                return asBytes ? bytes(o) : string(o);
            case STATUS:
                return string(o);
            case INTEGER:
                return r.getLong(o + 8);
            case NIL:
                return null;
            case ERROR:
                return Errors.ofKind(ErrorKind.ofRecordFlags(r.get(o + 1) & 0xff), string(o));
            case ARRAY:
            case PUSH: {
                int n = r.getInt(o + 4);
                List<Object> list = new ArrayList<>(n);
                for (int i = 0; i < n; i++) list.add(next(asBytes));
                return list;
            }
            case MAP: {
                int n = r.getInt(o + 4) / 2;
                Map<Object, Object> map = new LinkedHashMap<>(n * 2);
                for (int i = 0; i < n; i++) {
                    Object k = next(asBytes);
                    map.put(k, next(asBytes));
                }
                return map;
            }
            case SET: {
                int n = r.getInt(o + 4);
                Set<Object> set = new LinkedHashSet<>(n * 2);
                for (int i = 0; i < n; i++) set.add(next(asBytes));
                return set;
            }
            case DOUBLE:
                return r.getDouble(o + 8);
            case BOOL:
                return r.getLong(o + 8) != 0;
            case BIGNUM:
                return new BigInteger(string(o));
            case VERB: {
                long f = r.getLong(o + 8);
                String fmt = new String(new byte[] {(byte) f, (byte) (f >> 8), (byte) (f >> 16)}, StandardCharsets.US_ASCII);
                return new Verbatim(fmt, bytes(o));
            }
            default:
                throw new IllegalStateException("slotlane: unknown reply record type " + type);
        }
    }

    /**
     * The next top-level reply as EXEC's: an array whose element i is decoded as shapes[i]
     * asks (bulk strings as byte[] for {@link Shape#BYTES}); any other reply (nil, an error)
     * as {@link #next}.
     */
    Object nextExec(Shape<?>[] shapes, int count) {
        if (idx >= nrec) throw new IllegalStateException("slotlane: fewer reply records than commands");
        int o = idx * RECORD;
        int type = rec.get(o) & 0xff;
        if (type != ARRAY || rec.getInt(o + 4) != count) return next(false);
        idx++;
        List<Object> list = new ArrayList<>(count);
        for (int i = 0; i < count; i++) list.add(next(shapes[i] == Shape.BYTES));
        return list;
    }

    private byte[] bytes(int o) {
        int len = rec.getInt(o + 4);
        byte[] b = new byte[len];
        data.get((int) rec.getLong(o + 16), b, 0, len);
        return b;
    }

    private String string(int o) {
        return new String(bytes(o), StandardCharsets.UTF_8);
    }
}
