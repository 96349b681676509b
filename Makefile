# `make run` and `make test` do all set-up on a fresh machine (a venv in .venv, the package, its test
# dependencies), then run the main job or the tests.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.kcodec-installed
# kafkajs for the broker's interop tests (tests/interop/js), from its lock file.
JS_STAMP := tests/interop/js/node_modules/.kcodec-installed

.PHONY: run test bench bench-report fuzz definitions clean

run: $(STAMP)
	$(PY) -m kcodec showcase

test: $(STAMP) $(JS_STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) -m pytest benchmarks --benchmark-only --benchmark-columns=min,median,mean,rounds $(PYTEST_ARGS)

# Every benchmark (kcodec beside kio and kafka-python, in interleaved rounds; 1k, 10k, 100k topics) and peak
# memory, the 1k cases again under KCODEC_PURE=1 (the reference backend), then
# benchmarks/results/{results.md,chart.png} and the table in README.md. BENCH_STAT=min reports each case's
# least disturbed round instead of the median (for a loaded machine).
BENCH_DIR ?= benchmarks/results
BENCH_STAT ?= median
bench-report: $(STAMP)
	mkdir -p $(BENCH_DIR)
	KCODEC_BENCH_DIR=$(BENCH_DIR) $(PY) -m pytest benchmarks -q -W ignore::DeprecationWarning \
		--benchmark-json=$(BENCH_DIR)/benchmark.json --benchmark-columns=min,median,rounds $(PYTEST_ARGS)
	KCODEC_PURE=1 KCODEC_BENCH_SIZES=1k $(PY) -m pytest benchmarks/test_metadata.py -q -W ignore::DeprecationWarning \
		-k "decode or encode" --benchmark-json=$(BENCH_DIR)/benchmark-pure.json $(PYTEST_ARGS)
	$(PY) benchmarks/report.py $(BENCH_DIR) --readme README.md --stat $(BENCH_STAT)

# atheris over every decoder, the extensions built with AddressSanitizer (gcc -fsanitize=address) in build/fuzz; see
# fuzz/fuzz_kcodec.py. FUZZ_SECONDS=300 by default; findings land in build/fuzz/ (crash-*).
FUZZ_SECONDS ?= 300
FUZZ_DIR := build/fuzz
# One runtime for the sanitizer and libFuzzer: atheris' asan_with_fuzzer.so, preloaded.
ASAN = LD_PRELOAD=$$($(abspath $(PY)) -c "import atheris; print(atheris.path())")/asan_with_fuzzer.so \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
fuzz: $(STAMP)
	$(PY) -m pip install -q 'atheris>=2.3'
	rm -rf $(FUZZ_DIR)/kcodec && mkdir -p $(FUZZ_DIR)
	cp -r kcodec setup.py pyproject.toml README.md LICENSE NOTICE $(FUZZ_DIR)/
	rm -f $(FUZZ_DIR)/kcodec/*.so $(FUZZ_DIR)/kcodec/*.c
	cd $(FUZZ_DIR) && KCODEC_SANITIZE=address KCODEC_REQUIRE_EXTENSION=1 $(abspath $(PY)) setup.py -q build_ext --inplace
	cd $(FUZZ_DIR) && $(ASAN) PYTHONPATH=. $(abspath $(PY)) $(abspath fuzz/fuzz_kcodec.py) --seed corpus \
		$${KCODEC_SHARED:-$(abspath ..)/shared}
	cd $(FUZZ_DIR) && $(ASAN) PYTHONPATH=. $(abspath $(PY)) $(abspath fuzz/fuzz_kcodec.py) -max_total_time=$(FUZZ_SECONDS) \
		-rss_limit_mb=4096 corpus

$(STAMP): pyproject.toml setup.py $(wildcard kcodec/*.pyx kcodec/*.pxi)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

$(JS_STAMP): tests/interop/js/package.json tests/interop/js/package-lock.json
	cd tests/interop/js && npm ci --no-audit --no-fund --loglevel=error
	touch $(JS_STAMP)

# Re-derive the definitions from ../shared and regenerate the message classes.
definitions: $(STAMP)
	$(PY) -m kcodec.definitions.derive
	$(PY) -m kcodec.messages._generate

clean:
	rm -rf $(VENV) build *.egg-info kcodec/_fast.c kcodec/_columnar.c kcodec/*.so tests/interop/js/node_modules
