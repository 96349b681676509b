"""The Spark settings of `kcodec analyze` and the context they start. Nothing here imports PySpark before it is
needed: the command starts Spark's JVM from here (``Started``, before PySpark is imported) while a thread
imports what the passes need (PySpark, pyarrow and the rest of ``kcodec.spark``), so those imports no longer
come before the JVM's start but during it (``kcodec.spark.analyze.run``)."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence

from . import jvm, storage

if TYPE_CHECKING:
    from pyspark import SparkContext

# Spark's JVM logs through log4j2: with this file only errors reach the console (no "Setting default log
# level", no NativeCodeLoader or other WARN lines); ``quiet=False`` (``-v``) keeps Spark's own defaults.
QUIET_LOG4J2 = Path(__file__).with_name("log4j2-quiet.properties")


def _settings(master: Optional[str], app_name: str, ui: bool, quiet: bool,
              conf: Optional[dict[str, str]]) -> dict[str, str]:
    out = {"spark.app.name": app_name, "spark.ui.showConsoleProgress": "false"}
    if master:
        out["spark.master"] = master
    if not ui:
        out["spark.ui.enabled"] = "false"
    conf = dict(conf or {})
    if quiet:  # read when the JVM starts: the driver's (and in local mode the executors') logging
        option = f"-Dlog4j2.configurationFile={QUIET_LOG4J2.as_uri()}"
        for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
            conf[key] = f"{option} {conf[key]}" if conf.get(key) else option
    return {**out, **conf}


class _NumpyOnly:
    """One of PySpark's numpy converters for py4j, asked only about numpy's own objects (``numpy_converters``)."""

    def __init__(self, converter: Any) -> None:
        self.converter = converter

    def can_convert(self, obj: Any) -> bool:
        return type(obj).__module__ == "numpy" and self.converter.can_convert(obj)

    def convert(self, obj: Any, gateway_client: Any) -> Any:
        return self.converter.convert(obj, gateway_client)


def numpy_converters() -> None:
    """py4j asks each input converter about every argument of every call to the JVM, and PySpark's numpy
    converters answer by importing ``pyspark.testing.utils`` (to know whether numpy is there), which imports
    pandas: 0.5-0.7 CPU s at the context's first call, in a driver that passes no numpy value. Wrapped, they
    are asked about numpy's objects only, and convert those as before."""
    from py4j import protocol

    protocol.INPUT_CONVERTER[:] = [
        _NumpyOnly(c) if type(c).__name__ in ("NumpyArrayConverter", "NumpyScalarConverter") else c
        for c in protocol.INPUT_CONVERTER]


# The JVMs PySpark's launch_gateway started from this process (their Popen objects): PySpark starts its JVM
# ignoring SIGINT and keeps the Popen to itself until the JVM is up, so a Ctrl-C while it waits left the JVM
# running (its gateway server outlives the failed hand-over; stdin's end is watched only after it).
STARTED: list[subprocess.Popen] = []  # type: ignore[type-arg]
STOP_WAIT_S = 10  # SIGTERM first (Spark's shutdown hooks), then SIGKILL


@contextlib.contextmanager
def _jvms_recorded() -> Iterator[None]:
    """While PySpark launches its gateway, each process it starts recorded in STARTED."""
    from pyspark import java_gateway

    popen = java_gateway.Popen

    class Recorded(popen):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            STARTED.append(self)

    java_gateway.Popen = Recorded  # type: ignore[misc]
    try:
        yield
    finally:
        java_gateway.Popen = popen  # type: ignore[misc]


def _release_stdins() -> None:
    """In a child forked from this process (by the caller's own code, e.g. ``multiprocessing``): its copies of
    the started JVMs' stdin closed at once, as a JVM exits only when its stdin ends (``jvm.let_exit``).
    (``os.close``, not the file's ``close``: its lock may be held by a thread the child does not have.)"""
    for proc in STARTED:
        stdin = proc.stdin
        if stdin is not None and not stdin.closed:
            try:
                os.close(stdin.fileno())
            except (OSError, ValueError):
                pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_release_stdins)


def stop_jvms() -> None:
    """Stop the JVMs this process started (STARTED, by their Popen: never another process)."""
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is not None:
            continue
        proc.terminate()
        try:
            proc.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            pass
        finally:  # too slow, or a second Ctrl-C while it waited: killed
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@contextlib.contextmanager
def _environ(env: dict[str, str]) -> Iterator[None]:
    """These environment variables set while PySpark starts its JVM (spark-submit inherits them), then as before."""
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class Started:
    """Spark's JVM started as PySpark's ``launch_gateway`` starts it (``spark-submit --conf K=V ... pyspark-shell``
    with its environment, stdin a pipe, SIGINT ignored, the gateway's port and secret written to the file
    ``_PYSPARK_DRIVER_CONN_INFO_PATH`` names), but before PySpark is imported: the JVM's start is the command's
    long pole, and PySpark's import (~0.08 s) came before it. ``context(started=...)`` waits for that file
    (``connection``, read as it appears: PySpark looked every 0.1 s) and hands PySpark the port and secret as
    spark-submit hands them to a driver it starts (``PYSPARK_GATEWAY_PORT``). Recorded in STARTED."""

    def __init__(self, master: Optional[str], quiet: bool, conf: dict[str, str], env: Optional[dict[str, str]] = None,
                 app_name: str = "kcodec analyze", ui: bool = True) -> None:
        self.settings = _settings(master, app_name, ui, quiet, conf)
        submit_args = os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell")
        if os.environ.get("SPARK_TESTING"):
            submit_args = "--conf spark.ui.enabled=false " + submit_args
        given = {**os.environ, **(env or {})}
        home = given["SPARK_HOME"] if "SPARK_HOME" in given else jvm.spark_home()
        command = [os.path.join(home, "bin", "spark-submit")]
        for k, v in self.settings.items():
            command += ["--conf", f"{k}={v}"]
        self._dir = tempfile.mkdtemp(prefix="kcodec-gateway-")
        self.info = os.path.join(self._dir, "info")
        env_ = {**given, "SPARK_CONNECT_MODE": "0", "_PYSPARK_DRIVER_CONN_INFO_PATH": self.info}
        try:
            self.proc = subprocess.Popen(command + shlex.split(submit_args), stdin=subprocess.PIPE, env=env_,
                                         preexec_fn=_without_sigint)
        except BaseException:
            shutil.rmtree(self._dir, ignore_errors=True)
            raise
        STARTED.append(self.proc)

    def connection(self, poll: float = 0.005) -> dict[str, str]:
        """The gateway's port and secret once the JVM has written them (waited for), as PySpark's environment."""
        try:
            while self.proc.poll() is None and not os.path.isfile(self.info):
                time.sleep(poll)
            if not os.path.isfile(self.info):  # (the JVM writes it aside, then renames it)
                raise JvmExited(f"kcodec analyze: Spark's JVM exited (status {self.proc.returncode}) before it was "
                                "up; what it printed is above")
            with open(self.info, "rb") as f:
                port, n = struct.unpack(">ii", f.read(8))
                secret = f.read(n).decode()
        finally:
            self.close()
        return {"PYSPARK_GATEWAY_PORT": str(port), "PYSPARK_GATEWAY_SECRET": secret}

    def close(self) -> None:
        """Its directory for the gateway's file removed (the JVM itself is stopped by ``stop_jvms``)."""
        shutil.rmtree(self._dir, ignore_errors=True)


class JvmExited(RuntimeError):
    """Spark's JVM ended before its gateway was up (a bad setting, no Java): its own output says why."""


def _without_sigint() -> None:  # (PySpark's launch too: Ctrl-C is the driver's to handle)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def context(master: Optional[str] = "local[*]", app_name: str = "kcodec analyze", ui: bool = True,
            quiet: bool = True, conf: Optional[dict[str, str]] = None,
            env: Optional[dict[str, str]] = None, started: Optional[Started] = None) -> SparkContext:
    """A SparkContext with ``pipeline.session``'s settings: what `kcodec analyze` runs on (``write_tables`` needs no
    DataFrame, and Spark's SQL engine costs seconds of a JVM's time to start). The JVM it starts is recorded
    (``stop_jvms``); interrupted or failed before the context is up, it is stopped. ``env``: set for the launch
    only (``jvm.Launcher``'s). ``started``: the JVM already started with these settings (``Started``), else
    stopped and one started here."""
    from pyspark import SparkConf, SparkContext

    numpy_converters()
    settings = _settings(master, app_name, ui, quiet, conf)
    try:
        if started is not None and started.settings != settings:
            started.close()
            stop_jvms()
            started = None
        if started is not None:
            with _environ(started.connection()):  # PySpark connects to it as to spark-submit's JVM
                sc = SparkContext.getOrCreate(SparkConf().setAll(list(settings.items())))
            gateway: Any = type(sc)._gateway
            gateway.proc = started.proc  # (its stdin: ``jvm.let_exit``)
            return sc
        with _jvms_recorded(), _environ(env or {}):
            return SparkContext.getOrCreate(SparkConf().setAll(list(settings.items())))
    except BaseException:
        if started is not None:
            started.close()
        stop_jvms()
        raise


SMALL_INPUT = 256 << 20  # below this many bytes of local input, Spark's web UI stays off on a cluster's master too
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def defaults(paths: Sequence[str], master: Optional[str]) -> dict[str, str]:
    """Spark settings for `kcodec analyze`: its JVMs carry no capture bytes (the workers hand them to
    each other through files, ``pipeline._one_pass``), so they start lean: C1 compiles only and the serial
    collector (``QUICK_JVM``), where Spark's defaults spent more on compiling and collecting than the job
    needs. On a local master the Python workers start from ``kcodec.spark.daemon`` (PySpark's modules
    imported as installed, not compiled from Spark's zip in every worker) and without Spark's web UI, whatever
    the input's size: the command shows its stages' progress itself, and the UI, which costs the context's
    start 0.25-0.45 s, ends with the command (``--conf spark.ui.enabled=true`` to watch a long run there).
    On a cluster's master a small local input (its size known before Spark starts) also goes without it.
    ``--conf`` wins."""
    import glob

    out = {"spark.driver.extraJavaOptions": QUICK_JVM}
    if not (master or "").startswith("local"):
        out["spark.executor.extraJavaOptions"] = QUICK_JVM
    else:  # the workers run this Python: their PySpark imported as installed, not from Spark's zip (``daemon``)
        out["spark.python.daemon.module"] = "kcodec.spark.daemon"
        out["spark.ui.enabled"] = "false"
        return out
    total = 0
    for p in paths:
        local = storage.local_path(p)
        if local is None:
            return out
        for name in glob.glob(local) or [local]:
            if os.path.isdir(name):
                total += sum(e.stat().st_size for e in os.scandir(name) if e.is_file())
            elif os.path.isfile(name):
                total += os.path.getsize(name)
    if total < SMALL_INPUT:
        out["spark.ui.enabled"] = "false"
    return out
