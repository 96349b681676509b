# `make run` and `make test` do all set-up on a fresh machine (a venv in .venv, the package, its test
# dependencies), then run the main job or the tests.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.kcodec-installed
# kafkajs for the broker's interop tests (tests/interop/js), from its lock file.
JS_STAMP := tests/interop/js/node_modules/.kcodec-installed

.PHONY: run test oracle docs prereqs tcpdump tshark kafka-libs bench bench-report bench-analyze bench-native bench-callgrind bench-tools fuzz fuzz-atheris definitions clean

run: $(STAMP)
	$(PY) -m kcodec showcase

test: $(STAMP) prereqs tcpdump tshark kafka-libs
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory $(JS_STAMP); fi
	$(PY) -m pytest $(PYTEST_ARGS)

# What `make test` needs beyond Python, named when missing: Java 17+ (a JDK) for Spark, Apache Kafka and the
# Java oracle, Maven for Kafka's jars (tests/oracle, tests/kafka; fetched from Maven Central), Node.js and npm
# for the kafkajs tests. In CI (CI=true) a missing one stops here; elsewhere the tests that need it skip.
prereqs:
	@missing=""; \
	if ! command -v java >/dev/null 2>&1 && [ -z "$$JAVA_HOME" ]; then \
	  missing="$$missing\n  - Java 17+ (PySpark: the spark tests, kcodec analyze; Apache Kafka: tests/kafka; Debian: apt-get install openjdk-17-jdk-headless)"; fi; \
	if ! command -v mvn >/dev/null 2>&1; then \
	  missing="$$missing\n  - Apache Maven (the Java oracle, tests/oracle, and Apache Kafka's jars, tests/kafka; Debian: apt-get install maven)"; fi; \
	if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  missing="$$missing\n  - Node.js 18+ and npm (the kafkajs interop tests; Debian: apt-get install nodejs npm)"; fi; \
	if ! command -v go >/dev/null 2>&1; then \
	  missing="$$missing\n  - Go 1.21+ (franz-go's and kafka-go's own suites, tests/interop/go; it fetches the toolchain their go.mod names; https://go.dev/dl/)"; fi; \
	if [ -n "$$missing" ]; then \
	  printf "make test: missing on this machine:$$missing\n" >&2; \
	  if [ -n "$$CI" ]; then echo "CI needs them: stopping." >&2; exit 1; fi; \
	  echo "the tests that need them will skip (in CI they fail)." >&2; fi

# The Java oracle alone (docs/testing.md): Maven builds tests/oracle, a JVM per Kafka line checks every message
# and version and the record batches against kcodec, byte for byte.
oracle: $(STAMP)
	$(PY) -m pytest tests/oracle -m oracle $(PYTEST_ARGS)

# The documentation site (mkdocs.yml, docs/), built strictly into site/; tests/test_docs.py builds it too.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet
	@echo "documentation built: site/index.html"

# tcpdump for the real-capture tests (tests/test_spark_real.py): installed with apt-get when missing and
# root; otherwise those tests skip (and fail under CI).
tcpdump:
	@command -v tcpdump >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& { apt-get install -y -q tcpdump >/dev/null 2>&1 \
		     || { apt-get update -q >/dev/null && apt-get install -y -q tcpdump >/dev/null; }; } \
		|| echo "tcpdump is missing: tests/test_spark_real.py skips (and fails under CI)"; }

# tshark for the comparison with Wireshark's Kafka dissector (tests/test_spark_tshark.py,
# benchmarks/analyze_bench.py): installed with apt-get when missing and root, wireshark-common's question
# (a setuid dumpcap) answered no beforehand; otherwise that test skips (and fails under CI).
tshark:
	@command -v tshark >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections \
		&& { DEBIAN_FRONTEND=noninteractive apt-get install -y -q tshark >/dev/null 2>&1 \
		     || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q tshark >/dev/null; }; } \
		|| echo "tshark is missing: tests/test_spark_tshark.py skips (and fails under CI)"; }

# Apache Kafka 4.4's jars (tests/kafka/pom.xml) for the tests that run Kafka itself: fetched by mvn into
# build/kafka-libs once (again when the pom changes), from ~/.m2 or Maven Central.
kafka-libs: $(STAMP)
	@if command -v mvn >/dev/null 2>&1; then $(PY) tests/kafka/real_kafka.py fetch; \
	else echo "mvn is missing: the tests that run Apache Kafka skip (and fail under CI)"; fi

bench: $(STAMP)
	$(PY) -m pytest benchmarks --benchmark-only --benchmark-columns=min,median,mean,rounds $(PYTEST_ARGS)

# Every published figure comes from benchmarks/results/<suite>.jsonl (one line per run, appended; the format:
# benchmarks/figures/store.py). `make bench-report` measures one run into BENCH_RUN: every benchmark
# (kcodec beside kio, kafka-python, aiokafka, Tansu; 1k, 10k, 100k topics), the Metadata 1k object cases
# again under KCODEC_PURE=1, the native anchors (bench-native) and every case's instruction count
# (bench-callgrind; BENCH_CALLGRIND_ARGS e.g. "--only REGEX"); then appends the run and regenerates every
# figure in README.md and docs/ (benchmarks/report.py; tests/test_figures.py holds the text to the files).
# BENCH_FRESH=1 starts a new set of runs instead of adding to the kept ones. BENCH_COUNTS_FROM=DIR takes the
# instruction counts from an earlier run folder of the same clean commit instead of counting again (they do
# not depend on the load; counting is most of a run's time), e.g. a second run:
#   make bench-report BENCH_RUN=build/bench-run2 BENCH_COUNTS_FROM=build/bench-run
BENCH_RUN ?= build/bench-run
BENCH_FRESH ?=
BENCH_COUNTS_FROM ?=
BENCH_ROUNDS ?= 41
bench-report: $(STAMP) bench-tools
	rm -rf $(BENCH_RUN) && $(PY) benchmarks/report.py start $(BENCH_RUN)
	KCODEC_BENCH_RUN=$(BENCH_RUN) KCODEC_BENCH_DIR=$(BENCH_RUN) $(PY) -m pytest benchmarks -q \
		-W ignore::DeprecationWarning --benchmark-json=$(BENCH_RUN)/pytest-benchmark.json \
		--benchmark-columns=min,median,rounds $(PYTEST_ARGS)
	KCODEC_BENCH_RUN=$(BENCH_RUN) KCODEC_BENCH_DIR=$(BENCH_RUN) KCODEC_PURE=1 KCODEC_BENCH_SIZES=1k \
		$(PY) -m pytest benchmarks/test_metadata.py -q -W ignore::DeprecationWarning -k "decode or encode" \
		--benchmark-columns=min,median,rounds $(PYTEST_ARGS)
	$(MAKE) --no-print-directory bench-native BENCH_RUN=$(BENCH_RUN)
	$(if $(BENCH_COUNTS_FROM),$(PY) benchmarks/report.py reuse-counts $(BENCH_COUNTS_FROM) $(BENCH_RUN),\
		$(MAKE) --no-print-directory bench-callgrind BENCH_RUN=$(BENCH_RUN))
	$(PY) benchmarks/report.py collect $(BENCH_RUN) $(if $(BENCH_FRESH),--fresh)
	$(PY) benchmarks/report.py write
	$(PY) benchmarks/report.py chart $(BENCH_RUN)/chart.png
	@echo "benchmarks: a run appended to benchmarks/results/*.jsonl; figures regenerated in README.md and docs/"

# `kcodec analyze` beside tshark (benchmarks/analyze_bench.py: generated 100 KB, 200 MB, 1 GB and 10 GB captures; wall
# time, CPU seconds of every process, peak memory): a run appended to benchmarks/results/analyze.jsonl, then
# every figure regenerated (docs/analyze.md's table). BENCH_ANALYZE_ARGS e.g. "--rounds 3 --sizes 100k,200m".
BENCH_ANALYZE_ARGS ?=
bench-analyze: $(STAMP) tcpdump tshark
	$(PY) benchmarks/analyze_bench.py $(BENCH_ANALYZE_ARGS)
	$(PY) benchmarks/report.py write

# The native anchors (benchmarks/native/: Rust's kafka-protocol, franz-go's kmsg; cargo and go) timed over
# BENCH_ROUNDS calls of each payload and counted by callgrind, into BENCH_RUN.
bench-native: $(STAMP) bench-tools
	$(PY) benchmarks/native/run.py $(BENCH_RUN) --rounds $(BENCH_ROUNDS)

# Instruction counts of every Metadata and record batch case, kcodec and each peer (valgrind's callgrind,
# slow: every counted call and its set-up run under valgrind), into BENCH_RUN.
BENCH_CALLGRIND_ARGS ?=
bench-callgrind: $(STAMP) bench-tools
	$(PY) benchmarks/callgrind.py $(BENCH_RUN) $(BENCH_CALLGRIND_ARGS)

# valgrind (callgrind and its header for benchmarks/native/callgrind/marker.c), from apt when root.
bench-tools:
	@command -v valgrind >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& { apt-get install -y -q valgrind >/dev/null 2>&1 \
		     || { apt-get update -q >/dev/null && apt-get install -y -q valgrind >/dev/null; }; } \
		|| { echo "valgrind is missing: install it for the instruction counts"; exit 1; }; }

# The fuzzing campaign (fuzz/campaign.py): mutated real and generated inputs through every decoder on both
# backends, the columnar and record readers, FrameSplitter and an in-process broker, for MINUTES minutes from
# seed SEED, niced (the machine is shared). Failing inputs land in build/campaign/seed-SEED/findings, each
# with a one-line reason; replay one with `fuzz/campaign.py --replay FILE.bin`.
MINUTES ?= 10
SEED ?= 1
fuzz: $(STAMP)
	nice -n 10 $(PY) fuzz/campaign.py --minutes $(MINUTES) --seed $(SEED) --shared $${KCODEC_SHARED:-$(abspath ..)/shared}

# atheris over every decoder, the extensions built with AddressSanitizer (gcc -fsanitize=address) in build/fuzz; see
# fuzz/fuzz_kcodec.py. FUZZ_SECONDS=300 by default; findings land in build/fuzz/ (crash-*).
FUZZ_SECONDS ?= 300
FUZZ_DIR := build/fuzz
# One runtime for the sanitizer and libFuzzer: atheris' asan_with_fuzzer.so, preloaded.
ASAN = LD_PRELOAD=$$($(abspath $(PY)) -c "import atheris; print(atheris.path())")/asan_with_fuzzer.so \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
fuzz-atheris: $(STAMP)
	$(PY) -m pip install -q 'atheris>=2.3'
	rm -rf $(FUZZ_DIR)/kcodec && mkdir -p $(FUZZ_DIR)
	cp -r kcodec setup.py pyproject.toml README.md LICENSE NOTICE $(FUZZ_DIR)/
	find $(FUZZ_DIR)/kcodec \( -name '*.so' -o -name '*.c' \) -delete
	cd $(FUZZ_DIR) && KCODEC_SANITIZE=address KCODEC_REQUIRE_EXTENSION=1 $(abspath $(PY)) setup.py -q build_ext --inplace
	cd $(FUZZ_DIR) && $(ASAN) PYTHONPATH=. $(abspath $(PY)) $(abspath fuzz/fuzz_kcodec.py) --seed corpus \
		$${KCODEC_SHARED:-$(abspath ..)/shared}
	cd $(FUZZ_DIR) && $(ASAN) PYTHONPATH=. $(abspath $(PY)) $(abspath fuzz/fuzz_kcodec.py) -max_total_time=$(FUZZ_SECONDS) \
		-rss_limit_mb=4096 corpus

# kcodec and kcodec-broker (broker/, its own distribution), both editable, in one pip command: kcodec-broker's
# kcodec==<version> resolves to this checkout's kcodec, not to PyPI.
$(STAMP): pyproject.toml setup.py broker/pyproject.toml $(wildcard kcodec/*/*.pyx kcodec/*/*.pxi)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]' -e ./broker
	@# bytecode for the checkout's modules, as pip writes it for an installed package: where PYTHONDONTWRITEBYTECODE
	@# is set (as on this project's machines) every process the tests and the main job start compiled them again
	$(PY) -m compileall -q kcodec broker/kcodec_broker >/dev/null
	touch $(STAMP)

$(JS_STAMP): tests/interop/js/package.json tests/interop/js/package-lock.json
	cd tests/interop/js && npm ci --no-audit --no-fund --loglevel=error
	touch $(JS_STAMP)

# Re-derive the definitions from ../shared and regenerate the message classes.
definitions: $(STAMP)
	$(PY) -m kcodec.definitions.derive
	$(PY) -m kcodec.messages._generate

clean:
	rm -rf $(VENV) build site *.egg-info broker/*.egg-info broker/build tests/oracle/*/target kcodec/*/*.c kcodec/*/*.so tests/interop/js/node_modules
