"""The `Detector` interface and detection by marker files at the workspace root.

A detector knows one language: which marker files announce it, which commands test, lint and
type-check it, and how to read their output. Detection looks at the workspace root only (a
marker in a subdirectory does not count) and costs ONE round trip to the sandbox: a small shell
snippet tests every marker and lock file at once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from .._shell import quote
from ..errors import (
    AmbiguousLanguageError,
    ConfigurationError,
    LanguageNotDetectedError,
    NoProjectDetectedError,
    UnknownLanguageError,
)
from .filecheck import CheckOutcome, CheckRun, FileCheck, judge
from .findings import Language
from .plan import ToolPlan, ToolRun

if TYPE_CHECKING:
    from ..sandbox import Sandbox
    from .coverage import Coverage
    from .findings import Finding, SkippedTarget, TestFailure, TestReport

#: Every file the detection snippet looks for: language markers first, then Node lock files.
PROBED_FILES: tuple[str, ...] = (
    "go.mod",
    "Cargo.toml",
    "package.json",
    "pyproject.toml",
    "setup.py",
    "pnpm-lock.yaml",
    "yarn.lock",
    "bun.lockb",
    "package-lock.json",
    "tsconfig.json",
)


@dataclass(frozen=True)
class Workspace:
    """What detection learned about one root, handed to the detector that matched."""

    sandbox: Sandbox
    root: str
    files: frozenset[str]
    """Which of `PROBED_FILES` exist at the root."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment for every command the tools run."""
    timeout: float | None = None

    async def read_text(self, name: str) -> str:
        """A file at the root, read through the sandbox ('' when it vanished meanwhile)."""
        result = await self.sandbox.exec(
            ["cat", "--", f"{self.root}/{name}"], cwd=self.root, max_output=4 << 20
        )
        return result.stdout if result.exit_code == 0 else ""


class Detector(ABC):
    """One language: markers, the commands that verify it, and the parsers of their output."""

    language: ClassVar[Language]
    markers: ClassVar[tuple[str, ...]]
    """Any one of these files at the root means this language."""
    lsp_command: ClassVar[tuple[str, ...]] = ()
    """The language server (sandlot.lsp) as an argv speaking LSP on stdin/stdout, run in the
    sandbox at the workspace root; empty: no server for this language."""
    lsp_extensions: ClassVar[Mapping[str, str]] = {}
    """File extension -> LSP languageId, for every file this language's server owns: a
    polyglot workspace sends each file to the server of its extension."""
    lsp_install: ClassVar[str] = ""
    """How to install the server, for the error when it is not on the sandbox's PATH."""
    extensions: ClassVar[tuple[str, ...]] = ()
    """Suffixes of this language's source files: post-edit feedback picks the detector by the
    changed file's name, not by the markers (a .py file in a Go repository is Python)."""

    def matches(self, files: frozenset[str]) -> bool:
        return any(marker in files for marker in self.markers)

    @abstractmethod
    async def test_plan(self, ws: Workspace) -> ToolPlan:
        """The command that runs the whole test suite."""

    @abstractmethod
    async def lint_plan(self, ws: Workspace) -> ToolPlan:
        """The command that lints the project."""

    @abstractmethod
    async def typecheck_plan(self, ws: Workspace) -> ToolPlan:
        """The command that type-checks the project."""

    async def no_typechecker(self, ws: Workspace) -> str | None:
        """Why the project has no type checker to run (then run_typecheck runs nothing and
        says so), or None. Every language but Node always has one."""
        return None

    @abstractmethod
    async def coverage_plan(self, ws: Workspace) -> ToolPlan:
        """The test command of `test_plan` with line coverage measured: its report in
        `coverage_file`, what measures it in `coverage_tool` (run_tests(coverage=True))."""

    @abstractmethod
    def parse_coverage(self, run: ToolRun) -> Coverage:
        """Line coverage from a finished coverage run's `coverage` report. Pure."""

    @abstractmethod
    async def rerun_plan(self, ws: Workspace, report: TestReport) -> ToolPlan:
        """A command that runs only `report.failures`, with the runner's own selection syntax."""

    @abstractmethod
    def parse_tests(self, run: ToolRun) -> tuple[int, int, int, list[TestFailure]]:
        """(passed, failed, skipped, failures) from a finished test run. Pure."""

    @abstractmethod
    def parse_findings(self, run: ToolRun) -> list[Finding]:
        """Findings from a finished lint or typecheck run. Pure."""

    def parse_targets(self, run: ToolRun) -> tuple[list[str], list[SkippedTarget]]:
        """(checked, skipped) build targets of a lint or typecheck run, for tools that check
        several (Rust); none by default. Pure."""
        return [], []

    def file_checks(self, root: str, file: str) -> list[FileCheck]:
        """The fast checks post-edit feedback runs on `file` (relative to `root`), in order:
        formatter first. None by default. Pure."""
        return []

    def read_file_check(self, run: CheckRun) -> CheckOutcome:
        """What a finished file check says (exit codes judged by `judge`). Pure."""
        return judge(run, lambda r: ([], None, []))


def detector_for_file(path: str) -> Detector | None:
    """The detector whose language `path` is written in, by its suffix (None: no language
    sandlot checks, e.g. a README)."""
    name = path.rsplit("/", 1)[-1]
    for det in _registry():
        if any(name.endswith(ext) and name != ext for ext in det.extensions):
            return det
    return None


def _registry() -> list[Detector]:
    from .go import GoDetector
    from .node import NodeDetector
    from .python import PythonDetector
    from .rust import RustDetector

    # The order is the contract: Go, Rust, Node, Python.
    return [GoDetector(), RustDetector(), NodeDetector(), PythonDetector()]


SUPPORTED: tuple[Language, ...] = ("go", "rust", "node", "python")


def probe_script() -> str:
    """The one-round-trip snippet: prints the name of every probed file that exists."""
    names = " ".join(quote(name) for name in PROBED_FILES)
    return f"for f in {names}; do if [ -f \"$f\" ]; then printf '%s\\n' \"$f\"; fi; done"


def parse_probe(stdout: str) -> frozenset[str]:
    return frozenset(line.strip() for line in stdout.splitlines() if line.strip() in PROBED_FILES)


async def probe(
    sandbox: Sandbox,
    root: str,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> Workspace:
    """Look for every marker and lock file at `root` in one exec."""
    result = await sandbox.exec(probe_script(), cwd=root, timeout=timeout or 60)
    if result.exit_code != 0:
        raise ConfigurationError(
            f"workspace root {root!r} cannot be inspected (exit {result.exit_code}): "
            f"{result.stderr.strip() or 'no such directory?'}; pass an existing directory as "
            "root (default: the sandbox worktree)"
        )
    return Workspace(
        sandbox=sandbox,
        root=root,
        files=parse_probe(result.stdout),
        env=dict(env or {}),
        timeout=timeout,
    )


def detectors_for(files: frozenset[str]) -> list[Detector]:
    """Every detector whose marker is among `files`, in the stable order Go, Rust, Node, Python."""
    return [d for d in _registry() if d.matches(files)]


def _marker_list() -> str:
    parts = []
    for det in _registry():
        parts.append(f"{' or '.join(det.markers)} ({det.language})")
    return ", ".join(parts)


def normalize_language(language: str) -> Language:
    """Case-insensitive, whitespace-trimmed; unknown names are a clear error."""
    name = language.strip().lower()
    for known in SUPPORTED:
        if name == known:
            return known
    raise UnknownLanguageError(
        f'unknown language "{language.strip()}"; supported: {", ".join(sorted(SUPPORTED))}'
    )


def choose(
    tool: str, ws: Workspace, language: str | None, detected: Sequence[Detector]
) -> Detector:
    """Apply the dispatch contract: one match, an explicit `language`, or a clear error."""
    names = [d.language for d in detected]
    if language is not None:
        wanted = normalize_language(language)
        for det in detected:
            if det.language == wanted:
                return det
        raise LanguageNotDetectedError(
            f'language "{wanted}" not detected in workspace; detected: '
            f"{', '.join(names) if names else 'none'}"
        )
    if not detected:
        raise NoProjectDetectedError(
            f"{tool}: no detector matched the workspace at {ws.root}: looked for "
            f"{_marker_list()} at the workspace root (subdirectories do not count); point "
            "root/workspace at the project's top directory"
        )
    if len(detected) > 1:
        raise AmbiguousLanguageError(
            f"polyglot workspace: {len(detected)} project types detected "
            f"({', '.join(names)}) — pass `language` to pick one"
        )
    return detected[0]
