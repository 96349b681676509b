"""Other clients' own integration suites against `kcodec broker`: franz-go's kgo tests and segmentio/kafka-go's
tests, from the module proxy (tests/interop/go/go.mod pins them; nothing of theirs is committed).

Each suite's test binary is compiled with ``go test -c`` (the only step that needs the network), then run
by ``run`` below, in the package's source directory as ``go test`` would, beside a `kcodec broker` subprocess
configured as the suite's own CI configures its Kafka. kafka-go's tests dial localhost:9092 and :9093
themselves, so that suite runs in a network namespace of its own (``unshare``), where those ports are ours
whatever else the machine runs. ``go tool test2json`` reports every test; a binary that dies (a panic in
one test ends them all) is run again for the tests it did not reach.

    python go_suites.py run SUITE RESULTS.json [-run REGEX]    (what test_interop_go.py runs, maybe unshared)
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
GO = HERE / "go"
REPO = HERE.parents[1]
BUILD = REPO / "build" / "go-suites"
EXPECTED = GO / "expected-failures.json"


@dataclass(frozen=True)
class Suite:
    name: str
    package: str
    env: dict[str, str]
    broker_args: tuple[str, ...]  # `kcodec broker` options; {port} and {sasl_port} are filled in
    fixed_ports: bool             # the suite dials fixed addresses: run it in a network namespace
    timeout_s: int                # the whole run, restarts included


KGO = Suite(
    "kgo", "github.com/twmb/franz-go/pkg/kgo",
    # as franz-go's CI runs its kgo tests against Kafka: one broker, replication 1, a SCRAM and OAUTHBEARER
    # listener; fewer records per produce/consume test (500,000 by default) so the suite fits CI's time
    {"KGO_SEEDS": "127.0.0.1:{port}", "KGO_TEST_RF": "1", "KGO_TEST_RECORDS": "5000",
     "KGO_TEST_STABLE_FETCH": "true", "KGO_TEST_SCRAM_SEEDS": "127.0.0.1:{sasl_port}",
     "KGO_TEST_SCRAM": "testuser:testpass", "KGO_TEST_OAUTH_SEEDS": "127.0.0.1:{sasl_port}", "KGO_LOG_LEVEL": "none"},
    ("--listen", "PLAINTEXT://127.0.0.1:{port}", "--listen", "SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
     "--user", "testuser:testpass", "--sasl-mechanism", "SCRAM-SHA-256", "--sasl-mechanism", "OAUTHBEARER"),
    fixed_ports=False, timeout_s=420)

KAFKA_GO = Suite(
    "kafka-go", "github.com/segmentio/kafka-go",
    # as kafka-go's CI for Kafka 4.0 (docker_compose_versions/docker-compose-400.yml): PLAINTEXT on 9092,
    # SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256/512) on 9093, advertised as localhost, auto-creation on, an
    # authorizer that allows everyone when no ACL names the resource; their CI skips nettest (flaky there).
    # An auto-created topic appears 100 ms after the Metadata that asked for it, a KRaft controller's round
    # trip (Apache Kafka 4.4 took 40 to 190 ms on the development machine): kafka-go's consumer groups that
    # join before their topic exists count on that window (created at once, their partition watcher never
    # sees the partitions arrive)
    {"KAFKA_VERSION": "4.0.0", "KAFKA_SKIP_NETTEST": "1"},
    ("--listen", "PLAIN=PLAINTEXT://127.0.0.1:{port}", "--listen", "SASL=SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
     "--advertise", "localhost", "--user", "adminplain:admin-secret", "--user", "adminscram256:admin-secret-256",
     "--user", "adminscram512:admin-secret-512", "--sasl-mechanism", "PLAIN", "--sasl-mechanism", "SCRAM-SHA-256",
     "--sasl-mechanism", "SCRAM-SHA-512", "--max-frame-size", "209715200", "--authorizer",
     "--allow-everyone-if-no-acl-found", "--super-user", "adminscram256", "--super-user", "adminscram512",
     "--super-user", "adminplain", "--auto-create-delay-ms", "100"),
    fixed_ports=True, timeout_s=600)

SUITES = {s.name: s for s in (KGO, KAFKA_GO)}


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GOFLAGS", "-mod=readonly")
    return env


def binary(suite: Suite) -> Path:
    return BUILD / f"{suite.name}.test"


def compile_suite(go: str, suite: Suite) -> Path:
    """``go test -c`` of the suite's package (modules from the proxy, into Go's module cache)."""
    BUILD.mkdir(parents=True, exist_ok=True)
    out = subprocess.run([go, "test", "-c", "-o", str(binary(suite)), suite.package], cwd=GO, env=go_env(),
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"go test -c {suite.package} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return binary(suite)


def package_dir(go: str, suite: Suite) -> Path:
    """The package's sources in the module cache: its tests read files beside them."""
    out = subprocess.run([go, "list", "-f", "{{.Dir}}", suite.package], cwd=GO, env=go_env(), capture_output=True,
                         text=True, timeout=120, check=True)
    return Path(out.stdout.strip())


# -- results ---------------------------------------------------------------------------------------------------

@dataclass
class Results:
    """Each test's outcome (pass, fail, skip; ``crashed``: it was running when the binary died; ``not run``:
    the time ran out first), subtests included ("Parent/sub")."""

    outcomes: dict[str, str] = field(default_factory=dict)
    elapsed: dict[str, float] = field(default_factory=dict)
    output: dict[str, list[str]] = field(default_factory=dict)
    runs: int = 0

    def top(self) -> dict[str, str]:
        return {t: o for t, o in self.outcomes.items() if "/" not in t}

    def counts(self, top_level: bool = True) -> dict[str, int]:
        counts: dict[str, int] = {}
        for t, o in self.outcomes.items():
            if ("/" not in t) == top_level:
                counts[o] = counts.get(o, 0) + 1
        return dict(sorted(counts.items()))

    def to_json(self) -> dict:
        return {"outcomes": self.outcomes, "elapsed": self.elapsed, "runs": self.runs,
                "output": {t: lines[-60:] for t, lines in self.output.items() if self.outcomes.get(t) != "pass"}}

    @classmethod
    def from_json(cls, data: dict) -> "Results":
        return cls(data["outcomes"], data["elapsed"], data["output"], data["runs"])


def listed_tests(test_binary: Path, cwd: Path, env: dict[str, str]) -> list[str]:
    out = subprocess.run([str(test_binary), "-test.list", "."], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=120, check=True)
    return [t for t in out.stdout.split() if t.startswith("Test")]


def anchored(test: str) -> str:
    """A -test.run / -test.skip pattern for exactly this test (Go matches each /-level separately)."""
    return "/".join(f"^{re.escape(part)}$" for part in test.split("/"))


def note(results: Results, running: set[str], line: str) -> None:
    """One test2json event."""
    try:
        event = json.loads(line)
    except ValueError:
        return
    test, action = event.get("Test"), event.get("Action")
    if not test:
        return
    if action == "run":
        running.add(test)
    elif action == "output":
        results.output.setdefault(test, []).append(event.get("Output", "").rstrip("\n"))
    elif action in ("pass", "fail", "skip"):
        running.discard(test)
        results.outcomes[test] = action
        results.elapsed[test] = event.get("Elapsed", 0.0)


def run_binary(go: str, test_binary: Path, cwd: Path, env: dict[str, str], deadline: float,
               only: Optional[str] = None, skip: tuple[str, ...] = ()) -> Results:
    """Every test of the binary (or those ``only`` matches) but ``skip``, restarted after a crash for the
    ones not reached, until ``deadline`` (time.monotonic())."""
    results = Results()
    listed = [t for t in listed_tests(test_binary, cwd, env) if only is None or re.search(only, t)]
    todo = [t for t in listed if t not in skip]
    first = True
    while todo:
        left = deadline - time.monotonic()
        if left < 10:
            break
        cmd = [go, "tool", "test2json", "-t", str(test_binary), "-test.v=test2json", "-test.timeout", f"{int(left)}s"]
        if not (first and only is None):
            cmd += ["-test.run", "^(" + "|".join(re.escape(t) for t in todo) + ")$"]
        if skip:  # Go's matcher takes alternatives at the top level, each split at its slashes
            cmd += ["-test.skip", "|".join(anchored(t) for t in skip)]
        first = False
        results.runs += 1
        running: set[str] = set()
        with subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, start_new_session=True) as proc:
            try:
                assert proc.stdout is not None
                for line in proc.stdout:
                    note(results, running, line)
            finally:
                if proc.poll() is None:  # we are being stopped: so are test2json and the binary it runs
                    os.killpg(proc.pid, signal.SIGKILL)
        for test in running:  # the binary died (a panic, the timeout) while these ran
            results.outcomes[test] = "crashed"
        todo = [t for t in todo if t not in results.outcomes]
        if not running:  # it finished what it started; anything left it never listed as run
            break
    for test in todo:
        results.outcomes[test] = "not run"
    for test in skip:
        results.outcomes[test] = "skipped by the list"
    return results


# -- the broker and the run (inside the namespace for fixed ports) -----------------------------------------------

def loopback_up() -> None:
    """Bring lo up in a fresh network namespace (SIOCSIFFLAGS; no iproute2 needed)."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sH", fcntl.ioctl(s, siocgifflags, struct.pack("16sH", b"lo", 0)))[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sH", b"lo", flags | iff_up))


START_LINE = re.compile(r"bootstrap 127\.0\.0\.1:(\d+)")


def start_broker(suite: Suite, ports: dict[str, int], log: Path) -> tuple[subprocess.Popen[bytes], dict[str, int]]:
    """`kcodec broker` with the suite's options, its output in ``log``; and the ports it listens on (its
    start line says them: port 0 asks for ephemeral ones)."""
    args = [a.format(**ports) for a in suite.broker_args]
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "kcodec", "broker", *args], stdout=out,
                                stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = [int(p) for p in START_LINE.findall(log.read_text(errors="replace").split("\n", 1)[0])]
        if len(found) == len(ports):
            return proc, dict(zip(ports, found))
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    proc.wait(5)
    raise RuntimeError(f"kcodec broker did not start in 30 s: {log.read_text(errors='replace')[-2000:]}")


def run_suite(suite: Suite, go: str, results_file: Path, only: Optional[str] = None) -> None:
    """Start the broker, run the suite's binary against it, write the results as JSON."""
    if suite.fixed_ports:
        loopback_up()  # the caller unshared the network: 9092 and 9093 are free here
        ports = {"port": 9092, "sasl_port": 9093}
    else:
        ports = {"port": 0, "sasl_port": 0}
    deadline = time.monotonic() + suite.timeout_s
    broker, ports = start_broker(suite, ports, results_file.with_suffix(".broker.log"))
    try:
        env = {**go_env(), **{k: v.format(**ports) for k, v in suite.env.items()}}
        skip = tuple(t for t, e in expected_failures(suite.name).items() if e.skip)
        results = run_binary(go, binary(suite), package_dir(go, suite), env, deadline, only, skip)
    finally:
        broker.terminate()
        try:
            broker.wait(15)
        except subprocess.TimeoutExpired:
            broker.kill()
            broker.wait(5)
    results_file.write_text(json.dumps(results.to_json(), indent=1))


# -- the expected failures ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Expected:
    why: str
    may_pass: bool = False  # flaky, or fixed on a branch not merged yet: either outcome is accepted
    skip: bool = False      # not run at all (it crashes the binary, or only waits for what is missing)


def expected_failures(suite: str) -> dict[str, Expected]:
    """{test: Expected} for one suite, from expected-failures.json (reviewed: each entry says why)."""
    return {t: Expected(e["why"], e.get("may_pass", False), e.get("skip", False))
            for t, e in json.loads(EXPECTED.read_text())[suite].items()}


def unexpected(results: Results, expected: dict[str, Expected]) -> tuple[list[str], list[str]]:
    """(failures no entry explains, entries that may not pass whose test passed). A failing test is
    explained by an entry for it or for one of its parents, or when its failing subtests all are."""
    bad = {t for t, o in results.outcomes.items() if o in ("fail", "crashed")}

    def explained(test: str) -> bool:
        parts = test.split("/")
        if any("/".join(parts[:i]) in expected for i in range(1, len(parts) + 1)):
            return True
        children = [t for t in bad if t.startswith(test + "/")]
        return bool(children) and all(explained(c) for c in children)

    unexplained = {t for t in bad if not explained(t)}
    failures = sorted(t for t in unexplained if not any(u.startswith(t + "/") for u in unexplained))
    fixed = sorted(t for t, e in expected.items() if not e.may_pass and results.outcomes.get(t) == "pass")
    return failures, fixed


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: the finally blocks stop the broker
    if len(argv) >= 3 and argv[0] == "run":
        only = argv[argv.index("-run") + 1] if "-run" in argv else None
        run_suite(SUITES[argv[1]], os.environ.get("GO", "go"), Path(argv[2]), only)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
