"""kcodec without kcodec-broker (the broker's own distribution): `kcodec broker` says what to install and exits 2,
the other commands and `kcodec --help` work, and the showcase skips its traffic step, saying why."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from kcodec.showcase.context import Skip

# Runs kcodec's command in a process where kcodec_broker cannot be found, installed or not.
WITHOUT_BROKER = "import sys; sys.modules['kcodec_broker'] = None; from kcodec.cli import main; sys.exit(main(sys.argv[1:]))"


def _kcodec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_BROKER, *args], capture_output=True, text=True, timeout=120)


def test_kcodec_broker_names_the_distribution_to_install():
    r = _kcodec("broker", "--brokers", "1")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == ("kcodec broker needs kcodec-broker, the broker's own distribution: "
                                "pip install kcodec-broker")


def test_the_other_commands_work_without_the_broker():
    help_text = _kcodec("--help")
    assert help_text.returncode == 0, help_text.stderr
    listed = " ".join(help_text.stdout.split())  # argparse wraps the lines
    assert "(not installed: pip install kcodec-broker)" in listed and "showcase" in listed
    apis = _kcodec("apis")
    assert apis.returncode == 0 and "Metadata" in apis.stdout
    sizes = _kcodec("sizes", "--help")
    assert sizes.returncode == 0 and sizes.stdout.startswith("usage: kcodec sizes")


def test_the_showcase_skips_its_traffic_step(monkeypatch, tmp_path):
    from kcodec.showcase import e2e

    monkeypatch.setitem(sys.modules, "kcodec_broker", None)
    ctx = types.SimpleNamespace(out_dir=tmp_path, results={})  # the step stops before it uses more
    with pytest.raises(Skip, match=r"pip install kcodec-broker"):
        e2e.traffic_step(ctx)  # type: ignore[arg-type]
    assert "traffic" not in ctx.results and not any(tmp_path.iterdir())
