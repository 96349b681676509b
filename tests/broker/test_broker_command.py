"""kcodec-broker's own command: the console script `kcodec-broker`, `python -m kcodec_broker`, and `kcodec broker`
handing its arguments to it (the broker is a distribution of its own, kcodec-broker)."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import sysconfig

import pytest

from broker_wire import Wire
from needs import missing

from kcodec.messages import MetadataRequest
from kcodec_broker.cli import main


def _script() -> str:
    path = os.path.join(sysconfig.get_path("scripts"), "kcodec-broker" + (".exe" if os.name == "nt" else ""))
    if not os.path.exists(path):
        missing(f"kcodec-broker's console script at {path} (`make test` installs kcodec-broker: pip install -e ./broker)")
    return path


def test_the_console_script_runs_a_cluster():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen([_script(), "--listen", "127.0.0.1:0", "--brokers", "2"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("kcodec broker: 2 broker(s)"), line + (proc.stderr.read() if proc.poll() else "")
        host, port = line.split("bootstrap ")[1].split(",")[0].split(":")
        with Wire((host, int(port))) as w:
            assert sorted(b.node_id for b in w.call(MetadataRequest(topics=[]), 12).brokers) == [1, 2]
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
    assert proc.returncode == 0


def test_help_of_each_way_in():
    script = subprocess.run([_script(), "--help"], capture_output=True, text=True, timeout=60)
    module = subprocess.run([sys.executable, "-m", "kcodec_broker", "--help"], capture_output=True, text=True,
                            timeout=60)
    dispatched = subprocess.run([sys.executable, "-m", "kcodec", "broker", "--help"], capture_output=True, text=True,
                                timeout=60)
    for r, prog in ((script, "kcodec-broker"), (module, "kcodec-broker"), (dispatched, "kcodec broker")):
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith(f"usage: {prog} ") and "--brokers BROKERS" in r.stdout and "--tls-cert" in r.stdout


def test_main_in_process(capsys, monkeypatch):
    # What the console script and python -m run, in this process (the subprocesses above are not measured).
    assert main(["--listen", "127.0.0.1:0", "--brokers", "0"]) == 2
    assert capsys.readouterr().err == "kcodec broker: a cluster needs at least one broker\n"
    monkeypatch.setattr(sys, "argv", ["kcodec-broker", "--brokers", "0"])
    with pytest.raises(SystemExit) as e:
        runpy.run_module("kcodec_broker", run_name="__main__")
    assert e.value.code == 2 and "at least one broker" in capsys.readouterr().err
