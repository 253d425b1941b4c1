"""Detection and dispatch rules, the shell line the runner builds, and the small helpers --
pure functions, no sandbox needed (the live tests show the same rules end to end)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sandlot.errors import (
    AmbiguousLanguageError,
    LanguageNotDetectedError,
    LinterNotInstalledError,
    NoProjectDetectedError,
    UnknownLanguageError,
    VerifyToolFailedError,
    VerifyToolMissingError,
)
from sandlot.verify.detector import (
    PROBED_FILES,
    Workspace,
    choose,
    detectors_for,
    normalize_language,
    parse_probe,
    probe_script,
)
from sandlot.verify.go import module_path
from sandlot.verify.node import js_regex_escape, package_manager, run_argv, runner_of
from sandlot.verify.parsers.paths import relative
from sandlot.verify.plan import ToolPlan, ToolRun
from sandlot.verify.runner import check_outcome, shell_line, split_report


def _ws(*files: str) -> Workspace:
    return Workspace(sandbox=None, root="/w", files=frozenset(files))  # type: ignore[arg-type]


def test_detection_order_is_go_rust_node_python() -> None:
    every = frozenset({"setup.py", "package.json", "Cargo.toml", "go.mod"})
    assert [d.language for d in detectors_for(every)] == ["go", "rust", "node", "python"]
    assert [d.language for d in detectors_for(frozenset({"setup.py"}))] == ["python"]
    assert [d.language for d in detectors_for(frozenset({"pnpm-lock.yaml"}))] == []


def test_probe_is_one_shell_snippet_listing_existing_files(tmp_path: Path) -> None:
    root = tmp_path
    for name in ("go.mod", "package.json", "yarn.lock"):
        (root / name).write_text("")
    (root / "Cargo.toml").mkdir()  # a directory is not a marker
    out = subprocess.run(
        ["sh", "-c", probe_script()], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    assert parse_probe(out) == frozenset({"go.mod", "package.json", "yarn.lock"})
    assert parse_probe("go.mod\nnot-a-marker\n\n") == frozenset({"go.mod"})
    assert set(PROBED_FILES) >= {"go.mod", "Cargo.toml", "package.json", "pyproject.toml"}


def test_choose_one_match_and_explicit_language() -> None:
    ws = _ws("go.mod", "package.json")
    found = detectors_for(ws.files)
    assert choose("run_tests", ws, "go", found).language == "go"
    assert choose("run_tests", ws, " Node\t", found).language == "node"
    single = _ws("pyproject.toml")
    assert choose("run_tests", single, None, detectors_for(single.files)).language == "python"


def test_choose_errors_are_exact() -> None:
    ws = _ws("go.mod", "package.json")
    found = detectors_for(ws.files)
    with pytest.raises(AmbiguousLanguageError) as many:
        choose("run_tests", ws, None, found)
    assert str(many.value) == (
        "polyglot workspace: 2 project types detected (go, node) — pass `language` to pick one"
    )
    with pytest.raises(LanguageNotDetectedError) as absent:
        choose("run_tests", ws, "RUST", found)
    assert str(absent.value) == 'language "rust" not detected in workspace; detected: go, node'
    with pytest.raises(UnknownLanguageError):
        choose("run_tests", ws, "cobol", found)
    with pytest.raises(NoProjectDetectedError) as none:
        choose("run_lint", _ws(), None, [])
    assert str(none.value).startswith("run_lint: no detector matched the workspace at /w: ")
    for marker in ("go.mod", "Cargo.toml", "package.json", "pyproject.toml", "setup.py"):
        assert marker in str(none.value)


def test_normalize_language() -> None:
    assert normalize_language("  PyThOn ") == "python"
    with pytest.raises(UnknownLanguageError, match='"ts"'):
        normalize_language("ts")


def test_package_manager_from_lock_files() -> None:
    assert package_manager(frozenset()) == "npm"
    assert package_manager(frozenset({"package-lock.json"})) == "npm"
    assert package_manager(frozenset({"bun.lockb"})) == "bun"
    assert package_manager(frozenset({"yarn.lock", "package-lock.json"})) == "yarn"
    assert package_manager(frozenset({"pnpm-lock.yaml", "yarn.lock"})) == "pnpm"
    assert run_argv("npm", "test", ["--json"]) == ["npm", "run", "test", "--", "--json"]
    assert run_argv("pnpm", "test", ["--json"]) == ["pnpm", "run", "test", "--json"]
    assert run_argv("yarn", "lint", []) == ["yarn", "run", "lint"]


@pytest.mark.parametrize(
    ("script", "runner"),
    [
        ("vitest run", "vitest"),
        ("vitest", "vitest"),
        ("jest --coverage", "jest"),
        ("node --test", "node-test"),
        ("node --experimental-vm-modules --test test/", "node-test"),
        ("tsc && node --test dist/", "node-test"),
        ("mocha", ""),
        ("echo no tests", ""),
    ],
)
def test_runner_of_test_script(script: str, runner: str) -> None:
    assert runner_of(script) == runner


def test_js_regex_escape_only_touches_syntax() -> None:
    assert js_regex_escape("group fails inside") == "group fails inside"
    assert js_regex_escape("a.b (c) [d] $x^ y|z / w?") == (
        "a\\.b \\(c\\) \\[d\\] \\$x\\^ y\\|z \\/ w\\?"
    )


def test_module_path() -> None:
    assert module_path("// c\nmodule example.com/x\n\ngo 1.22\n") == "example.com/x"
    assert module_path('module "quoted/mod"\n') == "quoted/mod"
    assert module_path("go 1.22\n") == ""


def test_relative_paths() -> None:
    assert relative("/w/a/b.go", "/w") == "a/b.go"
    assert relative("b.go", "/w", "a") == "a/b.go"
    assert relative("./x/../b.py", "/w") == "b.py"
    assert relative("file:///w/t/x.js", "/w") == "t/x.js"
    assert relative("/elsewhere/x.go", "/w") == "/elsewhere/x.go"
    assert relative("/w2/x.go", "/w") == "/w2/x.go"


def _plan(**fields: object) -> ToolPlan:
    base: dict[str, object] = {
        "kind": "lint",
        "language": "go",
        "tool": "golangci-lint",
        "binary": "golangci-lint",
        "argv": ["golangci-lint", "run"],
        "root": "/w",
    }
    base.update(fields)
    return ToolPlan.model_validate(base)


def _sh(line: str, cwd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", line], cwd=cwd, capture_output=True, text=True)


def test_shell_line_reports_a_missing_binary(tmp_path: Path) -> None:
    plan = _plan(binary="surely-not-installed-xyz", argv=["surely-not-installed-xyz"])
    done = _sh(shell_line(plan, "t"), str(tmp_path))
    run = ToolRun(plan=plan, exit_code=done.returncode, stdout=done.stdout, stderr=done.stderr)
    with pytest.raises(LinterNotInstalledError) as caught:
        check_outcome(run, "run_lint")
    # The PATH the sandbox's shell searched (not the caller's), and how to give it another.
    fix = ('install it in the sandbox, or give the tool a PATH that has it: env={"PATH": "..."} '
           "in Python, --env PATH=... on the command line")
    path = os.environ["PATH"]
    assert str(caught.value) == (
        f"run_lint: surely-not-installed-xyz is not installed: not found on the sandbox's PATH "
        f"({path}); {fix}"
    )
    tests = plan.model_copy(update={"kind": "tests"})
    with pytest.raises(VerifyToolMissingError) as other:
        check_outcome(run.model_copy(update={"plan": tests}), "run_tests")
    # One wording for every tool and kind: only the caller differs.
    assert str(other.value) == str(caught.value).replace("run_lint:", "run_tests:")


def test_shell_line_names_a_program_missing_inside_a_script(tmp_path: Path) -> None:
    # `npm run lint` whose script calls an eslint that is not installed: the shell says so.
    plan = _plan(binary="sh", argv=["sh", "-c", "eslint-not-here-xyz --format json"])
    done = _sh(shell_line(plan, "t"), str(tmp_path))
    run = ToolRun(plan=plan, exit_code=done.returncode, stdout=done.stdout, stderr=done.stderr)
    with pytest.raises(LinterNotInstalledError) as caught:
        check_outcome(run, "run_lint")
    assert str(caught.value).startswith(
        "run_lint: eslint-not-here-xyz is not installed: not found on the sandbox's PATH "
        f"({os.environ['PATH']}); "
    )
    # The same without a report file (a custom script's run, judged by its exit code).
    bare = run.plan.model_copy(update={"report_file": None})
    done = _sh(shell_line(bare, "t"), str(tmp_path))
    with pytest.raises(LinterNotInstalledError) as again:
        check_outcome(ToolRun(plan=bare, exit_code=done.returncode, stdout=done.stdout,
                              stderr=done.stderr), "run_lint")
    assert str(again.value) == str(caught.value)


def test_report_file_comes_back_after_the_marker(tmp_path: Path) -> None:
    report = f"{tmp_path}/r.json"
    plan = _plan(
        binary="sh",
        argv=["sh", "-c", f"echo tool output; printf '[1, 2]' > {report}; exit 1"],
        report_file=report,
        path_prefix=[f"{tmp_path}/bin"],
        prelude=["X_SEEN=yes; export X_SEEN"],
    )
    done = _sh(shell_line(plan, "tok"), str(tmp_path))
    assert done.returncode == 1
    stdout, content = split_report(done.stdout, "tok")
    assert stdout == "tool output\n"
    assert content == "[1, 2]"
    assert not (tmp_path / "r.json").exists()
    assert split_report("no marker here\n", "tok") == ("no marker here\n", None)
    # A different token (another run's marker) is not mistaken for ours.
    assert split_report(done.stdout, "other")[1] is None


def test_exit_codes_outside_the_detector_rules_raise() -> None:
    plan = _plan(finding_codes=[1])
    for code in (0, 1):
        check_outcome(ToolRun(plan=plan, exit_code=code, stdout="", stderr=""), "run_lint")
    with pytest.raises(VerifyToolFailedError) as caught:
        check_outcome(
            ToolRun(plan=plan, exit_code=7, stdout="", stderr="level=error msg=boom"), "run_lint"
        )
    assert caught.value.exit_code == 7
    assert "boom" in caught.value.stderr
    timed = ToolRun(plan=plan, exit_code=137, stdout="", stderr="", timed_out=True, duration=9)
    with pytest.raises(VerifyToolFailedError, match="timed out"):
        check_outcome(timed, "run_lint")
    # A custom script (no parser): its non-zero code is its verdict, not a crash.
    custom = _plan(parsed=False)
    check_outcome(ToolRun(plan=custom, exit_code=3, stdout="", stderr=""), "run_lint")


def test_flags_are_added_only_to_simple_scripts() -> None:
    from sandlot.verify.node import simple

    assert simple("eslint .") and simple("jest --coverage") and simple("tsc --noEmit -p .")
    assert not simple("eslint . && prettier --check .")
    assert not simple("tsc; echo done") and not simple("jest | tee log")
