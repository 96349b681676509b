"""Kafka's Java clients and perf tools (tests/interop/java): built with Maven into build/java-clients, run by
one long-lived JVM (kcodec.interop.Driver) that the tests send JSON lines to, and the perf tools each in a JVM
of their own, as kafka-producer-perf-test.sh / kafka-consumer-perf-test.sh run them."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from needs import missing, need_tool

JAVA = Path(__file__).resolve().parent / "java"
REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build" / "java-clients"
STAMP = BUILD / ".kcodec-built"
KAFKA_VERSION = "4.4.0"
CLIENT = f"Kafka's Java client {KAFKA_VERSION}"
# A small, quick JVM: C1 only (the scenarios are short), no parallel GC threads on the shared cores.
JVM_OPTIONS = ["-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dorg.slf4j.simpleLogger.showDateTime=true"]
CALL_TIMEOUT = 150


def _sources() -> list[Path]:
    return [JAVA / "pom.xml", *sorted((JAVA / "src").rglob("*.java"))]


def build() -> None:
    """``mvn package`` when build/java-clients is older than the pom or a source (or missing)."""
    if STAMP.exists() and all(p.stat().st_mtime <= STAMP.stat().st_mtime for p in _sources()):
        return
    mvn = need_tool("mvn", "Maven fetches Kafka's clients from Maven Central; Debian's maven package")
    need_tool("java", "Java 17+; Debian's openjdk-17-jre-headless")
    out = subprocess.run([mvn, "-q", "-B", "-f", str(JAVA / "pom.xml"), "package"], capture_output=True, text=True,
                         timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"mvn package failed:\n{out.stdout[-4000:]}\n{out.stderr[-4000:]}")
    STAMP.touch()


def classpath() -> str:
    return os.pathsep.join([str(BUILD / "classes"), str(BUILD / "lib" / "*")])


def java_command(main: str, *args: str) -> list[str]:
    java = need_tool("java", "Java 17+; Debian's openjdk-17-jre-headless")
    return [java, *JVM_OPTIONS, "-cp", classpath(), main, *args]


class JavaClients:
    """The driver JVM: ``call(op, bootstrap=..., **args)`` returns its result or raises with its error."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.starts = 0
        self.start()

    def start(self) -> None:
        """Start a driver JVM (again, after one died), logging to LOG_DIR/driver-N.log."""
        self.starts += 1
        self.log_path = self.log_dir / f"driver-{self.starts}.log"
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(java_command("kcodec.interop.Driver"), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._log, text=True, bufsize=1)
        self._lines: queue.Queue[Optional[str]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        if self.call("ping") != "pong":
            raise RuntimeError("the Java driver did not answer ping")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def call(self, op: str, **args: Any) -> Any:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.proc.stdin.flush()
        try:
            line = self._lines.get(timeout=CALL_TIMEOUT)
        except queue.Empty:
            self.close()  # a scenario that hangs leaves the JVM unusable: the next test starts a new one
            raise TimeoutError(f"the Java driver did not answer {op} in {CALL_TIMEOUT} s; its log:\n{self.log_tail()}")
        if line is None:
            raise RuntimeError(f"the Java driver exited ({self.proc.wait()}); its log:\n{self.log_tail()}")
        answer = json.loads(line)
        if "error" in answer:
            raise JavaError(op, answer["error"], self.log_tail())
        return answer["ok"]

    def log_tail(self, lines: int = 40) -> str:
        self._log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()


class JavaError(AssertionError):
    def __init__(self, op: str, error: str, log: str) -> None:
        super().__init__(f"{op}: {error}\n--- the driver's log ---\n{log}")
        self.error = error


def ensure_built() -> None:
    """Build, or `missing` (skip here, fail in CI) naming what is absent."""
    if not (JAVA / "pom.xml").exists():
        missing("tests/interop/java")
    try:
        build()
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        missing(f"Kafka's Java clients {KAFKA_VERSION} built by Maven (tests/interop/java/pom.xml): {e}")


def perf(main: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """One of Kafka's perf tools (org.apache.kafka.tools.*) in a JVM of its own."""
    return subprocess.run(java_command(f"org.apache.kafka.tools.{main}", *args), capture_output=True, text=True,
                          timeout=timeout)


# Names on the session's shared Apache Kafka are this session's own.
SESSION = uuid.uuid4().hex[:6]


@dataclass
class Target:
    """Where a Java scenario runs: kcodec broker (``cluster``, a kcodec_broker.Cluster, whose state the test
    may look into) or the session's Apache Kafka 4.4 (one node, shared: names get a per-session prefix)."""

    kind: str
    bootstrap: str
    java: JavaClients
    cluster: Any = None
    prefix: str = ""

    def name(self, base: str) -> str:
        return self.prefix + base

    def create_topic(self, base: str, partitions: int, replication: int = 1) -> str:
        """The topic ``base`` (prefixed), created and led; replication 1 on the one-node Kafka."""
        name = self.name(base)
        if self.cluster is not None:
            self.cluster.create_topic(name, partitions, replication)
        else:
            self.java.call("create_topics", bootstrap=self.bootstrap, topics={name: [partitions, 1]})
        return name
