"""Ctrl-C while `kcodec analyze` waits for the JVM it started (PySpark's launch_gateway): the JVM, which
PySpark starts ignoring SIGINT, goes with the command (``kcodec.spark.launch.stop_jvms``), and so does every
other process it started. Local master on 127.0.0.1; bounded waits; only the test's own processes killed."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import pytest

from needs import need_module, need_tool

pytestmark = [pytest.mark.spark]

START_S = 120  # the most the JVM may take to appear (a loaded, shared machine)
EXIT_S = 60  # the most the interrupted command and its processes may take to go


def _stat(pid: int) -> Optional[list[str]]:
    """/proc/PID/stat's fields after the command's name (state is [0], ppid [1], start time [19])."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _descendants(root: int) -> dict[int, str]:
    """Each live descendant of root: its pid and start time (what tells it from a later process of its pid)."""
    parents: dict[int, list[tuple[int, str]]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (st := _stat(int(name))) is not None and st[0] != "Z":
            parents.setdefault(int(st[1]), []).append((int(name), st[19]))
    out: dict[int, str] = {}
    todo = [root]
    while todo:
        for pid, start in parents.get(todo.pop(), []):
            out[pid] = start
            todo.append(pid)
    return out


def _alive(procs: dict[int, str]) -> dict[int, str]:
    return {pid: start for pid, start in procs.items() if (st := _stat(pid)) is not None and st[19] == start
            and st[0] != "Z"}


def _is_java(pid: int) -> bool:
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe")) == "java"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_while_the_gateway_starts_leaves_no_jvm(tmp_path):
    need_module("pyspark", since=(3, 11))
    if not os.environ.get("JAVA_HOME"):
        need_tool("java", "Java 17+ for Spark; Debian: apt-get install openjdk-17-jre-headless")
    capture = tmp_path / "empty.pcap"  # (a pcap's header alone: the command is interrupted before reading it)
    capture.write_bytes(bytes.fromhex("d4c3b2a1020004000000000000000000ffff000001000000"))
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    log = tmp_path / "analyze.log"
    with open(log, "wb") as out:  # (a file, not a pipe: a JVM left behind would hold a pipe open)
        child = subprocess.Popen([sys.executable, "-m", "kcodec", "analyze", str(capture), "--out",
                                  str(tmp_path / "out"), "--conf", "spark.kcodec.classArchive=false"],
                                 env=env, stdout=out, stderr=subprocess.STDOUT)
    started: dict[int, str] = {}
    try:
        deadline = time.monotonic() + START_S
        jvm = None
        while jvm is None and child.poll() is None and time.monotonic() < deadline:
            started.update(_descendants(child.pid))
            jvm = next((pid for pid in _descendants(child.pid) if _is_java(pid)), None)
            time.sleep(0.02)
        assert jvm is not None, f"no JVM started in {START_S} s: {log.read_text(errors='replace')[-2000:]}"
        started.update(_descendants(child.pid))
        child.send_signal(signal.SIGINT)
        child.wait(EXIT_S)
        deadline = time.monotonic() + EXIT_S
        while _alive(started) and time.monotonic() < deadline:
            time.sleep(0.1)
        text = log.read_text(errors="replace")
        # (interrupted there: in the context's start, the JVM `kcodec analyze` started before it on its way up)
        assert re.search(r"launch\.py\", line \d+, in context\n", text) and "KeyboardInterrupt" in text, text[-2000:]
        assert not _alive(started), f"left running: {_alive(started)}"
    finally:  # the test's own processes only (pid and start time as recorded), whatever failed above
        if child.poll() is None:
            child.kill()
            child.wait()
        for pid in _alive(started):
            os.kill(pid, signal.SIGKILL)
