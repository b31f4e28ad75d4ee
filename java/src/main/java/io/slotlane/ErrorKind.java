package io.slotlane;

/**
 * Why a command failed: the kinds of the core's error records ({@code sl_err_kind}), plus the
 * failures of an execution as a whole.
 */
public enum ErrorKind {
    /** The server answered an error reply (ERR, WRONGTYPE, MOVED, CROSSSLOT...). */
    SERVER,
    /** The command's node could not be reached, written or read. */
    IO,
    /** The execution's deadline passed before the reply. */
    TIMEOUT,
    /** The redirect limit (MOVED/ASK/TRYAGAIN/CLUSTERDOWN) was reached. */
    REDIRECTS,
    /** The node sent malformed RESP or exceeded a limit. */
    PROTOCOL,
    /** The execution was cancelled (the core's sl_client_cancel), or the thread was interrupted while waiting for a free handle. */
    CANCELLED,
    /** No node owns the slot, or the client refused the command (CROSSSLOT transaction, split part failed). */
    CLUSTER,
    /** The client refused the command's bytes or arguments. */
    ARGUMENT;

    private static final ErrorKind[] BY_FLAGS = values();

    /**
     * The kind of an error record's flags byte ({@code sl_err_kind}); SERVER for unknown values.
     */
    static ErrorKind ofRecordFlags(int flags) {
        return flags >= 0 && flags < BY_FLAGS.length ? BY_FLAGS[flags] : SERVER;
    }
}
