"""The dependency contract: layers import only the layers below them (ARCHITECTURE.md).

base -> definitions -> ir -> backends -> messages -> api -> columnar -> records -> applications. Messages never
import a backend; columnar runs its own extension, never a codec backend; applications use only the
public API (never ir or a backend). kcodec.records (record batches) has its own two backends and uses
only the public API of the messages.
"""

from __future__ import annotations

import ast
from pathlib import Path

import kcodec
from needs import parse_python

PKG = Path(kcodec.__file__).resolve().parent  # the package under test: the checkout, or an installed wheel

LAYERS = ["base", "definitions", "ir", "backends", "messages", "api", "columnar", "records", "applications"]
MODULES = {
    "kcodec.exceptions": "base", "kcodec.errors": "base",
    "kcodec.definitions": "definitions",
    "kcodec.ir": "ir",
    "kcodec._pure": "backends", "kcodec._pure_write": "backends", "kcodec._pure_gen": "backends",
    "kcodec._fast": "backends", "kcodec._backend": "backends",
    "kcodec.messages": "messages",
    "kcodec": "api", "kcodec._api": "api", "kcodec.framing": "api", "kcodec.convert": "api",
    "kcodec.testing": "api",
    "kcodec.columnar": "columnar", "kcodec._columnar": "columnar",
    "kcodec.records": "records",
}
FORBIDDEN = {("messages", "backends"), ("applications", "ir"), ("applications", "backends"),
             ("columnar", "backends"), ("records", "backends"), ("records", "ir")}


def layer_of(module: str) -> str:
    best = ""
    for prefix in MODULES:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    return MODULES[best] if best and best != "kcodec" or module == "kcodec" else "applications"


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, module: str) -> set[str]:
    """Every kcodec module that a file imports, anywhere in it (function-level imports too)."""
    tree = parse_python(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("kcodec"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("kcodec"):
                continue
            for a in node.names:  # "from . import definitions" depends on that module alone
                out.add(f"{target}.{a.name}" if _is_module(f"{target}.{a.name}") else target)
    return out


def _is_module(name: str) -> bool:
    if name in MODULES:  # kcodec._fast may not be built
        return True
    rel = Path(*name.split("."))
    return (PKG.parent / rel).with_suffix(".py").exists() or (PKG.parent / rel / "__init__.py").exists() \
        or (PKG.parent / rel).with_suffix(".pyx").exists()


def test_layers_point_down():
    problems = []
    files = [p for p in PKG.rglob("*.py")]
    assert len(files) > 20
    for path in files:
        mod = module_name(path)
        mine = layer_of(mod)
        for target in imports_of(path, mod):
            theirs = layer_of(target)
            if LAYERS.index(theirs) > LAYERS.index(mine) or (mine, theirs) in FORBIDDEN:
                problems.append(f"{mod} ({mine}) imports {target} ({theirs})")
    assert not problems, "\n".join(problems)


def test_contract_catches_an_upward_import(tmp_path):
    # The checker itself must be able to fail: a low layer importing a higher one is reported.
    bad = tmp_path / "bad.py"
    bad.write_text("from kcodec.messages import MetadataResponse\nfrom kcodec import _pure\n"
                   "def f():\n    import kcodec.cli\n")
    found = imports_of(bad, "kcodec.ir")
    assert found == {"kcodec.messages", "kcodec._pure", "kcodec.cli"}
    assert [t for t in found if LAYERS.index(layer_of(t)) > LAYERS.index("ir")]
    assert layer_of("kcodec.messages.metadata_response") == "messages"
    assert layer_of("kcodec.cli") == "applications"
    assert layer_of("kcodec") == "api"
