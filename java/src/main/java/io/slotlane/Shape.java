package io.slotlane;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The spec's reply types as Java values (bindings/spec/README.md, "Reply types and the one
 * normalisation of RESP2 and RESP3"): a shape turns a decoded reply ({@link ReplyDecoder}'s
 * values) into its type's value, so RESP2 and RESP3 give the same Java value. Built from
 * the type grammar by the generated code; nothing here knows a command. A reply of another
 * type fails with a {@link ProtocolException}.
 *
 * @param <T> the Java type
 */
abstract class Shape<T> {
    private final String name;

    Shape(String name) {
        this.name = name;
    }

    /** The value of a decoded reply that is not an error. */
    abstract T apply(Object v);

    final ProtocolException unexpected(Object v) {
        String what = v == null ? "nil" : v instanceof List ? "array" : v instanceof Map ? "map" : v instanceof Set ? "set"
                : v.getClass().getSimpleName();
        return new ProtocolException(ErrorKind.PROTOCOL, "slotlane: a " + what + " reply for a " + name + " result");
    }

    /** A nested element: errors inside an aggregate are raised. */
    final T elem(Object v) {
        if (v instanceof SlotlaneException) throw (SlotlaneException) v;
        return apply(v);
    }

    @Override
    public String toString() {
        return name;
    }

    // ------------------------------------------------------------------ scalars

    /** The reply as decoded (bulk strings as String): the raw call and the {@code any} type. */
    static final Shape<Object> ANY = new Shape<Object>("any") {
        @Override
        Object apply(Object v) { return v; }
    };

    /** The raw call with bytes: the reply as decoded with bulk strings as byte[]. */
    static final Shape<Object> BYTES = new Shape<Object>("any") {
        @Override
        Object apply(Object v) { return v; }
    };

    static final Shape<Boolean> OK = new Shape<Boolean>("ok") {
        @Override
        Boolean apply(Object v) {
            if ("OK".equals(v)) return Boolean.TRUE;
            throw unexpected(v);
        }
    };

    static final Shape<String> STATUS = new Shape<String>("status") {
        @Override
        String apply(Object v) {
            if (v instanceof String) return (String) v;
            throw unexpected(v);
        }
    };

    static final Shape<String> STRING = new Shape<String>("string") {
        @Override
        String apply(Object v) {
            if (v instanceof String) return (String) v;
            if (v instanceof Verbatim) return v.toString();
            throw unexpected(v);
        }
    };

    static final Shape<Long> INT = new Shape<Long>("int") {
        @Override
        Long apply(Object v) {
            if (v instanceof Long) return (Long) v;
            throw unexpected(v);
        }
    };

    static final Shape<Boolean> BOOL = new Shape<Boolean>("bool") {
        @Override
        Boolean apply(Object v) {
            if (v instanceof Boolean) return (Boolean) v;
            if (v instanceof Long && ((Long) v == 0 || (Long) v == 1)) return (Long) v == 1;
            throw unexpected(v);
        }
    };

    static final Shape<Double> DOUBLE = new Shape<Double>("double") {
        @Override
        Double apply(Object v) {
            if (v instanceof Double) return (Double) v;
            if (v instanceof Long) return (double) (Long) v;
            if (v instanceof String) {
                String s = (String) v;
                switch (s) {
                    case "inf": case "+inf": return Double.POSITIVE_INFINITY;
                    case "-inf": return Double.NEGATIVE_INFINITY;
                    case "nan": return Double.NaN;
                    default:
                        try {
                            return Double.parseDouble(s);
                        } catch (NumberFormatException e) {
                            throw unexpected(v);
                        }
                }
            }
            throw unexpected(v);
        }
    };

    /** SCAN's cursor: an unsigned 64-bit integer in a long (compare with Long.compareUnsigned). */
    static final Shape<Long> CURSOR = new Shape<Long>("cursor") {
        @Override
        Long apply(Object v) {
            if (v instanceof String) {
                try {
                    return Long.parseUnsignedLong((String) v);
                } catch (NumberFormatException e) {
                    throw unexpected(v);
                }
            }
            throw unexpected(v);
        }
    };

    /** T?: null for a nil reply. An {@code ok?} is false for nil. */
    static <T> Shape<T> nullable(Shape<T> s) {
        if (s == OK) {
            @SuppressWarnings("unchecked")
            Shape<T> okNil = (Shape<T>) OK_NIL;
            return okNil;
        }
        return new Shape<T>(s.name + "?") {
            @Override
            T apply(Object v) { return v == null ? null : s.apply(v); }
        };
    }

    private static final Shape<Boolean> OK_NIL = new Shape<Boolean>("ok?") {
        @Override
        Boolean apply(Object v) { return v == null ? Boolean.FALSE : OK.apply(v); }
    };

    // ------------------------------------------------------------------ aggregates

    static <T> Shape<List<T>> array(Shape<T> of) {
        return new Shape<List<T>>("array<" + of + ">") {
            @Override
            List<T> apply(Object v) {
                if (!(v instanceof Collection)) throw unexpected(v);
                Collection<?> c = (Collection<?>) v;
                List<T> out = new ArrayList<>(c.size());
                for (Object x : c) out.add(of.elem(x));
                return out;
            }
        };
    }

    static <T> Shape<Set<T>> set(Shape<T> of) {
        return new Shape<Set<T>>("set<" + of + ">") {
            @Override
            Set<T> apply(Object v) {
                if (!(v instanceof Collection)) throw unexpected(v);
                Collection<?> c = (Collection<?>) v;
                Set<T> out = new LinkedHashSet<>(c.size() * 2);
                for (Object x : c) out.add(of.elem(x));
                return out;
            }
        };
    }

    /** The key, value, key, value... of a map or pairs reply: a RESP3 map, a flat RESP2 array or an array of [k, v] arrays. */
    private static List<Object> flat(Shape<?> s, Object v) {
        List<Object> out = new ArrayList<>();
        if (v instanceof Map) {
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                out.add(e.getKey());
                out.add(e.getValue());
            }
            return out;
        }
        if (!(v instanceof List)) throw s.unexpected(v);
        List<?> l = (List<?>) v;
        if (!l.isEmpty() && l.get(0) instanceof List) {
            for (Object x : l) {
                if (!(x instanceof List) || ((List<?>) x).size() != 2) throw s.unexpected(x);
                out.addAll((List<?>) x);
            }
            return out;
        }
        if (l.size() % 2 != 0) throw s.unexpected(v);
        out.addAll(l);
        return out;
    }

    static <K, V> Shape<Map<K, V>> map(Shape<K> k, Shape<V> val) {
        return new Shape<Map<K, V>>("map<" + k + "," + val + ">") {
            @Override
            Map<K, V> apply(Object v) {
                List<Object> f = flat(this, v);
                Map<K, V> out = new LinkedHashMap<>(f.size());
                for (int i = 0; i < f.size(); i += 2) out.put(k.elem(f.get(i)), val.elem(f.get(i + 1)));
                return out;
            }
        };
    }

    static <K, V> Shape<List<Pair<K, V>>> pairs(Shape<K> k, Shape<V> val) {
        return new Shape<List<Pair<K, V>>>("pairs<" + k + "," + val + ">") {
            @Override
            List<Pair<K, V>> apply(Object v) {
                List<Object> f = flat(this, v);
                List<Pair<K, V>> out = new ArrayList<>(f.size() / 2);
                for (int i = 0; i < f.size(); i += 2) out.add(Pair.of(k.elem(f.get(i)), val.elem(f.get(i + 1))));
                return out;
            }
        };
    }

    static <A, B> Shape<Tuple2<A, B>> tuple(Shape<A> a, Shape<B> b) {
        return new Shape<Tuple2<A, B>>("tuple<" + a + "," + b + ">") {
            @Override
            Tuple2<A, B> apply(Object v) {
                if (!(v instanceof List) || ((List<?>) v).size() != 2) throw unexpected(v);
                List<?> l = (List<?>) v;
                return new Tuple2<>(a.elem(l.get(0)), b.elem(l.get(1)));
            }
        };
    }
}
