"""The table of `kcodec analyze` beside tshark in docs/analyze.md is what benchmarks/analyze_report.py renders
from the committed results (benchmarks/results/analyze.json): no figure typed by hand."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_docs_table_is_the_results_files():
    script = REPO / "benchmarks" / "analyze_report.py"  # the checkout run only (.ci/test_wheel.py)
    spec = importlib.util.spec_from_file_location("analyze_report", script)
    assert spec is not None and spec.loader is not None
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    import json

    table = report.render(json.loads(report.RESULTS.read_text()))
    text = (REPO / "docs" / "analyze.md").read_text()
    assert report.replace(text, table) == text, "run: .venv/bin/python benchmarks/analyze_report.py --write docs/analyze.md"
    assert "| target | met in |" in table
