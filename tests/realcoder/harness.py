"""A real Coder deployment on this machine, for tests: database, server, templates, agents.

    with RealCoder() as coder:          # or RealCoder(binary=Path(...))
        coder.coder("create", "ws", "-t", coder.template_single, "--yes")
        env = coder.cli_env()            # CODER_URL, CODER_SESSION_TOKEN, CODER_CONFIG_DIR

Start: PostgreSQL (Debian's, on a private unix socket) -> `coder server` on a free
loopback port with only the echo provisioner -> first user created by `coder login`
into a private config dir -> two echo templates pushed (one agent, two agents) ->
an agent supervisor that runs a real `coder agent` per started workspace.
Stop (also when the body raised): agents, server, database, then the temp dir.

Nothing here touches the user's ~/.config/coderv2, ~/.ssh or any CODER_* variable
of the calling environment: every child gets an environment built from scratch.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, TypedDict

from sandlot._tree import remove_tree
from sandlot.testing.ports import listen_port

from .agents import AgentSupervisor
from .echo_template import EchoParameter, EchoTemplate, compile_proto, tar_directory, write_template
from .postgres import Postgres
from .procs import Service, descendants, run, wait_until

REPO = Path(__file__).resolve().parents[2]
VERSION_FILE = REPO / "scripts" / "coder-version"
BUILD_SCRIPT = REPO / "scripts" / "build-coder.sh"

TEMPLATE_SINGLE = "echo-single"  # one agent "main", directory ~/project
TEMPLATE_MULTI = "echo-multi"  # agents "main" and "aux"
TEMPLATE_PLAIN = "echo-plain"  # one agent "main" without a directory
TEMPLATE_PARAMS = "echo-params"  # region=eu, size=s; preset "fast" (region us); v1, v2
PARAMS_VERSIONS = ("v1", "v2")
DEFAULT_TEMPLATES = (
    EchoTemplate(name=TEMPLATE_SINGLE, agents=("main",)),
    EchoTemplate(name=TEMPLATE_MULTI, agents=("main", "aux")),
    EchoTemplate(name=TEMPLATE_PLAIN, agents=("main",), directory=""),
    EchoTemplate(
        name=TEMPLATE_PARAMS,
        agents=("main",),
        parameters=(EchoParameter("region", "eu"), EchoParameter("size", "s")),
        presets=(("fast", (("region", "us"),)),),
        versions=PARAMS_VERSIONS,
    ),
)


def pinned_version() -> str:
    """The coder release to run: $SANDLOT_CODER_VERSION, else the pin (scripts/coder-version)."""
    return os.environ.get("SANDLOT_CODER_VERSION") or VERSION_FILE.read_text().strip()


def cache_dir(version: str | None = None) -> Path:
    """Where scripts/build-coder.sh caches a release: binary and its .proto."""
    root = os.environ.get("SANDLOT_CODER_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "sandlot", "coder"
    )
    return Path(root) / (version or pinned_version())


def cached_binary(version: str | None = None) -> Path | None:
    """The cached real `coder` binary, or None when it has not been built yet.

    $SANDLOT_CODER_BINARY wins when set (then the .proto must be in the cache too,
    or $SANDLOT_CODER_PROTO_ROOT must point at a coder source tree).
    """
    override = os.environ.get("SANDLOT_CODER_BINARY")
    path = Path(override) if override else cache_dir(version) / "coder"
    return path if path.is_file() and os.access(path, os.X_OK) else None


def proto_root(version: str | None = None) -> Path:
    override = os.environ.get("SANDLOT_CODER_PROTO_ROOT")
    return Path(override) if override else cache_dir(version) / "proto"


ROOT_PREFIX = "sandlot-realcoder-"


def _sweep_stale_roots() -> None:
    """Remove temp dirs of deployments whose test process was killed (-9).

    Their processes are already gone (--pdeathsig); only the directory stays.
    """
    for pid_file in Path(tempfile.gettempdir()).glob(f"{ROOT_PREFIX}*/owner.pid"):
        try:
            pid = int(pid_file.read_text())
        except (OSError, ValueError):
            continue
        if not Path(f"/proc/{pid}").exists():
            remove_tree(pid_file.parent)


def _base_env(home: Path) -> dict[str, str]:
    """A clean environment: no CODER_* from the caller, a private $HOME."""
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "TZ": "UTC",
    }


class CoderAccess(TypedDict):
    """The `sandlot.coder` arguments that reach a deployment: its CLI, URL and token."""

    coder_binary: str
    coder_url: str
    session_token: str


class RealCoder:
    """A context manager that runs a whole Coder deployment and tears it down."""

    def __init__(
        self,
        binary: Path | None = None,
        *,
        templates: Sequence[EchoTemplate] = DEFAULT_TEMPLATES,
        username: str = "sandlot",
        server_timeout: float = 180.0,
        server_env: Mapping[str, str] | None = None,
        local_agents: bool = True,
    ) -> None:
        found = binary or cached_binary()
        if found is None:
            raise FileNotFoundError(
                f"no coder binary: run {BUILD_SCRIPT} (builds {pinned_version()} into "
                f"{cache_dir()}) or set SANDLOT_CODER_BINARY"
            )
        self.binary = found
        self.templates = {t.name: t for t in templates}
        self.template_single = TEMPLATE_SINGLE
        self.template_multi = TEMPLATE_MULTI
        self.template_plain = TEMPLATE_PLAIN
        self.template_params = TEMPLATE_PARAMS
        self.params_versions = PARAMS_VERSIONS
        self.organization = "coder"  # the default organization's name
        self.username = username
        self.email = f"{username}@example.com"
        self.url = ""
        self.session_token = ""
        self.timings: dict[str, float] = {}
        self._server_timeout = server_timeout
        # Added to (and overriding) the server's environment: tests/template runs the
        # Terraform provisioner this way, with its CLI config and PATH.
        self._server_env_extra = dict(server_env or {})
        # False when the workspaces' agents run elsewhere (in the template tier's containers).
        self._local_agents = local_agents
        self._root: Path | None = None
        self._pg: Postgres | None = None
        self._server: Service | None = None
        self._agents: AgentSupervisor | None = None
        self._pb: ModuleType | None = None
        self._owner: ThreadPoolExecutor | None = None

    # -- paths and environments ------------------------------------------------

    @property
    def root(self) -> Path:
        if self._root is None:
            raise RuntimeError("the deployment is not started")
        return self._root

    @property
    def config_dir(self) -> Path:
        """The CLI's private config dir (files `url` and `session`)."""
        return self.root / "cli-config"

    @property
    def server_log(self) -> Path:
        return self.root / "server.log"

    def access(self) -> CoderAccess:
        """What `sandlot.coder(...)` needs to reach this deployment."""
        return CoderAccess(coder_binary=str(self.binary), coder_url=self.url,
                           session_token=self.session_token)

    def cli_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """Environment for running `coder` against this deployment, logged in."""
        env = _base_env(self.root / "cli-home")
        env.update(
            {
                "CODER_URL": self.url,
                "CODER_SESSION_TOKEN": self.session_token,
                "CODER_CONFIG_DIR": str(self.config_dir),
            }
        )
        env.update(extra or {})
        return env

    def coder(
        self,
        *args: str,
        timeout: float = 180.0,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run the real CLI against this deployment; never raises on exit status."""
        # No stdin unless given: the CLI must see a non-interactive caller, as in CI.
        feed = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
        return subprocess.run(
            [str(self.binary), *args],
            env=dict(env) if env is not None else self.cli_env(),
            **feed,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def api(self, path: str) -> Any:
        """GET an API path (e.g. "/api/v2/users/me") with the session token."""
        req = urllib.request.Request(
            self.url + path,
            headers={"Coder-Session-Token": self.session_token, "Accept": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.load(resp)

    # -- lifecycle -------------------------------------------------------------

    def __enter__(self) -> RealCoder:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Bring the deployment up (about 20 s); on failure, tear down what started.

        Safe to call from any thread (e.g. `anyio.to_thread.run_sync`): servers are
        started with --pdeathsig, which the kernel ties to the spawning THREAD, so
        they are spawned from a thread of the harness's own that lives until stop().
        """
        if self._owner is not None:
            raise RuntimeError("the deployment is already started")
        self._owner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="realcoder")
        try:
            self._owner.submit(self._start).result()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop agents, server and database; remove the temp dir. Idempotent."""
        owner, self._owner = self._owner, None
        if owner is None:
            return
        try:
            owner.submit(self._stop).result()
        finally:
            owner.shutdown(wait=True)

    def _timed(self, name: str, since: float) -> float:
        now = time.monotonic()
        self.timings[name] = round(now - since, 2)
        return now

    def _start(self) -> None:
        t0 = t = time.monotonic()
        _sweep_stale_roots()
        self._root = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX))
        (self._root / "owner.pid").write_text(str(os.getpid()))
        # Traversable (not listable) so PostgreSQL's unprivileged account can
        # reach its own directory inside.
        os.chmod(self._root, 0o711)
        self._pb = compile_proto(proto_root(), self.root / "pb")
        t = self._timed("proto", t)

        self._pg = Postgres(self.root / "pg").start()
        pg_url = self._pg.create_database("coder")
        t = self._timed("postgres", t)

        self._start_server(pg_url)
        t = self._timed("server", t)

        self._login()
        t = self._timed("login", t)

        for spec in self.templates.values():
            # Named versions: a generated name would differ in every recording.
            for version in spec.versions or ("v1",):
                self._push_template(spec, version)
        t = self._timed("templates", t)
        if not self._local_agents:
            self._timed("total_start", t0)
            return

        self._agents = AgentSupervisor(
            binary=self.binary,
            url=self.url,
            session_token=self.session_token,
            token_for_agent=self._agent_token,
            root=self.root / "agents",
        ).start()
        self._timed("total_start", t0)

    def _start_server(self, pg_url: str) -> None:
        home = self.root / "server-home"
        last_error: Exception | None = None
        for _attempt in range(3):  # a free port can be taken between pick and bind
            port = listen_port()
            self.url = f"http://127.0.0.1:{port}"
            env = _base_env(home)
            env.update(
                {
                    "CODER_PG_CONNECTION_URL": pg_url,
                    "CODER_HTTP_ADDRESS": f"127.0.0.1:{port}",
                    "CODER_ACCESS_URL": self.url,
                    "CODER_TELEMETRY_ENABLE": "false",
                    "CODER_UPDATE_CHECK": "false",
                    # Hidden flag, as coder's own browser tests use: no Terraform.
                    "CODER_PROVISIONER_TYPES": "echo",
                    "CODER_PROVISIONER_DAEMONS": "4",
                    "CODER_CACHE_DIRECTORY": str(self.root / "server-cache"),
                    # No STUN: nothing outside this machine is reachable anyway.
                    "CODER_DERP_SERVER_STUN_ADDRESSES": "disable",
                    "CODER_DANGEROUS_DISABLE_RATE_LIMITS": "true",
                }
            )
            env.update(self._server_env_extra)
            self._server = Service(
                name="coder server",
                argv=[
                    str(self.binary),
                    "server",
                    "--global-config",
                    str(self.root / "server-config"),
                ],
                env=env,
                log_path=self.server_log,
            ).start()
            try:
                wait_until(
                    self._healthy,
                    timeout=self._server_timeout,
                    what=f"coder server at {self.url}/healthz",
                    interval=0.5,
                    alive=self._server.exited,
                )
                return
            except RuntimeError as exc:  # it died: maybe the port was taken
                last_error = exc
                self._server.stop()
                self._server = None
        raise RuntimeError(f"coder server did not start: {last_error}")

    def _healthy(self) -> bool | None:
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=5) as resp:
                return True if resp.status == 200 else None
        except (urllib.error.URLError, OSError):
            return None

    def _login(self) -> None:
        password = secrets.token_urlsafe(18) + "Aa1!"
        env = _base_env(self.root / "cli-home")
        env.update(
            {
                "CODER_CONFIG_DIR": str(self.config_dir),
                # Through the environment, so the password is not in any argv.
                "CODER_FIRST_USER_USERNAME": self.username,
                "CODER_FIRST_USER_EMAIL": self.email,
                "CODER_FIRST_USER_PASSWORD": password,
                "CODER_FIRST_USER_TRIAL": "false",
            }
        )
        out = run([str(self.binary), "login", self.url], env=env, timeout=120)
        if out.returncode != 0:
            raise RuntimeError(f"coder login failed ({out.returncode}): {out.stderr.strip()}")
        self.session_token = (self.config_dir / "session").read_text().strip()

    def _push_template(self, spec: EchoTemplate, version: str) -> None:
        assert self._pb is not None
        directory = write_template(self._pb, spec, self.root / "templates" / spec.name)
        # As a tar on stdin (`--directory -`): given a directory, the CLI refuses
        # one without .tf files, but the echo provisioner needs none.
        out = subprocess.run(
            [
                str(self.binary),
                "templates",
                "push",
                spec.name,
                "--directory",
                "-",
                "--test.provisioner",
                "echo",
                "--yes",
                "--name",
                version,
            ],
            env=self.cli_env(),
            input=tar_directory(directory),
            capture_output=True,
            timeout=180,
            check=False,
        )
        if out.returncode != 0:
            raise RuntimeError(
                f"pushing template {spec.name} failed ({out.returncode}):\n"
                f"{out.stdout.decode(errors='replace')[-2000:]}\n"
                f"{out.stderr.decode(errors='replace')[-2000:]}"
            )

    def _agent_token(self, agent_id: str) -> str:
        assert self._pg is not None
        token = self._pg.psql(
            f"SELECT auth_token FROM workspace_agents WHERE id = '{agent_id}'",
            database="coder",
        )
        if not token:
            raise RuntimeError(f"no agent {agent_id} in the database")
        return token

    def process_ids(self) -> set[int]:
        """Every process this deployment runs now (services and their descendants)."""
        services: list[Service] = [s for s in (self._server,) if s is not None]
        if self._pg is not None and self._pg.service is not None:
            services.append(self._pg.service)
        if self._agents is not None:
            services.extend(self._agents.services())
        pids: set[int] = set()
        for service in services:
            if service.proc is not None and service.proc.poll() is None:
                pids.add(service.proc.pid)
                pids.update(descendants(service.proc.pid))
        return pids

    def agent_errors(self) -> list[str]:
        """What the agent supervisor ran into (agents that died, API errors)."""
        return list(self._agents.errors) if self._agents is not None else []

    def _stop(self) -> None:
        t = time.monotonic()
        errors: list[str] = []
        for step in (self._stop_agents, self._stop_server, self._stop_pg):
            try:
                step()
            except Exception as exc:  # keep going: the rest must still stop
                errors.append(f"{step.__name__}: {exc}")
        if self._root is not None:
            if os.environ.get("SANDLOT_REALCODER_KEEP"):  # for reading the logs
                (self._root / "owner.pid").unlink(missing_ok=True)
            else:
                remove_tree(self._root)  # a workspace can hold a tree too deep for rmtree
            self._root = None
        self.timings["stop"] = round(time.monotonic() - t, 2)
        if errors:
            raise RuntimeError("stopping the Coder deployment: " + "; ".join(errors))

    def _stop_agents(self) -> None:
        if self._agents is not None:
            self._agents.stop()
            self._agents = None

    def _stop_server(self) -> None:
        if self._server is not None:
            self._server.stop(grace=30.0)
            self._server = None

    def _stop_pg(self) -> None:
        if self._pg is not None:
            self._pg.stop()
            self._pg = None

    # -- helpers for tests -------------------------------------------------------

    def list_workspaces(self) -> list[dict[str, Any]]:
        """`coder list -o json --all`, parsed (empty stdout means no workspaces)."""
        out = self.coder("list", "--all", "-o", "json")
        if out.returncode != 0:
            raise RuntimeError(f"coder list failed: {out.stderr.strip()}")
        text = out.stdout.strip()
        return list(json.loads(text)) if text else []

    def wait_for_agents(self, workspace: str, timeout: float = 120.0) -> list[dict[str, Any]]:
        """Wait until every agent of `workspace` is connected and ready; return them."""

        def probe() -> list[dict[str, Any]] | None:
            for ws in self.list_workspaces():
                if ws["name"] != workspace:
                    continue
                agents = [
                    a
                    for r in ws["latest_build"].get("resources") or []
                    for a in r.get("agents") or []
                ]
                if agents and all(
                    a["status"] == "connected" and a["lifecycle_state"] == "ready" for a in agents
                ):
                    return agents
            return None

        return wait_until(probe, timeout=timeout, what=f"agents of {workspace}", interval=0.5)
