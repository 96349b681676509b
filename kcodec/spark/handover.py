"""The Python workers' daemon started ahead of the tasks that need it (issue 32; analyze22).

Spark starts the workers' daemon (``kcodec.spark.daemon``) when the first Python task arrives: a Python
process, its imports and preloads, about 0.5-0.9 s of that task's wall on each core. On a local master the
early child's pass 1 (``kcodec.spark.early``) ends about a second before the JVM is up, so ``Pending``
starts the same daemon then, from the driver, and it does those imports while the JVM starts. When Spark
later launches its daemon, that process (the "shim", ``hand_over``) passes its stdin, stdout, stderr,
environment, working directory and arguments to the pending one over a Unix socket (``serve``), which then
runs PySpark's daemon loop in their place: Spark talks to it as to the daemon it started. The shim stays,
forwarding SIGTERM (Spark's ``destroy``; ``end`` makes sure it ends the daemon) and ending when the daemon does.

The pending daemon takes over only where it is the daemon Spark would have started: the same interpreter,
the same module path once Spark's zips are off it (``daemon.unzipped``), and the same values of what the
interpreter and the preloaded modules read from the environment as they start (``STARTUP``: the hash seed,
PySpark's namedtuple patch, ...). Anything else (no pending daemon, one not ready within ``WAIT`` seconds, one
that declines or dies) and the shim runs the daemon itself, as before.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from typing import Any, Optional

ENV = "KCODEC_DAEMON_HANDOVER"  # the pending daemon's socket, given to Spark's daemon as an executor variable
CLAIM = "claim"  # beside the socket: made first by the driver (it starts the pending daemon) or by Spark's daemon
WAIT = 10.0  # seconds the shim waits for a pending daemon still importing, then starts its own
GRACE = 2.0  # seconds the taken daemon has to end after a forwarded SIGTERM before the next signal (``end``)
# read as the interpreter starts (PYTHONxxx) or as the preloads import (pyspark's serializers, worker_util)
_STARTUP = re.compile(r"PYTHON[A-Z]+|PYTHON_(GIL|CPU_COUNT|FROZEN_MODULES|PERF_JIT_SUPPORT)")
STARTUP_EXTRA = ("PYSPARK_ENABLE_NAMEDTUPLE_PATCH", "SPARK_TESTING")


def startup(env: dict[str, str]) -> dict[str, str]:
    """The part of ``env`` that a started, preloaded daemon has already acted on (PYTHONPATH aside: the
    module path is compared itself)."""
    return {k: v for k, v in env.items()
            if k != "PYTHONPATH" and (_STARTUP.fullmatch(k) or k in STARTUP_EXTRA)}


def wanted(settings: dict[str, str]) -> bool:
    """Whether Spark's workers start from ``kcodec.spark.daemon`` under these settings (a local master's
    default, ``launch.defaults``): another daemon module, or none, would never take the pending one."""
    return (settings.get("spark.python.daemon.module") == "kcodec.spark.daemon"
            and settings.get("spark.python.use.daemon", "true").lower() != "false")


def daemon_env(settings: dict[str, str], env: Optional[dict[str, str]] = None) -> dict[str, str]:
    """The environment Spark gives a local master's daemon, as far as ``startup`` goes: the driver's, the
    ``spark.executorEnv.*`` settings, PySpark's hash seed, Spark's unbuffered output and one BLAS thread a task."""
    base = os.environ if env is None else env
    out = dict(base)
    out["OMP_NUM_THREADS"] = settings.get("spark.task.cpus", "1")
    out.update({k[len("spark.executorEnv."):]: v for k, v in settings.items() if k.startswith("spark.executorEnv.")})
    out["PYTHONHASHSEED"] = base.get("PYTHONHASHSEED", "0")
    out["PYTHONUNBUFFERED"] = "YES"
    return out


class Pending:
    """The daemon started ahead (``start``, once; from any thread), and ended by its pid in ``close``
    (whether still pending or by then Spark's daemon: it is this process's child either way)."""

    def __init__(self, settings: dict[str, str]) -> None:
        self.dir = tempfile.mkdtemp(prefix="kcodec-daemon-")
        self.path = os.path.join(self.dir, "s")
        self.env = daemon_env(settings)
        self.env[ENV] = self.path
        self.proc: Optional[subprocess.Popen] = None
        self._lock = threading.Lock()
        self._closed = False
        # bound here, so that a daemon Spark starts before the pending one listens waits for it, not past it
        self._listener: Optional[socket.socket] = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.path)
        self._listener.listen(1)

    def settings(self) -> dict[str, str]:
        return {f"spark.executorEnv.{ENV}": self.path}

    def start(self) -> None:
        with self._lock:
            if self._closed or self._listener is None:
                return
            fd = self._listener.fileno()
            try:
                if _claim(self.path):  # else Spark's daemon came first and runs itself: nothing to start
                    self.proc = subprocess.Popen(
                        [sys.executable, "-m", "kcodec.spark.daemon", "--kcodec-pending", str(fd), str(os.getpid())],
                        env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        pass_fds=(fd,))
            except OSError:
                pass  # Spark's daemon finds no listener and runs itself
            self._listener.close()
            self._listener = None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            proc = self.proc
            if self._listener is not None:
                self._listener.close()
                self._listener = None
        if proc is not None:
            if proc.poll() is None:
                proc.terminate()  # PySpark's daemon ends its workers on SIGTERM
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def _described() -> dict[str, Any]:
    from .daemon import unzipped

    return {"exe": sys.executable, "path": unzipped(sys.path), "cwd": os.getcwd(), "argv": sys.argv,
            "env": dict(os.environ), "sigint_ignored": signal.getsignal(signal.SIGINT) == signal.SIG_IGN}


def hand_over(path: str, wait: float = WAIT) -> bool:
    """In the daemon Spark started: hand its streams to the pending daemon at ``path``; True once that one
    runs as the daemon (then returns when it ends), False if this process must run the daemon itself."""
    try:
        if _claim(path):  # no pending daemon started yet (a Python job before the early pass ended): none will be
            return False
    except OSError:
        return False
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(wait)
        s.connect(path)
        payload = json.dumps(_described()).encode()
        socket.send_fds(s, [struct.pack(">I", len(payload))], [0, 1, 2])
        s.sendall(payload)
        answer = _exactly(s, 5)  # b"1" and its pid (not SO_PEERCRED's: the driver made the listening socket)
        if answer[:1] != b"1":
            return False
        pid = struct.unpack(">i", answer[1:])[0]
        pidfd = _pidfd(pid)  # opened while it runs: the signals below cannot reach a reused pid

        def forward(signum: int, _: Any) -> None:  # Spark's ``destroy``
            end(pid, pidfd)
            os._exit(0)

        signal.signal(signal.SIGTERM, forward)
        s.settimeout(None)
        s.sendall(b"g")  # from here on the pending daemon is Spark's
    except (OSError, EOFError):
        s.close()
        return False
    try:
        while s.recv(4096):  # the daemon (and the workers it forked) keep the socket until they end
            pass
    except OSError:
        pass
    return True


def _pidfd(pid: int) -> Optional[int]:
    try:
        return os.pidfd_open(pid)  # Linux 5.3+
    except (AttributeError, OSError):
        return None


def end(pid: int, pidfd: Optional[int], grace: float = GRACE) -> None:
    """End the taken daemon on Spark's SIGTERM. PySpark's handler leaves by ``sys.exit``, which is lost when the
    handler runs inside a Python at-fork hook (logging's ``_releaseLock``, as the daemon forks a worker: the
    SIGTERM came just after a task's worker was forked): the daemon then goes on, its SIGTERM back at the default,
    until its stdin ends. So where its end can be watched (a pidfd), a daemon not gone after ``grace`` seconds
    gets a second SIGTERM (then fatal), then a SIGKILL; elsewhere one SIGTERM, as before."""
    for sig in (signal.SIGTERM, signal.SIGTERM, signal.SIGKILL):
        try:
            if pidfd is None:
                os.kill(pid, sig)
            else:
                signal.pidfd_send_signal(pidfd, sig)
        except OSError:
            return  # gone
        if pidfd is None or select.select([pidfd], [], [], grace)[0]:
            return


def _claim(path: str) -> bool:
    """Whether this process made the claim beside the socket at ``path`` (one of the driver and Spark's daemon
    does, once): a Spark daemon that comes before the pending one is started runs itself at once, rather than
    waiting up to ``WAIT`` for a daemon that starts only when the early pass ends."""
    try:
        os.close(os.open(os.path.join(os.path.dirname(path), CLAIM), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    return True


def _exactly(s: socket.socket, n: int, got: bytes = b"") -> bytes:
    while len(got) < n:
        more = s.recv(min(n - len(got), 1 << 20))
        if not more:
            raise EOFError
        got += more
    return got


def _read(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    head, fds, _, _ = socket.recv_fds(conn, 4, 3)
    (n,) = struct.unpack(">I", _exactly(conn, 4, head))
    return json.loads(_exactly(conn, n)), fds


def _no_jars(path: list[str]) -> list[str]:
    """Spark puts its core jar on its workers' path (for Python files some builds pack in it; 4.x's holds
    none): the rest is what the preloads were found on."""
    return [p for p in path if not p.endswith(".jar")]


def compatible(got: dict[str, Any], mine: dict[str, Any]) -> bool:
    """Whether this pending daemon is the one Spark's would have been (``mine`` as described at its start)."""
    return (got["exe"] == mine["exe"] and _no_jars(got["path"]) == _no_jars(mine["path"]) and got["cwd"] == mine["cwd"]
            and startup(got["env"]) == startup(mine["env"]) and len(got["argv"]) >= 1)


def serve(fd: int, parent: int) -> None:
    """The pending daemon: preload as ``kcodec.spark.daemon`` does, then take over the first compatible
    daemon Spark starts that connects to the listening socket ``fd`` (the driver's), and run PySpark's daemon
    loop as it. Leaves when the driver (``parent``) does, or after a declined or withdrawn hand-over (that
    daemon runs its own)."""
    from . import daemon

    listener = socket.socket(fileno=fd)
    sys.path[:] = daemon.unzipped(sys.path)
    mine = _described()  # as the shim describes itself: before any import
    daemon.go_without()
    daemon.preload()
    from pyspark import daemon as pyspark_daemon

    listener.settimeout(0.5)
    while True:
        if os.getppid() != parent:
            return
        try:
            conn, _ = listener.accept()
            break
        except socket.timeout:
            continue
    listener.close()
    conn.settimeout(None)
    try:
        got, fds = _read(conn)
        if len(fds) != 3 or not compatible(got, mine):
            conn.sendall(b"0")
            return
        conn.sendall(b"1" + struct.pack(">i", os.getpid()))
        if conn.recv(1) != b"g":  # the shim gave up waiting: it runs its own daemon
            return
    except (OSError, EOFError, ValueError):
        return
    for i, fd in enumerate(fds):
        os.dup2(fd, i)
        os.close(fd)
    os.environ.clear()
    os.environ.update(got["env"])
    os.chdir(got["cwd"])
    sys.argv[:] = got["argv"]
    sys.path[:] = got["path"]
    if got["sigint_ignored"]:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    daemon.save_coverage_per_task(pyspark_daemon)
    pyspark_daemon.manager()  # keeps ``conn`` open until it exits: the shim waits on it
