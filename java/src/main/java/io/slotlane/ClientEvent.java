package io.slotlane;

/**
 * What the core reports to {@link ClientOptions.Builder#onEvent} (its {@code SL_EVENT_*} kinds),
 * with the address ("host:port") of the node concerned.
 */
public enum ClientEvent {
    /** A refresh changed the slot map or the replicas; the address: the node that answered it. */
    TOPOLOGY_CHANGED,
    /** A working connection to the node broke, or a connect to a node that had worked failed: once per outage. */
    NODE_DOWN,
    /** The node, reported down, connected again. */
    NODE_UP,
    /** The node, a replica of a slot's primary, owns the slot now: once per promotion. */
    FAILOVER;

    /** A listener of the client's events. */
    @FunctionalInterface
    public interface Listener {
        /**
         * Called on a thread of the options' own, one event at a time, in the order the core
         * reported them (never on the thread of an execution: the listener may use the client).
         *
         * @param event   what happened
         * @param address the node's "host:port"
         */
        void onEvent(ClientEvent event, String address);
    }

    /** The sink the native callback calls (a JNI global reference held for the options' lifetime). */
    static final class Sink {
        private static final System.Logger LOG = System.getLogger("io.slotlane");
        private final Listener listener;
        private final java.util.concurrent.ExecutorService serial = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "slotlane-events");
            t.setDaemon(true);
            return t;
        });
        private long ref;

        Sink(Listener listener) {
            this.listener = listener;
        }

        /** The global reference handed to the core as on_event_ctx (made once). */
        synchronized long ref() {
            if (ref == 0) ref = io.slotlane.internal.slotlane.sl_java_event_ref(this);
            return ref;
        }

        /** Called by the native glue from inside the core: hands the event to the serial thread. */
        @SuppressWarnings("unused")
        void event(int type, String addr) {
            ClientEvent[] all = values();
            if (type < 1 || type > all.length) return;
            ClientEvent e = all[type - 1];
            serial.execute(() -> {
                try {
                    listener.onEvent(e, addr);
                } catch (RuntimeException x) {
                    LOG.log(System.Logger.Level.WARNING, "slotlane: the event listener threw", x);
                }
            });
        }
    }
}
