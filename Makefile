# `make run` and `make test` do all set-up on a fresh machine (a venv in .venv, the package, its test
# dependencies), then run the main job or the tests.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.kcodec-installed

.PHONY: run test bench definitions clean

run: $(STAMP)
	$(PY) -m kcodec showcase

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) -m pytest benchmarks --benchmark-only --benchmark-columns=min,median,mean,rounds $(PYTEST_ARGS)

$(STAMP): pyproject.toml setup.py $(wildcard kcodec/*.pyx)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

# Re-derive the definitions from ../shared and regenerate the message classes.
definitions: $(STAMP)
	$(PY) -m kcodec.definitions.derive
	$(PY) -m kcodec.messages._generate

clean:
	rm -rf $(VENV) build *.egg-info kcodec/_fast.c kcodec/*.so
