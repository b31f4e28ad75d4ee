package io.slotlane;

/**
 * An element of a three-field tuple-list parameter (GEOADD's longitude, latitude and member).
 * Immutable.
 *
 * @param <A> the first field's type
 * @param <B> the second field's type
 * @param <C> the third field's type
 */
public final class Tuple3<A, B, C> {
    private final A a;
    private final B b;
    private final C c;

    private Tuple3(A a, B b, C c) {
        this.a = a;
        this.b = b;
        this.c = c;
    }

    /**
     * @param a   the first field
     * @param b   the second field
     * @param c   the third field
     * @param <A> the first field's type
     * @param <B> the second field's type
     * @param <C> the third field's type
     * @return the tuple
     */
    public static <A, B, C> Tuple3<A, B, C> of(A a, B b, C c) {
        return new Tuple3<>(a, b, c);
    }

    /** @return the first field */
    public A a() { return a; }

    /** @return the second field */
    public B b() { return b; }

    /** @return the third field */
    public C c() { return c; }

    @Override
    public String toString() { return "(" + a + ", " + b + ", " + c + ")"; }
}
