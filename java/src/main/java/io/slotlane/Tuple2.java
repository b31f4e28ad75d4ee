package io.slotlane;

import java.util.Objects;

/**
 * A {@code tuple<A,B>} reply: SCAN's cursor and keys, GEOPOS's longitude and latitude,
 * LMPOP's key and elements. Immutable.
 *
 * @param <A> the first element's type
 * @param <B> the second element's type
 */
public final class Tuple2<A, B> {
    private final A first;
    private final B second;

    Tuple2(A first, B second) {
        this.first = first;
        this.second = second;
    }

    /** @return the first element */
    public A first() { return first; }

    /** @return the second element */
    public B second() { return second; }

    @Override
    public boolean equals(Object o) {
        return o instanceof Tuple2 && Objects.equals(((Tuple2<?, ?>) o).first, first) && Objects.equals(((Tuple2<?, ?>) o).second, second);
    }

    @Override
    public int hashCode() { return Objects.hash(first, second); }

    @Override
    public String toString() { return "(" + first + ", " + second + ")"; }
}
