"""Node: package.json; the project's scripts run with the package manager its lock file names.

Tests: `<pm> run test` with the runner's machine-readable reporter added (jest `--json`,
vitest `--reporter=json`, node's runner through NODE_OPTIONS `--test-reporter=junit`), each
writing to a report file. Lint: `<pm> run lint` (+ `--format json` when it is eslint), else
eslint. Typecheck: `<pm> run typecheck` when defined, else `tsc --noEmit`. The project's
`node_modules/.bin` comes first on PATH, so its own eslint / tsc are used.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from typing import Any, ClassVar

from .._shell import quote
from ..errors import ConfigurationError, UnknownScriptError, VerifyToolFailedError
from . import npm_scripts
from .coverage import Coverage, summarize
from .detector import Detector, Workspace
from .filecheck import CheckOutcome, CheckRun, FileCheck, Reading, file_arg, judge
from .findings import Finding, Language, TestFailure, TestReport
from .parsers import eslint, formatters, istanbul, jestjson, junit, mocha, tsc
from .plan import ToolPlan, ToolRun
from .runner import report_path

#: Lock file -> package manager, in order of precedence.
LOCKFILES: tuple[tuple[str, str], ...] = (
    ("pnpm-lock.yaml", "pnpm"),
    ("yarn.lock", "yarn"),
    ("bun.lockb", "bun"),
    ("package-lock.json", "npm"),
)

#: A composite rerun's selection of one script: (files, full test names, suite titles).
Selection = tuple[list[str], list[str], list[str]]
#: The full title mocha gives a failed hook; group 1 is its suite's full title ('' at the root).
_MOCHA_HOOK = re.compile(r'^(.*?) ?"(?:before|after) (?:all|each)" hook\b')
_NODE_TEST = re.compile(r"\bnode\b[^&|;]*\s--test\b")
_JS_REGEX_SPECIAL = re.compile(r"([\\^$.*+?()\[\]{}|/])")


def package_manager(files: frozenset[str]) -> str:
    for lockfile, manager in LOCKFILES:
        if lockfile in files:
            return manager
    return "npm"


def runner_of(script: str) -> str:
    """Which test runner a `test` script starts: vitest, jest, node-test, or '' (unknown)."""
    if re.search(r"\bvitest\b", script):
        return "vitest"
    if re.search(r"\bjest\b", script):
        return "jest"
    if _NODE_TEST.search(script):
        return "node-test"
    return ""


def simple(script: str) -> bool:
    """Whether arguments appended to `<pm> run <script>` reach its one command (no `&&`, `;`,
    pipes): only then may sandlot add reporter flags."""
    return re.search(r"[;&|]", script) is None


def js_regex_escape(text: str) -> str:
    """Escape for a JavaScript RegExp (only syntax characters: valid with or without `u`)."""
    return _JS_REGEX_SPECIAL.sub(r"\\\1", text)


def run_argv(manager: str, script: str, extra: list[str]) -> list[str]:
    """`<pm> run <script> [args]`; only npm needs `--` before the script's own arguments."""
    if not extra:
        return [manager, "run", script]
    if manager == "npm":
        return [manager, "run", script, "--", *extra]
    return [manager, "run", script, *extra]


class NodeDetector(Detector):
    language: ClassVar[Language] = "node"
    markers: ClassVar[tuple[str, ...]] = ("package.json",)
    lsp_command: ClassVar[tuple[str, ...]] = ("typescript-language-server", "--stdio")
    lsp_extensions: ClassVar[Mapping[str, str]] = {
        ".ts": "typescript", ".tsx": "typescriptreact", ".mts": "typescript",
        ".cts": "typescript", ".js": "javascript", ".jsx": "javascriptreact",
        ".mjs": "javascript", ".cjs": "javascript",
    }  # fmt: skip
    lsp_install: ClassVar[str] = (
        "install the TypeScript language server in the sandbox: npm install -g "
        "typescript-language-server@5.1.3 typescript@5.9.3 (or "
        "scripts/setup.d/50-language-servers.sh), and put it on PATH")
    extensions: ClassVar[tuple[str, ...]] = (
        ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")

    @staticmethod
    async def scripts(ws: Workspace) -> dict[str, str]:
        """The `scripts` of package.json at the root."""
        text = await ws.read_text("package.json")
        try:
            data: Any = json.loads(text) if text.strip() else {}
        except ValueError as exc:
            raise ConfigurationError(
                f"package.json at {ws.root} is not valid JSON ({exc}); fix it first"
            ) from None
        scripts = data.get("scripts") if isinstance(data, dict) else None
        if not isinstance(scripts, dict):
            return {}
        return {str(k): str(v) for k, v in scripts.items()}

    def _prefix(self, ws: Workspace) -> list[str]:
        return [f"{ws.root}/node_modules/.bin"]

    def _base(self, ws: Workspace, **fields: Any) -> ToolPlan:
        return ToolPlan(language="node", root=ws.root, path_prefix=self._prefix(ws), **fields)

    async def test_plan(self, ws: Workspace) -> ToolPlan:
        scripts = await self.scripts(ws)
        manager = package_manager(ws.files)
        script = scripts.get("test")
        if script is None:
            # No script: `npm test` says so itself; its output is the result.
            return self._base(
                ws,
                kind="tests",
                tool=f"{manager} test",
                runner="unknown",
                binary=manager,
                argv=[manager, "test"],
                parsed=False,
            )
        runner = runner_of(script)
        if not runner or not simple(script):
            # A script that chains others or wraps its runner (nyc mocha, tsx --test): run
            # its commands one by one, each runner with its own report.
            steps = npm_scripts.expand(scripts, "test")
            if steps and any(step.runner for step in steps):
                return self._composite(ws, manager, steps, {})
        if runner in ("jest", "vitest") and not simple(script):
            runner = ""  # flags would land on the script's last command: run it as it is
        return self._runner_plan(ws, manager, runner, selection=None, script=script)

    def _composite(
        self,
        ws: Workspace,
        manager: str,
        steps: list[npm_scripts.Step],
        selections: dict[str, Selection],
    ) -> ToolPlan:
        """A plan whose steps are the script's commands; `selections` (script -> files,
        names, suites) narrows each runner to its failures for a rerun."""
        runners = [s.runner for s in steps if s.runner]
        return self._base(
            ws,
            kind="tests",
            tool=f"{manager} run test",
            runner="+".join(dict.fromkeys(runners)),
            binary=manager,
            argv=run_argv(manager, "test", []),
            steps=[self._step_plan(ws, step, selections.get(step.script)) for step in steps],
        )

    def _step_plan(
        self,
        ws: Workspace,
        step: npm_scripts.Step,
        selection: Selection | None,
    ) -> ToolPlan:
        """One command of a composite script, run as written plus its runner's reporter (the
        runner is the last program of a wrapper chain, so arguments at the end reach it)."""
        files, names, suites = selection or ([], [], [])
        extra: list[str] = []
        prelude: list[str] = []
        report: str | None = None
        codes = [1]
        if step.runner in ("jest", "vitest"):
            report = report_path("json")
            extra = _jest_like_args(step.runner, report, files, names, step.command)
        elif step.runner == "mocha":
            report = report_path("json")
            extra = ["--reporter", "json", "--reporter-option", f"output={report}"]
            codes = list(range(1, 256))  # mocha exits with the number of failures
            if names or suites:
                # A suite whose hook failed runs again whole: every test under its title.
                extra.append("--grep=" + _alternation(names, suites))
            extra += files  # the failures' files only (a spec given by the script stays)
        elif step.runner == "node-test":
            report = report_path("xml")
            prelude = [_node_options(report)]
        command = step.command + "".join(" " + quote(word) for word in extra)
        if step.runner == "mocha" and report is not None:
            # mocha before 10 ignores `output=` and prints the JSON on stdout: keep stdout
            # as the report then (parsers/mocha.py finds the JSON after any console output).
            out = quote(report + ".stdout")
            command = (f"{command} > {out}; rc=$?; [ -f {quote(report)} ] || "
                       f"mv {out} {quote(report)}; rm -f {out}; exit $rc")
        return self._base(
            ws,
            kind="tests",
            tool=step.command,
            runner=step.runner or "unknown",
            binary="sh",
            argv=["sh", "-c", command],
            report_file=report,
            prelude=prelude,
            finding_codes=codes,
            parsed=bool(step.runner),
            after=step.after,
            script=step.script,
        )

    def _runner_plan(
        self,
        ws: Workspace,
        manager: str,
        runner: str,
        selection: tuple[list[str], list[str]] | None,
        script: str = "",
    ) -> ToolPlan:
        """The test command for `runner` (the `test` script is `script`); `selection` =
        (files, full names) for a rerun."""
        files, names = selection or ([], [])
        if runner in ("jest", "vitest"):
            report = report_path("json")
            extra = _jest_like_args(runner, report, files, names, script)
            return self._base(
                ws,
                kind="tests",
                tool=runner,
                runner=runner,
                binary=manager,
                argv=run_argv(manager, "test", extra),
                report_file=report,
            )
        if runner == "node-test":
            report = report_path("xml")
            reporters = _reporters(report)
            if selection is not None:
                # NODE_OPTIONS may not carry --test-name-pattern: run node directly.
                argv = ["node", "--test", *reporters.split(" ")]
                if names:
                    argv.append("--test-name-pattern=" + _alternation(names))
                argv.extend(files)
                return self._base(
                    ws,
                    kind="tests",
                    tool="node --test",
                    runner="node-test",
                    binary="node",
                    argv=argv,
                    report_file=report,
                )
            return self._base(
                ws,
                kind="tests",
                tool="node --test",
                runner="node-test",
                binary=manager,
                argv=run_argv(manager, "test", []),
                report_file=report,
                prelude=[_node_options(report)],
            )
        return self._base(
            ws,
            kind="tests",
            tool=f"{manager} run test",
            runner="unknown",
            binary=manager,
            argv=run_argv(manager, "test", []),
            parsed=False,
        )

    async def coverage_plan(self, ws: Workspace) -> ToolPlan:
        """The test plan with istanbul's JSON report written: by jest's and vitest's own
        coverage when the script is one of them, else by c8 around each command (V8's coverage
        of every node process the script starts: node --test, mocha, a composite script)."""
        plan = await self.test_plan(ws)
        out = report_path("coverage")  # a directory: the tools write coverage-final.json in it
        fields: dict[str, Any] = {
            "coverage_file": f"{out}/coverage-final.json",
            "scratch": [out],
        }
        if plan.runner == "jest" and not plan.steps:
            return plan.model_copy(update={**fields, "coverage_tool": "jest", "argv": [
                *plan.argv, "--coverage", "--coverageReporters=json",
                f"--coverageDirectory={out}"]})
        if plan.runner == "vitest" and not plan.steps:
            return plan.model_copy(update={
                **fields, "coverage_tool": _VITEST_COVERAGE[0],
                "coverage_install": "install it in the project: npm install -D "
                                    "@vitest/coverage-v8 (the version of its vitest)",
                "prelude": [*plan.prelude, _has_vitest_coverage()],
                # reportOnFailure: vitest writes no report when a test fails, by default.
                "argv": [*plan.argv, "--coverage.enabled=true", "--coverage.reporter=json",
                         "--coverage.reportOnFailure=true",
                         f"--coverage.reportsDirectory={out}"]})
        if not plan.steps:
            return plan.model_copy(update={**fields, **_under_c8(plan, out, clean=True)})
        # A composite script: every command under c8 with one raw directory kept between them
        # (--clean=false), so the report of the last one that runs has them all.
        steps = [step.model_copy(update={
            "coverage_file": fields["coverage_file"], **_under_c8(step, out, clean=i == 0)})
            for i, step in enumerate(plan.steps)]
        steps[-1] = steps[-1].model_copy(update={"scratch": fields["scratch"]})
        return plan.model_copy(update={**fields, "coverage_tool": "c8", "steps": steps})

    def parse_coverage(self, run: ToolRun) -> Coverage:
        tool = run.plan.coverage_tool
        name = "vitest" if tool in _VITEST_COVERAGE else tool
        return summarize(name, istanbul.parse(run.coverage or "{}", root=run.plan.root))

    async def lint_plan(self, ws: Workspace) -> ToolPlan:
        scripts = await self.scripts(ws)
        manager = package_manager(ws.files)
        report = report_path("json")
        json_args = ["--format", "json", "--output-file", report]
        script = scripts.get("lint")
        # eslint: 0 clean (warnings allowed), 1 errors found, 2 configuration error / crash.
        if script is None:
            return self._base(
                ws,
                kind="lint",
                tool="eslint",
                binary="eslint",
                argv=["eslint", ".", *json_args],
                report_file=report,
            )
        if re.search(r"\beslint\b", script) and simple(script):
            return self._base(
                ws,
                kind="lint",
                tool="eslint",
                binary=manager,
                argv=run_argv(manager, "lint", json_args),
                report_file=report,
            )
        return self._base(
            ws,
            kind="lint",
            tool=f"{manager} run lint",
            binary=manager,
            argv=run_argv(manager, "lint", []),
            parsed=False,
        )

    async def no_typechecker(self, ws: Workspace) -> str | None:
        if "tsconfig.json" in ws.files or "typecheck" in await self.scripts(ws):
            return None
        return (
            "no type checker configured: package.json has no `typecheck` script and there is "
            "no tsconfig.json at the root (add one to type-check with tsc)"
        )

    async def typecheck_plan(self, ws: Workspace) -> ToolPlan:
        scripts = await self.scripts(ws)
        manager = package_manager(ws.files)
        script = scripts.get("typecheck")
        # tsc: 0 clean, 1 or 2 diagnostics (2: "outputs generated" anyway); else tsc failed.
        codes = [1, 2]
        if script is None:
            return self._base(
                ws,
                kind="typecheck",
                tool="tsc",
                binary="tsc",
                argv=["tsc", "--noEmit", "--pretty", "false"],
                finding_codes=codes,
            )
        if re.search(r"\btsc\b", script) and simple(script):
            return self._base(
                ws,
                kind="typecheck",
                tool="tsc",
                binary=manager,
                argv=run_argv(manager, "typecheck", ["--pretty", "false"]),
                finding_codes=codes,
            )
        return self._base(
            ws,
            kind="typecheck",
            tool=f"{manager} run typecheck",
            binary=manager,
            argv=run_argv(manager, "typecheck", []),
            parsed=False,
        )

    async def script_plan(self, ws: Workspace, name: str) -> ToolPlan:
        """Any package.json script; an unknown name lists the defined ones."""
        scripts = await self.scripts(ws)
        if name not in scripts:
            defined = ", ".join(sorted(scripts)) or "none"
            raise UnknownScriptError(
                f'run_script: no script "{name}" in package.json at {ws.root}; defined: '
                f"{defined}"
            )
        manager = package_manager(ws.files)
        return self._base(
            ws,
            kind="script",
            tool=f"{manager} run {name}",
            binary=manager,
            argv=run_argv(manager, name, []),
            parsed=False,
        )

    async def rerun_plan(self, ws: Workspace, report: TestReport) -> ToolPlan:
        if any(f.step for f in report.failures):
            return await self._composite_rerun(ws, report)
        if report.runner not in ("jest", "vitest", "node-test"):
            raise ConfigurationError(
                f"run_failing_tests: the report's runner {report.runner!r} has no selection "
                "syntax sandlot knows (jest, vitest, node --test); run run_tests again"
            )
        files = list(dict.fromkeys(f.package for f in report.failures if f.package))
        if any(f.kind == "build" for f in report.failures):
            names: list[str] = []  # a file that did not load: run all of it
        else:
            names = list(dict.fromkeys(f.selector for f in report.failures if f.selector))
        script = (await self.scripts(ws)).get("test", "")
        return self._runner_plan(
            ws, package_manager(ws.files), report.runner, (files, names), script
        )

    async def _composite_rerun(self, ws: Workspace, report: TestReport) -> ToolPlan:
        """The failing steps of a composite script again, each narrowed to its failures
        (node --test steps run whole: node takes no name pattern through NODE_OPTIONS), one
        after the other whatever each one's outcome."""
        steps = npm_scripts.expand(await self.scripts(ws), "test") or []
        failing = {f.step for f in report.failures}
        chosen = [npm_scripts.Step(s.script, s.command, ";" if i else "", s.runner)
                  for i, s in enumerate(s for s in steps if s.script in failing)]
        if not chosen:
            raise ConfigurationError(
                "run_failing_tests: the test script no longer runs the scripts that failed "
                f"({', '.join(sorted(failing))}); run run_tests again"
            )
        selections: dict[str, Selection] = {}
        for script in failing:
            mine = [f for f in report.failures if f.step == script]
            files = list(dict.fromkeys(f.package for f in mine if f.package))
            # mocha's failed hook (`Suite "before all" hook for "test"`): its suite again.
            hooks = {f.name: m.group(1) for f in mine if not f.selector
                     and (m := _MOCHA_HOOK.match(f.name)) and m.group(1)}
            whole = any(f.kind == "build" or not (f.selector or f.name in hooks) for f in mine)
            names = [] if whole else list(dict.fromkeys(f.selector for f in mine if f.selector))
            suites = [] if whole else list(dict.fromkeys(hooks.values()))
            selections[script] = (files, names, suites)
        return self._composite(ws, package_manager(ws.files), chosen, selections)

    def parse_tests(self, run: ToolRun) -> tuple[int, int, int, list[TestFailure]]:
        if run.report is None:
            return 0, 0, 0, []
        if run.plan.runner == "node-test":
            return junit.parse_node(run.report, root=run.plan.root)
        if run.plan.runner == "mocha":
            return mocha.parse(run.report, root=run.plan.root)
        return jestjson.parse(run.report, root=run.plan.root)

    def parse_findings(self, run: ToolRun) -> list[Finding]:
        if run.plan.tool == "eslint":
            return eslint.parse(run.report or "", root=run.plan.root)
        findings, global_errors = tsc.parse(run.stdout, root=run.plan.root)
        if global_errors and not findings:
            raise VerifyToolFailedError(
                f"run_typecheck: tsc could not check the project at {run.plan.root}: "
                + "; ".join(global_errors),
                command=run.plan.display,
                exit_code=run.exit_code,
                stderr=run.stderr or run.stdout,
            )
        return findings

    def file_checks(self, root: str, file: str) -> list[FileCheck]:
        # Neither tool is a default of every Node project: each runs only where the project
        # says it uses it (then a missing binary is worth saying: `npm install` was not run).
        prefix = [f"{root}/node_modules/.bin"]
        return [
            # 0 formatted, 1 not formatted ([warn] FILE), 2 a file it cannot parse.
            FileCheck(name="prettier", kind="format", language="node", binary="prettier",
                      argv=["prettier", "--check", file_arg(file)], cwd=root, root=root,
                      file=file, path_prefix=prefix, when=_HAS_PRETTIER),
            # 0 clean (warnings allowed), 1 errors, 2 configuration error / crash.
            FileCheck(name="eslint", kind="lint", language="node", binary="eslint",
                      argv=["eslint", "--format", "json", file_arg(file)], cwd=root,
                      root=root, file=file, path_prefix=prefix, when=_HAS_ESLINT_CONFIG),
        ]

    def read_file_check(self, run: CheckRun) -> CheckOutcome:
        return judge(run, _read_node_check)


#: vitest's coverage providers (packages of their own, installed beside vitest).
_VITEST_COVERAGE = ("@vitest/coverage-v8", "@vitest/coverage-istanbul")
_C8_INSTALL = ("install c8 in the project (npm install -D c8) or in the sandbox (npm install -g "
               "c8)")


def _has_vitest_coverage() -> str:
    """A prelude that stops with the runner's "not found" mark when no provider is installed
    (vitest would ask on a terminal to install one, or fail its own way)."""
    tests = " || ".join(f"[ -d node_modules/{quote(p)} ]" for p in _VITEST_COVERAGE)
    return (f"{{ {tests}; }} || {{ printf '%s\\n' "
            f"{quote('sandlot-verify: not found on PATH: ' + _VITEST_COVERAGE[0])} >&2; "
            "exit 127; }")


def _under_c8(plan: ToolPlan, out: str, *, clean: bool) -> dict[str, Any]:
    """The fields that run `plan`'s command under c8, its istanbul JSON in `out`."""
    return {
        "binary": "c8", "coverage_tool": "c8", "coverage_install": _C8_INSTALL,
        "argv": ["c8", "--reporter=json", f"--reports-dir={out}",
                 f"--temp-directory={out}/raw", f"--clean={'true' if clean else 'false'}",
                 *plan.argv],
    }


def _jest_like_args(
    runner: str, report: str, files: list[str], names: list[str], command: str = ""
) -> list[str]:
    """jest's or vitest's JSON report into `report`, narrowed to `files` and `names`;
    `command` is the script's own command line, whose flags are not given twice."""
    if runner == "jest":
        extra = ["--json", f"--outputFile={report}"]
        if files:
            extra += ["--runTestsByPath", *files]
    else:
        # vitest refuses a flag given twice (`--run --run`: "Expected a single value").
        once = [] if vitest_runs_once(command) else ["--run"]
        extra = [*once, "--reporter=default", "--reporter=json",
                 f"--outputFile.json={report}", *files]
    if names:
        extra.append("--testNamePattern=" + _alternation(names))
    return extra


def vitest_runs_once(command: str) -> bool:
    """Whether a command's vitest already runs once rather than watching (`vitest run`,
    `vitest --run`, `vitest --coverage --run`), read from vitest's own arguments."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    for i, word in enumerate(words):
        if word.rsplit("/", 1)[-1] == "vitest":
            args = words[i + 1 :]
            return (bool(args) and args[0] == "run") or any(
                a == "--run" or a.startswith("--run=") for a in args
            )
    return False


def _node_options(report: str) -> str:
    """Reporters through NODE_OPTIONS reach `node --test` wherever the script puts it (under
    c8, through tsx), without changing the script's own arguments."""
    return f'NODE_OPTIONS="${{NODE_OPTIONS:+$NODE_OPTIONS }}{_reporters(report)}"; ' \
        "export NODE_OPTIONS"


def _reporters(report: str) -> str:
    """node --test's reporters: spec on stdout for people, JUnit XML in `report` for us."""
    return (
        f"--test-reporter=spec --test-reporter-destination=stdout "
        f"--test-reporter=junit --test-reporter-destination={report}"
    )


def _alternation(names: list[str], suites: tuple[str, ...] | list[str] = ()) -> str:
    """A JavaScript RegExp matching exactly these full test names, and every test of these
    suites (a test's full title is its suite's, a space, and its own)."""
    return "^(?:" + "|".join(
        [js_regex_escape(n) for n in names] + [js_regex_escape(s) + " .*" for s in suites]
    ) + ")$"


#: The project uses prettier: installed, configured, or named in package.json.
_HAS_PRETTIER = (
    "[ -e node_modules/.bin/prettier ] || "
    "{ _wf=; for _wn in .prettierrc* prettier.config.*; do [ -e \"$_wn\" ] && _wf=1; done; "
    "[ -n \"$_wf\" ]; } || grep -q '\"prettier\"' package.json"
)
#: The project has an eslint configuration: flat, legacy, or in package.json.
_HAS_ESLINT_CONFIG = (
    "{ _wf=; for _wn in eslint.config.* .eslintrc*; do [ -e \"$_wn\" ] && _wf=1; done; "
    "[ -n \"$_wf\" ]; } || grep -q '\"eslintConfig\"' package.json"
)


def _read_node_check(run: CheckRun) -> Reading:
    check = run.check
    if check.name == "prettier":
        return formatters.prettier(run.stdout, run.stderr, file=check.file, root=check.root,
                                   cwd=check.cwd)
    findings = [f if f.rule != "parse-error" else f.model_copy(update={"rule": "syntax"})
                for f in eslint.parse(run.stdout, root=check.root)]
    return findings, None, []
