package io.slotlane;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** How a typed helper turns the decoded reply into its result type. */
final class Conv {
    private Conv() {}

    static final byte ANY = 0;       // as decoded, bulk strings as String
    static final byte BYTES = 1;     // as decoded, bulk strings as byte[]
    static final byte BOOL = 2;      // integer 1 -> true
    static final byte DOUBLE = 3;    // bulk text (RESP2) or double (RESP3) -> Double
    static final byte MAP = 4;       // flat array (RESP2) or map (RESP3) -> Map<String, String>
    static final byte SET = 5;       // array (RESP2) or set (RESP3) -> Set<String>

    static boolean asBytes(byte conv) {
        return conv == BYTES;
    }

    static Object apply(byte conv, Object v) {
        if (v == null || v instanceof SlotlaneException) return v;
        switch (conv) {
            case BOOL:
                return v instanceof Long ? (Long) v != 0 : v;
            case DOUBLE:
                if (v instanceof String) {
                    String s = (String) v;
                    if (s.equals("inf") || s.equals("+inf")) return Double.POSITIVE_INFINITY;
                    if (s.equals("-inf")) return Double.NEGATIVE_INFINITY;
                    return Double.parseDouble(s);
                }
                return v;
            case MAP:
                if (v instanceof List) {
                    List<?> l = (List<?>) v;
                    Map<Object, Object> m = new LinkedHashMap<>(l.size());
                    for (int i = 0; i + 1 < l.size(); i += 2) m.put(l.get(i), l.get(i + 1));
                    return m;
                }
                return v;
            case SET:
                if (v instanceof List) return new LinkedHashSet<>((List<?>) v);
                return v;
            default:
                return v;
        }
    }

    @SuppressWarnings("unchecked")
    static <T> T cast(Object v) {
        return (T) v;
    }

    static List<Object> list(int n) {
        return new ArrayList<>(n);
    }

}
