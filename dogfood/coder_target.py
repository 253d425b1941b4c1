"""The coder backend in a smoke run: a real deployment (`coder whoami` works) or the fake one.

One workspace per `on_close` value, each checked afterwards through the `coder` CLI
(`coder list -o json`), never through sandlot itself:

* the common scenarios run in the `delete` workspace; `on-close-delete` then checks it is gone;
* `on-close-stop`: a workspace closed with `stop` is listed as stopped (then deleted);
* `on-close-leave`: a workspace closed with `leave` still runs, and a marker file written through
  the first sandbox is read back through a SECOND connection (a new sandbox attached to the same
  workspace, `on_close="delete"`), which then deletes it.

Whatever a run created and still exists at the end is deleted (`coder delete -y`), so an
interrupted or failed run leaves no workspace behind; the report says when that was needed.

The real deployment needs a template: `--coder-template` (or $SANDLOT_DOGFOOD_CODER_TEMPLATE,
default `sandlot`, the name providers/coder/README.md pushes the template under).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio

from sandlot import IsolatedSandboxProvider, Sandbox

from .context import CheckFailed, Context, expect
from .targets import Settings, Skip, Step, Target, host_env

TEMPLATE_ENV = "SANDLOT_DOGFOOD_CODER_TEMPLATE"
DEFAULT_TEMPLATE = "sandlot"
#: How long a workspace may take to reach the state `on_close` asked for, once closed.
STATE_WAIT = 120.0


def workspace_state(workspaces: list[dict[str, Any]], name: str) -> str:
    """`absent`, or `<transition>/<status>` of the workspace's latest build (codersdk JSON)."""
    for ws in workspaces:
        if ws.get("name") == name:
            build = ws.get("latest_build") or {}
            return f"{build.get('transition', '?')}/{build.get('status', '?')}"
    return "absent"


#: What each on_close value must leave, as `workspace_state` spells it.
EXPECTED = {"delete": {"absent", "delete/deleted"}, "stop": {"stop/stopped"},
            "leave": {"start/running"}}  # fmt: skip


class CoderCLI:
    """The `coder` CLI as the checks use it: the same binary and login the provider uses."""

    def __init__(self, binary: str, env: dict[str, str]) -> None:
        self.binary = binary
        self.env = env

    async def run(self, *args: str, timeout: float = 300) -> tuple[int, str, str]:
        with anyio.fail_after(timeout):
            done = await anyio.run_process(
                [self.binary, *args], env=self.env, check=False, stdin=subprocess.DEVNULL
            )
        return done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(
            errors="replace"
        )

    async def json(self, *args: str) -> Any:
        code, out, err = await self.run(*args, "-o", "json", timeout=120)
        if code != 0:
            raise CheckFailed(f"`coder {' '.join(args)} -o json` failed ({code}): {err.strip()}")
        # Older releases print nothing (not `[]`) when a list is empty.
        return json.loads(out) if out.strip() else []

    async def state(self, name: str) -> str:
        return workspace_state(await self.json("list"), name)

    async def wait_state(self, name: str, wanted: set[str]) -> str:
        """Poll `coder list` until the workspace is in one of `wanted` (or time runs out)."""
        seen = await self.state(name)
        with anyio.move_on_after(STATE_WAIT):
            while seen not in wanted:
                await anyio.sleep(1.0)
                seen = await self.state(name)
        return seen

    async def delete(self, name: str) -> None:
        code, _, err = await self.run("delete", name, "--yes")
        if code != 0:
            raise CheckFailed(f"`coder delete {name} --yes` failed ({code}): {err.strip()}")


_UNKNOWN_FLAG = re.compile(r"unknown (?:shorthand )?flag")


def _whoami_text_as_json(text: str) -> str:
    """The plain `coder whoami` answer, as the JSON `-o json` would give (or the text itself)."""
    models = importlib.import_module("sandlot.backends.coder.models")
    try:
        me = models.parse_whoami_text(text)
    except models.ParseError:
        return text
    return json.dumps({"url": me.url, "username": me.username})


def _first_error(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("error:"):
            return line
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _host_toolchain_env(settings: Settings) -> dict[str, str]:
    """For the fake's agents (host processes with their own $HOME): this host's toolchains.

    A real template installs its toolchains in the image (providers/coder/); the fake's agent
    runs on this machine, so its template points at what is installed here.
    """
    env = host_env(settings)
    home = Path.home()
    for var, default in (("PYENV_ROOT", home / ".pyenv"), ("RUSTUP_HOME", home / ".rustup"),
                         ("CARGO_HOME", home / ".cargo"), ("GOPATH", home / "go"),
                         ("GOCACHE", home / ".cache" / "go-build")):  # fmt: skip
        value = os.environ.get(var) or (str(default) if default.is_dir() else "")
        if value:
            env[var] = value
    env["GOTOOLCHAIN"] = "local"
    return env


class CoderTarget(Target):
    name = "coder"
    needs_cleanup = True

    def __init__(
        self, settings: Settings, cli: CoderCLI, connection: dict[str, Any], fake: Any = None
    ) -> None:
        super().__init__()
        self.settings = settings
        self.cli = cli
        self.connection = connection
        self.fake = fake
        self.backend = importlib.import_module("sandlot.backends.coder")
        self.template = settings.coder_template or os.environ.get(TEMPLATE_ENV) or DEFAULT_TEMPLATE
        self.run_id = secrets.token_hex(4)
        self.created: list[str] = []
        self.main: str | None = None

    def describe(self) -> str:
        where = "the fake Coder deployment" if self.fake is not None else self.details["url"]
        return f"{where}, template {self.template!r}"

    def _name(self, on_close: str) -> str:
        return f"sandlot-df-{self.run_id}-{on_close}"

    def _create(self, on_close: str) -> IsolatedSandboxProvider:
        name = self._name(on_close)
        self.created.append(name)
        kwargs: dict[str, Any] = {**self.connection, "on_close": on_close,
                                  "template": self.template, "workspace_name": name}  # fmt: skip
        if self.details.get("use_parameter_defaults"):
            kwargs["use_parameter_defaults"] = True
        if self.settings.coder_preset:
            kwargs["preset"] = self.settings.coder_preset
        if self.settings.coder_parameters:
            kwargs["parameters"] = dict(self.settings.coder_parameters)
        provider: IsolatedSandboxProvider = self.backend.coder(**kwargs)
        return provider

    def _attach(self, name: str, on_close: str) -> IsolatedSandboxProvider:
        provider: IsolatedSandboxProvider = self.backend.coder(
            **self.connection, workspace=name, on_close=on_close
        )
        return provider

    def provider(self) -> IsolatedSandboxProvider:
        self.main = self._name("delete")
        return self._create("delete")

    @property
    def close_scenario(self) -> str:
        return "on-close-delete"

    async def check_closed(self, ctx: Context, sandbox: Sandbox) -> None:
        await super().check_closed(ctx, sandbox)
        assert self.main is not None
        seen = await self.cli.wait_state(self.main, EXPECTED["delete"])
        ctx.details["states"] = {"delete": seen}
        expect(
            seen in EXPECTED["delete"],
            f"{self.main}: `coder list` shows {seen!r} after close with on_close=delete, "
            "expected it gone",
        )
        ctx.summary(f"{self.main}: gone from `coder list`")

    def extra_scenarios(self) -> dict[str, Step]:
        return {"on-close-stop": self.on_close_stop, "on-close-leave": self.on_close_leave}

    async def on_close_stop(self, ctx: Context) -> None:
        name = self._name("stop")
        async with self._create("stop").session() as sandbox:
            ctx.step(f"workspace {name} ready")
            await sandbox.exec("echo alive", check=True, timeout=120)
        seen = await self.cli.wait_state(name, EXPECTED["stop"])
        ctx.details["states"] = {"after_close": seen}
        expect(seen in EXPECTED["stop"],
               f"{name}: `coder list` shows {seen!r} after close with on_close=stop")  # fmt: skip
        ctx.step(f"{name} is {seen}; deleting it")
        await self.cli.delete(name)
        ctx.details["states"]["after_cleanup"] = await self.cli.wait_state(name, {"absent"})
        ctx.summary(f"{name}: {seen} after close, then deleted")

    async def on_close_leave(self, ctx: Context) -> None:
        name = self._name("leave")
        token = secrets.token_hex(16)
        async with self._create("leave").session() as first:
            marker = f"{first.worktree}/dogfood-marker"
            ctx.step(f"workspace {name} ready; writing {marker}")
            await first.exec(["sh", "-c", 'printf %s "$1" > "$2"', "sh", token, marker],
                             check=True, timeout=120)  # fmt: skip
        seen = await self.cli.wait_state(name, EXPECTED["leave"])
        ctx.details["states"] = {"after_close": seen}
        expect(seen in EXPECTED["leave"],
               f"{name}: `coder list` shows {seen!r} after close with on_close=leave")  # fmt: skip
        ctx.step(f"{name} still {seen}; reading the marker through a second connection")
        async with self._attach(name, "delete").session() as second:
            read = await second.exec(["cat", marker], timeout=120)
        expect(
            read.ok and read.stdout == token,
            f"the marker read through the second connection is {read.stdout!r} "
            f"(exit {read.exit_code}: {read.stderr.strip()!r}), expected the token written",
        )
        gone = await self.cli.wait_state(name, EXPECTED["delete"])
        ctx.details["states"]["after_second_close"] = gone
        expect(
            gone in EXPECTED["delete"],
            f"{name}: attached with on_close=delete, yet `coder list` shows {gone!r}",
        )
        ctx.details["marker"] = marker
        ctx.summary(f"{name}: {seen} after close, marker read via a 2nd connection, then deleted")

    async def aclose(self) -> None:
        """Delete whatever this run created and still exists; shut the fake deployment down."""
        leftovers: list[str] = []
        try:
            workspaces = await self.cli.json("list")
            for name in self.created:
                if workspace_state(workspaces, name) not in EXPECTED["delete"]:
                    leftovers.append(name)
                    await self.cli.delete(name)
        finally:
            self.details["cleaned_up"] = leftovers
            if self.fake is not None:
                await anyio.to_thread.run_sync(self.fake.shutdown)


async def discover_coder(settings: Settings) -> CoderTarget | Skip:
    try:
        importlib.import_module("sandlot.backends.coder")
    except ImportError:
        return Skip("coder", "the coder backend (sandlot.backends.coder) is not in this build")
    if settings.fake_coder:
        return await _fake(settings)
    binary = shutil.which("coder")
    if binary is None:
        return Skip("coder", "the coder CLI is not on PATH (install it and `coder login`, or "
                             "pass --fake-coder to use the fake deployment)")  # fmt: skip
    cli = CoderCLI(binary, dict(os.environ))
    return await _connect(settings, cli, {"coder_binary": binary}, fake=None)


async def _connect(
    settings: Settings, cli: CoderCLI, connection: dict[str, Any], fake: Any
) -> CoderTarget | Skip:
    try:
        code, out, err = await cli.run("whoami", "-o", "json", timeout=60)
    except TimeoutError:
        return Skip("coder", "`coder whoami` did not answer within 60s (deployment unreachable?)")
    if code != 0 and _UNKNOWN_FLAG.search(err):
        # Releases before `whoami -o json` (v2.26) reject the flag: read the text form.
        code, out, err = await cli.run("whoami", timeout=60)
        if code == 0:
            out = _whoami_text_as_json(out)
    if code != 0:
        return Skip("coder", f"`coder whoami` failed: {_first_error(err)} (log in with "
                             "`coder login <url>`, or pass --fake-coder)")  # fmt: skip
    try:
        me = json.loads(out)
        me = me[0] if isinstance(me, list) and me else me
        me.get("username")
    except (ValueError, AttributeError):
        return Skip("coder", f"`coder whoami` printed no user this can read: {out[:200]!r}")
    target = CoderTarget(settings, cli, connection, fake)
    target.details.update(
        url=me.get("url", ""), user=me.get("username", ""), fake=fake is not None,
        template=target.template,
    )  # fmt: skip
    # Accept template defaults for parameters not given, where the CLI can (v2.26 cannot).
    code, out, _ = await cli.run("create", "--help", timeout=60)
    target.details["use_parameter_defaults"] = code == 0 and "--use-parameter-defaults" in out
    code, out, _ = await cli.run("version", "-o", "json", timeout=60)
    try:
        target.details["coder_version"] = json.loads(out).get("version", "") if code == 0 else ""
    except (ValueError, AttributeError):
        target.details["coder_version"] = ""
    return target


async def _fake(settings: Settings) -> CoderTarget | Skip:
    try:
        testing = importlib.import_module("sandlot.testing")
    except ImportError:
        return Skip("coder", "--fake-coder: the fake Coder deployment (sandlot.testing) is not "
                             "in this build")  # fmt: skip
    root = settings.scratch / "fake-coder"
    fake = testing.FakeCoderDeployment(root / "deployment")
    try:
        agent = testing.AgentSpec(
            "main", directory="project", env=_host_toolchain_env(settings)
        )
        template = settings.coder_template or os.environ.get(TEMPLATE_ENV) or DEFAULT_TEMPLATE
        fake.add_template(template, agents=[agent])
        exe = str(fake.install(root / "bin"))
        cli = CoderCLI(exe, {**os.environ, **fake.env()})
        connection = {"coder_binary": exe, "coder_url": fake.url, "session_token": fake.token}
        found = await _connect(settings, cli, connection, fake)
    except BaseException:
        await anyio.to_thread.run_sync(fake.shutdown)
        raise
    if isinstance(found, Skip):
        await anyio.to_thread.run_sync(fake.shutdown)
    return found
