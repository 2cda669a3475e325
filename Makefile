# The two commands of the quick start, `make run` and `make test`, do all set-up themselves.
BUILD       ?= build
BUILD_ASAN  ?= build-asan
BUILD_TSAN  ?= build-tsan
CONFIG      ?= examples/local.yaml
DURATION    ?= 20
FUZZ_SECONDS ?= 300
JOBS        ?= $(shell nproc)

.PHONY: all bootstrap build build-sanitize run test test-format test-sizes test-release test-unit test-python \
	test-integration \
	test-asan test-tsan test-fuzz \
	test-soak test-fuzz-and-soak fuzz format clean bench

# Every C++ file of the project, for clang-format.
SOURCES = $(shell find include src tests bench python/native \( -name '*.hpp' -o -name '*.cpp' \) -print)

all: build

bootstrap:
	@bash scripts/bootstrap

$(BUILD)/build.ninja: | bootstrap
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

build: bootstrap $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# The demo writes its events to ./run-data; each `make run` starts from an empty one, since the
# writer refuses to overwrite the files of an earlier run.
run: build
	rm -rf run-data
	$(BUILD)/bin/daqflow run $(CONFIG) --duration $(DURATION) --summary $(BUILD)/run-summary.json

# The stages, each timed (scripts/test-stages prints the times at the end). The integration
# tests spend most of their time waiting on their runs: the sanitizer build, the fuzzers, the
# soak and the sanitizer trees' tests run beside them, niced, on the CPU they leave ("A|B,C": A
# beside B then C). The two sanitizer trees' tests run one after the other: their control ports
# are the same (and the integration tests' are a range of their own).
TEST_STAGES = test-format test-sizes build test-unit test-python \
	'test-integration|build-sanitize,test-fuzz-and-soak,test-asan,test-tsan'
test: bootstrap
	@bash scripts/test-stages $(TEST_STAGES)

# A check, not a rewrite: `make format` applies .clang-format.
# No file over 600 lines, no function over 100 (scripts/check-sizes lists any).
test-sizes:
	@python3 scripts/check-sizes

test-format: bootstrap
	@clang-format --dry-run --Werror $(SOURCES) || \
	  { echo "make test: the files above are not formatted; run 'make format'"; exit 1; }
	@echo "test-format: $(words $(SOURCES)) files formatted"

# The unit tests use both cores. The integration tests run four at a time (their ports and
# namespaces are reserved per test process; most of their time is spent waiting on runs, not
# computing): 7 to 9 minutes on two cores instead of 17 one at a time. TEST_JOBS=1 runs them one
# after the other.
TEST_JOBS   ?= 4
test-release: test-unit test-integration

test-unit: build
	cd $(BUILD) && ctest --output-on-failure --timeout 300 -j $(JOBS) -L unit

# The Python package, installed with pip into a fresh virtual environment, its tests, mypy
# --strict and the example notebook (scripts/test-python, docs/python.md).
test-python: bootstrap
	@bash scripts/test-python

test-integration: build
	cd $(BUILD) && ctest --output-on-failure --timeout 300 -j $(TEST_JOBS) -L integration

# Two minutes of the event builder at full rate: memory and descriptors must stay flat
# (scripts/soak; the one-hour version is in docs/reliability.md).
test-soak: build
	cd $(BUILD) && ctest --output-on-failure --timeout 300 -L soak

# The soak only asserts memory and descriptors, which load does not change: it runs while the
# fuzzers run.
test-fuzz-and-soak: build
	@$(MAKE) --no-print-directory test-soak & soak=$$!; \
	  $(MAKE) --no-print-directory test-fuzz; fuzz=$$?; \
	  wait $$soak; soak=$$?; \
	  test $$fuzz -eq 0 && test $$soak -eq 0

# The sanitizer tree: clang, AddressSanitizer and UndefinedBehaviorSanitizer, the libraries and
# unit tests, and the fuzzers linked from the same objects (instrumented for libFuzzer too).
# Unoptimised, which compiles in 40% less time than -O1 with these instrumentations (the tests and
# fuzzers run slower, by less than that saves), and with line tables only: the sanitizers'
# reports name files and lines, and the objects are smaller and link faster.
$(BUILD_ASAN)/build.ninja: | bootstrap
	cmake -S . -B $(BUILD_ASAN) -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
	  "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -gline-tables-only" -DDAQFLOW_SANITIZE=ON -DDAQFLOW_FUZZ=ON \
	  -DDAQFLOW_UNIT_TESTS_ONLY=ON

build-sanitize: bootstrap $(BUILD_ASAN)/build.ninja
	cmake --build $(BUILD_ASAN) -j $(JOBS)

test-asan: build-sanitize
	cd $(BUILD_ASAN) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitizers/lsan.supp \
	  OMPI_MCA_mca_base_component_disable_dlclose=1 \
	  ctest --output-on-failure --timeout 300 -j $(JOBS) -L unit

# ThreadSanitizer over the concurrent layers: the core, transport and runtime unit tests and the
# control layer's threads (the control ports' server and client, the lease keeper; in this tree
# unit_control holds only those tests: tests/CMakeLists.txt). UCX's
# memory hooks (libucm patches madvise and mmap) crash under TSan's interceptors, so UCX runs
# without them here; its registration cache then relies on its own checks.
TSAN_TESTS = unit_core unit_transport unit_runtime unit_control
test-tsan: bootstrap
	cmake -S . -B $(BUILD_TSAN) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DDAQFLOW_TSAN=ON \
	  -DDAQFLOW_UNIT_TESTS_ONLY=ON
	cmake --build $(BUILD_TSAN) -j $(JOBS) --target $(TSAN_TESTS)
	cd $(BUILD_TSAN) && UCX_MEM_MMAP_HOOK_MODE=none \
	  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 \
	  suppressions=$(CURDIR)/tests/sanitizers/tsan.supp" \
	  ctest --output-on-failure --timeout 300 -j $(JOBS) -R '^unit\.(core|transport|runtime|control)$$'

# The fuzzers as a regression test: a fixed seed and number of inputs per target, so that a
# clean checkout tries exactly the inputs tried where the change was made.
test-fuzz: build-sanitize
	@FUZZ_JOBS=$(JOBS) bash scripts/run-fuzzers $(BUILD_ASAN) --regression

# Exploring: a random seed, FUZZ_SECONDS per target, a working corpus kept in $(BUILD_ASAN).
fuzz: build-sanitize
	@FUZZ_JOBS=$(JOBS) bash scripts/run-fuzzers $(BUILD_ASAN) $(FUZZ_SECONDS)

# The standard benchmark set (a few minutes): results into bench-results/<date>/, then the
# regenerated docs/performance.md.
bench: build
	BUILD=$(BUILD) bash scripts/bench

format:
	clang-format -i $(SOURCES)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN)
