"""`kcodec analyze`'s command line as the docs write it (no Spark started): every `kcodec analyze ...` command
in docs/*.md parses, --conf pairs reach the session's settings, defaults are sized from the input, and the
spark-submit helpers print what the documented command substitutes."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

from needs import missing, need_module

need_module("pyspark", since=(3, 11))  # the pipeline imports it
from kcodec.spark import analyze, pipeline  # noqa: E402

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _commands() -> list[str]:
    out = []
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text()
        for block in re.findall(r"```(?:sh|console|bash)\n(.*?)```", text, re.S):
            joined = block.replace("\\\n", " ")
            out += [line.split("#")[0] for line in joined.splitlines() if line.strip().startswith("kcodec analyze ")]
    return out


def test_every_documented_command_parses():
    commands = _commands()
    assert len(commands) >= 3, commands
    parser = argparse.ArgumentParser(prog="kcodec analyze")
    analyze.add_arguments(parser)
    for command in commands:
        args = parser.parse_args(shlex.split(command)[2:])
        assert args.out and args.captures
        analyze.conf_pairs(args.conf)


def test_conf_pairs_and_their_errors():
    assert analyze.conf_pairs(["spark.a=1", "spark.b=x=y"]) == {"spark.a": "1", "spark.b": "x=y"}
    with pytest.raises(SystemExit, match="KEY=VALUE"):
        analyze.conf_pairs(["spark.a"])


def test_defaults_are_sized_from_the_input(tmp_path):
    small = tmp_path / "small.pcap"
    small.write_bytes(b"\0" * 1000)
    assert "TieredStopAtLevel=1" in pipeline.defaults([str(small)], "local[2]")["spark.driver.extraJavaOptions"]
    assert "spark.executor.extraJavaOptions" in pipeline.defaults([str(tmp_path)], None)
    assert pipeline.defaults([str(small)], "local[2]")["spark.ui.enabled"] == "false"
    remote = pipeline.defaults(["hdfs:///captures/*.pcap"], None)  # size unknown: the web UI stays
    assert "spark.ui.enabled" not in remote and "TieredStopAtLevel=1" in remote["spark.executor.extraJavaOptions"]
    assert pipeline.defaults([str(small)], "local[2]")["spark.python.daemon.module"] == "kcodec.spark.daemon"
    assert "spark.python.daemon.module" not in remote  # a cluster's workers keep PySpark's own daemon
    big = tmp_path / "big.pcap"
    with big.open("wb") as f:
        f.truncate(pipeline.SMALL_INPUT)  # sparse: its length alone counts
    assert pipeline.defaults([str(big)], "local[2]")["spark.ui.enabled"] == "false"  # local: never a UI
    assert "spark.ui.enabled" not in pipeline.defaults([str(big)], "spark://127.0.0.1:7077")
    assert pipeline.defaults([str(small)], "spark://127.0.0.1:7077")["spark.ui.enabled"] == "false"


def test_the_workers_import_an_installed_pyspark_not_its_zip(tmp_path):
    from kcodec.spark.daemon import unzipped

    site = tmp_path / "site"
    lib = site / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    (site / "pyspark" / "__init__.py").write_text("")
    zips = [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip")]
    for z in zips:
        Path(z).write_bytes(b"")
    other = str(tmp_path / "elsewhere.zip")
    assert unzipped([*zips, other, str(site)]) == [zips[1], other, str(site)]  # py4j not installed: its zip stays
    (site / "py4j").mkdir()
    (site / "py4j" / "__init__.py").write_text("")
    assert unzipped([*zips, other, str(site)]) == [other, str(site)]
    assert unzipped([*zips, other]) == [*zips, other]  # no installed PySpark: Spark's zips are all there is
    spark_home = tmp_path / "spark"  # a Spark distribution's zips beside another installed PySpark: kept
    (spark_home / "python" / "lib").mkdir(parents=True)
    theirs = str(spark_home / "python" / "lib" / "pyspark.zip")
    assert unzipped([theirs, str(site)]) == [theirs, str(site)]


def test_the_submit_helpers_print_what_the_command_needs():
    def printed(flag: str) -> str:
        return subprocess.run([sys.executable, "-m", "kcodec.spark.submit", flag], capture_output=True, text=True,
                              check=True).stdout.strip()

    script = Path(printed("--path"))
    assert script.name == "submit.py" and script.is_file()
    assert "from ." not in script.read_text()  # spark-submit runs it as a file: absolute imports only
    assert Path(urlparse(printed("--log4j")).path).is_file()


def test_the_class_archive_is_written_once_then_used(tmp_path, monkeypatch):
    """kcodec.spark.jvm: the first local run's JVM writes its classes as it exits, later runs start from them."""
    import io

    from kcodec.spark import jvm

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = jvm.Archive({}, "-XX:+UseSerialGC")
    assert first.writing is not None and first.path is not None and first.path.parent == tmp_path / "kcodec"
    assert f"-XX:ArchiveClassesAtExit={first.writing}" in first.options and "-Xlog:cds=off" in first.options

    class Exiting:  # PySpark's gateway process: its JVM writes the archive when its stdin closes
        def __init__(self, writing):
            self.stdin, self.writing = io.BytesIO(), writing

        def wait(self, timeout):
            assert self.stdin.closed
            self.writing.write_bytes(b"classes")

    gateway = argparse.Namespace(proc=Exiting(first.writing))
    assert first.finish(gateway) and first.path.read_bytes() == b"classes" and not first.writing.exists()
    second = jvm.Archive({}, "-XX:+UseSerialGC")
    assert second.writing is None and f"-XX:SharedArchiveFile={first.path}" in second.options
    assert not second.finish(gateway)
    assert jvm.Archive({}, "-XX:+UseParallelGC").path != first.path  # other JVM options: another archive
    assert jvm.Archive({jvm.SETTING: "false"}, "").options == ""
    own = jvm.Archive({jvm.SETTING: str(tmp_path / "mine.jsa")}, "")
    assert own.path == tmp_path / "mine.jsa" and own.writing is not None
    failed = jvm.Archive({}, "-Xint")  # a JVM that exits without writing it: nothing kept, nothing left
    failed.writing.parent.mkdir(parents=True, exist_ok=True)
    assert not failed.finish(argparse.Namespace(proc=None)) and not failed.path.exists()



def test_the_launcher_jvm_prints_the_same_command_from_its_own_archive(tmp_path, monkeypatch):
    """kcodec.spark.jvm.Launcher: spark-class's launcher JVM, started with its options (SPARK_LAUNCHER_OPTS),
    writes its archive on the first run and starts from it later, and prints the same driver command byte for
    byte as without them (spark-class runs what it prints); set by the user, SPARK_LAUNCHER_OPTS is theirs."""
    import shutil

    import pyspark

    from kcodec.spark import jvm

    java = shutil.which("java")
    if java is None:
        missing("java, to run Spark's launcher")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(jvm.LAUNCHER_ENV, raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    home = os.path.dirname(pyspark.__file__)
    found = subprocess.run([sys.executable, f"{home}/find_spark_home.py"], capture_output=True, text=True,
                           check=True).stdout.strip()  # what spark-submit's script asks a Python for
    env = {**os.environ, "SPARK_HOME": home, "SPARK_SCALA_VERSION": "2.13"}

    def printed(options: str) -> bytes:
        return subprocess.run([java, "-Xmx128m", *options.split(), "-cp", f"{home}/jars/*",
                               "org.apache.spark.launcher.Main", "org.apache.spark.deploy.SparkSubmit",
                               "--conf", "spark.app.name=x", "pyspark-shell"],
                              capture_output=True, check=True, env=env).stdout

    plain = printed("")
    assert b"org.apache.spark.deploy.SparkSubmit" in plain
    first = jvm.Launcher({})
    assert first.archive is not None and first.archive.writing is not None
    assert first.env[jvm.LAUNCHER_ENV].startswith(jvm.LAUNCHER_JVM)
    assert printed(first.env[jvm.LAUNCHER_ENV]) == plain  # (the JVM writes its archive as it exits)
    assert first.finish() and first.archive.path.is_file() and not first.archive.writing.exists()
    assert first.archive.path.name.startswith("spark-launcher-")  # not the driver's archive
    second = jvm.Launcher({})
    assert second.archive is not None and second.archive.writing is None
    assert f"-XX:SharedArchiveFile={first.archive.path}" in second.env[jvm.LAUNCHER_ENV]
    assert printed(second.env[jvm.LAUNCHER_ENV]) == plain and not second.finish()
    assert first.env["SPARK_HOME"] == found == home
    assert jvm.Launcher({jvm.SETTING: "false"}).env == {jvm.LAUNCHER_ENV: jvm.LAUNCHER_JVM, "SPARK_HOME": home}
    named = jvm.Launcher({jvm.SETTING: str(tmp_path / "mine.jsa")})  # the driver's file, not the launcher's
    assert named.archive is not None and named.archive.path == first.archive.path
    first.archive.path.unlink()
    interrupted = jvm.Launcher({})  # a failed or interrupted run keeps no archive its launcher began
    assert interrupted.archive is not None and interrupted.archive.writing is not None
    interrupted.archive.writing.write_bytes(b"half")
    interrupted.discard()
    assert not interrupted.archive.writing.exists() and not first.archive.path.exists()
    monkeypatch.setenv(jvm.LAUNCHER_ENV, "-Xmx64m")
    monkeypatch.setenv("SPARK_HOME", "/theirs")
    assert jvm.Launcher({}).env == {} and not jvm.Launcher({}).finish()  # the user's settings stay theirs


def test_the_launch_sets_its_environment_for_the_launch_only(monkeypatch):
    from kcodec.spark import launch

    monkeypatch.delenv("KCODEC_TEST_LAUNCH", raising=False)
    monkeypatch.setenv("KCODEC_TEST_KEPT", "theirs")
    with launch._environ({"KCODEC_TEST_LAUNCH": "1", "KCODEC_TEST_KEPT": "ours"}):
        assert os.environ["KCODEC_TEST_LAUNCH"] == "1" and os.environ["KCODEC_TEST_KEPT"] == "ours"
    assert "KCODEC_TEST_LAUNCH" not in os.environ and os.environ["KCODEC_TEST_KEPT"] == "theirs"

def test_without_pyspark_the_command_says_what_it_needs(monkeypatch):
    # PySpark 4.3 needs Python 3.11+, so kcodec[spark] on 3.10 comes without it
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark now raises ImportError
    with pytest.raises(SystemExit, match=r"needs PySpark 4.3 \(on Python 3.11 or later\)"):
        analyze.run(argparse.Namespace(captures=["x.pcap"], ports=None, master=None, conf=[]))


def test_an_output_that_cannot_be_a_directory_is_refused_before_spark_starts(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr("kcodec.spark.launch.context", lambda *a, **k: started.append(1))
    a_file = tmp_path / "report.txt"
    a_file.write_text("")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    cases = [(str(a_file), None, "--out .*report.txt is a file, not a directory"),
             (str(a_file / "deeper"), None, "--out .* cannot be created: .*report.txt is a file"),
             (str(tmp_path / "out"), f"file://{a_file}", "--tables .*report.txt is a file, not a directory")]
    if os.geteuid() != 0:  # root writes anywhere
        cases.append((str(locked / "out"), None, "--out .* cannot be written: no write permission in .*locked"))
    for out, tables, error in cases:
        with pytest.raises(SystemExit, match=error):
            analyze.run(argparse.Namespace(captures=["x.pcap"], ports=None, master=None, conf=[], out=out,
                                           tables=tables))
    assert not started and not (tmp_path / "out").exists()
    analyze.check_outputs(str(tmp_path / "new" / "out"), "hdfs:///tables")  # to be made; not local: not checked


def test_the_daemon_imports_for_its_workers_what_starts_no_thread():
    """kcodec.spark.daemon imports PRELOAD before it forks (the workers inherit it); a fork must find no
    thread running, so nothing that starts one (pyarrow, numpy, pandas) is among them."""
    code = ("import os, sys\nfrom kcodec.spark.daemon import preload, PRELOAD\npreload()\n"
            "print(len(os.listdir('/proc/self/task')), all(m in sys.modules for m in PRELOAD),"
            " [m for m in ('pyarrow', 'numpy', 'pandas') if m in sys.modules])")
    if not Path("/proc/self/task").is_dir():
        missing("/proc/self/task (Linux), to count the daemon's threads")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1", "True", "[]"], out


def test_the_daemons_workers_go_without_pandas_and_numpy(tmp_path):
    """pyarrow imported pandas in every worker at its first ``pa.array`` of a list (about 0.3 CPU s), and numpy
    in every process that imported it (0.15-0.2 CPU s); `kcodec analyze`'s processes, which never use them,
    find them not installed, and pyarrow (arrays, Parquet) and PySpark's worker work on without them."""
    out = tmp_path / "t.parquet"
    code = ("import sys\nfrom kcodec.spark.daemon import go_without, preload\ngo_without()\npreload()\n"
            "import pyarrow as pa, pyarrow.parquet as pq\n"
            "rows = pa.array([{'a': 1}, {'a': None}]).to_pylist()\n"
            f"pq.write_table(pa.table({{'a': [1, 2]}}), {str(out)!r})\n"
            f"back = pq.read_table({str(out)!r}).column('a').to_pylist()\n"
            "can = []\nfor name in ('pandas', 'numpy', 'numpy.linalg'):\n"
            "    try:\n        __import__(name)\n        can.append(name)\n    except ModuleNotFoundError:\n        pass\n"
            "print(rows == [{'a': 1}, {'a': None}], back == [1, 2], 'pyspark.worker' in sys.modules,"
            " [m for m in ('pandas', 'numpy') if m in sys.modules], can)")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert got == ["True", "True", "True", "[]", "[]"], got


def test_the_early_childs_modules_import_no_pyspark():
    """`kcodec analyze`'s early child plans and runs pass 1 and pass 2 while the JVM starts, with these modules
    only: PySpark (about 0.25 CPU s to import, on that start's critical path) is not among what they import."""
    code = ("import sys\nfrom kcodec.spark import analyze, early, ranges, segments, storage, tasks\n"
            "print([m for m in ('pyspark', 'py4j') if m in sys.modules])")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert got == ["[]"], got


def test_going_without_leaves_what_is_imported_already():
    """A package imported before ``go_without`` stays importable (a library user's numpy is not taken away),
    and calling it twice puts one finder on the path."""
    code = ("import sys, numpy\nfrom kcodec.spark.daemon import go_without, _Without\ngo_without()\ngo_without()\n"
            "import numpy.linalg\n"
            "try:\n    import pandas\n    can = True\nexcept ModuleNotFoundError:\n    can = False\n"
            "print(sum(isinstance(f, _Without) for f in sys.meta_path), can)")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert got == ["1", "False"], got


def test_under_coverage_the_daemons_workers_save_after_each_task():
    """A reused worker never exits by itself (SIGHUP or SIGKILL ends it): under coverage (started in the daemon
    by pyproject's ``[run] patch``) it saves its data after every task, even a failed one; without coverage, or
    with coverage imported but not measuring, PySpark's worker is left as it is."""
    from types import SimpleNamespace

    from kcodec.spark.daemon import save_coverage_per_task

    saved: list[int] = []
    measuring = SimpleNamespace(Coverage=SimpleNamespace(current=lambda: SimpleNamespace(save=lambda: saved.append(1))))

    def worker(sock: str, authenticated: bool) -> int:
        if sock == "gone":
            raise OSError("the JVM went away")
        return 7

    daemon = SimpleNamespace(worker=worker)
    save_coverage_per_task(daemon, {"coverage": measuring})
    assert daemon.worker("sock", True) == 7 and saved == [1]
    with pytest.raises(OSError, match="went away"):
        daemon.worker("gone", False)
    assert saved == [1, 1]
    idle = SimpleNamespace(Coverage=SimpleNamespace(current=lambda: None))
    for modules in ({}, {"coverage": idle}):
        untouched = SimpleNamespace(worker=worker)
        save_coverage_per_task(untouched, modules)
        assert untouched.worker is worker


def test_the_context_stops_beside_the_report_and_its_errors_are_raised():
    """analyze.Stopping: ``start`` stops the context in a thread (the report renders meanwhile), ``join``
    waits for it and raises what ``stop`` raised; without ``start`` (the job failed) ``join`` stops it."""

    class Context:
        def __init__(self, error: bool = False) -> None:
            self.stopped, self.error = 0, error

        def stop(self) -> None:
            self.stopped += 1
            if self.error:
                raise RuntimeError("the JVM went away")

    sc = Context()
    stopping = analyze.Stopping(sc)
    stopping.start()
    stopping.start()  # once only
    stopping.join()
    assert sc.stopped == 1
    failed = analyze.Stopping(Context())
    failed.join()
    assert failed.sc.stopped == 1
    broken = analyze.Stopping(Context(error=True))
    broken.start()
    with pytest.raises(RuntimeError, match="the JVM went away"):
        broken.join()


def test_a_stopped_context_s_jvm_is_released_only_when_asked():
    """analyze.Stopping(release=True): once the context is stopped, the JVM this command started is told to
    exit (its stdin closed: PySpark's gateway JVM exits when it ends) while the report renders, not after the
    command; without ``release`` (spark-submit's JVM, or a run writing the class archive) it is left alone."""
    import io

    def context_class() -> type:
        class Proc:
            stdin = io.BytesIO()

        class Gateway:
            proc = Proc()
            shut = False

            def shutdown(self) -> None:
                assert not self.proc.stdin.closed  # py4j's threads out of native code before the JVM exits
                type(self).shut = True

        class Context:
            _gateway = Gateway()
            stopped = 0

            def stop(self) -> None:
                assert not self._gateway.proc.stdin.closed  # stopped first, then released
                type(self).stopped += 1

        return Context

    released = context_class()
    stopping = analyze.Stopping(released(), release=True)
    stopping.start()
    stopping.join()
    assert released.stopped == 1 and released._gateway.proc.stdin.closed and released._gateway.shut
    kept = context_class()
    stopping = analyze.Stopping(kept())
    stopping.start()
    stopping.join()
    assert kept.stopped == 1 and not kept._gateway.proc.stdin.closed and not kept._gateway.shut
    from kcodec.spark.jvm import let_exit

    assert let_exit(released._gateway) is released._gateway.proc  # already closed: nothing more to do
    assert let_exit(None) is None  # no gateway (Spark Connect, a context never started): nothing to do


def test_the_numpy_converters_are_asked_about_numpy_values_only():
    """launch.numpy_converters: py4j asks every input converter about every argument; PySpark's numpy ones
    imported pyspark.testing.utils, and with it pandas, to answer about a list of strings. Wrapped, they answer
    about numpy's objects as before and leave the rest alone, importing nothing."""
    code = ("import sys\nimport numpy as np\nfrom py4j import protocol\nimport pyspark.sql.types\n"
            "from kcodec.spark.launch import numpy_converters\nnumpy_converters()\nnumpy_converters()\n"
            "mine = [c for c in protocol.INPUT_CONVERTER if type(c).__name__ == '_NumpyOnly']\n"
            "print(len(mine), any(c.can_convert(['a', 1]) for c in mine), 'pyspark.testing.utils' in sys.modules,"
            " any(c.can_convert(np.array([1, 2])) for c in mine), any(c.can_convert(np.int64(1)) for c in mine))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["2", "False", "False", "True", "True"], out
