package io.slotlane;

import java.util.Objects;

/**
 * A routing override for one command ({@code sl_route}): by default a command goes to the
 * owner of its key's slot; these send it elsewhere. In plain mode every command goes to
 * the one node.
 */
public final class Route {
    final int kind;
    final int slot;
    final String node;

    private Route(int kind, int slot, String node) {
        this.kind = kind;
        this.slot = slot;
        this.node = node;
    }

    /**
     * To every primary. DBSIZE answers the sum, KEYS one array, FLUSHALL/FLUSHDB/PING the
     * common status; other commands an array with one reply per primary.
     *
     * @return the route
     */
    public static Route allPrimaries() { return new Route(1, 0, null); }

    /**
     * To the node {@code host:port} (one of the cluster's nodes).
     *
     * @param hostPort e.g. {@code "127.0.0.1:7001"}
     * @return the route
     */
    public static Route node(String hostPort) {
        Objects.requireNonNull(hostPort, "hostPort");
        int colon = hostPort.lastIndexOf(':');
        if (colon <= 0 || colon == hostPort.length() - 1 || hostPort.indexOf('\0') >= 0)
            throw new IllegalArgumentException("Route.node needs \"host:port\", not \"" + hostPort + "\"");
        return new Route(2, 0, hostPort);
    }

    /**
     * To the owner of a slot.
     *
     * @param slot 0..16383
     * @return the route
     */
    public static Route slot(int slot) {
        if (slot < 0 || slot > 16383) throw new IllegalArgumentException("slot must be in 0..16383, not " + slot);
        return new Route(3, slot, null);
    }

    /**
     * @return a route to a random primary
     */
    public static Route random() { return new Route(4, 0, null); }

    @Override
    public String toString() {
        switch (kind) {
            case 1: return "Route.allPrimaries()";
            case 2: return "Route.node(" + node + ")";
            case 3: return "Route.slot(" + slot + ")";
            default: return "Route.random()";
        }
    }
}
