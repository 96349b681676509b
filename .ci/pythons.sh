#!/usr/bin/env bash
# The codec on the other CPythons this machine has (pyenv's 3.10, 3.12, 3.13; the checkout and wheel runs are
# on the default python3): each builds kcodec and its extensions in a venv of its own and runs the suites of
# the backends and of the asyncio layer, where Python versions differ (3.12.1's transport kept an empty
# buffer queued and close() hung; 3.13.0's writelines raised on a closed transport). A version this machine
# lacks is named and passed over: cibuildwheel's configuration builds and tests every one elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
root=${PYENV_ROOT:-$HOME/.pyenv}
out=$(mktemp -d "${TMPDIR:-/tmp}/kcodec-pythons.XXXXXX")
trap 'jobs -p | xargs -r kill 2>/dev/null || true; rm -rf "$out"' EXIT  # a failed build ends the others
pids=()
suites=(tests/protocol tests/records tests/test_encode_buffers.py tests/test_zero_copy.py tests/test_dealloc.py
        tests/test_decoded_objects.py tests/test_columnar.py tests/client/test_client_connection.py)
# The three build at once (each compiles in its own process, the two cores shared), then their suites run at
# once, each into its own log printed when all end (issue 31: CI's 40 minutes). The generated C is shared by
# every build (in place, beside the .pyx): when one is out of date, the first version builds alone first, so that
# only one cythonizes.
stale=0
while IFS= read -r pyx; do
  [ "${pyx%.pyx}.c" -nt "$pyx" ] || stale=1
done < <(find kcodec -name '*.pyx')
versions=()
for v in 3.10 3.12 3.13; do
  py=$(ls -d "$root"/versions/"$v".*/bin/python 2>/dev/null | sort -V | tail -1 || true)
  if [ -z "$py" ]; then
    echo "Python $v: not on this machine ($root/versions), not tested here"
    continue
  fi
  echo "Python $v: $("$py" --version)"
  versions+=("$v")
  # editable: the extensions are built in place for this Python (ABI-tagged names beside the default's)
  ( "$py" -m venv "$out/$v" && "$out/$v/bin/python" -m pip install -q -e '.[columnar,compression]' -e ./broker \
      pytest hypothesis ) > "$out/$v.log" 2>&1 &
  if [ "$stale" = 1 ]; then
    wait "$!" || { tail -40 "$out/$v.log"; exit 1; }
    stale=0
    pids+=("")  # built already
  else
    pids+=("$!")
  fi
done
for i in "${!versions[@]}"; do
  [ -z "${pids[$i]}" ] || wait "${pids[$i]}" || { tail -40 "$out/${versions[$i]}.log"; exit 1; }
done
pids=()
for v in "${versions[@]}"; do
  ( "$out/$v/bin/python" -c "import kcodec, sys; print('kcodec backend:', kcodec.BACKEND); sys.exit(kcodec.BACKEND != 'cython')" &&
    "$out/$v/bin/python" -m pytest -q -p no:cacheprovider \
      -m "not slow and not interop and not peers and not spark and not kafka and not oracle and not checkout" \
      ${KCODEC_JUNIT_DIR:+--junitxml=$KCODEC_JUNIT_DIR/python-$v.xml} "${suites[@]}" ) > "$out/$v-tests.log" 2>&1 &
  pids+=("$!")
done
failed=0
for i in "${!versions[@]}"; do
  code=0
  wait "${pids[$i]}" || code=$?
  echo "===== Python ${versions[$i]}: exit $code ====="
  cat "$out/${versions[$i]}-tests.log"
  [ "$code" = 0 ] || failed=1
done
exit "$failed"
