#!/usr/bin/env bash
# .ci/run's background part, started in a session of its own (so that .ci/run can end it and everything it started):
# the wheels' runs (.ci/wheel.sh), then the other CPythons' (.ci/pythons.sh), each at a lower priority than the
# checkout run beside it, each into DIR/NAME.log with its exit code in DIR/NAME.rc. Wheels first: their sdist is
# made before the other Pythons put their extensions beside the sources.
#   bash .ci/background.sh DIR
set -uo pipefail
cd "$(dirname "$0")/.."
dir=$1
for part in wheel pythons; do
  nice -n 10 bash ".ci/$part.sh" > "$dir/$part.log" 2>&1
  echo "$?" > "$dir/$part.rc"
done
