"""The post-edit feedback cases: one changed file in a verify fixture project, and what its
checks must say. Shared by the recording script (scripts/record-feedback-fixtures.py), the
replay tests (recorded output) and the live tests (every verify backend), so the three judge
the same edits by the same expectations."""

from __future__ import annotations

from dataclasses import dataclass

from sandlot import Sandbox
from sandlot.verify.filecheck import FileFeedback
from tests.verify.support import FIXTURES, copy_fixture

RECORDED = FIXTURES / "feedback"

#: (file, line, rule) of a finding: what the tests hold exactly.
Place = tuple[str, int | None, str]


@dataclass(frozen=True)
class Case:
    name: str
    fixture: str
    file: str
    content: str
    formatted: bool | None
    findings: frozenset[Place]
    statuses: tuple[tuple[str, str], ...]
    """(check, status) of every check, in order."""
    format_lines: tuple[int, ...] = ()
    budget: float = 120.0
    setup: str = ""
    """A shell command run in the project first (e.g. a deliberately slow linter)."""
    without: str = ""
    """A binary taken off PATH (to show a tool that is not installed)."""


GO_FILE = "fb/fb.go"
PY_FILE = "src/pyfix/fb.py"
JS_FILE = "src/fb.js"
RS_FILE = "src/fb.rs"

GO_CLEAN = "package fb\n\n// Add returns a+b.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"
GO_CHECKS = (("gofmt", "clean"), ("go vet", "clean"))
PY_CLEAN = "def add(a: int, b: int) -> int:\n    return a + b\n"
JS_CLEAN = "function add(a, b) {\n  return a + b;\n}\n\nmodule.exports = { add };\n"
JS_LINT = ("function add(a, b) {\n  var unused = 1;\n  return a + b;\n}\n\n"
           "module.exports = { add };\n")
RS_CLEAN = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"

CASES: tuple[Case, ...] = (
    # Go: gofmt -l on the file, go vet -json on its package.
    Case("go-clean", "go", GO_FILE, GO_CLEAN, True, frozenset(), GO_CHECKS),
    Case("go-unformatted", "go", GO_FILE,
         "package fb\n\n// Add returns a+b.\nfunc  Add(a,b int) int {\nreturn a+b\n}\n",
         False, frozenset(), (("gofmt", "findings"), ("go vet", "clean"))),
    Case("go-syntax", "go", GO_FILE,
         "package fb\n\n// Add returns a+b.\nfunc Add(a, b int) int {\n\treturn a +\n}\n",
         None, frozenset({(GO_FILE, 6, "syntax")}),
         (("gofmt", "findings"), ("go vet", "findings"))),
    Case("go-vet", "go", GO_FILE,
         'package fb\n\nimport "fmt"\n\n// Say formats n.\nfunc Say(n int) string {\n'
         '\treturn fmt.Sprintf("%s", n)\n}\n',
         True, frozenset({(GO_FILE, 7, "printf")}), (("gofmt", "clean"), ("go vet", "findings"))),
    Case("go-type-error", "go", GO_FILE,
         'package fb\n\n// Add returns a+b.\nfunc Add(a, b int) int {\n\treturn "three"\n}\n',
         True, frozenset({(GO_FILE, 5, "typecheck")}),
         (("gofmt", "clean"), ("go vet", "findings"))),
    # Python: ruff format --check and ruff check on the file.
    Case("python-clean", "python", PY_FILE, PY_CLEAN, True, frozenset(),
         (("ruff format", "clean"), ("ruff check", "clean"))),
    Case("python-unformatted", "python", PY_FILE,
         "def add(a:int,b:int)->int:\n    return a+b\n", False, frozenset(),
         (("ruff format", "findings"), ("ruff check", "clean")), format_lines=(1,)),
    Case("python-syntax", "python", PY_FILE,
         "def add(a: int, b: int) -> int:\n    return a +\n", None,
         frozenset({(PY_FILE, 2, "syntax")}),
         (("ruff format", "findings"), ("ruff check", "findings"))),
    Case("python-lint", "python", PY_FILE,
         "import os\n\n\ndef add(a: int, b: int) -> int:\n    return a + b\n", True,
         frozenset({(PY_FILE, 1, "F401")}), (("ruff format", "clean"), ("ruff check", "findings"))),
    Case("python-missing", "python", PY_FILE, PY_CLEAN, None, frozenset(),
         (("ruff format", "missing"), ("ruff check", "missing")), without="ruff"),
    # A deliberately slow linter: the project's own .venv/bin/ruff sleeps far past the budget.
    Case("python-slow", "python", PY_FILE, PY_CLEAN, None, frozenset(),
         (("ruff format", "over_budget"), ("ruff check", "over_budget")), budget=2.0,
         setup="mkdir -p .venv/bin && printf '#!/bin/sh\\nsleep 60\\n' > .venv/bin/ruff && "
               "chmod +x .venv/bin/ruff"),
    # Node: prettier --check and eslint, each where the project uses it.
    Case("node-clean", "node-format", JS_FILE, JS_CLEAN, True, frozenset(),
         (("prettier", "clean"), ("eslint", "clean"))),
    Case("node-unformatted", "node-format", JS_FILE,
         "function add(a,b){\n return a+b\n}\n\nmodule.exports = {add}\n", False, frozenset(),
         (("prettier", "findings"), ("eslint", "clean"))),
    Case("node-syntax", "node-format", JS_FILE, "function add(a, b) {\n  return a +;\n}\n",
         None, frozenset({(JS_FILE, 2, "syntax")}),
         (("prettier", "findings"), ("eslint", "findings"))),
    Case("node-lint", "node-format", JS_FILE, JS_LINT, True,
         frozenset({(JS_FILE, 2, "no-var"), (JS_FILE, 2, "no-unused-vars")}),
         (("prettier", "clean"), ("eslint", "findings"))),
    # A project with an eslint config and no prettier: prettier does not apply.
    Case("node-eslint-only", "node", JS_FILE, JS_LINT, None,
         frozenset({(JS_FILE, 2, "no-var"), (JS_FILE, 2, "no-unused-vars")}),
         (("prettier", "skipped"), ("eslint", "findings"))),
    # Rust: rustfmt --check with the crate's edition.
    Case("rust-clean", "rust", RS_FILE, RS_CLEAN, True, frozenset(), (("rustfmt", "clean"),)),
    Case("rust-unformatted", "rust", RS_FILE, "pub fn add(a:i32,b:i32)->i32 {\na+b\n}\n",
         False, frozenset(), (("rustfmt", "findings"),), format_lines=(1,)),
    Case("rust-syntax", "rust", RS_FILE, "pub fn add(a: i32, b: i32) -> i32 {\n    a +\n",
         None, frozenset({(RS_FILE, 2, "syntax")}), (("rustfmt", "findings"),)),
)

BY_NAME = {case.name: case for case in CASES}


#: PATH without the directories that hold a binary, computed in the sandbox (its PATH).
_PATH_WITHOUT = (
    'IFS=:; out=; for d in $PATH; do [ -x "$d/$1" ] || out="$out${out:+:}$d"; done; '
    'printf %s "$out"'
)


async def stage(sandbox: Sandbox, case: Case, root: str | None = None,
                *, write: bool = True) -> tuple[str, dict[str, str]]:
    """Copy the case's project into the sandbox (unless `root` already holds it), run its
    setup, write its file (unless `write` is False): the project root and the environment its
    checks run with."""
    if root is None:
        root = await copy_fixture(sandbox, case.fixture)
    if case.setup:
        await sandbox.exec(case.setup, cwd=root, check=True)
    if write:
        await sandbox.exec(["sh", "-c", 'mkdir -p "$(dirname "$1")" && cat > "$1"', "sh",
                            f"{root}/{case.file}"], stdin=case.content, check=True)
    env: dict[str, str] = {}
    if case.without:
        found = await sandbox.exec(["sh", "-c", _PATH_WITHOUT, "sh", case.without], check=True)
        env["PATH"] = found.stdout
    return root, env


def assert_feedback(case: Case, feedback: FileFeedback | None) -> None:
    """The feedback says exactly what the case expects."""
    assert feedback is not None, case.name
    assert feedback.file == case.file
    got = [(c.name, c.status) for c in feedback.checks]
    assert tuple(got) == case.statuses, (case.name, feedback.checks)
    assert feedback.formatted is case.formatted, (case.name, feedback)
    places = {(f.file, f.line, f.rule) for f in feedback.findings}
    assert places == case.findings, (case.name, feedback.findings)
    assert tuple(feedback.format_lines) == case.format_lines, (case.name, feedback)
    assert feedback.ok == (not case.findings and case.formatted is not False)
