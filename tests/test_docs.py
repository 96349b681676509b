"""The documentation: every ```python block of README.md and docs/*.md runs as written, and the site
builds strictly (mkdocs.yml: a broken link, an unknown anchor or an API reference that does not resolve
fails). Blocks in ```console / ```text fences are not run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from needs import missing, need_module

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KCODEC_SHARED", REPO.parent / "shared"))
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# A fence opens with ```python at a line's start and closes at the next ``` line.
BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def python_blocks(text: str) -> list[str]:
    return BLOCK.findall(text)


def test_block_finder_sees_python_fences_only():
    text = "```python\na = 1\n```\n```console\n$ b\n```\n```text\nc\n```\n```python\nb = a + 1\n```\n"
    assert python_blocks(text) == ["a = 1\n", "b = a + 1\n"]


def test_readme_and_docs_are_here():
    if not (REPO / "docs").is_dir():
        missing(f"docs/ beside the tests (at {REPO / 'docs'})")
    assert REPO / "docs" / "index.md" in PAGES and python_blocks((REPO / "README.md").read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_python_blocks_run(page: Path, tmp_path, monkeypatch):
    """Each page's blocks in order, in one namespace, from a temporary directory."""
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    if not blocks:
        return  # a page without Python examples has nothing to run
    if (SHARED / "kafka-message-schemas").is_dir():
        monkeypatch.setenv("KCODEC_SHARED", str(SHARED))
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{page.name} (python block {i + 1})", "exec"), namespace)


def test_site_builds_strictly(tmp_path):
    if not (REPO / "mkdocs.yml").is_file():
        missing(f"mkdocs.yml beside the tests (at {REPO})")
    need_module("mkdocs")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    problems = [line for line in out.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert out.returncode == 0 and not problems, "\n".join(problems) or out.stderr[-3000:]
    for page in PAGES[1:]:  # every page of docs/ is in the site, listed or not
        assert (tmp_path / "site" / page.stem / "index.html").is_file() or page.stem == "index", page.name
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    for page in PAGES[1:]:
        if page.stem != "index":
            assert f'href="{page.stem}/"' in index, f"{page.name} is not in the navigation"
    api = (tmp_path / "site" / "reference" / "kcodec" / "index.html").read_text(encoding="utf-8")
    assert "encoded_size" in api and "DecodeError" in api  # the reference documents the public API
