package io.slotlane;

import java.util.Collections;
import java.util.List;

/**
 * One node of a client's current topology ({@link #list}): its address (a {@link Route}
 * node target, so a per-node command is one loop), whether it is a primary, a replica's
 * primary, and the slot ranges it serves.
 */
public final class ClusterNode {
    private final String address;
    private final boolean primary;
    private final String primaryAddress;
    private final int[][] slots;

    ClusterNode(String address, boolean primary, String primaryAddress, int[][] slots) {
        this.address = address;
        this.primary = primary;
        this.primaryAddress = primaryAddress;
        this.slots = slots;
    }

    /**
     * The current topology of a client: every primary (in the order of all-primaries
     * replies) with its slot ranges, then the replicas the slot map names. Nothing is sent.
     *
     * @param client the client
     * @return the nodes
     */
    public static List<ClusterNode> list(SlotlaneClient client) {
        CoreHandle h = client.acquire();
        try {
            synchronized (h) {
                return Collections.unmodifiableList(h.nodes());
            }
        } finally {
            client.release(h);
        }
    }

    /** @return "host:port" */
    public String address() {
        return address;
    }

    /** @return true for a primary (it serves slots), false for a replica */
    public boolean isPrimary() {
        return primary;
    }

    /** @return a replica's primary ("host:port"), null for a primary */
    public String primaryAddress() {
        return primaryAddress;
    }

    /** @return the slot ranges served, {first, last} inclusive (empty for a replica) */
    public int[][] slots() {
        int[][] c = new int[slots.length][];
        for (int i = 0; i < slots.length; i++) c[i] = slots[i].clone();
        return c;
    }

    @Override
    public String toString() {
        return (primary ? "primary " : "replica ") + address;
    }
}
