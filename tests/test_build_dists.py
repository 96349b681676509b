"""The two distributions: the kcodec wheel holds no broker and needs neither kcodec-broker nor google-re2 (nor, by
default, a compression library); the kcodec-broker wheel is pure Python, holds its data and its command, and
needs the kcodec of its own version.

The wheels come from KCODEC_WHEEL and KCODEC_BROKER_WHEEL (.ci/wheel.sh: the repaired kcodec wheel and the
broker's wheel built from its sdist), else they are built here from a copy of the checkout (kcodec without its
extensions, which change nothing of this; no network)."""

from __future__ import annotations

import email.parser
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from needs import missing, need_module

import kcodec

REPO = Path(__file__).resolve().parents[1]


def _pip_wheel(src: Path, out: Path, env: dict[str, str]) -> Path:
    # The build tools come from this environment (no network): --no-build-isolation.
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
                        str(src)], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    (wheel,) = out.glob("*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, Path]:
    given = {"kcodec": os.environ.get("KCODEC_WHEEL"), "kcodec-broker": os.environ.get("KCODEC_BROKER_WHEEL")}
    if all(given.values()):
        return {name: Path(str(path)) for name, path in given.items()}
    if not (REPO / "setup.py").exists() or not (REPO / "broker" / "pyproject.toml").exists():
        missing("the source tree or KCODEC_WHEEL and KCODEC_BROKER_WHEEL (.ci/wheel.sh sets them)")
    need_module("setuptools")
    tmp = tmp_path_factory.mktemp("dists")
    src = tmp / "src"
    shutil.copytree(REPO / "kcodec", src / "kcodec", ignore=shutil.ignore_patterns("*.so", "*.c", "__pycache__"))
    for name in ("setup.py", "pyproject.toml", "README.md", "LICENSE", "NOTICE"):
        shutil.copy(REPO / name, src / name)
    # broker/LICENSE and NOTICE are links to the repository's: copied as files, as an sdist holds them.
    shutil.copytree(REPO / "broker", src / "broker", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    # Not measured under the checkout run's coverage (COVERAGE_PROCESS_CONFIG): the builds import this copy, whose
    # files would count as ~6,900 more statements unrun beside the checkout's.
    env = {k: v for k, v in os.environ.items() if k not in ("KCODEC_REQUIRE_EXTENSION", "COVERAGE_PROCESS_CONFIG")}
    return {"kcodec": _pip_wheel(src, tmp / "kcodec", {**env, "KCODEC_PURE_BUILD": "1"}),
            "kcodec-broker": _pip_wheel(src / "broker", tmp / "broker", env)}


def _contents(wheel: Path) -> tuple[list[str], email.message.Message, str]:
    """The wheel's file names, its METADATA and its entry_points.txt."""
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(z.read(f"{info}/METADATA").decode())
        entry_points = z.read(f"{info}/entry_points.txt").decode() if f"{info}/entry_points.txt" in names else ""
    return names, meta, entry_points


def _requirement_names(meta: email.message.Message) -> dict[str, str]:
    """{distribution name: its whole Requires-Dist line}."""
    return {re.split(r"[\s\[<>=!~;(]", r, maxsplit=1)[0].lower().replace("_", "-"): r
            for r in meta.get_all("Requires-Dist") or []}


def test_the_kcodec_wheel_holds_and_needs_no_broker(wheels):
    names, meta, entry_points = _contents(wheels["kcodec"])
    assert meta["Name"] == "kcodec" and meta["Version"] == kcodec.__version__
    assert any(n == "kcodec/__init__.py" for n in names) and any(n.startswith("kcodec/tap/") for n in names)
    if (REPO / "kcodec").is_dir():  # every Cython source and stub goes with it (a wheel is built from the sdist)
        sources = {p.relative_to(REPO).as_posix() for ext in ("pyx", "pxi", "pyi")
                   for p in (REPO / "kcodec").rglob(f"*.{ext}")}
        assert sources and sources <= set(names), sorted(sources - set(names))
    broker_files = [n for n in names if "broker" in n.split("/")[0] or n.startswith("kcodec/broker/")
                    or n.endswith("kafka_broker_configs.json")]
    assert not broker_files
    requires = _requirement_names(meta)
    assert "google-re2" not in requires and "kcodec-broker" not in requires, requires
    # `pip install kcodec`: the codec and crc32c, no compression library, no broker (the rest are extras).
    assert [name for name, line in requires.items() if "extra ==" not in line] == ["crc32c"], requires
    assert "broker" not in (meta.get_all("Provides-Extra") or [])
    assert re.findall(r"^(\S+) = (\S+)$", entry_points, re.M) == [("kcodec", "kcodec.cli:main")]


def test_the_broker_wheel_holds_its_data_and_command_and_needs_this_kcodec(wheels):
    wheel = wheels["kcodec-broker"]
    assert wheel.name == f"kcodec_broker-{kcodec.__version__}-py3-none-any.whl"  # pure Python
    names, meta, entry_points = _contents(wheel)
    assert meta["Name"] == "kcodec-broker" and meta["Version"] == kcodec.__version__
    assert {"kcodec_broker/__init__.py", "kcodec_broker/cli.py", "kcodec_broker/__main__.py", "kcodec_broker/py.typed",
            "kcodec_broker/kafka_broker_configs.json", "kcodec_broker/handlers/__init__.py",
            "kcodec_broker/log/__init__.py"} <= set(names)
    assert {n.split("/")[0] for n in names} == {"kcodec_broker", f"kcodec_broker-{kcodec.__version__}.dist-info"}
    assert not [n for n in names if n.endswith((".so", ".pyd", ".c", ".pyx"))]
    assert {n.rsplit("/", 1)[1] for n in names if "/licenses/" in n} == {"LICENSE", "NOTICE"}
    requires = _requirement_names(meta)
    assert re.fullmatch(rf"kcodec\[compression\]\s*==\s*{re.escape(kcodec.__version__)}", requires["kcodec"])
    assert "google-re2" in requires
    assert re.findall(r"^(\S+) = (\S+)$", entry_points, re.M) == [("kcodec-broker", "kcodec_broker.cli:main")]
    with zipfile.ZipFile(wheel) as z:
        configs = z.read("kcodec_broker/kafka_broker_configs.json")
    assert configs == (REPO / "broker" / "kcodec_broker" / "kafka_broker_configs.json").read_bytes() \
        if (REPO / "broker").exists() else configs.startswith(b"{")


def test_cibuildwheel_installs_the_broker_before_the_suite():
    # cibuildwheel installs the kcodec wheel it built (test-extras: test); the suite needs kcodec-broker too.
    tomllib = need_module("tomllib")
    if not (REPO / "broker" / "pyproject.toml").exists():
        missing("the source tree (broker/)")
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["cibuildwheel"]
    commands = config["test-command"] if isinstance(config["test-command"], list) else [config["test-command"]]
    assert commands[0] == "python -m pip install {project}/broker" and ".ci/test_wheel.py" in commands[-1]
