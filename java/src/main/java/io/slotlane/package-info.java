/**
 * slotlane for Java: a Redis-protocol client for Redis Cluster, Valkey Cluster and sharded
 * servers, a thin binding of libslotlane (the C core does routing, redirects, splitting and
 * pipelining). Start with {@link io.slotlane.SlotlaneClient#create(io.slotlane.ClientOptions)}.
 */
package io.slotlane;
