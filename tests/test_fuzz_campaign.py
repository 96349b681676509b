"""The fuzzing campaign's runner (fuzz/campaign.py, `make fuzz`) keeps working: a fixed number of inputs from a
fixed seed run clean through every check (the broker's included), and a child process that segfaults is
bisected down to the input it was on. Counts of inputs, never durations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.fuzz

RUNNER = Path(__file__).resolve().parents[1] / "fuzz" / "campaign.py"


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("campaign")  # one seed set for both tests


def campaign(out: Path, shared: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RUNNER), "--seed", "7", "--out", str(out), "--shared", str(shared),
                           *args], capture_output=True, text=True, env=env)


def test_a_fixed_number_of_inputs_runs_clean(out: Path, shared: Path) -> None:
    done = campaign(out, shared, "--inputs", "250")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((out / "seed-7" / "summary.json").read_text())
    assert summary["inputs"] == 250 and summary["findings"] == 0
    assert summary["seeds"] > 2500  # real frames, record vectors and batches, and every message's instances


def test_a_segfaulting_input_is_found_and_saved(out: Path, shared: Path) -> None:
    env = dict(os.environ, KCODEC_CAMPAIGN_CRASH_AT="37")
    done = campaign(out, shared, "--inputs", "60", "--no-broker", env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    found = out / "seed-7" / "findings"
    saved = sorted(p.name for p in found.iterdir())
    assert len(saved) == 2 and saved[0].startswith("000037-") and saved[0].endswith(".bin"), saved
    line = (found / saved[1]).read_text()
    assert "the child died: signal 11 (SIGSEGV)" in line and line.count("\n") == 1
    assert json.loads((out / "seed-7" / "summary.json").read_text())["inputs"] == 60
