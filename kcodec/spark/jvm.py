"""The driver JVM of a local `kcodec analyze` starts from a class archive (AppCDS): most of what Spark's JVM
spends to start is loading and verifying the same few thousand classes every time; a dynamic class data
sharing archive (JDK 13+: ``-XX:ArchiveClassesAtExit``, then ``-XX:SharedArchiveFile``) maps them ready-made.

The first local run of a given Java and PySpark writes the archive as its JVM exits (``finish``: once, a few
seconds after the report), under ``$XDG_CACHE_HOME/kcodec`` (``~/.cache/kcodec``); later runs start from it.
An archive that does not fit (another Java, another class path) is passed over by the JVM, which then starts
as without it (``-Xshare:auto``, the default; its notes about it are silenced). ``spark.kcodec.classArchive``
names another file, or ``false`` turns it off. Only the driver's JVM: in local mode it is the only one.

Before it, Spark's ``bin/spark-class`` runs a JVM of its own that only prints the driver's command
(``org.apache.spark.launcher.Main``, on the critical path: 0.12-0.15 CPU s, 0.17-0.29 s): ``Launcher`` starts
it the same way (C1 only, the serial collector, an archive of its own, through ``SPARK_LAUNCHER_OPTS``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Optional

SETTING = "spark.kcodec.classArchive"
QUIET = "-Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off"  # no notes when an archive is missing or refused
WAIT_S = 60  # the longest the first run waits for its JVM to write the archive
LAUNCHER_ENV = "SPARK_LAUNCHER_OPTS"  # the launcher JVM's options, read by Spark's bin/spark-class
LAUNCHER_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def _cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kcodec"


def let_exit(gateway: Any) -> Any:
    """Tell PySpark's gateway JVM to exit now (it exits when its stdin ends, otherwise with this process);
    its process, or None when its stdin is not ours (spark-submit's JVM). py4j's server and connections are
    closed first: their threads sit in native accept() and read(), and a JVM exiting with threads in native
    code waits 0.3 s for them (HotSpot's ``VM_Exit``), which the exit took 0.39-0.50 s with and 0.08-0.10 s
    without (stdin closed after a stopped context, 3 runs each; strace: the shutdown hooks were done in 0.09 s)."""
    proc = getattr(gateway, "proc", None)
    if proc is None or proc.stdin is None:
        return None
    if not proc.stdin.closed:
        shutdown = getattr(gateway, "shutdown", None)
        if shutdown is not None:
            shutdown()  # (py4j's: errors logged, not raised; nothing calls the JVM after this)
        proc.stdin.close()
    return proc


def _pyspark_dir() -> Optional[str]:
    spec = find_spec("pyspark")  # (found, not imported)
    return os.path.dirname(spec.origin) if spec is not None and spec.origin else None


def _is_spark_home(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "bin", "spark-submit")) and (
        os.path.isdir(os.path.join(path, "jars")) or os.path.isdir(os.path.join(path, "assembly")))


def spark_home() -> str:
    """PySpark's ``_find_spark_home`` answer, without importing PySpark (~0.08 s before the JVM's start) where
    it is plain: ``SPARK_HOME``, else the installed package's directory when it is a Spark home and neither of
    the places PySpark looks at first is; otherwise PySpark's own function is asked."""
    if "SPARK_HOME" in os.environ:
        return os.environ["SPARK_HOME"]
    package = _pyspark_dir()
    if package is not None:
        home = os.path.realpath(package)
        if _is_spark_home(home) and not any(_is_spark_home(p) for p in (os.path.abspath("../"),
                                                                        os.path.join(home, "spark-distribution"))):
            return home
    from pyspark.find_spark_home import _find_spark_home

    return _find_spark_home()


def default_path(java_options: str, kind: str = "spark-classes") -> Optional[Path]:
    """Where the archive of this Java, this PySpark (its jars: the class path the archive holds) and these JVM
    options is kept; None without a java."""
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else shutil.which("java")
    package = _pyspark_dir()
    if not java or not os.path.exists(java) or package is None:
        return None
    java = os.path.realpath(java)
    jars = os.path.join(package, "jars")
    listed = sorted(os.listdir(jars)) if os.path.isdir(jars) else []
    key = "|".join([java, str(os.stat(java).st_mtime_ns), package, *listed, java_options])
    return _cache() / f"{kind}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


class Archive:
    """The JVM options of a run (``options``) and, after it, ``finish``: the archive kept if this run wrote it."""

    def __init__(self, conf: dict[str, str], java_options: str, kind: str = "spark-classes") -> None:
        setting = conf.get(SETTING, "")  # (a file it names is the driver's archive, not the launcher's)
        self.path: Optional[Path] = (None if setting.lower() in ("false", "off", "no", "0") else
                                     Path(setting) if setting and kind == "spark-classes" else
                                     default_path(java_options, kind))
        self.writing: Optional[Path] = None
        if self.path is None:
            self.options = ""
        elif self.path.is_file():
            self.options = f"-XX:SharedArchiveFile={self.path} {QUIET}"
        else:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError:
                self.path, self.options = None, ""
                return
            self.writing = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex}.tmp")
            self.options = f"-XX:ArchiveClassesAtExit={self.writing} {QUIET}"

    def finish(self, gateway: Any) -> bool:
        """After ``SparkContext.stop``: when this run writes the archive, let its JVM exit now (it writes the
        archive as it exits), wait for it and put the archive in place. True when an archive was kept."""
        if self.writing is None or self.path is None:
            return False
        try:
            proc = let_exit(gateway)
            if proc is not None:
                proc.wait(WAIT_S)
        except Exception:  # a slow or failed dump only costs the next run its head start
            pass
        return self.keep()

    def keep(self) -> bool:
        """The archive this run's JVM wrote (after it exited) put in place; True when one was kept."""
        if self.writing is None or self.path is None:
            return False
        try:
            if self.writing.is_file() and self.writing.stat().st_size:
                os.replace(self.writing, self.path)
                return True
        except OSError:
            pass
        finally:
            self.writing.unlink(missing_ok=True)
        return False

    def discard(self) -> None:
        """Interrupted or failed: an archive its JVM may have begun to write is not kept."""
        if self.writing is not None:
            self.writing.unlink(missing_ok=True)


class Launcher:
    """The environment of the launcher JVM (``env``: none when ``SPARK_LAUNCHER_OPTS`` is set already, the
    user's), and after it, ``finish``: its archive kept if this run's launcher wrote it. The launcher exits
    before the driver's JVM starts, so its archive is complete once the context is up. Its output (the
    driver's command, which spark-class runs) is the same byte for byte with these options. ``SPARK_HOME``,
    unless set: PySpark's own answer, which spark-submit's script otherwise asks a second Python for
    (``find_spark_home.py``, ~0.03 CPU s on the way to the JVM)."""

    def __init__(self, conf: dict[str, str]) -> None:
        self.env: dict[str, str] = {}
        if os.environ.get("SPARK_HOME") is None:
            self.env["SPARK_HOME"] = spark_home()
        self.archive: Optional[Archive] = None
        if os.environ.get(LAUNCHER_ENV) is None:
            self.archive = Archive(conf, LAUNCHER_JVM, kind="spark-launcher")
            self.env[LAUNCHER_ENV] = " ".join(o for o in (LAUNCHER_JVM, self.archive.options) if o)

    def finish(self) -> bool:
        return self.archive is not None and self.archive.keep()

    def discard(self) -> None:
        if self.archive is not None:
            self.archive.discard()
