#!/usr/bin/env python3
"""Record what the REAL `coder` CLI prints for every command sandlot uses.

Starts a real deployment (tests/realcoder/harness.py; needs the binary from
scripts/build-coder.sh), runs each case, and writes one JSON file per case into
tests/fixtures/coder-cli/: argv, exit code, stdout, stderr (and stdout parsed as
JSON where it is JSON), with what varies from run to run masked:

  UUIDs -> <uuid:N> (N numbers distinct ids in order of appearance, per case)
  RFC 3339 times -> <time>; the CLI's "Jan _2 15:04:05" stamps -> <stamp>
  build-log times -> <time>; the deployment URL -> <url>; temp paths -> <root>
  (an agent's $HOME -> <agent-home>); durations -> <duration>
  numbers under "latency" -> 0

The fake `coder` CLI is compared against these files, so re-run this script
whenever the pinned release (scripts/coder-version) changes:

    .venv/bin/python scripts/record-coder-cli.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.coder_cli_masking import (  # noqa: E402
    AGENT_HOME_PASS,
    LATENCY_PASS,
    LOGTIME_PASS,
    Masker,
)
from tests.realcoder.harness import RealCoder, pinned_version  # noqa: E402
from tests.realcoder.procs import free_port  # noqa: E402


def masker(deployment: RealCoder, extra: dict[str, str]) -> Masker:
    """The masks of one case: the deployment's own values, then the recorder's extra passes."""
    literal = {
        deployment.url: "<url>",
        str(deployment.root): "<root>",
        # The CLI names itself by path in hints ("Try logging in using '<path> login'").
        str(deployment.binary): "coder",
        **extra,
    }
    if deployment.session_token:
        literal[deployment.session_token] = "<session-token>"
    return Masker(literal, extra=[LATENCY_PASS, AGENT_HOME_PASS, LOGTIME_PASS])


class Recorder:
    def __init__(self, deployment: RealCoder, out: Path) -> None:
        self.d = deployment
        self.out = out
        self.written: list[str] = []

    def save(
        self,
        name: str,
        argv: list[str],
        env_names: list[str],
        result: dict[str, Any],
        masker: Masker,
        note: str,
    ) -> None:
        stdout = masker.text(result["stdout"])
        record: dict[str, Any] = {
            "name": name,
            "coder_version": pinned_version(),
            "argv": ["coder", *argv],
            "env": sorted(env_names),
            "note": note,
            "exit_code": result["exit_code"],
            "stdout": stdout,
            "stderr": masker.text(result["stderr"]),
        }
        try:
            record["stdout_json"] = masker.value(json.loads(result["stdout"]))
        except ValueError:
            record["stdout_json"] = None
        path = self.out / f"{name}.json"
        path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
        self.written.append(path.name)
        print(f"recorded {name}: exit {record['exit_code']}", file=sys.stderr)

    def run(
        self,
        name: str,
        *argv: str,
        note: str,
        env: dict[str, str] | None = None,
        extra_masks: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        env = env if env is not None else self.d.cli_env()
        out = self.d.coder(*argv, env=env)
        result = {"exit_code": out.returncode, "stdout": out.stdout, "stderr": out.stderr}
        self.save(
            name,
            list(argv),
            [k for k in env if k.startswith("CODER_")],
            result,
            masker(self.d, extra_masks or {}),
            note,
        )
        return result

    def ssh_handshake(
        self, name: str, target: str, *, note: str, env: dict[str, str] | None = None
    ) -> None:
        """`coder ssh --stdio`: read the server's SSH identification line, then hang up."""
        env = env if env is not None else self.d.cli_env()
        argv = ["ssh", "--stdio", target]
        proc = subprocess.Popen(
            [str(self.d.binary), *argv],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stdin is not None
        # Our own identification first, as an SSH client sends it.
        proc.stdin.write(b"SSH-2.0-sandlot_recorder\r\n")
        proc.stdin.flush()
        banner = proc.stdout.readline()  # b"" when it fails before connecting
        proc.stdin.close()
        proc.stdin = None  # so communicate() does not flush the closed pipe
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        result = {
            "exit_code": proc.returncode,
            "stdout": banner.decode(errors="replace"),
            "stderr": err.decode(errors="replace"),
        }
        self.save(
            name, argv, [k for k in env if k.startswith("CODER_")], result, masker(self.d, {}), note
        )


def record_all(d: RealCoder, out: Path) -> list[str]:
    r = Recorder(d, out)
    single, multi = d.template_single, d.template_multi

    r.run("version-json", "version", "-o", "json", note="coder version -o json")
    r.run("whoami-json", "whoami", "-o", "json", note="logged in via env")
    r.run("whoami-text", "whoami", note="logged in via env, default text format")
    r.run("list-empty", "list", "-o", "json", note="no workspaces yet")
    r.run("list-all-empty", "list", "--all", "-o", "json", note="no workspaces yet, --all")

    r.run(
        "create",
        "create",
        "rec",
        "-t",
        single,
        "--yes",
        note="create from the one-agent template; waits for the build only",
    )
    d.wait_for_agents("rec")
    r.run(
        "create-existing",
        "create",
        "rec",
        "-t",
        single,
        "--yes",
        note="a workspace of that name exists",
    )
    r.run(
        "create-unknown-template",
        "create",
        "rec2",
        "-t",
        "no-such-template",
        "--yes",
        note="template does not exist",
    )
    r.run("list-running", "list", "-o", "json", note="one running workspace, agent ready")
    r.run(
        "list-search-name",
        "list",
        "-o",
        "json",
        "--search",
        "owner:me name:rec",
        note="--search narrows the list",
    )
    r.ssh_handshake("ssh-stdio-handshake", "rec", note="server identification line on stdout")
    r.ssh_handshake("ssh-stdio-handshake-agent", "rec.main", note="workspace.agent target")
    r.ssh_handshake("ssh-stdio-unknown-agent", "rec.nope", note="agent name that does not exist")
    r.run("start-running", "start", "rec", "--yes", note="start a running workspace")

    r.run("stop", "stop", "rec", "--yes", note="stop a running workspace")
    r.run("list-stopped", "list", "-o", "json", note="one stopped workspace")
    r.run("stop-stopped", "stop", "rec", "--yes", note="stop a stopped workspace")
    r.run("start-stopped", "start", "rec", "--yes", note="start a stopped workspace")
    d.wait_for_agents("rec")

    r.run("create-multi", "create", "recm", "-t", multi, "--yes", note="two-agent template")
    d.wait_for_agents("recm")
    r.run(
        "list-multi-agent",
        "list",
        "-o",
        "json",
        note="two running workspaces, one of them with two agents",
    )
    r.ssh_handshake(
        "ssh-stdio-multi-agent-no-agent-name",
        "recm",
        note="workspace with two agents, no agent named",
    )
    r.ssh_handshake("ssh-stdio-multi-agent-named", "recm.aux", note="second agent by name")

    r.run("stop-for-ssh", "stop", "rec", "--yes", note="stop, so ssh has to start it")
    r.ssh_handshake(
        "ssh-stdio-stopped-autostart", "rec", note="ssh to a stopped workspace starts it first"
    )
    d.wait_for_agents("rec")

    r.run("delete", "delete", "rec", "--yes", note="delete a running workspace")
    r.run("delete-multi", "delete", "recm", "--yes", note="delete the two-agent workspace")
    r.run("list-after-delete", "list", "-o", "json", note="all deleted again")

    params = d.template_params  # parameters region, size (defaults eu, s); preset "fast"
    r.run(
        "create-params-no-preset",
        "create",
        "recp",
        "-t",
        params,
        "--yes",
        "--parameter",
        "region=eu",
        "--parameter",
        "size=s",
        note="template with presets, no --preset given, no terminal",
    )
    r.run(
        "create-params-no-values",
        "create",
        "recp",
        "-t",
        params,
        "--yes",
        "--preset",
        "none",
        note="parameters with defaults but no values, no terminal",
    )
    r.run(
        "create-params-preset-none",
        "create",
        "recp",
        "-t",
        params,
        "--yes",
        "--preset",
        "none",
        "--parameter",
        "region=eu",
        "--parameter",
        "size=s",
        note="--preset none and every parameter given",
    )
    r.run(
        "create-params-preset",
        "create",
        "recq",
        "-t",
        params,
        "--yes",
        "--preset",
        "fast",
        "--parameter",
        "size=m",
        "--template-version",
        "v1",
        note="a preset, a parameter and a named template version",
    )
    r.run(
        "create-unknown-flag",
        "create",
        "recr",
        "-t",
        params,
        "--yes",
        "--use-parameter-defaults",
        note="a flag this release does not have",
    )
    for ws in ("recp", "recq"):
        d.coder("delete", ws, "--yes")

    for verb in ("start", "stop", "delete"):
        r.run(
            f"{verb}-unknown-workspace",
            verb,
            "no-such-ws",
            "--yes",
            note=f"{verb} a workspace that does not exist",
        )
    r.ssh_handshake("ssh-stdio-unknown-workspace", "no-such-ws", note="no such workspace")
    r.run(
        "start-owner-slash-name",
        "start",
        f"{d.username}/no-such-ws",
        "--yes",
        note="owner/name form of an unknown workspace",
    )

    with tempfile.TemporaryDirectory() as empty:
        logged_out = {k: v for k, v in d.cli_env().items() if not k.startswith("CODER_")}
        logged_out["CODER_CONFIG_DIR"] = empty
        masks = {empty: "<empty-config-dir>"}
        r.run(
            "whoami-logged-out",
            "whoami",
            "-o",
            "json",
            env=logged_out,
            extra_masks=masks,
            note="empty config dir, no CODER_URL/CODER_SESSION_TOKEN",
        )
        r.run(
            "list-logged-out",
            "list",
            "-o",
            "json",
            env=logged_out,
            extra_masks=masks,
            note="empty config dir, no CODER_URL/CODER_SESSION_TOKEN",
        )

        bad_token = {**d.cli_env(), "CODER_SESSION_TOKEN": "abcdefghij-abcdefghijklmnopqrstuvw"}
        r.run(
            "whoami-bad-token",
            "whoami",
            "-o",
            "json",
            env=bad_token,
            note="a session token the server does not know (401)",
        )

        port = free_port()  # nothing listens there
        bad_url = {**d.cli_env(), "CODER_URL": f"http://127.0.0.1:{port}"}
        r.run(
            "whoami-bad-url",
            "whoami",
            "-o",
            "json",
            env=bad_url,
            extra_masks={f"127.0.0.1:{port}": "127.0.0.1:<closed-port>"},
            note="URL where no server listens",
        )
        r.run(
            "list-bad-url",
            "list",
            "-o",
            "json",
            env=bad_url,
            extra_masks={f"127.0.0.1:{port}": "127.0.0.1:<closed-port>"},
            note="URL where no server listens",
        )
    return r.written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "fixtures" / "coder-cli")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with RealCoder() as deployment:
        written = record_all(deployment, args.out)
        errors = deployment.agent_errors()
    (args.out / "INDEX.json").write_text(
        json.dumps(
            {
                "coder_version": pinned_version(),
                "cases": sorted(n.removesuffix(".json") for n in written),
            },
            indent=2,
        )
        + "\n"
    )
    print(f"{len(written)} cases in {time.monotonic() - t0:.0f}s -> {args.out}", file=sys.stderr)
    if errors:
        print("agent supervisor reported:\n" + "\n".join(errors), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
