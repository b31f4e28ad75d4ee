package io.slotlane;

/**
 * How a client talks to its server: {@code sl_mode}.
 */
public enum Mode {
    /** Ask the seed: CLUSTER SLOTS answers means cluster, an error means plain. */
    AUTO(0),
    /** One node, no discovery, no routing: the server sees every command. */
    PLAIN(1),
    /** Discover the slot map and route every command by its key. */
    CLUSTER(2);

    final int code;

    Mode(int code) {
        this.code = code;
    }

    static Mode ofCode(int code) {
        for (Mode m : values()) if (m.code == code) return m;
        throw new IllegalStateException("unknown sl_mode " + code);
    }
}
