"""Replaying scripts/record-coder-cli.py's cases against the fake, masked the same way.

The recorder runs a fixed sequence of `coder` calls against a real deployment and stores each
result in tests/fixtures/coder-cli/<case>.json (argv, exit code, stdout, stderr, stdout parsed
as JSON) with run-dependent values masked. `replay` runs the same sequence, in the same order,
against a fake deployment set up like the real one (tests/realcoder/harness.py: templates
`echo-single` with agent `main`, `echo-multi` with `main` and `aux`, `echo-params` with
parameters region=eu and size=s, preset `fast` setting region us, versions v1 and v2), and
masks its output with the same rules, so the two can be compared case by case.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandlot.testing import AgentSpec, ParameterSpec

from ..coder_cli_masking import LOGIN_HINT_PASS, Masker
from .support import make_coder

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "coder-cli"


#: The oldest supported release, recorded beside the pin's recordings; the fake emulates it
#: with `set_release` (scripts/coder-version-oldest names it).
OLDEST = "v2.27.0"


def recorded_cases(release: str | None = None) -> dict[str, dict[str, Any]]:
    """Every recorded case by name (empty until the recordings exist): the pinned release's,
    or `release`'s under older/."""
    where = FIXTURES / "older" / release if release else FIXTURES
    if not where.is_dir():
        return {}
    return {
        path.stem: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(where.glob("*.json"))
        if path.name != "INDEX.json"
    }


def normalize_recorded(case: dict[str, Any]) -> dict[str, Any]:
    """Apply the masks the fake side gets too (the recorder does not mask the binary path)."""
    out = dict(case)
    pattern, replacement = LOGIN_HINT_PASS
    out["stderr"] = pattern.sub(replacement, case["stderr"])
    return out


def replay(username: str, release: str | None = None) -> dict[str, dict[str, Any]]:
    """Run the recorder's sequence against a fresh fake deployment; return results by case.

    The fake runs with its default settings (the pinned, newest release's behaviour), or
    emulates `release` (`set_release`).
    """
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="sandlot-replay-") as tmp:
        root = Path(tmp)
        coder = make_coder(root / "deployment", root / "bin", username=username)
        fake = coder.deployment
        if release:
            fake.set_release(release)
        home = "~/project"  # every agent of the harness's templates works there
        fake.add_template("echo-single", agents=[AgentSpec("main", directory=home)])
        two = [AgentSpec("main", directory=home), AgentSpec("aux", directory=home)]
        fake.add_template("echo-multi", agents=two)
        fake.add_template(
            "echo-params",
            agents=[AgentSpec("main", directory=home)],
            parameters=[ParameterSpec("region", default="eu"), ParameterSpec("size", default="s")],
            presets={"fast": {"region": "us"}},
            versions=("v1", "v2"),
        )
        literal = {fake.url: "<url>", str(fake.root): "<root>", fake.token: "<session-token>"}

        def save(
            name: str, argv: list[str], proc: Any, masks: dict[str, str] | None = None
        ) -> None:
            masker = Masker({**literal, **(masks or {})}, last=[LOGIN_HINT_PASS])
            stdout = proc.stdout if isinstance(proc.stdout, str) else proc.stdout.decode()
            stderr = proc.stderr if isinstance(proc.stderr, str) else proc.stderr.decode()
            try:
                parsed = masker.value(json.loads(stdout))
            except ValueError:
                parsed = None
            results[name] = {
                "argv": ["coder", *argv],
                "exit_code": proc.returncode,
                "stdout": masker.text(stdout),
                "stderr": masker.text(stderr),
                "stdout_json": parsed,
            }

        def run(
            name: str,
            *argv: str,
            env: dict[str, str] | None = None,
            masks: dict[str, str] | None = None,
        ) -> None:
            proc = subprocess.run(
                [str(coder.exe), *argv],
                env=env or coder.env,
                input="",
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            save(name, list(argv), proc, masks)

        def handshake(name: str, target: str) -> None:
            argv = ["ssh", "--stdio", target]
            proc = subprocess.Popen(
                [str(coder.exe), *argv],
                env=coder.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(b"SSH-2.0-sandlot_recorder\r\n")
            proc.stdin.flush()
            banner = proc.stdout.readline()
            proc.stdin.close()  # then drain by hand: communicate() would flush the closed stdin
            proc.stdout.read()
            assert proc.stderr is not None
            err = proc.stderr.read()
            proc.wait(timeout=60)
            save(name, argv, subprocess.CompletedProcess(argv, proc.returncode, banner, err))

        wait: Callable[[str], object] = coder.wait_ready
        try:
            run("version-json", "version", "-o", "json")
            run("whoami-json", "whoami", "-o", "json")
            run("whoami-text", "whoami")
            run("list-empty", "list", "-o", "json")
            run("list-all-empty", "list", "--all", "-o", "json")
            run("create", "create", "rec", "-t", "echo-single", "--yes")
            wait("rec")
            run("create-existing", "create", "rec", "-t", "echo-single", "--yes")
            run("create-unknown-template", "create", "rec2", "-t", "no-such-template", "--yes")
            run("list-running", "list", "-o", "json")
            run("list-search-name", "list", "-o", "json", "--search", "owner:me name:rec")
            handshake("ssh-stdio-handshake", "rec")
            handshake("ssh-stdio-handshake-agent", "rec.main")
            handshake("ssh-stdio-unknown-agent", "rec.nope")
            run("start-running", "start", "rec", "--yes")
            run("stop", "stop", "rec", "--yes")
            run("list-stopped", "list", "-o", "json")
            run("stop-stopped", "stop", "rec", "--yes")
            run("start-stopped", "start", "rec", "--yes")
            wait("rec")
            run("create-multi", "create", "recm", "-t", "echo-multi", "--yes")
            wait("recm")
            run("list-multi-agent", "list", "-o", "json")
            handshake("ssh-stdio-multi-agent-no-agent-name", "recm")
            handshake("ssh-stdio-multi-agent-named", "recm.aux")
            run("stop-for-ssh", "stop", "rec", "--yes")
            handshake("ssh-stdio-stopped-autostart", "rec")
            wait("rec")
            run("delete", "delete", "rec", "--yes")
            run("delete-multi", "delete", "recm", "--yes")
            run("list-after-delete", "list", "-o", "json")
            params = ("-t", "echo-params", "--yes")
            values = ("--parameter", "region=eu", "--parameter", "size=s")
            run("create-params-no-preset", "create", "recp", *params, *values)
            run("create-params-no-values", "create", "recp", *params, "--preset", "none")
            run("create-params-preset-none", "create", "recp", *params, "--preset", "none", *values)
            run(
                "create-params-preset",
                "create",
                "recq",
                *params,
                "--preset",
                "fast",
                "--parameter",
                "size=m",
                "--template-version",
                "v1",
            )
            run("create-unknown-flag", "create", "recr", *params, "--use-parameter-defaults")
            for ws in ("recp", "recq"):  # cleanup, as the recorder does (not a case)
                run(f"cleanup-{ws}", "delete", ws, "--yes")
            for verb in ("start", "stop", "delete"):
                run(f"{verb}-unknown-workspace", verb, "no-such-ws", "--yes")
            handshake("ssh-stdio-unknown-workspace", "no-such-ws")
            run("start-owner-slash-name", "start", f"{username}/no-such-ws", "--yes")
            empty = root / "empty-config"
            empty.mkdir()
            logged_out = {k: v for k, v in coder.env.items() if not k.startswith("CODER_")}
            logged_out["CODER_CONFIG_DIR"] = str(empty)
            masks = {str(empty): "<empty-config-dir>"}
            run("whoami-logged-out", "whoami", "-o", "json", env=logged_out, masks=masks)
            run("list-logged-out", "list", "-o", "json", env=logged_out, masks=masks)
            bad_token = {**coder.env, "CODER_SESSION_TOKEN": "abcdefghij-abcdefghijklmnopqrstuvw"}
            run("whoami-bad-token", "whoami", "-o", "json", env=bad_token)
            bad_url = {**coder.env, "CODER_URL": "http://127.0.0.1:9"}
            closed = {"127.0.0.1:9": "127.0.0.1:<closed-port>"}
            run("whoami-bad-url", "whoami", "-o", "json", env=bad_url, masks=closed)
            run("list-bad-url", "list", "-o", "json", env=bad_url, masks=closed)
        finally:
            fake.shutdown()
    return results


def shape(value: Any) -> Any:
    """Keys in order and value types, recursively: what two JSON documents must share."""
    if isinstance(value, dict):
        return [(key, shape(item)) for key, item in value.items()]
    if isinstance(value, list):
        return ["list", *(shape(item) for item in value)]
    if value is None:
        return "null"
    return type(value).__name__


# Fields whose values (not only types) must match: the enums a backend branches on.
ENUM_KEYS = frozenset(
    {
        "status",
        "lifecycle_state",
        "transition",
        "workspace_transition",
        "automatic_updates",
        "reason",
        "startup_script_behavior",
        "operating_system",
        "healthy",
    }
)


def enum_values(value: Any, path: str = "") -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ENUM_KEYS and not isinstance(item, dict | list):
                found.append((f"{path}.{key}", item))
            found.extend(enum_values(item, f"{path}.{key}"))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(enum_values(item, f"{path}[{index}]"))
    return found
