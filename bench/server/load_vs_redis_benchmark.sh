#!/usr/bin/env bash
# bench/server/load_vs_redis_benchmark.sh — does slotlane-load drive a cluster at least as hard
# as redis-benchmark? One slotlane-server with 2 shards in per-shard mode (pinned to CPU 1),
# loaded by `redis-benchmark --cluster` and by `slotlane-load --cluster` (both pinned to CPU 0)
# at the same connection count and depth: 25 TCP connections to each shard (50 in all), 16
# requests outstanding per connection (bench/load/README.md defines it); 32-byte values,
# 100,000 random keys; SET and GET for both tools (each tool's keys filled before its GET row),
# and a 1:10 SET:GET row for slotlane-load alone; three rounds, round-major, medians, every
# round kept, with each run's connections per shard (ss) and both tools' CPU per request.
#
#   bench/server/load_vs_redis_benchmark.sh [--rounds R] [--quick] [--server-cpus 1] [--load-cpus 0] ...
#
# slotlane-load runs its async engine: 1 thread (one libuv loop, as redis-benchmark's one
# event loop) x 25 handles, each one connection per shard with one batch of 16 keys of that
# shard in flight on it (per-node batches: every connection moves on its own, as a
# redis-benchmark --cluster connection does; --sl-per-batch: the older mixed batches). Writes bench/records/<host>-<date>-<time>-load-vs-redis-benchmark.json and prints a
# markdown table. Options: bench/server/run --help (the same engine).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/serverbench.py" --benchmark load-vs-redis-benchmark "$@"
