"""The report's SVG charts (``kcodec.spark.charts``, ``report.figures``): well-formed SVG, bars and points
where their values put them, exact values in the tooltips, labels escaped and shortened, round ticks."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import pytest

from kcodec.spark import charts, report

NS = "{http://www.w3.org/2000/svg}"


def _agg(errors: bool = True) -> dict:
    sizes = [{"direction": d, "bucket": b, "count": 3 + b} for d in ("produced", "fetched") for b in (2, 5, 9)]
    topics = [{"topic": f"t{i}", "produced_records": 10 * i, "fetched_records": 7 * i} for i in range(4)]
    return {"over_time": [{"api_name": a, "bucket": b, "bytes": 100 * b + len(a)} for a in ("Produce", "Fetch")
                          for b in range(5)],
            "bucket_ns": 1_000_000,
            "metadata": [{"client_id": "c1", "metadata_bytes": 900, "dtp_bytes": 500, "list_topics_v1_bytes": 200}],
            "versions": [{"api_name": "Fetch", "api_version": v, "count": v + 1} for v in (12, 13, 16)],
            "batches": {"by_topic": topics, "sizes": {"records": sizes, "bytes": sizes}},
            "errors": [{"code": 3, "count": 2}] if errors else [],
            "decode_errors": [{"decode_error": "x", "count": 1}] if errors else []}


def _bars(svg: str) -> dict[str, ET.Element]:
    """The rects with a tooltip (the bars), by tooltip."""
    root = ET.fromstring(svg)
    return {r.find(f"{NS}title").text: r for r in root.iter(f"{NS}rect") if r.find(f"{NS}title") is not None}


def test_report_figures_are_svg_titled_and_linked(tmp_path):
    figs = report.figures(_agg())
    assert list(figs) == ["bytes_by_api.svg", "metadata_vs_list_topics.svg", "versions.svg", "records_by_topic.svg",
                          "batch_sizes.svg", "errors.svg"]
    for name, (title, svg) in figs.items():
        root = ET.fromstring(svg)
        assert root.tag == f"{NS}svg" and root.find(f"{NS}title").text == title, name
    report.write({**_agg(), **_totals()}, tmp_path, ["a.pcap"], "cython")
    md = (tmp_path / "report.md").read_text()
    for name, (title, svg) in figs.items():
        assert (tmp_path / name).read_text() == svg and f"]({name})" in md
    assert not list(tmp_path.glob("*.png"))


def _totals() -> dict:
    from kcodec.spark.aggregates import PAIRINGS

    keys = ("capture_files", "duplicate_files", "empty_files", "connections", "clients", "requests", "responses",
            "exchanges", "answered", "orphan_responses", "sasl_v0_tokens", "header_errors", "decode_errors",
            "trailing_bytes", "request_bytes", "response_bytes", "pairing_acks0_answered")
    total = {k: 0 for k in keys} | {f"pairing_{p}": 0 for p in PAIRINGS}
    batches = {"total": {k: 0 for k in ("batches", "control_batches", "batch_errors", "crc_invalid", "partial_tails",
                                        *(f"{d}_{w}" for d in ("produced", "fetched")
                                          for w in ("batches", "records", "bytes")))},
               "by_client": [], "by_codec": []}
    agg = _agg()
    return {"total": total, "by_api": [], "batches": {**agg["batches"], **batches}}


def test_horizontal_bars_are_proportional_with_exact_tooltips():
    svg = charts.hbars(["a", "b"], [("x", [10, 5]), ("y", [0, 40])], "things", "T")
    bars = _bars(svg)
    assert set(bars) == {"a: x: 10", "b: x: 5", "a: y: 0", "b: y: 40"}
    w = {k: float(v.get("width")) for k, v in bars.items()}
    assert w["a: x: 10"] == pytest.approx(2 * w["b: x: 5"], abs=0.2) and w["a: y: 0"] == 0
    assert w["b: y: 40"] == pytest.approx(4 * w["a: x: 10"], abs=0.2)
    texts = [t.text for t in ET.fromstring(svg).iter(f"{NS}text")]
    assert {"0", "10", "40", "things", "x", "y"} <= set(texts)  # the axis, its label, the legend
    texts = [t.text for t in ET.fromstring(charts.hbars(["a"], [("n", [2_500_000])], "B", "T")).iter(f"{NS}text")]
    assert "2.5M" in texts and "500k" in texts and "n" not in texts  # one series: no legend


def test_labels_are_escaped_and_long_ones_shortened():
    long = "topic-" + "x" * 100
    svg = charts.hbars(["<a&b>", long], [("n", [1, 2])], "count", "t <1>")
    root = ET.fromstring(svg)  # parses: nothing unescaped
    texts = [t.text for t in root.iter(f"{NS}text")]
    assert "<a&b>" in texts and long not in texts
    assert any(t.endswith("\u2026") and len(t) == charts.MAX_LABEL for t in texts)
    assert f"{long}: 2" in _bars(svg)  # whole in its tooltip
    assert root.find(f"{NS}title").text == "t <1>"


def test_lines_put_points_by_value():
    svg = charts.lines([0, 1, 2], [("A", [1, 2, 3]), ("B", [3, 2, 1])], "s", "bytes", "T")
    root = ET.fromstring(svg)
    assert len(root.findall(f"{NS}polyline")) == 2
    dots = {c.find(f"{NS}title").text: float(c.get("cy")) for c in root.iter(f"{NS}circle")}
    assert len(dots) == 6 and dots["A at 2: 3"] == dots["B at 0: 3"] < dots["A at 1: 2"] < dots["A at 0: 1"]
    many = charts.lines(list(range(500)), [("A", [1] * 500)], "s", "b", "T")
    assert "<circle" not in many  # no dots on a long series


def test_vertical_bar_panels():
    svg = charts.vbars([(["1", "2-3"], [("p", [4, 0]), ("f", [2, 8])], "size", "batches"),
                        (["8-15"], [("p", [1]), ("f", [1])], "bytes", "batches")], "T")
    bars = _bars(svg)
    assert len(bars) == 6 and float(bars["2-3: f: 8"].get("height")) == pytest.approx(
        2 * float(bars["1: p: 4"].get("height")))


def test_no_errors_is_said():
    _, svg = report.figures(_agg(errors=False))["errors.svg"]
    assert "no error codes in any response" in svg and not _bars(svg)


@pytest.mark.parametrize("lo,hi,want", [(0, 7, [0, 2, 4, 6, 8]), (0, 10, [0, 2, 4, 6, 8, 10]),
                                        (0, 0, [0, 0.2, 0.4, 0.6, 0.8, 1.0]), (0.5, 2.6, [0.5, 1, 1.5, 2, 2.5, 3]),
                                        (0, 28_400_000, [0, 1e7, 2e7, 3e7])])
def test_ticks_are_round_and_cover_the_range(lo, hi, want):
    assert charts.ticks(lo, hi) == pytest.approx(want)


def test_numbers_are_short():
    assert [charts.number(v) for v in (0, 7, 0.25, 1500, 30e6, 3e9, 2.5e6)] == ["0", "7", "0.25", "1.5k", "30M", "3G",
                                                                                   "2.5M"]
    assert re.fullmatch(r"0\.3", charts.number(0.1 + 0.2))


def test_missing_and_not_finite_values_are_drawn_as_zero():
    nan = float("nan")
    svg = charts.hbars(["a", "b", "c"], [("n", [None, nan, 4])], "x", "T")
    bars = _bars(svg)
    assert float(bars["a: none"].get("width")) == 0 and float(bars["b: nan"].get("width")) == 0
    assert float(bars["c: 4"].get("width")) > 0
    for svg in (charts.vbars([(["a"], [("n", [None])], "x", "y")], "T"),
                charts.lines([0, 1], [("n", [nan, None])], "x", "y", "T")):
        for el in ET.fromstring(svg).iter():
            for name in ("x", "y", "width", "height", "cx", "cy"):
                assert math.isfinite(float(el.get(name, 0))), (name, el.attrib)
            for point in el.get("points", "").split():
                assert all(math.isfinite(float(c)) for c in point.split(","))
