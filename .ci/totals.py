"""Sum the JUnit XML files of every pytest run CI made and print one plain closing line.

    python .ci/totals.py DIR

Prints ``N passed, N failed, N skipped`` (errors count as failed) and exits non-zero when any test
failed or no test ran at all, so the log's last line says what CI tested.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def main(folder: str) -> int:
    files = sorted(Path(folder).glob("*.xml"))
    total = failed = skipped = 0
    for path in files:
        root = ET.parse(path).getroot()
        suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
        for suite in suites:
            total += int(suite.get("tests", 0))
            failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
            skipped += int(suite.get("skipped", 0))
        print(f"{path.name}: {sum(int(s.get('tests', 0)) for s in suites)} tests", file=sys.stderr)
    passed = total - failed - skipped
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
