"""Generated sections of README.md and docs/*.md, each computed from the committed results files.

A page holds a section between two markers::

    <!-- figures:metadata-targets -->
    …generated text…
    <!-- /figures:metadata-targets -->

``write()`` puts every registered section's text between its markers, ``check()`` lists each section whose
text differs from what the results files give (tests/test_figures.py fails on any). To publish figures of a
new benchmark: record its cases (the ``bench_record`` fixture of benchmarks/conftest.py, or a partial file
of its own, benchmarks/figures/store.py), then register a generator in a module of its own in benchmarks/figures/ (every module there is loaded)::

    from figures.sections import section

    @section("analyze-vs-tshark", suites=("analyze",))
    def analyze_vs_tshark(runs: dict[str, list[dict]]) -> str:
        return "| … |"            # runs["analyze"]: every kept run of that suite, oldest first

and put the two markers where the text goes.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

from figures import store

ROOT = store.ROOT
MARK = re.compile(r"<!-- figures:(?P<name>[a-z0-9-]+) -->\n(?P<body>.*?)<!-- /figures:(?P=name) -->", re.S)


@dataclass(frozen=True)
class Section:
    name: str
    suites: tuple[str, ...]
    make: Callable[[dict[str, list[dict]]], str]


SECTIONS: dict[str, Section] = {}


def section(name: str, suites: Sequence[str]) -> Callable:
    """Register ``make(runs)`` as the generator of the section ``name``, from the runs of ``suites``."""
    def register(make: Callable[[dict[str, list[dict]]], str]) -> Callable:
        if name in SECTIONS:
            raise ValueError(f"section {name!r} registered twice")
        SECTIONS[name] = Section(name, tuple(suites), make)
        return make
    return register


def _load() -> None:
    """Import every generator module of benchmarks/figures/ (each registers its sections)."""
    import figures

    for module in pkgutil.iter_modules(figures.__path__):
        if module.name not in ("sections", "store"):
            importlib.import_module(f"figures.{module.name}")


def pages(root: Path = ROOT) -> list[Path]:
    return [p for p in (root / "README.md", *sorted((root / "docs").glob("*.md"))) if p.is_file()]


def render(name: str, results: Path = store.RESULTS) -> str:
    _load()
    sec = SECTIONS[name]
    text = sec.make({s: store.runs(s, results) for s in sec.suites})
    return text.rstrip("\n") + "\n"


def _replace(body: str, results: Path, made: dict[str, str]) -> str:
    def one(m: re.Match) -> str:
        name = m.group("name")
        if name not in SECTIONS:
            raise KeyError(f"no generator registered for the section {name!r}")
        if name not in made:
            made[name] = render(name, results)
        return f"<!-- figures:{name} -->\n{made[name]}<!-- /figures:{name} -->"
    return MARK.sub(one, body)


def write(root: Path = ROOT, results: Path = store.RESULTS) -> list[Path]:
    """Regenerate every section in README.md and docs/*.md; the pages that changed."""
    _load()
    made: dict[str, str] = {}
    changed = []
    for page in pages(root):
        body = page.read_text(encoding="utf-8")
        new = _replace(body, results, made)
        if new != body:
            page.write_text(new, encoding="utf-8")
            changed.append(page)
    return changed


def check(root: Path = ROOT, results: Path = store.RESULTS) -> list[str]:
    """'page: section' for every section whose text is not what the results files give."""
    _load()
    made: dict[str, str] = {}
    stale = []
    for page in pages(root):
        body = page.read_text(encoding="utf-8")
        for m in MARK.finditer(body):
            if m.group("name") not in SECTIONS:
                stale.append(f"{page.name}: {m.group('name')} (no generator)")
            elif _replace(m.group(0), results, made) != m.group(0):
                stale.append(f"{page.name}: {m.group('name')}")
    return stale


# Helpers the generators share.

def span(values: Iterable[Optional[float]], digits: int = 2) -> str:
    """One run's figure, or the range over the runs: '4.13' or '3.64-3.79'; '—' when none measured it."""
    xs = [v for v in values if v is not None]
    if not xs:
        return "—"
    lo, hi = f"{min(xs):,.{digits}f}", f"{max(xs):,.{digits}f}"
    return lo if lo == hi else f"{lo}-{hi}"


def verdict(values: Sequence[Optional[float]], ok: Callable[[float], bool], unit: str = "run") -> str:
    """'met in 3 of 3 runs' (a target counts as met only when every kept run meets it); ``unit`` names what
    the values are, where a section counts rounds rather than runs."""
    xs = [v for v in values if v is not None]
    if not xs:
        return "not measured"
    n = sum(1 for v in xs if ok(v))
    text = f"met in {n} of {len(xs)} {unit}{'s' if len(xs) > 1 else ''}"
    if len(xs) < len(values):  # a kept run that did not measure the case cannot count as meeting it
        return f"**not met**: {text}, not measured in {len(values) - len(xs)}"
    return text if n == len(xs) else f"**not met**: {text}"


TARGETS_HEAD = ["| target | goal | measured | instructions | |", "|---|---|---:|---:|---|"]


def target_row(name: str, goal: str, got: Sequence[Optional[float]], instructions: Iterable[Optional[float]],
               ok: Callable[[float], bool]) -> str:
    """One target over the kept runs: its figure per run, the instruction ratio per run, the verdict."""
    return f"| {name} | {goal} | {span(got)} | {span(instructions)} | {verdict(got, ok)} |"


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


def fmt_time(seconds: Optional[float]) -> str:
    if seconds is None:
        return ""
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} µs"


def fmt_instructions(n: Optional[float]) -> str:
    if n is None:
        return ""
    if n >= 1e9:
        return f"{n / 1e9:.2f} G"
    if n >= 1e6:
        return f"{n / 1e6:.2f} M"
    return f"{n / 1e3:.0f} k"


def provenance(runs: Sequence[dict], what: str = "", command: str = "make bench-report") -> str:
    """Which runs a section's figures come from: machine, Python, commits, load when each started."""
    if not runs:
        return f"No run of {what or 'this benchmark'} is kept in benchmarks/results/ yet (`{command}`)."
    last = runs[-1]
    m = last["machine"]
    commits = ", ".join(f"{r['commit'][:7]}{' (dirty tree)' if r.get('dirty') else ''}" for r in runs)
    loads = ", ".join(f"{r['load'][0]:.1f}" for r in runs if r.get("load"))
    n = len(runs)
    plural = "s" if n > 1 else ""
    return (f"From {n} run{plural} of `{command}` kept in benchmarks/results/{last['suite']}.jsonl "
            f"({m['cpu']}, {m['cores']} cores, Linux {m['kernel']}, {last['python']}; commit{plural} {commits}; "
            f"load average at the start {loads}).")
