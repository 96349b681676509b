"""The Java oracle's processes: the Maven build of tests/oracle (once, when a source changed) and one
long-lived JVM per Kafka line, spoken to over stdin/stdout in frames (a 4-byte big-endian length, then
JSON; see java/common/kcodec/oracle/Oracle.java).

    with started("4.4", classpath) as kafka:
        kafka.call("encode", cases=[{"cls": "MetadataRequestData", "v": 12, "json": {...}}])
"""

from __future__ import annotations

import json
import os
import select
import struct
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

HERE = Path(__file__).resolve().parent
# Kafka line -> its Maven module (kafka-4.4/pom.xml: Kafka 4.4.0; kafka-3.9/pom.xml: 3.9.2)
LINES = {"4.4": HERE / "kafka-4.4", "3.9": HERE / "kafka-3.9"}
BUILD_TIMEOUT = 900   # a first build downloads Kafka's jars and Maven's plugins into ~/.m2
CALL_TIMEOUT = 300    # one batch of cases
START_TIMEOUT = 60


class OracleError(RuntimeError):
    """The oracle's process failed (not one case: those come back as {"error": ...} results)."""


def _sources() -> list[Path]:
    return [HERE / "pom.xml", *(d / "pom.xml" for d in LINES.values()), *sorted((HERE / "java").rglob("*.java"))]


def _up_to_date() -> bool:
    outputs = [d / "target" / "classpath.txt" for d in LINES.values()]
    if not all(p.is_file() for p in outputs):
        return False
    newest = max(p.stat().st_mtime for p in _sources())
    return all(p.stat().st_mtime > newest for p in outputs)


def build(mvn: str) -> dict[str, str]:
    """Build both modules when a pom or a source changed since the last build; the class path of each line."""
    if not _up_to_date():
        cmd = [mvn, "-q", "-B", "-Dstyle.color=never", "-f", str(HERE / "pom.xml"), "process-classes"]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT,
                                 stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            raise OracleError(f"{' '.join(cmd)} took over {BUILD_TIMEOUT} s") from e
        if out.returncode != 0:
            raise OracleError(f"{' '.join(cmd)} failed ({out.returncode}):\n{(out.stdout + out.stderr)[-4000:]}")
        for d in LINES.values():  # Maven leaves an unchanged classpath.txt's time alone
            (d / "target" / "classpath.txt").touch()
    return {line: os.pathsep.join([str(d / "target" / "classes"),
                                   (d / "target" / "classpath.txt").read_text().strip()])
            for line, d in LINES.items()}


class OracleJVM:
    """One JVM running kcodec.oracle.Oracle against one Kafka line's classes."""

    def __init__(self, line: str, java: str, classpath: str, log: Path) -> None:
        self.line = line
        self._log = open(log, "wb")
        # A small heap and the serial collector: two cores shared by every test process.
        self.proc = subprocess.Popen([java, "-Xmx512m", "-XX:+UseSerialGC", "-cp", classpath, "kcodec.oracle.Oracle"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log)
        self.log = log
        self.calls = 0
        try:
            self.kafka: str = self.call("ping", timeout=START_TIMEOUT)["kafka"]
        except BaseException:
            self.stop()
            raise

    def call(self, cmd: str, timeout: float = CALL_TIMEOUT, **fields: Any) -> dict:
        """Send one command, wait (bounded) for its answer. An answer {"error": ...} for the whole command
        raises; per-case errors are left in the answer's results."""
        body = json.dumps({"cmd": cmd, **fields}, allow_nan=True).encode()
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(struct.pack(">i", len(body)) + body)
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise OracleError(f"the Kafka {self.line} oracle has exited: {self._tail()}") from None
        size = struct.unpack(">i", self._read(4, timeout))[0]
        answer = json.loads(self._read(size, timeout))
        self.calls += 1
        if "error" in answer:
            raise OracleError(f"Kafka {self.line} oracle, {cmd}: {answer['error']}")
        return answer  # type: ignore[no-any-return]

    def _read(self, n: int, timeout: float) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        chunks, got = [], 0
        while got < n:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                raise OracleError(f"the Kafka {self.line} oracle gave no answer in {timeout} s")
            chunk = os.read(fd, n - got)
            if not chunk:
                raise OracleError(f"the Kafka {self.line} oracle has exited ({self.proc.poll()}): {self._tail()}")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _tail(self) -> str:
        self._log.flush()
        return self.log.read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        """Close its stdin (it exits at EOF); kill it by its pid when it does not within 10 s."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                os.kill(self.proc.pid, 9)
                self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._log.close()


@contextmanager
def started(line: str, java: str, classpath: str, log: Path) -> Iterator[OracleJVM]:
    jvm = OracleJVM(line, java, classpath, log)
    try:
        yield jvm
    finally:
        jvm.stop()
