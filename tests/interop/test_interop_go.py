"""franz-go's kgo integration tests and segmentio/kafka-go's tests, their own suites, against `kcodec broker`
(tests/interop/go_suites.py runs them; tests/interop/go/go.mod pins the versions). Every failure must be on
the reviewed list, tests/interop/go/expected-failures.json, with the reason; a listed test that passes fails
this too, so the list only shrinks. The counts go to report/go-suites.json.

Both suites start together, each with its broker (they mostly wait on timers and round trips, so together
they take about as long as the longer one); each test waits for its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable, Iterator, Optional

import pytest
from needs import missing, need_tool

import go_suites as gs

pytestmark = [pytest.mark.interop, pytest.mark.checkout]
REPORT = gs.REPO / "report" / "go-suites.json"


def namespace() -> list[str]:
    """The command prefix that runs a child in a network namespace of its own (its own 127.0.0.1:9092), or
    `missing` when this machine allows none."""
    unshare = shutil.which("unshare")
    if unshare is None:
        missing("the command 'unshare' (util-linux) for kafka-go's fixed ports in a network namespace")
    prefix = [unshare, "--net"] + ([] if os.geteuid() == 0 else ["--map-root-user"])
    if subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        missing("a network namespace (unshare --net) for kafka-go's fixed ports 9092 and 9093")
    return prefix


class Run:
    """One suite's run in a child process (in a network namespace for fixed ports)."""

    def __init__(self, go: str, suite: gs.Suite, out: Path) -> None:
        self.suite, self.out = suite, out
        cmd = [sys.executable, str(Path(gs.__file__)), "run", suite.name, str(out)]
        if suite.fixed_ports:
            cmd = namespace() + cmd
        self.log = open(out.with_suffix(".log"), "w")
        self.proc = subprocess.Popen(cmd, env={**os.environ, "GO": go}, stdout=self.log, stderr=subprocess.STDOUT)

    def results(self) -> gs.Results:
        try:
            code = self.proc.wait(self.suite.timeout_s + 120)
        finally:
            self.stop()
        output = self.out.with_suffix(".log").read_text(errors="replace")
        assert code == 0 and self.out.exists(), output[-4000:]
        return gs.Results.from_json(json.loads(self.out.read_text()))

    def stop(self) -> None:
        """End the child (and with it its broker and test binary) if it still runs."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


def _start_all(items: list[pytest.Item], tmp: Path, cancelled: Callable[[], bool] = lambda: False) -> dict[str, Run]:
    """Compile every selected suite and start its run (none when cancelled meanwhile)."""
    go = need_tool("go", "Go 1.26+ (https://go.dev/dl/), whose module proxy serves the suites' sources")
    selected = [gs.SUITES[item.callspec.params["name"]] for item in items]
    for suite in selected:
        gs.compile_suite(go, suite)
    started: dict[str, Run] = {}
    if cancelled():
        return started
    try:
        for suite in selected:
            started[suite.name] = Run(go, suite, tmp / f"{suite.name}.json")
    except BaseException:
        stop_all(started)
        raise
    return started


def stop_all(started: dict[str, Run]) -> None:
    for run in started.values():
        run.stop()


class EarlyStart(threading.Thread):
    """The suites started as soon as collection ends (tests/interop/conftest.py), in a thread: they mostly wait on
    timers and round trips, so the rest of the session runs meanwhile instead of waiting ~3 minutes for them
    when their module comes (CI's 40 minutes, issue 31). What the thread raised (a skip too) is raised again
    by the fixture."""

    def __init__(self, items: list[pytest.Item], tmp: Path) -> None:
        super().__init__(name="go-suites", daemon=True)
        self.items, self.tmp = items, tmp
        self.started: dict[str, Run] = {}
        self.error: Optional[BaseException] = None
        self.cancelled = False
        self.start()

    def run(self) -> None:
        try:
            self.started = _start_all(self.items, self.tmp, lambda: self.cancelled)
        except BaseException as e:  # noqa: B036 - pytest's skip and fail outcomes are BaseExceptions
            self.error = e
        if self.cancelled:
            stop_all(self.started)

    def stop(self) -> None:
        """The session ended: whatever this started stops (the fixture's own teardown may have stopped it); a
        compile still going on after a minute is left to end, and nothing starts after it."""
        self.cancelled = True
        self.join(60)
        stop_all(self.started)


EARLY: list[EarlyStart] = []


def start_early(items: list[pytest.Item], tmp: Path) -> None:
    EARLY.append(EarlyStart(items, tmp))


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory) -> Iterator[dict[str, Run]]:
    """Every selected suite's run, started together (at the session's start: EarlyStart)."""
    if EARLY:
        early = EARLY[0]
        early.join()
        if early.error is not None:
            raise early.error
        started = early.started
    else:
        items = [item for item in request.session.items
                 if getattr(item, "originalname", "") == "test_suite_against_kcodec_broker"]
        started = _start_all(items, tmp_path_factory.mktemp("go-suites"))
    try:
        yield started
    finally:
        stop_all(started)


def report(suite: gs.Suite, results: gs.Results) -> None:
    """The counts into report/go-suites.json, every outcome and time into report/go-suites/SUITE.json."""
    REPORT.parent.mkdir(exist_ok=True)
    data = json.loads(REPORT.read_text()) if REPORT.exists() else {}
    data[suite.name] = {"package": suite.package, "tests": results.counts(), "subtests": results.counts(False),
                        "runs": results.runs}
    REPORT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    (REPORT.parent / "go-suites").mkdir(exist_ok=True)
    (REPORT.parent / "go-suites" / f"{suite.name}.json").write_text(json.dumps(results.to_json(), indent=1))


@pytest.mark.parametrize("name", sorted(gs.SUITES))
def test_suite_against_kcodec_broker(name, runs):
    suite = gs.SUITES[name]
    results = runs[name].results()
    report(suite, results)
    print(f"\n{name}: tests {results.counts()}, subtests {results.counts(False)}, {results.runs} run(s)")
    failures, fixed = gs.unexpected(results, gs.expected_failures(name))
    details = "\n\n".join(f"--- {t} ({results.outcomes[t]})\n" + "\n".join(results.output.get(t, [])[-40:])
                          for t in failures)
    assert not failures, f"{len(failures)} unexpected failure(s): {failures}\n{details}"
    assert not fixed, f"these pass now: take them off tests/interop/go/expected-failures.json: {fixed}"
    assert results.counts().get("not run", 0) == 0, "the suite ran out of time"
