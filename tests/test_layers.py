"""The dependency contract: layers import only the layers below them (ARCHITECTURE.md).

base -> definitions -> ir -> backends -> messages -> api -> protocol -> columnar -> records -> applications.
Messages never import a backend; the protocol layer (sans-I/O connections) and columnar use the codec's API,
never ir or a backend; applications use only the public API (never ir, a backend or any module whose
name starts with "_"), and import each other only along the edges APPLICATION_EDGES declares.
kcodec.records (record batches) has its own two backends and uses only the public API of the messages.
The codec (every layer below the applications) has no import cycle. The broker is its own distribution
(kcodec-broker, package kcodec_broker): an application held to the same rules, which kcodec reaches only
where REACHES_THE_BROKER says, lazily.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
from pathlib import Path
from typing import Optional

import kcodec
from needs import need_module, parse_python

PKG = Path(kcodec.__file__).resolve().parent  # the package under test: the checkout, or an installed wheel


def _broker_package() -> Optional[Path]:
    spec = importlib.util.find_spec("kcodec_broker")
    return Path(spec.origin).resolve().parent if spec is not None and spec.origin else None


BROKER_PKG = _broker_package()  # kcodec-broker's package (broker/kcodec_broker, or installed), when installed
ROOTS = {"kcodec": PKG, **({"kcodec_broker": BROKER_PKG} if BROKER_PKG else {})}

LAYERS = ["base", "definitions", "ir", "backends", "messages", "api", "protocol", "columnar", "records",
          "applications"]
MODULES = {
    "kcodec.exceptions": "base", "kcodec.errors": "base", "kcodec.buffers": "base", "kcodec.core": "base",
    "kcodec.core.extension": "base",
    "kcodec.definitions": "definitions",
    "kcodec.core.ir": "ir",
    "kcodec.core.pure": "backends", "kcodec.core.pure.read": "backends", "kcodec.core.pure.write": "backends",
    "kcodec.core.pure.plan": "backends", "kcodec.core.pure.gen": "backends",
    "kcodec.core._fast": "backends", "kcodec.core.backend": "backends",
    "kcodec.messages": "messages",
    "kcodec": "api", "kcodec.core.api": "api", "kcodec.framing": "api", "kcodec.convert": "api",
    "kcodec.testing": "api",
    "kcodec.protocol": "protocol",
    "kcodec.columnar": "columnar", "kcodec.columnar._columnar": "columnar",
    "kcodec.records": "records",
}
FORBIDDEN = {("messages", "backends"), ("applications", "ir"), ("applications", "backends"),
             ("protocol", "backends"), ("protocol", "ir"),
             ("columnar", "backends"), ("records", "backends"), ("records", "ir")}
# Which application may import which: the rest of kcodec's applications stand apart.
APPLICATION_EDGES = {
    "kcodec.__main__": {"kcodec.cli"},
    "kcodec_broker": {"kcodec.security"},
    "kcodec.client": {"kcodec.security", "kcodec.versions"},
    "kcodec.tap": {"kcodec.security"},
    "kcodec.sizes": {"kcodec.cli"},  # (kcodec.cli.progress: the progress bars)
    "kcodec.spark": {"kcodec.cli", "kcodec.tap"},
    "kcodec.showcase": {"kcodec_broker", "kcodec.client", "kcodec.cli", "kcodec.sizes", "kcodec.spark",
                        "kcodec.tap"},
}
# kcodec reaches kcodec-broker (its own distribution, not a dependency) in these modules alone, and only lazily:
# inside a function, or by a module's name that importlib loads when the command runs.
REACHES_THE_BROKER = {"kcodec.cli": "`kcodec broker` hands its arguments to kcodec_broker.cli when installed",
                      "kcodec.showcase.traffic": "the showcase's traffic step runs a kcodec_broker Cluster"}


def layer_of(module: str) -> str:
    best = ""
    for prefix in MODULES:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    return MODULES[best] if best and best != "kcodec" or module == "kcodec" else "applications"


def _root_of(path: Path) -> Path:
    return next((root for root in ROOTS.values() if root == path or root in path.parents), PKG)


def module_name(path: Path) -> str:
    rel = path.relative_to(_root_of(path).parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:`` (annotations only, never run)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def imports_of(path: Path, module: str, *, runtime: bool = False) -> set[str]:
    """Every kcodec module that a file imports, anywhere in it (function-level imports too); with
    ``runtime``, those under ``if TYPE_CHECKING:`` left out."""
    tree = parse_python(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    skip = _type_checking_only(tree) if runtime else set()
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
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
    if name in MODULES:  # kcodec.core._fast may not be built
        return True
    rel, root = Path(*name.split(".")), ROOTS.get(name.split(".")[0], PKG)
    return (root.parent / rel).with_suffix(".py").exists() or (root.parent / rel / "__init__.py").exists() \
        or (root.parent / rel).with_suffix(".pyx").exists()


def test_layers_point_down():
    problems = []
    for mod, target in every_import():
        mine, theirs = layer_of(mod), layer_of(target)
        if LAYERS.index(theirs) > LAYERS.index(mine) or (mine, theirs) in FORBIDDEN:
            problems.append(f"{mod} ({mine}) imports {target} ({theirs})")
    assert not problems, "\n".join(problems)


@functools.lru_cache(maxsize=None)
def every_import() -> list[tuple[str, str]]:
    """(module, kcodec or kcodec_broker module it imports) over both packages (kcodec_broker when installed)."""
    files = python_files()
    assert len(files) > 20
    return [(module_name(p), t) for p in files for t in imports_of(p, module_name(p))]


def python_files() -> list[Path]:
    return [p for root in ROOTS.values() for p in root.rglob("*.py")]


def test_the_broker_is_checked_with_the_codec():
    need_module("kcodec_broker")
    assert {m for m, _ in every_import() if m.startswith("kcodec_broker.")} >= {"kcodec_broker.server",
                                                                              "kcodec_broker.cluster"}
    assert layer_of("kcodec_broker.server") == "applications" and application_of("kcodec_broker.log.store") == \
        "kcodec_broker"


def test_contract_catches_an_upward_import(tmp_path):
    # The checker itself must be able to fail: a low layer importing a higher one is reported.
    bad = tmp_path / "bad.py"
    bad.write_text("from kcodec.messages import MetadataResponse\nfrom kcodec.core import pure\n"
                   "def f():\n    import kcodec.cli\n")
    found = imports_of(bad, "kcodec.core.ir")
    assert found == {"kcodec.messages", "kcodec.core.pure", "kcodec.cli"}
    assert [t for t in found if LAYERS.index(layer_of(t)) > LAYERS.index("ir")]
    assert layer_of("kcodec.messages.metadata_response") == "messages"
    assert layer_of("kcodec.cli") == "applications"
    assert layer_of("kcodec") == "api"


def application_of(module: str) -> str:
    """The application a module belongs to: kcodec's subpackage or top-level module (kcodec.client...), or
    kcodec_broker (the broker's own distribution)."""
    return ".".join(module.split(".")[:1 if module.split(".")[0] == "kcodec_broker" else 2])


def is_private(module: str) -> bool:
    return layer_of(module) in ("ir", "backends") or any(p.startswith("_") for p in module.split(".")[1:])


def test_applications_use_the_public_api_and_declared_edges():
    problems = []
    for mod, target in every_import():
        if layer_of(mod) != "applications":
            continue
        mine, theirs = application_of(mod), application_of(target)
        if layer_of(target) != "applications":
            if is_private(target):
                problems.append(f"{mod} imports the codec's private {target}")
        elif theirs != mine and theirs not in APPLICATION_EDGES.get(mine, set()):
            problems.append(f"{mod} imports {target}: {mine} -> {theirs} is not in APPLICATION_EDGES")
    assert not problems, "\n".join(problems)


# Old names kept for a release (docs/versioning.md): nothing of kcodec's own may still use them.
DEPRECATED = {"kcodec.security.scram": "kcodec.protocol.sasl.scram",
              "kcodec.security.oauthbearer": "kcodec.protocol.sasl.oauthbearer"}
# The framing and matching a connection does: applications that hold connections (the broker, the admin
# client) leave them to kcodec.protocol (ServerConnection, ClientConnection) and keep no copy of their own.
CONNECTION_FRAMING = {"FrameSplitter", "encode_request", "encode_response", "decode_request", "decode_response",
                      "decode_request_header", "encode_request_buffers", "encode_response_buffers"}
ON_THE_PROTOCOL = ("kcodec_broker", "kcodec.client")


def test_nothing_of_kcodec_uses_a_deprecated_module():
    users = [f"{mod} imports {target}: use {DEPRECATED[target]}" for mod, target in every_import()
             if target in DEPRECATED and not mod.startswith("kcodec.security")]
    assert not users, "\n".join(users)


def framing_names_used(path: Path) -> set[str]:
    """The codec's connection-framing functions a file names (``kcodec.encode_response``, or imported)."""
    tree = parse_python(path.read_text(encoding="utf-8"), str(path))
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    used |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("kcodec")
             for a in n.names}
    return used & CONNECTION_FRAMING


def test_the_broker_and_the_client_frame_and_match_through_the_protocol():
    need_module("kcodec_broker")
    problems = []
    for path in python_files():
        mod = module_name(path)
        if mod.startswith(ON_THE_PROTOCOL):
            problems += [f"{mod} uses kcodec.{name}" for name in sorted(framing_names_used(path))]
    assert not problems, "\n".join(problems)
    for mod in ("kcodec_broker.server", "kcodec_broker.mechanisms", "kcodec.client.connection"):
        assert any(layer_of(t) == "protocol" for m, t in every_import() if m == mod), f"{mod} is not on kcodec.protocol"


def test_the_framing_check_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import kcodec\nfrom kcodec.framing import FrameSplitter\nkcodec.encode_response(m, 1, 2)\n")
    assert framing_names_used(bad) == {"FrameSplitter", "encode_response"}


def test_application_contract_catches_private_and_undeclared_imports(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from kcodec.records import _pure\nfrom kcodec.messages._base import Struct\n"
                   "import kcodec_broker\nfrom kcodec.protocol import ClientConnection\n")
    found = imports_of(bad, "kcodec.tap.x")
    assert is_private("kcodec.records._pure") and is_private("kcodec.messages._base") and is_private("kcodec.core.ir")
    assert not is_private("kcodec.protocol") and not is_private("kcodec.records")
    assert "kcodec_broker" in found and "kcodec_broker" not in APPLICATION_EDGES["kcodec.tap"]
    assert layer_of("kcodec.protocol.client") == "protocol"


def _codec_graph() -> dict[str, set[str]]:
    """Runtime imports among the codec's Python modules (every layer below the applications)."""
    files = {module_name(p): p for p in PKG.rglob("*.py") if layer_of(module_name(p)) != "applications"}
    return {mod: {t for t in imports_of(path, mod, runtime=True) if t in files and t != mod}
            for mod, path in files.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of the graph (its modules, the first repeated at the end), or [] when none."""
    state: dict[str, int] = {}
    trail: list[str] = []

    def visit(mod: str) -> list[str]:
        state[mod] = 1
        trail.append(mod)
        for nxt in sorted(graph.get(mod, ())):
            if state.get(nxt) == 1:
                return trail[trail.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[mod] = 2
        trail.pop()
        return []

    for mod in sorted(graph):
        if mod not in state:
            found = visit(mod)
            if found:
                return found
    return []


def test_the_codec_has_no_import_cycle():
    graph = _codec_graph()
    assert {"kcodec.core.pure", "kcodec.core.pure.read", "kcodec.core.pure.write", "kcodec.core.pure.gen"} <= graph.keys()
    assert "kcodec.core.pure.gen" in graph["kcodec.core.pure"]
    assert find_cycle(graph) == [], " -> ".join(find_cycle(graph))


def test_cycle_finder_finds_one(tmp_path):
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) == []
    typed = tmp_path / "typed.py"
    typed.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kcodec.core import pure\n")
    assert imports_of(typed, "kcodec.x") == {"kcodec.core.pure"} and imports_of(typed, "kcodec.x", runtime=True) == set()


_BROKER_MODULE_NAME = re.compile(r"kcodec_broker(\.\w+)*")


def broker_mentions(path: Path) -> list[tuple[str, bool]]:
    """(what, lazy) for each way a file reaches kcodec_broker: an import (lazy when inside a function) or a
    string that is one of its module names (loaded by importlib when that code runs: lazy)."""
    tree = parse_python(path.read_text(encoding="utf-8"), str(path))
    in_functions = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                    for n in ast.walk(f)}
    out = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _BROKER_MODULE_NAME.fullmatch(node.value):
            out.append((f"the name {node.value!r}", True))
        out += [(f"import {n}", id(node) in in_functions) for n in names if _BROKER_MODULE_NAME.fullmatch(n)]
    return out


def test_kcodec_reaches_the_broker_only_where_declared_and_lazily():
    found = {}
    for path in PKG.rglob("*.py"):
        mentions = broker_mentions(path)
        if mentions:
            found[module_name(path)] = mentions
    undeclared = sorted(set(found) - set(REACHES_THE_BROKER))
    assert not undeclared, f"kcodec reaches kcodec_broker outside REACHES_THE_BROKER: {undeclared}"
    eager = [f"{mod}: {what}" for mod, mentions in found.items() for what, lazy in mentions if not lazy]
    assert not eager, "kcodec must import kcodec_broker lazily (kcodec-broker is not its dependency): " + "; ".join(eager)
    assert set(found) == set(REACHES_THE_BROKER), f"declared but unused: {set(REACHES_THE_BROKER) - set(found)}"


def test_the_broker_check_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import kcodec_broker.cluster\nfrom kcodec_broker import Cluster as C\n"
                   "def f():\n    from kcodec_broker.cli import run\n    return __import__('kcodec_broker.cli')\n"
                   "'''a docstring that names kcodec_broker'''\n")
    assert sorted(broker_mentions(bad)) == [("import kcodec_broker", False), ("import kcodec_broker.cli", True),
                                            ("import kcodec_broker.cluster", False),
                                            ("the name 'kcodec_broker.cli'", True)]
