#!/usr/bin/env bash
# The local equivalent of cibuildwheel (which cannot run here): build the sdist and a wheel from it
# (python -m build), `auditwheel repair` the wheel, install the repaired wheel into a fresh venv, and run
# the suite from a copy of tests/ against the installed wheel: compiled backend, then KCODEC_PURE=1
# (.ci/test_wheel.py, also cibuildwheel's test-command).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
out=$(mktemp -d "${TMPDIR:-/tmp}/kcodec-wheel.XXXXXX")
trap 'rm -rf "$out"' EXIT

KCODEC_REQUIRE_EXTENSION=1 "$PY" -m build --outdir "$out/dist" . > "$out/build.log" 2>&1 \
  || { tail -40 "$out/build.log"; exit 1; }
ls "$out/dist"
PATH="$(dirname "$PY"):$PATH" "$PY" -m auditwheel repair --wheel-dir "$out/wheelhouse" "$out"/dist/*.whl
wheel=$(ls "$out"/wheelhouse/*.whl)
echo "repaired: $(basename "$wheel")"
python3 -m venv "$out/venv"
"$out/venv/bin/python" -m pip install -q --upgrade pip
"$out/venv/bin/python" -m pip install -q "${wheel}[test]"
"$out/venv/bin/python" .ci/test_wheel.py --both
