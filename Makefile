# slotlane: the two commands of the README.
#   make test   installs what is missing, builds everything, runs every test
#   make bench  installs what is missing, builds, starts the server, runs every language's cluster-cost benchmark,
#               then every language's async rows (bench/async/run.py), then the TLS rows
#   make fuzz   the server's and the core's libFuzzer targets, FUZZ_SECONDS (60) each (not part of make test)
.PHONY: all build build-asan build-tsan test bench bench-async bench-tls bench-c bench-python bench-rust bench-go bench-node bench-java bench-csharp fuzz deps clean
JOBS ?= $(shell nproc)

all: build

deps:
	@bash ci/deps.sh

build: deps
	@cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build build -j$(JOBS)

build-asan: deps
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSL_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j$(JOBS)

# ThreadSanitizer: the threaded tests — the loop thread and completion queues (test_cq), scans
# paged on it (test_scan), the subscriber's thread (test_pubsub), leased connections cancelled
# from other threads (test_lease, test_lease_async); ci/test.sh runs them.
TSAN_TESTS = test_cq test_scan test_pubsub test_lease test_lease_async
build-tsan: deps
	@cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DSL_SANITIZE_THREAD=ON >/dev/null
	@cmake --build build-tsan -j$(JOBS) --target $(TSAN_TESTS)

test: build build-asan build-tsan
	@bash ci/test.sh

# One slotlane-server (4 shards, per-shard, --misrouted forward), every present language's
# cluster-cost runner against it one after another, one combined record, table and chart
# (bench/run.py --help). E.g. make bench BENCH_ARGS="--quick" or BENCH_ARGS="--langs c,go".
BENCH_ARGS ?=
# Then the TLS rows (bench/tls/run.py: C, Python, Node, Go, Java, Rust and C# over TLS beside the
# same rows without it, against redis-server with TLS); BENCH_TLS=0 leaves them out.
BENCH_TLS ?= 1
# Between them the async rows (bench/async/run.py: every present language's async-cost runner,
# N = 64 and 512 callers each awaiting one GET or SET, plain and cluster, beside the
# ecosystem's async client, against one slotlane-server; one record and table). --quick in
# BENCH_ARGS makes them quick too; BENCH_ASYNC_ARGS adds to them; BENCH_ASYNC=0 leaves them out.
BENCH_ASYNC ?= 1
BENCH_ASYNC_ARGS ?=
bench: build
	@SL_BENCH_INVOCATION="make bench$(if $(BENCH_ARGS), BENCH_ARGS=\"$(BENCH_ARGS)\")" python3 bench/run.py $(BENCH_ARGS)
	@if [ "$(BENCH_ASYNC)" = 1 ]; then SL_BENCH_INVOCATION="make bench (async rows)" python3 bench/async/run.py $(if $(findstring --quick,$(BENCH_ARGS)),--quick) $(BENCH_ASYNC_ARGS); fi
	@if [ "$(BENCH_TLS)" = 1 ]; then flock /tmp/suite-bench.lock python3 bench/tls/run.py $(BENCH_TLS_ARGS); fi

bench-async: build
	@SL_BENCH_INVOCATION="make bench-async" python3 bench/async/run.py $(BENCH_ASYNC_ARGS)

bench-tls: build
	@flock /tmp/suite-bench.lock python3 bench/tls/run.py $(BENCH_TLS_ARGS)

# One language's rows only (a run of one language, not eleven minutes of all), e.g.
# make bench-python; BENCH_ARGS adds to it.
bench-c bench-python bench-rust bench-go bench-node bench-java bench-csharp: bench-%: build
	@SL_BENCH_INVOCATION="make bench-$*$(if $(BENCH_ARGS), BENCH_ARGS=\"$(BENCH_ARGS)\")" python3 bench/run.py --langs $* $(BENCH_ARGS)

# Not in make test: clang + libFuzzer, bounded by FUZZ_SECONDS per target (server/fuzz/README.md,
# core/fuzz/README.md).
FUZZ_SECONDS ?= 60
fuzz: deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) JOBS=$(JOBS) bash server/fuzz/run.sh
	@FUZZ_SECONDS=$(FUZZ_SECONDS) JOBS=$(JOBS) bash core/fuzz/run.sh

clean:
	rm -rf build build-asan build-tsan build-fuzz
