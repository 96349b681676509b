"""Benchmarks (pytest-benchmark). `make bench` runs them; `make bench-report` also records every case
(``bench_record``) into the committed results files and regenerates the published figures from them
(benchmarks/report.py, benchmarks/figures/). Payloads: benchmarks/payloads.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import payloads as _payloads  # noqa: E402
from kcodec.progress import Bar, Progress  # noqa: E402

# `make bench-report` sets KCODEC_BENCH_RUN: what each case measured goes there as a partial file per suite
# (benchmarks/figures/store.py), which benchmarks/report.py appends to benchmarks/results/<suite>.jsonl.
RUN = os.environ.get("KCODEC_BENCH_RUN")
_recorded: dict[str, list[dict]] = {}


@pytest.fixture(scope="session")
def metadata_payloads(pytestconfig) -> dict[tuple[str, int], bytes]:
    """{(size, version): body}; KCODEC_BENCH_SIZES (e.g. "1k,10k") limits the sizes."""
    if not (_payloads.SHARED / "vectors" / "metadata").is_dir():
        pytest.skip(f"no payloads at {_payloads.SHARED} (set KCODEC_SHARED)")
    sizes = tuple(os.environ.get("KCODEC_BENCH_SIZES", "1k,10k,100k").split(","))
    return _payloads.payloads(sizes, say=lambda line: _tell(pytestconfig, line))


def _tell(config: pytest.Config, line: str) -> None:
    """A line on the console while a fixture runs (past pytest's output capture)."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if terminal is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            terminal.write_line(line)


@pytest.fixture(scope="session")
def bench_record() -> Callable[..., None]:
    """``bench_record(suite, case_id, impls, **params)``: one case's figures for the results files, ``impls``
    {name: figures_store.stats(...) plus any other keys}; ``bytes=`` and ``rounds=`` are kept beside."""
    def record(suite: str, case_id: str, impls: dict, bytes: int | None = None, rounds: int | None = None,
               **params: object) -> None:
        case = {"id": case_id, "params": params, "impls": impls}
        case.update({k: v for k, v in (("bytes", bytes), ("rounds", rounds)) if v is not None})
        _recorded.setdefault(suite, []).append(case)
    return record


def _write_recorded() -> None:
    if not RUN or not _recorded:
        return
    import kcodec
    from figures import store

    label = os.environ.get("KCODEC_BENCH_LABEL", kcodec.BACKEND)
    for suite, cases in _recorded.items():
        store.write_partial(Path(RUN), suite, label, cases)
    _recorded.clear()


# A bar over the run's benchmarks on stderr (kcodec.progress: tqdm on a terminal, a few plain lines in a
# log): a full `make bench-report` takes minutes. Drawn with pytest's capture paused, as _tell does.
_bar: list[tuple[pytest.Config, Bar]] = []


def _draw(config: pytest.Config, what: Callable[[], object]) -> None:
    capture = config.pluginmanager.get_plugin("capturemanager")
    if capture is None:
        what()
        return
    with capture.global_and_fixture_disabled():
        what()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The codec cases first, the broker runs (subprocess brokers, real clients moving 50 MB) last: in a
    full run, the first codec case measured right after them was disturbed (kcodec's Metadata v1 decode
    1.63 ms median against 1.13-1.20 in runs of its own, two runs out of two, idle machine)."""
    items.sort(key=lambda item: "test_broker" in item.nodeid)  # (a stable sort keeps the rest in order)


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.items and not session.config.option.collectonly:
        config = session.config
        _draw(config, lambda: _bar.append((config, Progress(sys.stderr).bar(len(session.items), "benchmarks",
                                                                            "case"))))


def pytest_runtest_logfinish(nodeid: str, location: object) -> None:
    if _bar:
        config, bar = _bar[0]
        _draw(config, bar.update)


def pytest_sessionfinish(session: pytest.Session) -> None:
    _write_recorded()
    if _bar:
        config, bar = _bar.pop()
        _draw(config, bar.close)
