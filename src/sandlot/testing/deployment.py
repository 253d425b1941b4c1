"""FakeCoderDeployment: create, configure, inspect and tear down a fake Coder deployment."""

from __future__ import annotations

import os
import secrets
import stat
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypedDict

from .._tree import remove_tree
from .fakecoder import bootstrap, builds, faults, model, shapes, state, transient, zygote

DEFAULT_URL = "https://coder.sandlot.invalid"
#: The releases the fake can emulate (set_release); the first is the default.
RELEASES = ("v2.30.0", "v2.27.0")
_ALNUM = string.ascii_letters + string.digits


class CoderAccess(TypedDict):
    """What `sandlot.coder` needs to reach a deployment (`FakeCoderDeployment.access()`)."""

    coder_binary: str
    coder_url: str
    session_token: str


@dataclass(frozen=True)
class AgentSpec:
    """One workspace agent of a template (a `coder_agent` resource).

    `directory` is the agent's working directory as the template declares it: relative or
    ``~/...`` paths live under the agent's home (a directory of the fake's state), absolute host
    paths are used as they are. None leaves `directory`/`expanded_directory` out of the JSON.
    `startup_seconds` is how long the lifecycle stays ``starting`` after the agent connects;
    `startup_blocks_login` makes ``coder ssh`` wait for it (``start_blocks_login`` script).
    """

    name: str = "main"
    directory: str | None = None
    startup_seconds: float = 0.0
    startup_blocks_login: bool = False
    startup_script: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    operating_system: str = "linux"
    architecture: str = ""


@dataclass(frozen=True)
class ParameterSpec:
    """A template rich parameter (`coder_parameter`).

    The fake CLI prompts for every parameter that has no value, like the real one: give a value
    with ``--parameter``, or a `default` plus ``--use-parameter-defaults``. `required` parameters
    have no usable default.
    """

    name: str
    default: str = ""
    required: bool = False
    description: str = ""
    display_name: str = ""
    type: str = "string"
    mutable: bool = True
    ephemeral: bool = False
    options: Sequence[str] = ()


def _token() -> str:
    """A session token in coder's API key format: 10-char id, dash, 22-char secret."""
    pick = secrets.choice
    return "".join(pick(_ALNUM) for _ in range(10)) + "-" + "".join(pick(_ALNUM) for _ in range(22))


class FakeCoderDeployment:
    """A fake Coder deployment stored in `root`; see the sandlot.testing module docstring."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        url: str = DEFAULT_URL,
        username: str = "testuser",
        organization: str = "coder",
    ) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._coder: Path | None = None
        if state.state_path(self.root).exists():
            with state.locked(self.root) as st:
                st["halted"] = False
            return
        self._initialise(url, username, organization)

    def _initialise(self, url: str, username: str, organization: str) -> None:
        import asyncssh

        key = asyncssh.generate_private_key("ssh-ed25519")
        key.write_private_key(self.root / "agent_host_key")
        os.chmod(self.root / "agent_host_key", 0o600)
        (self.root / "workspaces").mkdir(exist_ok=True)
        user_id = state.new_id()
        token = _token()
        st: state.State = {
            "version": state.STATE_VERSION,
            "root": str(self.root),
            "url": url,
            "runtime_dir": str(state.runtime_dir_for(self.root)),
            "provisioner_id": state.new_id(),
            "organization": {"id": state.new_id(), "name": organization},
            "users": [
                {
                    "id": user_id,
                    "username": username,
                    "email": f"{username}@example.com",
                    "roles": ["Owner"],
                }
            ],
            "sessions": {token: user_id},
            "templates": {},
            "workspaces": {},
            "faults": {},
            # The newest release sandlot is tested on (v2.30.0, tests/fixtures/coder-cli/):
            # `[]` for an empty JSON list (list-empty.json), `create --use-parameter-defaults`
            # (create-unknown-flag.json: accepted, then the preset prompt fails as without it).
            # set_release("v2.27.0") emulates the oldest supported release instead.
            "settings": {
                "empty_list_json": True,
                "accept_workspace_ids": False,
                "use_parameter_defaults": True,
                "release": "v2.30.0",
            },
            "halted": False,
        }
        state.save(self.root, st)
        self.write_config(self.config_dir)

    # --- wiring ----------------------------------------------------------------------------

    def __repr__(self) -> str:  # never shows the session token
        return f"FakeCoderDeployment(root={str(self.root)!r}, url={self.url!r})"

    def __enter__(self) -> FakeCoderDeployment:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown()

    @property
    def url(self) -> str:
        url: str = state.load(self.root)["url"]
        return url

    @property
    def token(self) -> str:
        """The first user's session token (a secret: do not log it)."""
        st = state.load(self.root)
        me = state.me(st)["id"]
        known: dict[str, str] = {**st.get("revoked_sessions", {}), **st["sessions"]}
        return next(t for t, uid in known.items() if uid == me)

    @property
    def username(self) -> str:
        name: str = state.me(state.load(self.root))["username"]
        return name

    @property
    def config_dir(self) -> Path:
        """A coder config directory (files `url` and `session`), as `coder login` writes it."""
        return self.root / "config"

    def write_config(self, config_dir: str | os.PathLike[str]) -> Path:
        """Write `url` and `session` into a config directory, as `coder login` would."""
        path = Path(config_dir)
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        (path / "url").write_text(self.url, encoding="utf-8")
        session = path / "session"
        session.write_text(self.token, encoding="utf-8")
        os.chmod(session, 0o600)
        return path

    def install(self, bin_dir: str | os.PathLike[str]) -> Path:
        """Write the `coder` executable into `bin_dir` and return its path."""
        directory = Path(bin_dir)
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / "coder"
        script = bootstrap.launcher_script(self.root)
        target.write_text(script, encoding="utf-8")
        target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        self._coder = target
        return target

    def access(self) -> CoderAccess:
        """The keyword arguments `sandlot.coder` needs to reach this deployment: the installed
        `coder` (install() first), the URL and the session token (a secret: do not log it).

        ``sandlot.coder(template="docker", on_close="delete", **coder.access())``. `env()` is
        for running the fake `coder` yourself: `sandlot.coder(env=...)` is the environment of
        the workspace's commands, not of the CLI.
        """
        return CoderAccess(
            coder_binary=str(self.coder), coder_url=self.url, session_token=self.token
        )

    @property
    def coder(self) -> Path:
        """Path of the installed `coder` (install() first)."""
        if self._coder is None:
            raise RuntimeError("call FakeCoderDeployment.install(bin_dir) first")
        return self._coder

    def env(
        self, *, logged_in: bool = True, config_dir: str | os.PathLike[str] | None = None
    ) -> dict[str, str]:
        """Environment for running the fake `coder`: its home, URL, token and config dir.

        With ``logged_in=False`` the URL and token are left out and the config directory is an
        empty one, so every command fails with coder's "You are not logged in" error. The
        config directory is always set, so the user's real ~/.config/coderv2 is never read.
        """
        env = {state.HOME_ENV: str(self.root)}
        if logged_in:
            env["CODER_URL"] = self.url
            env["CODER_SESSION_TOKEN"] = self.token
            env["CODER_CONFIG_DIR"] = str(config_dir or self.config_dir)
        else:
            empty = Path(config_dir) if config_dir else self.root / "config-logged-out"
            empty.mkdir(parents=True, exist_ok=True)
            env["CODER_CONFIG_DIR"] = str(empty)
        if self._coder is not None:
            env["PATH"] = f"{self._coder.parent}{os.pathsep}{os.environ.get('PATH', '')}"
        return env

    # --- templates and users ---------------------------------------------------------------

    def add_template(
        self,
        name: str,
        *,
        agents: Iterable[AgentSpec | str] = (AgentSpec(),),
        parameters: Iterable[ParameterSpec] = (),
        presets: Mapping[str, Mapping[str, str]] | None = None,
        versions: Sequence[str] = ("v1",),
        build_seconds: float = 0.0,
        default_ttl_ms: int | None = None,
        display_name: str = "",
    ) -> None:
        """Add (or replace) a template. The last of `versions` is the active one."""
        specs = [AgentSpec(name=a) if isinstance(a, str) else a for a in agents]
        if not specs:
            raise ValueError("a template needs at least one agent")
        if len({s.name for s in specs}) != len(specs):
            raise ValueError("agent names must be unique within a template")
        if not versions:
            raise ValueError("a template needs at least one version")
        version_ids = {v: state.new_id() for v in versions}
        with state.locked(self.root) as st:
            old = st["templates"].get(name)
            st["templates"][name] = {
                "id": old["id"] if old else state.new_id(),
                "name": name,
                "display_name": display_name,
                "icon": "",
                "file_id": state.new_id(),
                "versions": version_ids,
                "active_version_id": version_ids[versions[-1]],
                "agents": [
                    {
                        "name": s.name,
                        "directory": s.directory,
                        "startup_seconds": s.startup_seconds,
                        "startup_blocks_login": s.startup_blocks_login,
                        "startup_script": s.startup_script
                        or ("#!/bin/sh\n# fake startup script\n" if s.startup_blocks_login else ""),
                        "env": dict(s.env),
                        "operating_system": s.operating_system,
                        "architecture": s.architecture or shapes.host_architecture(),
                    }
                    for s in specs
                ],
                "parameters": [
                    {
                        "name": p.name,
                        "default": p.default,
                        "required": p.required,
                        "description": p.description,
                        "display_name": p.display_name,
                        "type": p.type,
                        "mutable": p.mutable,
                        "ephemeral": p.ephemeral,
                        "options": list(p.options),
                    }
                    for p in parameters
                ],
                "presets": {
                    preset: {"id": state.new_id(), "parameters": dict(values)}
                    for preset, values in (presets or {}).items()
                },
                "build_seconds": build_seconds,
                "default_ttl_ms": default_ttl_ms,
            }

    def add_user(self, username: str, *, roles: Sequence[str] = ()) -> str:
        """Add a user and return a session token for them (a secret)."""
        token = _token()
        with state.locked(self.root) as st:
            user_id = state.new_id()
            st["users"].append(
                {
                    "id": user_id,
                    "username": username,
                    "email": f"{username}@example.com",
                    "roles": list(roles),
                }
            )
            st["sessions"][token] = user_id
        return token

    # --- reading state back ----------------------------------------------------------------

    def workspaces(self) -> list[dict[str, Any]]:
        """Every live workspace as `coder list -a -o json` would print it (codersdk.Workspace)."""
        st = state.load(self.root)
        at = state.now()
        return [shapes.workspace(st, ws, at) for ws in state.live_workspaces(st)]

    def workspace(self, name: str) -> dict[str, Any]:
        """One workspace by name (codersdk.Workspace JSON); KeyError when there is none."""
        for ws in self.workspaces():
            if ws["name"] == name:
                return ws
        raise KeyError(f"no workspace named {name!r}")

    def agent_home(self, workspace: str, agent: str | None = None) -> Path:
        """The directory that is the agent's $HOME (its filesystem, for assertions)."""
        rec = self._agent_record(workspace, agent)
        return Path(rec["home"])

    def agent_pids(self) -> list[int]:
        """Pids of the agent processes that are alive right now."""
        st = state.load(self.root)
        return [
            rec["pid"]
            for ws in st["workspaces"].values()
            for rec in ws.get("agents", [])
            if state.process_alive(rec.get("pid"), rec.get("pid_start"))
        ]

    def recorded_agent_pids(self) -> list[int]:
        """Every agent pid the deployment ever started and still remembers (alive or not)."""
        st = state.load(self.root)
        return [
            rec["pid"]
            for ws in st["workspaces"].values()
            for rec in ws.get("agents", [])
            if rec.get("pid")
        ]

    def _agent_record(self, workspace: str, agent: str | None) -> dict[str, Any]:
        st = state.load(self.root)
        for ws in state.live_workspaces(st):
            if ws["name"] != workspace:
                continue
            for rec in ws.get("agents", []):
                if agent is None or rec["name"] == agent:
                    found: dict[str, Any] = rec
                    return found
        raise KeyError(f"no running agent {agent or ''!r} in workspace {workspace!r}")

    # --- fault knobs -----------------------------------------------------------------------

    def _set(self, key: str, value: Any, workspace: str | None) -> None:
        with state.locked(self.root) as st:
            faults.set_knob(st, workspace or faults.GLOBAL, key, value)

    def set_agent_connects_late(
        self, *, lists: int = 0, seconds: float = 0.0, workspace: str | None = None
    ) -> None:
        """Agents started from now on report `connecting` for `lists` list calls / `seconds`."""
        if lists < 0 or seconds < 0:
            raise ValueError("lists and seconds must not be negative")
        self._set("connect_delay_lists", lists or None, workspace)
        self._set("connect_delay_seconds", seconds or None, workspace)

    def set_lifecycle(self, lifecycle: str | None, *, workspace: str | None = None) -> None:
        """Force the lifecycle_state of connected agents (None restores the real one)."""
        if lifecycle is not None and lifecycle not in model.LIFECYCLE_STATES:
            raise ValueError(f"unknown lifecycle state {lifecycle!r}")
        self._set("lifecycle", lifecycle, workspace)

    def set_agent_status(self, status: str | None, *, workspace: str | None = None) -> None:
        """Force the agent status: connecting | connected | disconnected | timeout."""
        if status is not None and status not in model.AGENT_STATUSES:
            raise ValueError(f"unknown agent status {status!r}")
        self._set("agent_status", status, workspace)

    def fail_ssh_with_shutting_down(self, attempts: int, *, workspace: str | None = None) -> None:
        """The prebuild claim race: the next `attempts` `coder ssh` calls fail with
        ``agent is shutting down`` while `coder list` shows a connected, ready agent."""
        self._set("ssh_shutting_down", attempts or None, workspace)

    def fail_create_after_workspace_exists(
        self, *, times: int = 1, message: str | None = None
    ) -> None:
        """`coder create` builds the workspace, then exits 1 anyway (the build watch fails).

        `message` may use ``{url}`` and ``{build_id}``; the default mimics a lost server.
        """
        text = message or (
            'watch build: fetch: Get "{url}/api/v2/workspacebuilds/{build_id}": '
            "net/http: request canceled"
        )
        self._set("create_fails_after_exists", {"remaining": times, "message": text}, None)

    def fail_next_build(
        self,
        error: str = "terraform apply: exit status 1",
        *,
        transition: str = "start",
        times: int = 1,
        workspace: str | None = None,
    ) -> None:
        """The next `times` builds of `transition` fail (job.status failed, job.error)."""
        if transition not in ("start", "stop", "delete"):
            raise ValueError("transition must be start, stop or delete")
        with state.locked(self.root) as st:
            scope = st.setdefault("faults", {}).setdefault(workspace or faults.GLOBAL, {})
            scope.setdefault("build_failures", {})[transition] = {
                "remaining": times,
                "error": error,
            }

    def drop_connection_on(
        self, marker: str | None, *, times: int | None = None, workspace: str | None = None
    ) -> None:
        """The agent aborts the SSH connection shortly after starting a command containing
        `marker` (`times` = how many times; None = always; marker None = off)."""
        self._set("drop_marker", marker, workspace)
        self._set("drop_remaining", times, workspace)

    def fail_api_transiently(self, command: str, kind: str, *, times: int = 1) -> None:
        """The next `times` runs of `coder <command>` fail at their first API request the way
        the CLI fails while coderd is rate limiting (``rate_limited``), behind a failing proxy
        (``bad_gateway``, ``unavailable``) or restarting (``refused``)."""
        if kind not in transient.KINDS:
            raise ValueError(f"kind must be one of {transient.KINDS}, got {kind!r}")
        with state.locked(self.root) as st:
            scope = st.setdefault("faults", {}).setdefault(faults.GLOBAL, {})
            scope.setdefault(transient.KNOB, {})[command] = {"remaining": times, "kind": kind}

    def revoke_sessions(self) -> None:
        """Invalidate every session token: commands then fail with coder's 401 error."""
        with state.locked(self.root) as st:
            st["revoked_sessions"] = {**st.get("revoked_sessions", {}), **st["sessions"]}
            st["sessions"] = {}

    def restore_sessions(self) -> None:
        with state.locked(self.root) as st:
            st["sessions"].update(st.pop("revoked_sessions", {}))

    def clear_faults(self) -> None:
        with state.locked(self.root) as st:
            st["faults"] = {}

    def agent_pid(self, workspace: str, agent: str | None = None) -> int:
        """The pid of an agent process (to freeze it with SIGSTOP, as a hung VM would be)."""
        pid: int = self._agent_record(workspace, agent)["pid"]
        return pid

    def kill_agent(self, workspace: str, agent: str | None = None) -> int:
        """Kill an agent process (its status becomes `disconnected`); return its pid."""
        rec = self._agent_record(workspace, agent)
        state.terminate(rec.get("pid"), rec.get("pid_start"))
        with state.locked(self.root) as st:
            for ws in st["workspaces"].values():
                for other in ws.get("agents", []):
                    if other["id"] == rec["id"]:
                        other["died_at"] = state.now()
        pid: int = rec["pid"]
        return pid

    # --- settings (behaviours that differ between coder releases) --------------------------

    def set_empty_list_json(self, enabled: bool) -> None:
        """`coder list -o json` with no workspace prints `[]` (the default, as v2.26 and v2.27
        do); `False` emulates older releases: nothing on stdout, a hint on stderr."""
        with state.locked(self.root) as st:
            st["settings"]["empty_list_json"] = enabled

    def set_release(self, version: str) -> None:
        """Emulate one of the two releases sandlot is tested on: "v2.30.0" (the default, the
        newest) or "v2.27.0" (the oldest supported; tests/fixtures/coder-cli/older/v2.27.0/):
        no `--use-parameter-defaults`, and "No preset applied." without a newline."""
        if version not in RELEASES:
            raise ValueError(f"unknown release {version!r}; choose from {', '.join(RELEASES)}")
        with state.locked(self.root) as st:
            st["settings"]["release"] = version
            st["settings"]["use_parameter_defaults"] = version != "v2.27.0"

    def set_use_parameter_defaults(self, enabled: bool) -> None:
        """Whether `coder create --use-parameter-defaults` exists (releases after v2.27).

        On by default (v2.30.0); off, the flag is rejected like any unknown flag, as v2.27.0
        does (tests/fixtures/coder-cli/older/v2.27.0/create-unknown-flag.json).
        """
        with state.locked(self.root) as st:
            st["settings"]["use_parameter_defaults"] = enabled

    def set_accept_workspace_ids(self, enabled: bool) -> None:
        """Let start/stop/delete/ssh accept a workspace UUID (newest releases resolve ids)."""
        with state.locked(self.root) as st:
            st["settings"]["accept_workspace_ids"] = enabled

    # --- teardown --------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Kill every agent process and stop the fake from starting new ones (idempotent)."""
        if not state.state_path(self.root).exists():
            return
        with state.locked(self.root) as st:
            st["halted"] = True
            builds.stop_all_agents(st)
        zygote.stop(self.root)
        runtime = Path(state.load(self.root)["runtime_dir"])
        if runtime.parent != self.root and runtime.name.startswith("sfc-"):
            remove_tree(runtime)
