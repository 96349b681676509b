"""docs/versioning.md names what is public: every module it lists imports, every module of the package is
either listed there or internal (named with "_", or in its list of internal modules), and CHANGELOG.md has
the current version and an "Unreleased" section."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import kcodec
from needs import missing

REPO = Path(__file__).resolve().parents[1]
PKG = Path(kcodec.__file__).resolve().parent


def marked(name: str) -> set[str]:
    """The `kcodec...` names between <!-- name:start --> and <!-- name:end --> in docs/versioning.md."""
    page = REPO / "docs" / "versioning.md"
    if not page.exists():
        missing(f"docs/ beside the tests (at {page.parent})")
    text = page.read_text(encoding="utf-8")
    block = text[text.index(f"<!-- {name}:start -->"):text.index(f"<!-- {name}:end -->")]
    if name == "public-modules":  # the table's first column
        return {m for line in block.splitlines() for m in re.findall(r"^\| `(kcodec[\w.]*)`", line)}
    return set(re.findall(r"`(kcodec\.[\w.]+)`", block))


def test_every_public_module_imports():
    public = marked("public-modules")
    assert {"kcodec", "kcodec.protocol", "kcodec.records", "kcodec.messages"} <= public
    for name in sorted(public):
        importlib.import_module(name)


def test_every_module_is_public_or_internal():
    public, internal = marked("public-modules"), marked("internal-modules")
    assert not public & internal
    tops = {p.stem if p.is_file() else p.name for p in PKG.iterdir()
            if (p.suffix == ".py" or (p / "__init__.py").exists()) and not p.name.startswith("_")}
    unclassified = sorted(f"kcodec.{t}" for t in tops if f"kcodec.{t}" not in public | internal)
    assert not unclassified, f"name them in docs/versioning.md (public or internal): {unclassified}"


def test_the_changelog_has_this_version_and_what_comes_next():
    path = REPO / "CHANGELOG.md"
    if not path.exists():
        missing(f"CHANGELOG.md beside the tests (at {path})")
    text = path.read_text(encoding="utf-8")
    assert "## [Unreleased]" in text and f"## [{kcodec.__version__}]" in text
