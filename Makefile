# slotlane: the two commands of the README.
#   make test   installs what is missing, builds everything, runs every test
#   make bench  installs what is missing, builds, starts the server, runs every language's cluster-cost benchmark
#   make fuzz   the server's and the core's libFuzzer targets, FUZZ_SECONDS (60) each (not part of make test)
.PHONY: all build build-asan build-tsan test bench fuzz deps clean
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

# ThreadSanitizer: the threaded tests of the loop thread, completion queues and leased connections (ci/test.sh runs them).
TSAN_TESTS = test_cq test_lease test_lease_async
build-tsan: deps
	@cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DSL_SANITIZE_THREAD=ON >/dev/null
	@cmake --build build-tsan -j$(JOBS) --target $(TSAN_TESTS)

test: build build-asan build-tsan
	@bash ci/test.sh

# One slotlane-server (4 shards, per-shard, --misrouted forward), every present language's
# cluster-cost runner against it one after another, one combined record, table and chart
# (bench/run.py --help). E.g. make bench BENCH_ARGS="--quick" or BENCH_ARGS="--langs c,go".
BENCH_ARGS ?=
bench: build
	@SL_BENCH_INVOCATION="make bench$(if $(BENCH_ARGS), BENCH_ARGS=\"$(BENCH_ARGS)\")" python3 bench/run.py $(BENCH_ARGS)

# Not in make test: clang + libFuzzer, bounded by FUZZ_SECONDS per target (server/fuzz/README.md,
# core/fuzz/README.md).
FUZZ_SECONDS ?= 60
fuzz: deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) JOBS=$(JOBS) bash server/fuzz/run.sh
	@FUZZ_SECONDS=$(FUZZ_SECONDS) JOBS=$(JOBS) bash core/fuzz/run.sh

clean:
	rm -rf build build-asan build-tsan build-fuzz
