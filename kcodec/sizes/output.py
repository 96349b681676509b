"""Sweep rows as a table, CSV, JSON or Markdown, and as log-log PNGs (matplotlib, imported when plotting)."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path
from typing import Any, Optional, Sequence

from .sweep import REFERENCE, Row

FORMATS = ("table", "csv", "json", "markdown")


def backends_of(rows: Sequence[Row]) -> list[str]:
    found = {b for r in rows for b in r.decode_ms}
    return [b for b in ("cython", "python") if b in found] + sorted(found - {"cython", "python"})


def _cells(rows: Sequence[Row]) -> tuple[list[str], list[list[str]]]:
    backends = backends_of(rows)
    head = ["topics", "message", "bytes", f"x {REFERENCE}", "pages"] + [f"decode ms {b}" for b in backends]
    body = []
    for r in rows:
        ms = [f"{r.decode_ms[b]:.3f}" if b in r.decode_ms else "-" for b in backends]
        body.append([f"{r.topics:,}", r.message, f"{r.bytes:,}", f"{r.ratio:.2f}", str(r.pages)] + ms)
    return head, body


def render(rows: Sequence[Row], fmt: str) -> str:
    if fmt == "json":
        return json.dumps([dataclasses.asdict(r) for r in rows], indent=2) + "\n"
    if fmt == "csv":
        backends = backends_of(rows)
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["topics", "partitions", "message", "bytes", "ratio_to_list_topics_v0", "pages"]
                   + [f"decode_ms_{b}" for b in backends] + [f"encode_ms_{b}" for b in backends])
        for r in rows:
            w.writerow([r.topics, r.partitions, r.message, r.bytes, f"{r.ratio:.4f}", r.pages]
                       + [f"{r.decode_ms[b]:.4f}" if b in r.decode_ms else "" for b in backends]
                       + [f"{r.encode_ms[b]:.4f}" if b in r.encode_ms else "" for b in backends])
        return buf.getvalue()
    if fmt not in ("table", "markdown"):
        raise ValueError(f"format is one of {', '.join(FORMATS)}, not {fmt!r}")
    head, body = _cells(rows)
    return grid(head, body, fmt == "markdown", groups=[r.topics for r in rows])


def grid(head: Sequence[str], body: Sequence[Sequence[str]], markdown: bool = False,
         groups: Optional[Sequence[Any]] = None) -> str:
    """A table with the first column left-aligned, the others right-aligned; as text, a blank line where
    ``groups`` changes."""
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in body]) + "\n"
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    text_cols = {i for i, h in enumerate(head) if h in ("message",)} or {0}
    line = lambda cells: "  ".join(c.ljust(w) if i in text_cols else c.rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    out = [line(head), "  ".join("-" * w for w in widths)]
    for k, cells in enumerate(body):
        if groups is not None and k and groups[k] != groups[k - 1]:
            out.append("")
        out.append(line(cells))
    return "\n".join(out) + "\n"


def plot(rows: Sequence[Row], path: Path, title: str = "") -> list[Path]:
    """``path`` (bytes against topics) and ``<stem>-decode<suffix>`` (decode ms against topics), log-log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    messages = list(dict.fromkeys(r.message for r in rows))
    styles = {"cython": "-", "python": "--"}
    written = []
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for m in messages:
        pts = [(r.topics, r.bytes) for r in rows if r.message == m and r.topics > 0]
        ax.plot(*zip(*pts), marker="o", label=m)
    _axes(ax, "bytes of all topics' metadata (all pages for DescribeTopicPartitions)", title or "Response bytes")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    timed = [r for r in rows if r.decode_ms]
    if timed:
        fig, ax = plt.subplots(figsize=(8, 5.5))
        for i, m in enumerate(messages):
            for b in backends_of(timed):
                dec = [(r.topics, r.decode_ms[b]) for r in timed if r.message == m and b in r.decode_ms and r.topics > 0]
                if dec:
                    ax.plot(*zip(*dec), styles.get(b, ":"), marker="o", color=f"C{i}", label=f"{m} ({b})")
        _axes(ax, "decode ms (median of rounds)", "Decode time (solid: cython, dashed: pure Python)")
        fig.tight_layout()
        decode_path = path.with_name(path.stem + "-decode" + path.suffix)
        fig.savefig(decode_path, dpi=110)
        plt.close(fig)
        written.append(decode_path)
    return written


def _axes(ax: Any, ylabel: str, title: str) -> None:
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("topics")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
