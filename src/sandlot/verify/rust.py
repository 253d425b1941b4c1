"""Rust: Cargo.toml; `cargo test` (libtest text + JSON build messages), clippy and
`cargo check` (JSON messages, with the real lint names such as `clippy::needless_return`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import ClassVar

from ..errors import VerifyToolFailedError
from .coverage import Coverage, summarize
from .detector import Detector, Workspace
from .filecheck import CheckOutcome, CheckRun, FileCheck, Reading, file_arg, judge
from .findings import Finding, Language, SkippedTarget, TestFailure, TestReport
from .parsers import cargo, formatters, libtest, tarpaulin
from .plan import ToolPlan, ToolRun
from .runner import report_path

# cargo: 101 is "the build or a test failed"; the JSON says which. Anything else is cargo's own
# failure (bad manifest: also 101, but then no error diagnostic parses, which is caught).
_CARGO_FAILED = [101]
#: Every target, and every one that can be built even when another fails: a bench that needs
#: nightly (skipped, see cargo.targets) or a broken test must not hide the rest's findings.
_ALL_TARGETS = ["--all-targets", "--keep-going"]


_DOCTEST_LINE = re.compile(r" \(line (\d+)\)$")


def doctest_filter(names: list[str]) -> list[str]:
    """libtest arguments that select these doctests (`src/lib.rs - f (line 188)`).

    rustdoc splits every test argument at whitespace, so a doctest's name cannot be passed
    whole (with `--exact` its pieces match nothing; without, `-` matches every doctest). Its
    line can: the filter `188)` selects the doctests at lines ending in 188, and a `--skip`
    for each digit before it (`1188)` ... `9188)`) leaves the one at line 188. A doctest at the
    same line of another file runs too. A name without a line: every doctest runs.
    """
    lines = []
    for name in names:
        match = _DOCTEST_LINE.search(name)
        if match is None:
            return []
        lines.append(f"{match.group(1)})")
    wanted = list(dict.fromkeys(lines))
    skips = [
        f"{digit}{line}" for line in wanted for digit in "123456789"
        if not any(f"{digit}{line}" in other for other in wanted)
    ]
    return [*wanted, *(arg for skip in skips for arg in ("--skip", skip))]


class RustDetector(Detector):
    language: ClassVar[Language] = "rust"
    markers: ClassVar[tuple[str, ...]] = ("Cargo.toml",)
    lsp_command: ClassVar[tuple[str, ...]] = ("rust-analyzer",)
    lsp_extensions: ClassVar[Mapping[str, str]] = {".rs": "rust"}
    lsp_install: ClassVar[str] = (
        "install rust-analyzer in the sandbox: cargo install --locked "
        "ra_ap_rust-analyzer@0.0.349 (or rustup component add rust-analyzer where rustup "
        "can download), and put it on PATH")
    extensions: ClassVar[tuple[str, ...]] = (".rs",)

    async def test_plan(self, ws: Workspace) -> ToolPlan:
        return self._test(ws, [])

    def _test(self, ws: Workspace, names: list[str], targets: list[str] | None = None) -> ToolPlan:
        argv = ["cargo", "test", "--no-fail-fast", "--message-format=json"]
        for target in targets or []:
            argv += libtest.target_flags(target)
        if names:
            argv += ["--", "--exact", *names]
        return ToolPlan(
            kind="tests",
            language="rust",
            tool="cargo test",
            runner="cargo-test",
            binary="cargo",
            argv=argv,
            root=ws.root,
            finding_codes=_CARGO_FAILED,
        )

    async def coverage_plan(self, ws: Workspace) -> ToolPlan:
        # cargo tarpaulin's ptrace engine: it needs no llvm-tools component, which rustup
        # cannot download on every machine (adr/0054). It runs every test binary itself and
        # prints their libtest output, so the test results are read as cargo test's.
        out = report_path("tarpaulin")
        return ToolPlan(
            kind="tests",
            language="rust",
            tool="cargo tarpaulin",
            runner="cargo-test",
            binary="cargo-tarpaulin",
            argv=["cargo", "tarpaulin", "--engine", "ptrace", "--skip-clean", "--no-fail-fast",
                  "--color", "never", "--out", "Json", "--output-dir", out],
            root=ws.root,
            coverage_file=f"{out}/tarpaulin-report.json",
            coverage_tool="cargo-tarpaulin",
            coverage_install="install it in the sandbox: cargo install cargo-tarpaulin --locked "
                             "(scripts/setup.d/41-cargo-tarpaulin.sh)",
            scratch=[out],
            # 0 all passed; 1 a test failed ("Test failed during run") or the build failed.
            finding_codes=[1],
        )

    def parse_coverage(self, run: ToolRun) -> Coverage:
        return summarize("tarpaulin", tarpaulin.parse(run.coverage or "{}", root=run.plan.root))

    async def lint_plan(self, ws: Workspace) -> ToolPlan:
        return ToolPlan(
            kind="lint",
            language="rust",
            tool="cargo clippy",
            binary="cargo-clippy",
            argv=["cargo", "clippy", *_ALL_TARGETS, "--message-format=json"],
            root=ws.root,
            finding_codes=_CARGO_FAILED,
        )

    async def typecheck_plan(self, ws: Workspace) -> ToolPlan:
        return ToolPlan(
            kind="typecheck",
            language="rust",
            tool="cargo check",
            binary="cargo",
            argv=["cargo", "check", *_ALL_TARGETS, "--message-format=json"],
            root=ws.root,
            finding_codes=_CARGO_FAILED,
        )

    async def rerun_plan(self, ws: Workspace, report: TestReport) -> ToolPlan:
        if any(f.kind == "build" for f in report.failures):
            return self._test(ws, [])  # it did not compile: everything must run again
        # Each failure in its own test binary: one cargo run selecting those binaries (a name
        # shared by two of them runs in both; both are the failing ones or their neighbours).
        # Doctests run apart: cargo refuses `--doc` beside other target flags ("can't mix
        # --doc with other target selecting options").
        doc = [f for f in report.failures if f.package == "doc"]
        rest = [f for f in report.failures if f.package != "doc"]
        steps = [self._select(ws, part) for part in (rest, doc) if part]
        if len(steps) == 1:
            return steps[0]
        return steps[0].model_copy(update={
            "argv": ["sh", "-c", "; ".join(step.display for step in steps)],
            "steps": [step.model_copy(update={"after": ";"}) for step in steps],
        })

    def _select(self, ws: Workspace, failures: list[TestFailure]) -> ToolPlan:
        names = [f.selector for f in failures if f.selector]
        targets = list(dict.fromkeys(f.package for f in failures if f.package))
        if targets == ["doc"]:
            plan = self._test(ws, [], targets)
            return plan.model_copy(update={"argv": [*plan.argv, "--", *doctest_filter(names)]})
        return self._test(ws, list(dict.fromkeys(names)), targets)

    def parse_tests(self, run: ToolRun) -> tuple[int, int, int, list[TestFailure]]:
        passed, failed, skipped, failures = libtest.parse(
            run.stdout, root=run.plan.root, stderr=run.stderr)
        if run.plan.tool == "cargo tarpaulin":
            failures += tarpaulin.build_failures(run.stdout, root=run.plan.root)
            if not failures and tarpaulin.untraced(run.stdout):
                raise VerifyToolFailedError(
                    f"run_tests: cargo tarpaulin could not trace the tests at {run.plan.root}: "
                    "its ptrace engine was refused (a Docker container's default seccomp "
                    "profile forbids the personality(ADDR_NO_RANDOMIZE) it needs); make the "
                    'sandbox with sandlot.docker(..., security_opt=["seccomp=unconfined"]) '
                    '(in a provider configuration: "security_opt": ["seccomp=unconfined"]; '
                    "another container: docker run --security-opt seccomp=unconfined), or run "
                    "without coverage",
                    command=run.plan.display, exit_code=run.exit_code,
                    stderr=run.stderr or run.stdout)
        return passed, failed, skipped, failures

    def parse_findings(self, run: ToolRun) -> list[Finding]:
        return cargo.parse(run.stdout, root=run.plan.root)

    def parse_targets(self, run: ToolRun) -> tuple[list[str], list[SkippedTarget]]:
        return cargo.targets(run.stdout)

    def file_checks(self, root: str, file: str) -> list[FileCheck]:
        return [
            # rustfmt alone parses with edition 2015 (cargo fmt passes the crate's): take the
            # edition from Cargo.toml at the root, else 2021. 0 formatted, 1 a diff or a parse
            # error (both printed), anything else rustfmt failing.
            FileCheck(name="rustfmt", kind="format", language="rust", binary="rustfmt",
                      argv=["sh", "-c", _RUSTFMT, "rustfmt", file_arg(file)], cwd=root,
                      root=root, file=file),
        ]

    def read_file_check(self, run: CheckRun) -> CheckOutcome:
        return judge(run, _read_rust_check)


_RUSTFMT = (
    "e=$(sed -n 's/^[[:space:]]*edition[[:space:]]*=[[:space:]]*\"\\([0-9]*\\)\".*/\\1/p' "
    "Cargo.toml 2>/dev/null | head -n 1); "
    'exec rustfmt --check --color never --edition "${e:-2021}" -- "$1"'
)


def _read_rust_check(run: CheckRun) -> Reading:
    check = run.check
    return formatters.rustfmt(run.stdout, run.stderr, file=check.file, root=check.root,
                              cwd=check.cwd)
