"""Consoles: progress as bars on a terminal and as a few plain lines in logs; Spark's log noise kept out
of the console unless asked for (kcodec.spark.session(quiet=False), `-v`)."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from needs import need_module

from kcodec.cli.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bar_in_a_log_is_a_few_plain_lines():
    out = io.StringIO()
    p = Progress(out)
    with p.bar(1000, "10k topics: sizes", "topics") as bar:
        for _ in range(100):
            bar.update(10)
    assert out.getvalue().splitlines() == [
        "10k topics: sizes: 250/1,000 topics", "10k topics: sizes: 500/1,000 topics",
        "10k topics: sizes: 750/1,000 topics", "10k topics: sizes: 1,000/1,000 topics, done"]


def test_bar_on_a_terminal_is_drawn_in_place():
    need_module("tqdm")
    out = Terminal()
    p = Progress(out)
    with p.bar(40, "stage 3", "tasks") as bar:
        bar.to(10)
        bar.to(40)
    text = out.getvalue()
    assert "\r" in text and "stage 3" in text and "40/40" in text and "|" in text  # tqdm's bar
    assert text.rstrip("\n").endswith("stage 3: 40/40 tasks, done")   # then one line that stays


def test_disabled_progress_prints_nothing():
    out = Terminal()
    p = Progress(out, enabled=False)
    with p.bar(5, "x") as bar:
        bar.update(5)
    p.say("y", keep=True)
    assert out.getvalue() == ""


START = """
from kcodec.spark import session
s = session("local[1]", app_name="kcodec console test", ui=False, quiet={quiet})
assert s.range(5).count() == 5
s.stop()
"""


def _spark_stderr(quiet: bool, tmp_path) -> str:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    out = subprocess.run([sys.executable, "-c", START.format(quiet=quiet)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stderr


@pytest.mark.spark
def test_spark_keeps_its_log_lines_to_itself_unless_asked(tmp_path):
    need_module("pyspark", since=(3, 11))
    quiet = _spark_stderr(True, tmp_path)
    noisy = [line for line in quiet.splitlines()
             if " WARN " in line or " INFO " in line or "default log level" in line or "log4j profile" in line]
    assert noisy == [], quiet
    loud = _spark_stderr(False, tmp_path)  # Spark's defaults: what `-v` shows
    assert "Setting default log level" in loud
