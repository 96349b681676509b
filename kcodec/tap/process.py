"""`kcodec tap` as a child process on a free port, for scripts, the showcase and tests.

    with tap_process("127.0.0.1:9092", Path("captures")) as t:
        client(bootstrap=t.bootstrap)        # every frame is recorded under captures/
        summary = t.stop()                   # SIGTERM, as an operator would: flushed, then the tap's last words
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional


def stop(proc: "subprocess.Popen[Any]", sig: int = signal.SIGTERM, timeout: float = 10.0) -> Optional[int]:
    """Signal a child and wait for it (killed if it outlives ``timeout``); its exit code."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)
    return proc.returncode


@dataclass
class TapProcess:
    port: int
    out: Path
    process: "subprocess.Popen[str]"
    banner: str

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> str:
        """SIGTERM; returns what the tap printed after its banner. A tap that did not exit 0 raises."""
        code = stop(self.process)
        if code != 0:
            raise RuntimeError(f"kcodec tap exited with {code}")
        assert self.process.stdout is not None
        return self.process.stdout.read()


@contextlib.contextmanager
def tap_process(upstream: str, out: Path, *extra: str, start_timeout: float = 30.0) -> Iterator[TapProcess]:
    """`kcodec tap --listen 127.0.0.1:0 --upstream UPSTREAM --out OUT`, stopped afterwards."""
    proc = subprocess.Popen([sys.executable, "-m", "kcodec", "tap", "--listen", "127.0.0.1:0", "--upstream", upstream,
                             "--out", str(out), *extra], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()  # the tap prints its banner once it listens, or exits
        if not banner.startswith("listening on 127.0.0.1:"):
            raise RuntimeError(f"kcodec tap did not start: {banner!r}")
        port = int(banner.split()[2].rstrip(",").rpartition(":")[2])
        yield TapProcess(port, out, proc, banner)
    finally:
        stop(proc)
