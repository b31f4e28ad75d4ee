package io.slotlane;

import java.util.Objects;

/**
 * One element of a {@code pairs<K,V>} reply (ZRANGE WITHSCORES: member and score; HRANDFIELD
 * WITHVALUES: field and value) and of a two-field tuple-list parameter (HSET's field and
 * value, ZADD's score and member, MSET's key and value). Immutable.
 *
 * @param <K> the first element's type
 * @param <V> the second element's type
 */
public final class Pair<K, V> {
    private final K key;
    private final V value;

    private Pair(K key, V value) {
        this.key = key;
        this.value = value;
    }

    /**
     * @param key   the first element (a field, a member, a score...)
     * @param value the second element
     * @param <K>   the first element's type
     * @param <V>   the second element's type
     * @return the pair
     */
    public static <K, V> Pair<K, V> of(K key, V value) {
        return new Pair<>(key, value);
    }

    /** @return the first element */
    public K key() { return key; }

    /** @return the second element */
    public V value() { return value; }

    @Override
    public boolean equals(Object o) {
        return o instanceof Pair && Objects.equals(((Pair<?, ?>) o).key, key) && Objects.equals(((Pair<?, ?>) o).value, value);
    }

    @Override
    public int hashCode() { return Objects.hash(key, value); }

    @Override
    public String toString() { return "(" + key + ", " + value + ")"; }
}
