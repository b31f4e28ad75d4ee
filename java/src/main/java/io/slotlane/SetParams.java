package io.slotlane;

/**
 * The options of SET: expiry ({@code EX}, {@code PX}, {@code EXAT}, {@code PXAT},
 * {@code KEEPTTL}, at most one) and condition ({@code NX} or {@code XX}). Immutable; each
 * method returns a new instance. Conflicting or non-positive values fail with
 * {@link IllegalArgumentException}.
 *
 * <pre>{@code client.set("k", "v", SetParams.setParams().nx().ex(60)); }</pre>
 */
public final class SetParams {
    private final String expiry;   // EX, PX, EXAT, PXAT, KEEPTTL or null
    private final long expiryValue;
    private final String condition; // NX, XX or null

    private SetParams(String expiry, long expiryValue, String condition) {
        this.expiry = expiry;
        this.expiryValue = expiryValue;
        this.condition = condition;
    }

    /**
     * @return parameters without options (a plain SET)
     */
    public static SetParams setParams() {
        return new SetParams(null, 0, null);
    }

    /**
     * @param seconds time to live, positive
     * @return with {@code EX seconds}
     */
    public SetParams ex(long seconds) { return expiry("EX", seconds); }

    /**
     * @param millis time to live, positive
     * @return with {@code PX millis}
     */
    public SetParams px(long millis) { return expiry("PX", millis); }

    /**
     * @param unixSeconds expiry time, positive
     * @return with {@code EXAT unixSeconds}
     */
    public SetParams exAt(long unixSeconds) { return expiry("EXAT", unixSeconds); }

    /**
     * @param unixMillis expiry time, positive
     * @return with {@code PXAT unixMillis}
     */
    public SetParams pxAt(long unixMillis) { return expiry("PXAT", unixMillis); }

    /**
     * @return with {@code KEEPTTL} (keep the key's time to live)
     */
    public SetParams keepTtl() {
        if (expiry != null) throw new IllegalArgumentException("SetParams: KEEPTTL conflicts with " + expiry);
        return new SetParams("KEEPTTL", 0, condition);
    }

    /**
     * @return with {@code NX}: set only if the key does not exist
     */
    public SetParams nx() { return condition("NX"); }

    /**
     * @return with {@code XX}: set only if the key exists
     */
    public SetParams xx() { return condition("XX"); }

    private SetParams expiry(String what, long v) {
        if (v <= 0) throw new IllegalArgumentException("SetParams: " + what + " must be positive, not " + v);
        if (expiry != null) throw new IllegalArgumentException("SetParams: " + what + " conflicts with " + expiry);
        return new SetParams(what, v, condition);
    }

    private SetParams condition(String what) {
        if (condition != null) throw new IllegalArgumentException("SetParams: " + what + " conflicts with " + condition);
        return new SetParams(expiry, expiryValue, what);
    }

    /** Number of arguments after the value. */
    int argc() {
        return (condition != null ? 1 : 0) + (expiry == null ? 0 : "KEEPTTL".equals(expiry) ? 1 : 2);
    }

    void encode(CommandBuffer b) {
        if (condition != null) b.add(condition);
        if (expiry != null) {
            b.add(expiry);
            if (!"KEEPTTL".equals(expiry)) b.add(expiryValue);
        }
    }

    /**
     * @return whether a NX or XX condition is set (then SET may answer nil)
     */
    boolean conditional() {
        return condition != null;
    }

    @Override
    public String toString() {
        return "SetParams{" + (condition == null ? "" : condition) + (expiry == null ? "" : " " + expiry
                + ("KEEPTTL".equals(expiry) ? "" : " " + expiryValue)) + "}";
    }
}
