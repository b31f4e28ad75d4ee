package io.slotlane;

/**
 * The client's counters ({@code sl_stats}), summed over its core handles.
 *
 * @param commands     commands executed (a split command counts once)
 * @param moved        MOVED redirects followed
 * @param ask          ASK redirects followed
 * @param tryagain     TRYAGAIN / CLUSTERDOWN retries
 * @param refreshes    slot-map refreshes
 * @param connects     successful connects, the first ones included
 * @param reconnects   successful connects after a connection was lost
 * @param bytesWritten bytes written to sockets
 * @param bytesRead    bytes read from sockets
 * @param nodes        nodes known (the largest count of any handle)
 * @param handles      core handles open
 */
public record ClientStats(long commands, long moved, long ask, long tryagain, long refreshes, long connects,
                          long reconnects, long bytesWritten, long bytesRead, long nodes, int handles) {
}
