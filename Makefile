# slotlane: the two commands of the README.
#   make test   installs what is missing, builds everything, runs every test
#   make bench  installs what is missing, builds, starts the servers, runs the cluster-cost benchmark
#   make fuzz   the server's libFuzzer targets, FUZZ_SECONDS (60) each (not part of make test)
.PHONY: all build build-asan test bench fuzz deps clean
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

test: build build-asan
	@bash ci/test.sh

# The C tool (4 s rounds by default here), then every binding's runner in its quick form.
BENCH_ARGS ?= --seconds 4
BENCH_LANGS_ARGS ?=
bench: build
	@bash ci/bench.sh $(BENCH_ARGS)
	@bash ci/bench-langs.sh $(BENCH_LANGS_ARGS)

# Not in make test: clang + libFuzzer, bounded by FUZZ_SECONDS per target (server/fuzz/README.md).
FUZZ_SECONDS ?= 60
fuzz: deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) JOBS=$(JOBS) bash server/fuzz/run.sh

clean:
	rm -rf build build-asan build-fuzz
