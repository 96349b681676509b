"""Spark's JVM started before PySpark is imported (``launch.Started``): the command reaches the JVM's start without
importing PySpark or the passes' modules, PySpark's context connects to that JVM with the settings it was started
with, and one started with other settings is stopped and another started."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from needs import need_module

need_module("pyspark", since=(3, 11))

pytestmark = [pytest.mark.spark]


def _python(script: str) -> str:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("SPARK_HOME", None)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_spark_home_is_pysparks_own_answer(monkeypatch):
    from pyspark.find_spark_home import _find_spark_home

    from kcodec.spark import jvm

    monkeypatch.delenv("SPARK_HOME", raising=False)
    assert jvm.spark_home() == _find_spark_home()
    monkeypatch.setenv("SPARK_HOME", "/opt/their-spark")
    assert jvm.spark_home() == "/opt/their-spark"


def test_the_jvm_is_started_before_pyspark_and_the_passes_are_imported(tmp_path):
    (tmp_path / "a.pcap").write_bytes(b"\xd4\xc3\xb2\xa1" + bytes(20) + b"\x00" * (80 << 20))  # over one range
    out = _python(f"""
        import sys
        from kcodec.spark import analyze, early, jvm, launch
        settings = launch.defaults([{str(tmp_path / "a.pcap")!r}], "local[2]")
        jvm.Archive(settings, "")
        jvm.Launcher(settings)
        assert early._split(settings) == 64 << 20
        print(sorted(m for m in ("pyspark", "pyarrow", "kcodec.spark.ranges") if m in sys.modules))
    """)
    assert out.strip() == "[]"


def test_the_context_is_the_started_jvms(tmp_path):
    out = _python("""
        from kcodec.spark import analyze, jvm, launch
        conf = {"spark.ui.enabled": "false", "spark.kcodec.test": "started"}
        started = launch.Started("local[1]", True, conf)
        sc = launch.context("local[1]", quiet=True, conf=conf, started=started)
        assert type(sc)._gateway.proc is started.proc and started.proc in launch.STARTED
        assert len(launch.STARTED) == 1  # no other JVM
        print(sc.getConf().get("spark.kcodec.test"), sc.master)
        analyze.stop(sc)
        jvm.let_exit(type(sc)._gateway)
        print(started.proc.wait(60))
    """)
    assert out.split() == ["started", "local[1]", "0"]


def test_a_jvm_started_with_other_settings_is_stopped_and_another_started(tmp_path):
    out = _python("""
        from kcodec.spark import analyze, launch
        started = launch.Started("local[1]", True, {"spark.ui.enabled": "false", "spark.kcodec.test": "old"})
        sc = launch.context("local[1]", quiet=True, conf={"spark.ui.enabled": "false", "spark.kcodec.test": "new"},
                            started=started)
        assert started.proc.poll() is not None  # stopped
        import os
        assert not os.path.exists(os.path.dirname(started.info))  # and its gateway file's directory removed
        assert type(sc)._gateway.proc is not started.proc
        print(sc.getConf().get("spark.kcodec.test"))
        analyze.stop(sc)
    """)
    assert out.split() == ["new"]


def test_a_jvm_that_exits_before_it_is_up_is_a_clear_error(tmp_path):
    from kcodec.spark import launch

    home = tmp_path / "spark"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "spark-submit").write_text("#!/bin/sh\necho 'no Java here' >&2\nexit 3\n")
    (home / "bin" / "spark-submit").chmod(0o755)
    started = launch.Started("local[1]", True, {}, env={"SPARK_HOME": str(home)})
    try:
        with pytest.raises(RuntimeError, match=r"Spark's JVM exited \(status 3\) before it was up"):
            started.connection()
        assert not os.path.exists(os.path.dirname(started.info))  # its directory removed
    finally:
        launch.stop_jvms()


def test_a_bad_setting_is_a_clear_error_and_leaves_nothing(tmp_path):
    capture = tmp_path / "empty.pcap"  # (a pcap's header alone: the JVM fails before it is read)
    capture.write_bytes(bytes.fromhex("d4c3b2a1020004000000000000000000ffff000001000000"))
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "TMPDIR": str(temp), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "kcodec", "analyze", str(capture), "--out", str(tmp_path / "out"),
                           "--conf", "spark.driver.memory=abc"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1, done.stderr[-3000:]
    assert done.stderr.rstrip().endswith("kcodec analyze: Spark's JVM exited (status 1) before it was up; what it "
                                         "printed is above"), done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "-Xmxabc" in done.stderr  # the JVM's own words say why
    assert list(temp.iterdir()) == []


def test_a_forked_child_does_not_hold_a_jvms_stdin(monkeypatch):
    from kcodec.spark import launch

    # a stand-in for the JVM: it ends when its stdin does
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    monkeypatch.setattr(launch, "STARTED", [proc])
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # holds on until told: the stand-in must end before that
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    try:
        os.close(r)
        proc.stdin.close()
        assert proc.wait(30) == 0
    finally:
        os.close(w)
        os.waitpid(pid, 0)
        if proc.poll() is None:
            proc.kill()
