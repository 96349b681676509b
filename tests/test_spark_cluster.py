"""The cluster path as docs/analyze.md documents it: a standalone Spark master and two workers on 127.0.0.1,
started from the pip-installed PySpark, and `kcodec analyze` submitted with spark-submit
(``kcodec/spark/submit.py``), kcodec reaching the executors either way the page gives: installed in the
workers' Python, named by ``spark.pyspark.python``, or in a venv packed with venv-pack and shipped with
``--archives`` (KCODEC_PACKED_ENV: .ci/wheel.sh packs one with the wheel it built). The executors must have
run on the workers, not in local mode, and the tables must equal a local run's row for row. Spark's INFO
lines stay off the console. It runs once, in the checkout run (.ci/test_wheel.py leaves it out of the wheel
runs); the packed environment's test, in .ci/wheel.sh."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, Sequence

import pytest

import kafka_upstream as ku
from test_spark_split import _rows, captures  # noqa: F401  (the fixture: a rotated pcap set, a pcapng, a tap file)

pytestmark = [pytest.mark.spark]


def _spark_bin(name: str) -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / name)


PACKED_ENV = os.environ.get("KCODEC_PACKED_ENV")  # venv-pack's archive of a venv with kcodec's wheel installed


def _env(python: str = sys.executable) -> dict[str, str]:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=python, SPARK_NO_DAEMONIZE="1")
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env.pop("PYTHONPATH", None)  # the executors' kcodec comes from their Python, nothing else
    return env


def _wait_port(port: int, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"exited with {proc.returncode}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"nothing on 127.0.0.1:{port}")


@contextlib.contextmanager
def cluster(base: Path, python: str = sys.executable) -> Iterator[tuple[str, list[Path], Path]]:
    """A standalone master and two 1-core workers, each its own JVM, stopped by PID at the end; ``python``: the
    workers' own Python (PYSPARK_PYTHON)."""
    base.mkdir(parents=True)
    port = ku.free_port()
    procs: list[subprocess.Popen] = []
    logs = []
    try:
        log = open(base / "master.log", "w")
        logs.append(log)
        master = subprocess.Popen([_spark_bin("spark-class"), "org.apache.spark.deploy.master.Master", "--host",
                                   "127.0.0.1", "--port", str(port), "--webui-port", str(ku.free_port())],
                                  env=_env(), stdout=log, stderr=subprocess.STDOUT)
        procs.append(master)
        _wait_port(port, master)
        workers = []
        for i in range(2):
            work = base / f"worker-{i}"
            work.mkdir()
            log = open(base / f"worker-{i}.log", "w")
            logs.append(log)
            procs.append(subprocess.Popen(
                [_spark_bin("spark-class"), "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}",
                 "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--work-dir", str(work),
                 "--webui-port", str(ku.free_port())], env=_env(python), stdout=log, stderr=subprocess.STDOUT))
            workers.append(work)
        deadline = time.monotonic() + 90
        while sum("Successfully registered with master" in (base / f"worker-{i}.log").read_text() for i in range(2)) < 2:
            assert time.monotonic() < deadline, (base / "master.log").read_text()[-2000:]
            assert all(p.poll() is None for p in procs)
            time.sleep(0.3)
        yield f"spark://127.0.0.1:{port}", workers, base
    finally:
        for p in reversed(procs):
            ku.stop(p, signal.SIGTERM)
        for log in logs:
            log.close()


def _printed(flag: str) -> str:
    """What `python -m kcodec.spark.submit FLAG` prints, as the documented command asks for it."""
    return subprocess.run([sys.executable, "-m", "kcodec.spark.submit", flag], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_submitted_to_a_standalone_cluster(captures, spark, tmp_path):  # noqa: F811
    with cluster(tmp_path / "cluster") as (master, workers, _):
        _submitted(master, workers, captures, spark, tmp_path)


@pytest.mark.skipif(not PACKED_ENV, reason="KCODEC_PACKED_ENV names no packed venv (.ci/wheel.sh packs one)")
def test_submitted_with_a_packed_environment(captures, spark, tmp_path):  # noqa: F811
    """docs/analyze.md's other way: the workers' own Python lacks kcodec; a venv with the wheel, packed by
    venv-pack, goes with ``--archives ...#environment``, the executors run its Python
    (``spark.pyspark.python=./environment/bin/python``, a path only the unpacked archive gives), the driver
    the submitter's (``spark.pyspark.driver.python``)."""
    bare = getattr(sys, "_base_executable", sys.executable)
    lacks = subprocess.run([bare, "-c", "import kcodec"], capture_output=True, env=_env(bare), cwd=tmp_path)
    assert lacks.returncode != 0, "the workers' own Python must lack kcodec"
    with cluster(tmp_path / "cluster", python=bare) as (master, workers, _):
        _submitted(master, workers, captures, spark, tmp_path, python="./environment/bin/python",
                   extra=["--archives", f"{PACKED_ENV}#environment",
                          "--conf", f"spark.pyspark.driver.python={sys.executable}"])
        for w in workers:  # each executor unpacked the archive in its working directory
            (app,) = [p for p in w.iterdir() if p.name.startswith("app-")]
            assert list(app.glob("*/environment/lib/python*/site-packages/kcodec/spark/tasks.py")), app


def _submitted(master: str, workers: list[Path], captures: list[str], spark, tmp_path: Path,  # noqa: F811
               python: str = sys.executable, extra: Sequence[str] = ()) -> None:
    from kcodec.spark import pipeline
    events = tmp_path / "events"
    events.mkdir()
    out = tmp_path / "report"
    cmd = [_spark_bin("spark-submit"), "--master", master, "--conf", f"spark.pyspark.python={python}", *extra,
           "--conf", "spark.executor.memory=512m", "--conf", "spark.eventLog.enabled=true",
           "--conf", "spark.eventLog.compress=false", "--conf", "spark.eventLog.rolling.enabled=false",
           "--conf", f"spark.eventLog.dir={events.as_uri()}", "--conf", "spark.kcodec.splitBytes=16k",
           "--driver-java-options", f"-Dlog4j2.configurationFile={_printed('--log4j')}", _printed("--path"),
           *captures, "--out", str(out)]
    run = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    assert "[1/3] reading" in run.stdout and "report:" in run.stdout
    console = [line for line in (run.stdout + run.stderr).splitlines() if " INFO " in line or " WARN " in line]
    assert console == [], console[:20]  # Spark's log lines stay off
    # The executors ran on the two workers: each worker's work dir holds the application's executor.
    (app,) = {p.name for w in workers for p in w.iterdir() if p.name.startswith("app-")}
    assert all((w / app).is_dir() for w in workers)
    log = [line for f in sorted(events.rglob("*")) if f.is_file() for line in f.read_text().splitlines()]
    added = [json.loads(line) for line in log if '"SparkListenerExecutorAdded"' in line]
    assert len(added) == 2 and all(e["Executor ID"] != "driver" for e in added)
    start = next(json.loads(line) for line in log if '"SparkListenerEnvironmentUpdate"' in line)
    assert start["Spark Properties"]["spark.master"] == master
    # The tables equal a local run's, row for row.
    pipeline.write_tables(spark, captures, str(tmp_path / "local"))
    for name in ("frames", "exchanges", "batches", "files"):
        there = spark.read.parquet(str(out / "tables" / name)).toPandas()
        here = spark.read.parquet(str(tmp_path / "local" / name)).toPandas()
        if name == "files":  # the cluster's run cut the files into 16 KiB ranges: the range count differs
            for df in (there, here):
                df["summary"] = [json.dumps({k: v for k, v in json.loads(s).items() if k != "ranges"}) for s in df.summary]
        assert _rows(there) == _rows(here), name
