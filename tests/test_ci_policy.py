"""CI's own rules: the hosted workflow is valid, a skip in CI is a failure unless listed, the list is
short and names real tests, and tests ask for what they need through tests/needs.py."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from needs import CI_ALLOWED_SKIPS, missing, need_module, parse_python

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
WORKFLOW = REPO / ".github" / "workflows" / "ci.yml"


def _check_workflow(path: Path) -> subprocess.CompletedProcess:
    need_module("check_jsonschema")
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
                           str(path)], capture_output=True, text=True, timeout=120)


def test_workflow_matches_the_published_schema(tmp_path):
    if not WORKFLOW.is_file():
        missing(f"the workflow {WORKFLOW}")
    out = _check_workflow(WORKFLOW)
    assert out.returncode == 0, out.stdout + out.stderr
    text = WORKFLOW.read_text()
    assert "run: bash .ci/run" in text and "pypa/cibuildwheel@" in text
    for runner in ("ubuntu-", "macos-", "windows-"):
        assert runner in text.split("wheels:")[1], f"no {runner} runner builds wheels"
    broken = tmp_path / "ci.yml"  # the same check refuses a job without runs-on
    broken.write_text(re.sub(r"\n    runs-on: ubuntu-24.04\n    timeout-minutes: 90", "\n    timeout-minutes: 90", text))
    assert broken.read_text() != text and _check_workflow(broken).returncode != 0


def test_allowed_skips_are_few_and_name_real_tests():
    assert len(CI_ALLOWED_SKIPS) <= 8, "the list of skips allowed in CI must stay short"
    for test_id, why in CI_ALLOWED_SKIPS.items():
        assert len(why) > 20, f"{test_id}: say why it may skip in CI"
        path, _, name = test_id.partition("::")
        if not (REPO / path).exists():  # the wheel runs' copy of tests/ (no kcodec/ beside it) lacks the
            assert not (REPO / "kcodec").is_dir(), f"{test_id}: no such file"  # checkout-only ones (.ci/test_wheel.py)
            continue
        source = (REPO / path).read_text()
        assert f"def {name.split('[')[0]}(" in source, f"{test_id} names no test"


def _bare_skips() -> list[str]:
    """pytest.skip / pytest.importorskip calls outside tests/needs.py, except in tests CI may skip."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if path.name == "needs.py" or "node_modules" in path.parts:
            continue
        rel = path.relative_to(REPO).as_posix()
        for node in ast.walk(parse_python(path.read_text(), str(path))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
                continue
            calls = [n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                     and n.func.attr in ("skip", "importorskip")
                     and isinstance(n.func.value, ast.Name) and n.func.value.id == "pytest"]
            owner = f"{rel}::{node.name}" if not isinstance(node, ast.Module) else rel
            if isinstance(node, ast.Module):  # module level only: functions are walked on their own
                calls = [c for c in calls if not any(c in ast.walk(f) for f in ast.walk(node)
                                                      if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)))]
            if calls and not any(k == owner or k.startswith(owner + "[") for k in CI_ALLOWED_SKIPS):
                found += [f"{rel}:{c.lineno}" for c in calls]
    return found


def test_tests_ask_for_what_they_need_through_needs():
    assert _bare_skips() == [], ("skip through tests/needs.py (missing / need_module / need_tool) so that CI "
                                 "fails instead, or add the test to CI_ALLOWED_SKIPS with the reason")


def _run_pytest(tmp_path: Path, ci: bool, *options: str) -> subprocess.CompletedProcess:
    # a session of its own: the checkout run's coverage (started in every Python the tests start, pyproject's
    # patch = subprocess) must not start in it beside its own --cov (two starts wrap os._exit twice)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "COVERAGE_PROCESS_CONFIG")}
    if ci:
        env["CI"] = "true"
    env["PYTHONPATH"] = str(TESTS)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options,
                           str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_a_skip_fails_in_ci_and_skips_elsewhere(tmp_path):
    (tmp_path / "conftest.py").write_text((TESTS / "conftest.py").read_text())
    (tmp_path / "test_needy.py").write_text(
        "import pytest\nfrom needs import missing, need_module\n\n"
        "def test_peer():\n    missing('the peer zork 1.0')\n\n"
        "def test_module():\n    need_module('no_such_module_kcodec')\n\n"
        "def test_plain_skip():\n    pytest.skip('why not')\n\n"
        "def test_not_for_this_python():\n    need_module('no_such_module_kcodec', since=(99, 0))\n\n"
        "def test_fine():\n    assert True\n")
    local = _run_pytest(tmp_path, ci=False)
    assert "4 skipped, 1 passed" in local.stdout.replace("1 passed, 4 skipped", "4 skipped, 1 passed"), local.stdout
    ci = _run_pytest(tmp_path, ci=True)  # a package that does not exist for the Python running may skip
    assert ci.returncode == 1 and "3 failed, 1 passed, 1 skipped" in ci.stdout, ci.stdout
    assert "CI needs the peer zork 1.0" in ci.stdout and "no_such_module_kcodec" in ci.stdout
    assert "CI_ALLOWED_SKIPS in tests/needs.py does not allow it: why not" in ci.stdout


@pytest.mark.checkout  # .ci/ is not copied beside the wheel runs' tests
def test_what_the_wheel_runs_leave_out_runs_in_the_checkout_run():
    """The wheel runs leave out whole markers (suites that test no codec backend); the checkout run (`make test`,
    pyproject's addopts) leaves out `slow` alone, so every one of them still runs once."""
    import tomllib

    tree = parse_python((REPO / ".ci" / "test_wheel.py").read_text(), "test_wheel.py")
    wheel = next(n.value.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "WHEEL_MARKERS" for t in n.targets))
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    checkout = re.fullmatch(r".*-m '([^']*)'.*", config["addopts"]).group(1)
    assert checkout == "not slow"
    left_out = re.findall(r"not (\w+)", wheel)
    assert wheel == " and ".join(f"not {m}" for m in left_out), wheel
    registered = {m.split(":")[0] for m in config["markers"]}
    assert set(left_out) <= registered and {"slow", "kafka", "spark", "checkout"} <= set(left_out)


def test_the_untraced_tests_exist():
    """conftest's UNTRACED names test functions that exist: a renamed one would silently be traced again."""
    # Read from tests/conftest.py itself: the module named ``conftest`` may be another folder's in a whole run.
    tree = ast.parse((REPO / "tests" / "conftest.py").read_text())
    untraced = next(ast.literal_eval(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "UNTRACED" for t in n.targets))
    assert untraced
    for nodeid in untraced:
        path, name = nodeid.split("::")
        assert f"\ndef {name}(" in (REPO / path).read_text(), nodeid


def test_untraced_tests_leave_coverage_started_once(tmp_path):
    """The untraced tests pause coverage without restarting it: each start of coverage applies its ``[run] patch``
    again (coverage 7.17), and a pytest process whose os._exit was wrapped once per untraced test made each fork of
    it save that many times, until the recursion broke out of os._exit into the test session (cov6)."""
    need_module("pytest_cov")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "conftest.py").write_text((TESTS / "conftest.py").read_text())
    (tmp_path / "tests" / "test_differential.py").write_text(
        "import os\nimport pytest\n\n"
        "@pytest.mark.parametrize('i', range(5))\ndef test_instances_agree(i):\n    pass\n\n"
        "def test_z_exit_wrapped_once():\n    f, n = os._exit, 0\n"
        "    while getattr(f, '__name__', '') == 'coverage_os_exit_patch':\n"
        "        f, n = f.__closure__[f.__code__.co_freevars.index('old_exit')].cell_contents, n + 1\n"
        "    assert n == 1\n")
    (tmp_path / ".coveragerc").write_text("[run]\npatch = _exit\n")
    run = _run_pytest(tmp_path, False, "--cov", "--cov-report=", "--cov-config=.coveragerc")
    assert run.returncode == 0 and "6 passed" in run.stdout, run.stdout + run.stderr


@pytest.mark.checkout  # (git's list of the checkout's files)
def test_no_tracked_file_holds_a_merge_conflict():
    """A conflict resolved in one file of a merge and committed in another is caught here, not by a reader."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, timeout=60, check=True)
    marker = re.compile(rb"^(<{7} |>{7} )", re.M)
    found = []
    for name in listed.stdout.decode().split("\0"):
        path = REPO / name
        if name and path.is_file() and path.stat().st_size < 4 << 20:
            if marker.search(path.read_bytes()):
                found.append(name)
    assert not found, f"merge conflict markers in {found}"
