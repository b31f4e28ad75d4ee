#!/usr/bin/env bash
# bench/server/load_vs_redis_benchmark.sh — does slotlane-load drive a cluster at least as hard
# as redis-benchmark? One slotlane-server with 2 shards in per-shard mode (pinned to CPU 1),
# loaded by `redis-benchmark --cluster` and by `slotlane-load --cluster` (both pinned to CPU 0)
# at the same connection count (50 in all) and depth (-P 16), 32-byte values, 100,000 random
# keys, SET and GET each on its own; three rounds, medians, every round kept.
#
#   bench/server/load_vs_redis_benchmark.sh [--rounds R] [--quick] [--server-cpus 1] [--load-cpus 0] ...
#
# slotlane-load uses 25 handles (5 threads x 5; each handle has one connection per shard:
# 50 connections). Writes bench/records/<host>-<date>-<time>-load-vs-redis-benchmark.json and
# prints a markdown table. Options: bench/server/run --help (the same engine).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/serverbench.py" --benchmark load-vs-redis-benchmark "$@"
