"""`python -m dogfood`: options, backend discovery, the run, the report, the exit code.

Exit codes: 0 when no scenario failed (skips are reported, not failures, unless --strict);
1 when a scenario failed; 2 for bad options.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import shutil
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from .coder_target import TEMPLATE_ENV, discover_coder
from .progress import Progress
from .report import BackendResult, Report, ScenarioResult, summary_table, write_report
from .runner import INJECT_ENV, BackendRun, parse_injections
from .scenarios import SCENARIOS
from .targets import (
    DOCKER_IMAGE_ENV,
    DOCKER_OPTIONS_ENV,
    TOOLS_PATH_ENV,
    LocalTarget,
    Settings,
    Skip,
    Target,
    discover_docker,
    merge_options,
)

BACKENDS = ("local", "docker", "coder")
REPO_ROOT = Path(__file__).resolve().parent.parent
REPORTS = REPO_ROOT / "dogfood" / "reports"
#: Scenarios a backend adds after its common ones (selectable with --scenarios too).
EXTRA = ("close", "on-close-delete", "on-close-stop", "on-close-leave", "cleanup")


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m dogfood",
        description="Smoke-run sandlot end to end on every available backend; print a summary "
        "table and write a JSON report under dogfood/reports/.",
        epilog="Exit status: 0 no scenario failed, 1 a scenario failed, 2 bad options.",
    )
    parser.add_argument(
        "--backends", default=",".join(BACKENDS), metavar="LIST",
        help=f"comma-separated backends to try (default: {','.join(BACKENDS)}); an unavailable "
        "one is skipped with the reason",
    )  # fmt: skip
    parser.add_argument(
        "--scenarios", default=None, metavar="LIST",
        help=f"run only these scenarios (default: all): {', '.join([*SCENARIOS, *EXTRA])}; "
        "`create` always runs",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true",
                        help="print the JSON report on stdout (the table then goes to stderr)")
    parser.add_argument("--report", type=Path, default=None, metavar="PATH",
                        help="where to write the JSON report (default: dogfood/reports/"
                        "dogfood-<UTC time>.json)")  # fmt: skip
    parser.add_argument("--strict", action="store_true",
                        help="count skips (a backend, a scenario, a missing tool) as failures")
    parser.add_argument("--quiet", action="store_true", help="progress lines for failures only")
    parser.add_argument(
        "--inject-failure", action="append", default=[], metavar="SCENARIO[@BACKEND]",
        help="make SCENARIO fail on purpose after its checks (a command exiting "
        f"86 in its sandbox); repeatable; also ${INJECT_ENV} (comma-separated)",
    )  # fmt: skip
    parser.add_argument(
        "--tools-path", default=os.environ.get(TOOLS_PATH_ENV), metavar="DIRS",
        help="directories (':'-separated) put first on PATH in local and fake-coder "
        "sandboxes (default: the verify tools dir and this Python's bin dir; "
        f"also ${TOOLS_PATH_ENV})",
    )  # fmt: skip
    docker = parser.add_argument_group("docker")
    docker.add_argument("--docker-image", default=None, metavar="IMAGE",
                        help=f"image for docker sandboxes (also ${DOCKER_IMAGE_ENV}); "
                        "it must already be in the engine's store")  # fmt: skip
    docker.add_argument("--docker-host", default=None, metavar="URL",
                        help="engine address, e.g. unix:///run/docker.sock (default: "
                        "$DOCKER_HOST, else the client's default)")  # fmt: skip
    docker.add_argument("--docker-options", default=None, metavar="JSON",
                        help="extra DockerOptions fields as JSON, e.g. mounts and env "
                        f"(also ${DOCKER_OPTIONS_ENV})")  # fmt: skip
    coder = parser.add_argument_group("coder")
    coder.add_argument("--fake-coder", action="store_true",
                       help="run the coder backend against the fake Coder deployment "
                       "(sandlot.testing) instead of the logged-in one")  # fmt: skip
    coder.add_argument("--coder-template", default=None, metavar="NAME",
                       help=f"template to create workspaces from (also ${TEMPLATE_ENV}; "
                       "default: sandlot)")  # fmt: skip
    coder.add_argument("--coder-preset", default=None, metavar="NAME",
                       help="template preset to create workspaces with")
    coder.add_argument("--coder-param", action="append", default=[], metavar="NAME=VALUE",
                       help="template parameter value (repeatable)")
    return parser


def _settings(args: argparse.Namespace, scratch: Path) -> Settings:
    params: dict[str, str] = {}
    for item in args.coder_param:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--coder-param {item!r}: expected NAME=VALUE")
        params[name] = value
    return Settings(
        docker_image=args.docker_image,
        docker_host=args.docker_host,
        docker_options=merge_options(args.docker_options, os.environ),
        fake_coder=args.fake_coder,
        coder_template=args.coder_template,
        coder_preset=args.coder_preset,
        coder_parameters=params,
        tools_path=args.tools_path.split(os.pathsep) if args.tools_path else [],
        scratch=scratch,
    )


async def discover(name: str, settings: Settings) -> Target | Skip:
    if name == "local":
        return LocalTarget(settings)
    if name == "docker":
        return await discover_docker(settings)
    return await discover_coder(settings)


async def _tool_version(argv: list[str]) -> str:
    if shutil.which(argv[0]) is None:
        return ""
    try:
        with anyio.fail_after(20):
            done = await anyio.run_process(argv, check=False)
    except (OSError, TimeoutError):
        return ""
    text = (done.stdout or done.stderr).decode(errors="replace").strip()
    return text.splitlines()[0] if text else ""


async def versions() -> dict[str, Any]:
    try:
        sandlot_version = importlib.metadata.version("sandlot")
    except importlib.metadata.PackageNotFoundError:
        sandlot_version = "unknown"
    tools: dict[str, str] = {}
    for name, argv in {
        "go": ["go", "version"], "node": ["node", "--version"], "cargo": ["cargo", "--version"],
        "docker": ["docker", "--version"], "coder": ["coder", "version"],
    }.items():  # fmt: skip
        tools[name] = await _tool_version(argv)
    return {
        "sandlot": sandlot_version,
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "tools": tools,
    }


def check_options(args: argparse.Namespace) -> None:
    """Reject bad options before anything runs (argparse turns ValueError into exit 2)."""
    unknown = sorted(set(_csv(args.backends)) - set(BACKENDS))
    if unknown or not _csv(args.backends):
        raise ValueError(f"unknown backends {unknown}; choose from {', '.join(BACKENDS)}")
    if args.scenarios is not None:
        bad = sorted(set(_csv(args.scenarios)) - {*SCENARIOS, *EXTRA, "create"})
        if bad or not _csv(args.scenarios):
            raise ValueError(
                f"unknown scenarios {bad}; choose from {', '.join([*SCENARIOS, *EXTRA])}"
            )
    _settings(args, Path(tempfile.gettempdir()))


async def run(args: argparse.Namespace, progress: Progress) -> Report:
    wanted = _csv(args.backends)
    selected = set(_csv(args.scenarios)) if args.scenarios else None
    injections = parse_injections([*args.inject_failure, os.environ.get(INJECT_ENV, "")])
    started = datetime.now(UTC)
    report = Report(started_at=started.isoformat(timespec="seconds"))
    report.versions = await versions()
    report.options = {
        "backends": wanted, "scenarios": sorted(selected) if selected else "all",
        "fake_coder": args.fake_coder, "strict": args.strict,
        "inject_failure": [f"{i.scenario}@{i.backend or '*'}" for i in injections],
    }  # fmt: skip
    progress.info(
        f"sandlot {report.versions['sandlot']} on Python {report.versions['python']}; "
        f"backends to try: {', '.join(wanted)}"
    )
    clock = anyio.current_time()
    with tempfile.TemporaryDirectory(prefix="dogfood-") as tmp:
        settings = _settings(args, Path(tmp))
        for name in wanted:
            try:
                found = await discover(name, settings)
            except Exception as exc:  # a bug or a broken setup: a failure, not a skip
                error = f"{type(exc).__name__}: {exc}"
                progress.scenario_end(name, "discover", "failed", 0.0, error)
                report.scenarios.append(ScenarioResult(name, "discover", "failed", 0.0, error))
                report.backends.append(BackendResult(name, "skipped", f"discovery failed: {error}"))
                continue
            if isinstance(found, Skip):
                progress.backend_skipped(name, found.reason)
                report.backends.append(BackendResult(name, "skipped", found.reason))
                continue
            run_ = BackendRun(
                found, progress=progress, repo_root=REPO_ROOT, selected=selected,
                injections=injections, strict=args.strict,
            )  # fmt: skip
            report.scenarios.extend(await run_.run())
            report.backends.append(BackendResult(name, "ran", details=found.details))
    report.duration = anyio.current_time() - clock
    report.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
    return report


def exit_code(report: Report, *, strict: bool) -> int:
    if report.failed:
        return 1
    if strict and any(b.status == "skipped" for b in report.backends):
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_options(args)
    except ValueError as exc:  # json.JSONDecodeError is one too
        parser.error(str(exc))
    progress = Progress(quiet=args.quiet)
    report = anyio.run(run, args, progress)
    path = args.report or REPORTS / f"dogfood-{report.started_at.replace(':', '')}.json"
    write_report(report, path)
    table = summary_table(report)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
        print(table, file=sys.stderr)
    else:
        print(table)
    print(f"report: {path}", file=sys.stderr)
    return exit_code(report, strict=args.strict)
