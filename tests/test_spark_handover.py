"""The workers' daemon started ahead (``kcodec.spark.handover``): the daemon Spark launches hands its streams
to it when it is the daemon Spark would have started, runs its own otherwise, and no process outlives
``Pending.close``. Spark's side is played here as its ``PythonWorkerFactory`` does it: the daemon's port read
from its stdout, a connection to it answered by a forked worker's pid, stdin closed to stop it."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time
from typing import Optional

import pytest

from needs import missing
from test_spark_split import captures  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.spark]


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _gone(pid: int, within: float = 5.0) -> bool:
    end = time.monotonic() + within
    while True:
        try:
            if open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z":
                return True  # ended, its parent not yet told
        except FileNotFoundError:
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.02)


def _spark_daemon(env: dict[str, str], worker: Optional[list[int]] = None) -> tuple[subprocess.Popen, int]:
    """The daemon as Spark starts it; returns it and the parent of a worker it forked (the process running
    the daemon's loop); the worker's pid is appended to ``worker``."""
    shim = subprocess.Popen([sys.executable, "-m", "kcodec.spark.daemon", "pyspark.worker"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)  # (the worker's EOFError: no task comes)
    port = struct.unpack(">i", shim.stdout.read(4))[0]
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        pid = struct.unpack(">i", s.makefile("rb").read(4))[0]
        if worker is not None:
            worker.append(pid)
        parent = _ppid(pid)
    return shim, parent


def _stop(shim: subprocess.Popen) -> None:
    shim.stdin.close()  # what Spark does to stop its daemon
    shim.wait(10)
    shim.stdout.close()


def _env(pending, **extra: str) -> dict[str, str]:
    return {**pending.env, "PYTHON_WORKER_FACTORY_SECRET": "s3cret", **extra}


def test_spark_s_daemon_hands_over_to_the_pending_one():
    from kcodec.spark import handover

    pending = handover.Pending({})
    try:
        pending.start()
        shim, parent = _spark_daemon(_env(pending))
        assert parent == pending.proc.pid  # the pending daemon forked Spark's worker
        _stop(shim)  # the taken daemon ends on its stdin's end, and the shim with it
        assert pending.proc.wait(10) is not None  # (PySpark's daemon exits 1 even then: its ``finally``)
    finally:
        pending.close()
    assert not os.path.exists(pending.dir)


def test_a_daemon_started_otherwise_is_not_taken():
    from kcodec.spark import handover

    pending = handover.Pending({})
    try:
        pending.start()
        shim, parent = _spark_daemon(_env(pending, PYTHONHASHSEED="7"))  # its workers would hash otherwise
        assert parent == shim.pid  # the shim ran the daemon itself
        assert pending.proc.wait(10) == 0  # and the pending one left
        _stop(shim)
    finally:
        pending.close()


def test_no_pending_daemon_runs_sparks_own(tmp_path):
    from kcodec.spark import handover

    env = {**handover.daemon_env({}), handover.ENV: str(tmp_path / "none"), "PYTHON_WORKER_FACTORY_SECRET": "x"}
    shim, parent = _spark_daemon(env)
    assert parent == shim.pid
    _stop(shim)


def test_close_ends_the_daemon_by_its_pid_taken_or_not():
    from kcodec.spark import handover

    waiting = handover.Pending({})
    waiting.start()
    pid = waiting.proc.pid
    waiting.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # ended and reaped
    assert not os.path.exists(waiting.dir)

    taken = handover.Pending({})
    taken.start()
    worker: list[int] = []
    shim, parent = _spark_daemon(_env(taken), worker)
    assert parent == taken.proc.pid
    taken.close()  # Spark's daemon still running: ended and reaped, its worker with it (PySpark's SIGHUP)
    with pytest.raises(ChildProcessError):
        os.waitpid(parent, os.WNOHANG)
    assert _gone(worker[0])
    shim.wait(10)  # the shim saw it end
    shim.stdin.close()
    shim.stdout.close()


def test_sigterm_to_sparks_daemon_reaches_the_taken_one():
    from kcodec.spark import handover

    pending = handover.Pending({})
    try:
        pending.start()
        shim, parent = _spark_daemon(_env(pending))
        shim.send_signal(signal.SIGTERM)  # Spark's Process.destroy
        shim.wait(10)
        assert pending.proc.wait(10) is not None
        shim.stdin.close()
        shim.stdout.close()
    finally:
        pending.close()


# An at-fork hook in Python, as logging's ``_releaseLock``, that the daemon is still in when the SIGTERM comes
# (here up to 30 s after each fork, as the machine's load made logging's last): PySpark's handler runs inside it
# and its ``sys.exit`` is lost, leaving the daemon running with SIGTERM at its default.
_SLOW_AT_FORK = "import os, time\nos.register_at_fork(after_in_parent=lambda: time.sleep(30))\n"


def test_sigterm_reaches_a_taken_daemon_whose_handler_exit_was_lost(tmp_path):
    from kcodec.spark import handover

    if not hasattr(os, "pidfd_open"):
        missing("os.pidfd_open (Linux 5.3+), by which the shim watches the taken daemon's end")
    (tmp_path / "sitecustomize.py").write_text(_SLOW_AT_FORK)
    pending = handover.Pending({})
    pending.env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])
    try:
        pending.start()
        shim, parent = _spark_daemon(_env(pending))  # the daemon forked the worker: in the hook
        assert parent == pending.proc.pid
        shim.send_signal(signal.SIGTERM)
        # ended by the shim's second SIGTERM (fatal), GRACE s after the first, or by its SIGKILL where a loaded
        # machine ran PySpark's handler only after the second came (not PySpark's exit 1)
        assert pending.proc.wait(10) in (-signal.SIGTERM, -signal.SIGKILL)
        shim.wait(10)
        shim.stdin.close()
        shim.stdout.close()
    finally:
        pending.close()


def test_sparks_daemon_before_the_pending_one_runs_itself_at_once():
    from kcodec.spark import handover

    pending = handover.Pending({})  # a Python job before the early pass ended: nothing started yet
    try:
        t0 = time.monotonic()
        shim, parent = _spark_daemon(_env(pending))
        assert parent == shim.pid and time.monotonic() - t0 < handover.WAIT  # no wait for one to come
        pending.start()  # the early pass ends: the claim is Spark's daemon's, so nothing starts
        assert pending.proc is None
        _stop(shim)
    finally:
        pending.close()


def test_close_before_start_starts_nothing():
    from kcodec.spark import handover

    pending = handover.Pending({})
    pending.close()
    pending.start()  # the early child's pass 1 ending after the command gave up
    assert pending.proc is None


def test_what_a_started_daemon_has_acted_on():
    from kcodec.spark import handover

    env = handover.daemon_env({"spark.executorEnv.FOO": "1"}, {"PATH": "/bin", "PYTHONPATH": "/x"})
    assert env["FOO"] == "1" and env["PYTHONHASHSEED"] == "0" and env["OMP_NUM_THREADS"] == "1"
    got = handover.startup({**env, "PYTHON_WORKER_FACTORY_SECRET": "s", "SPARK_REUSE_WORKER": "1"})
    assert got == {"PYTHONHASHSEED": "0", "PYTHONUNBUFFERED": "YES"}  # (no numpy: its BLAS threads are no matter)


def test_the_early_pass_starts_one_for_kcodecs_daemon_only(captures, tmp_path):  # noqa: F811
    from kcodec.spark import early

    settings = {"spark.kcodec.splitBytes": "1k", "spark.python.daemon.module": "kcodec.spark.daemon"}
    e = early.start(captures, str(tmp_path / "tables"), settings, "local[2]")
    try:
        assert e.pending is not None
        e.spilled(None, 0, e.scratch)  # the child's pass 1 over: the daemon started
        assert e.pending.proc is not None
    finally:
        e.close()
    assert e.pending.proc.returncode is not None
    other = {**settings, "spark.python.daemon.module": "pyspark.daemon"}
    e = early.start(captures, str(tmp_path / "tables"), other, "local[2]")
    assert e.pending is None
    e.close()


def test_a_pending_daemon_leaves_with_the_driver():
    code = ("import os, shutil\nfrom kcodec.spark import handover\np = handover.Pending({})\np.start()\n"
            "print(p.proc.pid, flush=True)\nshutil.rmtree(p.dir)\nos._exit(0)  # killed: no close\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    pid = int(out.stdout)
    assert _gone(pid, 10)  # it polls its parent while it waits
