#!/usr/bin/env bash
# The local equivalent of cibuildwheel (which cannot run here): build the sdist and a wheel from it
# (python -m build), `auditwheel repair` the wheel, install the repaired wheel into a fresh venv, and run
# the suite from a copy of tests/ against the installed wheel: compiled backend, then KCODEC_PURE=1
# (.ci/test_wheel.py, also cibuildwheel's test-command). kcodec-broker's sdist and wheel (broker/) are built and
# installed beside kcodec's.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
out=$(mktemp -d "${TMPDIR:-/tmp}/kcodec-wheel.XXXXXX")
trap 'rm -rf "$out"' EXIT

KCODEC_REQUIRE_EXTENSION=1 "$PY" -m build --outdir "$out/dist" . > "$out/build.log" 2>&1 \
  || { tail -40 "$out/build.log"; exit 1; }
# kcodec-broker (broker/): its own distribution, pure Python (sdist, then a py3-none-any wheel from it).
"$PY" -m build --outdir "$out/broker-dist" broker > "$out/broker-build.log" 2>&1 \
  || { tail -40 "$out/broker-build.log"; exit 1; }
ls "$out/dist" "$out/broker-dist"
PATH="$(dirname "$PY"):$PATH" "$PY" -m auditwheel repair --wheel-dir "$out/wheelhouse" "$out"/dist/*.whl
wheel=$(ls "$out"/wheelhouse/*.whl)
broker_wheel=$(ls "$out"/broker-dist/*.whl)
echo "repaired: $(basename "$wheel"); beside it $(basename "$broker_wheel")"
# What each wheel holds and needs (the kcodec wheel no broker, the broker's its data and command).
KCODEC_WHEEL="$wheel" KCODEC_BROKER_WHEEL="$broker_wheel" "$PY" -m pytest -q -p no:cacheprovider \
  tests/test_build_dists.py ${KCODEC_JUNIT_DIR:+--junitxml=$KCODEC_JUNIT_DIR/wheel-dists.xml}
python3 -m venv "$out/venv"
"$out/venv/bin/python" -m pip install -q --upgrade pip
# One command: kcodec-broker's kcodec==<version> is the wheel under test, not an index's.
"$out/venv/bin/python" -m pip install -q "${wheel}[test]" "$broker_wheel"
"$out/venv/bin/python" .ci/test_wheel.py --both
# docs/analyze.md's other way onto a cluster: a venv holding the wheel (what the executors import), packed by
# venv-pack and shipped with --archives to a standalone cluster (tests/test_spark_cluster.py, run from the checkout,
# whose driver submits it; the workers' own Python lacks kcodec).
python3 -m venv "$out/executors"
"$out/executors/bin/python" -m pip install -q "${wheel}[compression,tap]" pyarrow
"$PY" -m venv_pack -q -p "$out/executors" -o "$out/kcodec-env.tar.gz"
KCODEC_PACKED_ENV="$out/kcodec-env.tar.gz" "$PY" -m pytest -q -p no:cacheprovider -m spark tests/test_spark_cluster.py \
  -k packed ${KCODEC_JUNIT_DIR:+--junitxml=$KCODEC_JUNIT_DIR/wheel-packed.xml}
