"""The one place that runs `coder`: subprocesses, their environment, JSON, typed errors.

The deployment URL and session token reach the CLI as CODER_URL / CODER_SESSION_TOKEN in the
CHILD's environment only: never on a command line (visible in `ps`), never in this process's
`os.environ`, never in a message. Errors are told apart by the text coder prints (cli/root.go
renders every failure as `Encountered an error running "coder <cmd>" ...` then `error: ...`),
matched loosely so wording changes across releases degrade to the generic `CoderCLIError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn

from pydantic import SecretStr

from ..._process_group import signal_group
from ..._shared_call import SharedCall
from ...errors import (
    CODER_BINARY,
    CoderCLIError,
    CoderCLINotFoundError,
    CoderNotLoggedInError,
    CoderUnreachableError,
    CoderWorkspaceNotFoundError,
    redact,
    register_secret,
)
from ...output import OutputCapture
from .models import (
    ParseError,
    WhoAmI,
    Workspace,
    parse_whoami,
    parse_whoami_text,
    parse_workspaces,
)
from .retry import mark_reached, retrying

log = logging.getLogger("sandlot.coder")

#: Bytes kept of each stream of one CLI call (build logs can be long; the end matters).
_KEEP = 256 << 10
INSTALL_HINT = (
    "install the Coder CLI (https://coder.com/docs/install/cli) and put it on PATH, "
    f"or {CODER_BINARY.python}"
)

# cli/root.go notLoggedInMessage.
_NOT_LOGGED_IN = re.compile(r"You are not logged in", re.I)
# coderd/httpmw/apikey.go (401) and codersdk's helper for any 401.
_SIGNED_OUT = re.compile(
    r"signed out or your session has expired|Try logging in using 'coder login'|"
    r"API key is invalid|status code 401|Unauthorized",
    re.I,
)
# Go's net/http and net errors for a server that is not there.
_UNREACHABLE = re.compile(
    r"connection refused|no such host|dial tcp|i/o timeout|network is unreachable|"
    r"no route to host|connection reset by peer|context deadline exceeded|"
    r"Client\.Timeout exceeded|x509: |tls: |unsupported protocol scheme|server misbehaving",
    re.I,
)
# serpent/pflag: a flag this release of the CLI does not have.
_UNKNOWN_FLAG = re.compile(r"unknown (?:shorthand )?flag: (--?[A-Za-z0-9-]+|'[A-Za-z]')")
# coderd/httpapi/httpapi.go ResourceNotFound: the same text for every 404.
_NOT_FOUND = re.compile(r"Resource not found|not found or you do not have access", re.I)


def last_error_line(stderr: str) -> str:
    """The `error: ...` part of coder's failure text (else its last non-empty line)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for index, line in enumerate(lines):
        if line.startswith("error: "):
            return " ".join([line.removeprefix("error: "), *lines[index + 1 : index + 3]])
    return lines[-1] if lines else ""


@dataclass(frozen=True)
class CLIResult:
    """A finished `coder` call."""

    argv: list[str]
    exit_code: int
    stdout: str
    stderr: str


class CoderCLI:
    """Runs `coder <args>` with the configured deployment and turns failures into typed errors."""

    def __init__(
        self,
        binary: str = "coder",
        *,
        url: str | None = None,
        token: SecretStr | None = None,
        transient_retry_timeout: float = 0.0,
    ) -> None:
        self._binary = binary
        self.transient_retry_timeout = transient_retry_timeout
        self._path: str | None = None
        self.url = url
        self._token = token
        self._owned: dict[str, SharedCall[list[Workspace]]] = {}
        if token is not None:
            register_secret(token.get_secret_value())
        # A token inherited from the environment is just as secret as one passed in.
        inherited = os.environ.get("CODER_SESSION_TOKEN")
        if inherited:
            register_secret(inherited)

    def __repr__(self) -> str:
        return f"<CoderCLI {self._binary!r} url={self.url!r}>"

    @property
    def path(self) -> str:
        """Absolute path of the CLI; `CoderCLINotFoundError` when there is none."""
        if self._path is None:
            found = shutil.which(self._binary)
            if found is None:
                raise CoderCLINotFoundError(
                    f"the coder CLI {self._binary!r} was not found: {INSTALL_HINT}",
                    provider="coder",
                ).hinted(CODER_BINARY)
            self._path = os.path.abspath(found)
        return self._path

    def child_env(self) -> dict[str, str]:
        """Environment of every `coder` child: ours, plus the deployment settings if given."""
        env = dict(os.environ)
        if self.url is not None:
            env["CODER_URL"] = self.url
        if self._token is not None:
            env["CODER_SESSION_TOKEN"] = self._token.get_secret_value()
        return env

    def argv(self, *args: str) -> list[str]:
        return [self.path, *args]

    def ssh_stdio_argv(self, target: str) -> list[str]:
        """The ProxyCommand: raw SSH to `<workspace>.<agent>` on stdio, messages on stderr.

        `--disable-autostart`: only create()/start() start workspaces; a reconnect must not
        quietly restart a workspace someone stopped.
        """
        return self.argv("ssh", "--stdio", "--disable-autostart", target)

    async def run(
        self,
        *args: str,
        timeout: float | None = None,
        sandbox: str = "",
        check: bool = True,
        retry: bool = False,
    ) -> CLIResult:
        """Run `coder <args>` to completion (stdin closed); raise a typed error on failure.

        `retry` (for calls that are safe to repeat): transient failures of the deployment are
        retried within `transient_retry_timeout` (retry.py).
        """
        if retry and check:
            return await retrying(
                " ".join(["coder", *args]),
                lambda: self._run_once(args, timeout, sandbox, check),
                url=self.url,
                timeout=self.transient_retry_timeout,
            )
        return await self._run_once(args, timeout, sandbox, check)

    async def _run_once(
        self, args: Sequence[str], timeout: float | None, sandbox: str, check: bool
    ) -> CLIResult:
        argv = self.argv(*args)
        shown = " ".join(["coder", *args])
        log.debug("running %s", redact(shown))
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self.child_env(),
                start_new_session=True,  # a ^C meant for us does not half-kill a build watch
            )
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            raise CoderCLINotFoundError(
                f"cannot run the coder CLI {argv[0]!r} ({exc.strerror}): {INSTALL_HINT}",
                provider="coder",
            ).hinted(CODER_BINARY) from None
        out, err = OutputCapture(_KEEP), OutputCapture(_KEEP)
        try:
            await asyncio.wait_for(_drain(proc, out, err), timeout)
        except BaseException as exc:
            # Timed out or cancelled: the CLI must not outlive the call.
            signal_group(proc.pid, reaped=proc.returncode is not None)
            with contextlib.suppress(Exception):
                await asyncio.shield(proc.wait())
            if isinstance(exc, TimeoutError):
                raise CoderCLIError(
                    f"`{shown}` did not finish within {timeout:g}s and was stopped; raise the "
                    "timeout (build_timeout=) if builds are slow",
                    argv=["coder", *args],
                    stderr=err.text(),
                    sandbox=sandbox,
                ) from None
            raise
        finally:
            out.close()
            err.close()
        result = CLIResult(argv, proc.returncode or 0, out.text(), err.text())
        if check and result.exit_code != 0:
            self.raise_for(result, shown, sandbox=sandbox)
        return result

    def raise_for(self, result: CLIResult, shown: str, *, sandbox: str = "") -> NoReturn:
        """Turn a failed call into the most specific error its text allows."""
        stderr = result.stderr
        reason = last_error_line(stderr) or f"exit status {result.exit_code}"
        common = {
            "argv": ["coder", *result.argv[1:]],
            "exit_code": result.exit_code,
            "stderr": stderr,
            "sandbox": sandbox,
        }
        stdout_common = {**common, "stdout": result.stdout}
        if _NOT_LOGGED_IN.search(stderr):
            raise CoderNotLoggedInError(
                f"`{shown}`: the coder CLI is not logged in ({reason}). Run `coder login <url>`, "
                "or pass coder_url= and session_token= (or set CODER_URL and "
                "CODER_SESSION_TOKEN)",
                provider="coder",
                sandbox=sandbox,
            )
        if _SIGNED_OUT.search(stderr):
            raise CoderNotLoggedInError(
                f"`{shown}`: the Coder deployment rejected the session token ({reason}). "
                "Log in again with `coder login <url>` or pass a valid session_token=",
                provider="coder",
                sandbox=sandbox,
            )
        if _UNREACHABLE.search(stderr):
            where = self.url or "the URL the CLI is logged in to"
            raise CoderUnreachableError(
                f"`{shown}`: cannot reach the Coder deployment at {where} ({reason}). Check "
                "coder_url (or CODER_URL) and that the server is up and reachable from here",
                provider="coder",
                sandbox=sandbox,
            )
        if _NOT_FOUND.search(stderr) and args_name_workspace(result.argv[1:]):
            raise CoderWorkspaceNotFoundError(
                f"`{shown}`: no such workspace, or you cannot access it ({reason}). Check the "
                "name with `coder list`; another user's workspace is `owner/name`",
                **common,  # type: ignore[arg-type]
            )
        flag = _UNKNOWN_FLAG.search(stderr)
        if flag:
            raise CoderCLIError(
                f"`{shown}`: this coder CLI does not know the flag {flag.group(1)} ({reason}); "
                "upgrade the coder CLI (`coder version` shows yours), or leave out the sandlot "
                "option that adds the flag",
                **common,  # type: ignore[arg-type]
            )
        raise CoderCLIError(f"`{shown}` failed with exit status {result.exit_code}: {reason}",
                            **stdout_common)  # type: ignore[arg-type]

    # ---- the commands the backend uses ---------------------------------------------------

    async def whoami(self) -> WhoAmI:
        """Preflight: the binary runs, the URL answers, the session is valid.

        `coder whoami -o json` where the CLI has it; releases before it (e.g. v2.26) reject the
        flag before doing anything else, and then the plain text form is read instead.
        """
        async def json_form() -> CLIResult:
            result = await self.run("whoami", "-o", "json", timeout=120, check=False)
            if result.exit_code != 0 and not _UNKNOWN_FLAG.search(result.stderr):
                self.raise_for(result, "coder whoami -o json")
            return result

        result = await retrying(
            "coder whoami", json_form, url=self.url, timeout=self.transient_retry_timeout
        )
        if result.exit_code != 0:
            log.debug("this coder CLI has no `whoami -o json`; reading its text output")
            result = await self.run("whoami", timeout=120, retry=True)
            try:
                me = parse_whoami_text(result.stdout)
            except ParseError as exc:
                raise CoderCLIError(f"cannot read `coder whoami`: {exc}") from None
        else:
            try:
                me = parse_whoami(result.stdout)
            except ParseError as exc:
                raise CoderCLIError(f"cannot read `coder whoami -o json`: {exc}") from None
        mark_reached(self.url)
        return me

    async def list_workspaces(
        self, *, search: str | None = None, all_users: bool = False, sandbox: str = ""
    ) -> list[Workspace]:
        """`coder list -o json` (empty stdout means no workspaces)."""
        args = ["list", "-o", "json"]
        if all_users:
            args.append("--all")
        elif search is not None:
            args += ["--search", search]
        result = await self.run(*args, timeout=120, sandbox=sandbox, retry=True)
        try:
            return parse_workspaces(result.stdout)
        except ParseError as exc:
            raise CoderCLIError(f"cannot read `coder list -o json`: {exc}") from None

    async def owned_workspaces(self, owner: str) -> list[Workspace]:
        """`coder list --search owner:<owner>`, one call shared by concurrent callers (each
        gets an answer from a call that started after it asked)."""
        shared = self._owned.get(owner.lower())
        if shared is None:
            shared = SharedCall(lambda: self.list_workspaces(search=f"owner:{owner}"))
            self._owned[owner.lower()] = shared
        return await shared()

    async def lifecycle(
        self, verb: str, reference: str, *, timeout: float, sandbox: str = ""
    ) -> CLIResult:
        """`coder start|stop|delete <ref> --yes`; waits for the build like the CLI does."""
        return await self.run(verb, reference, "--yes", timeout=timeout, sandbox=sandbox)


_UUID = re.compile(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


def remove_autostop_lock(workspace_id: str, env: Mapping[str, str] | None = None) -> None:
    """Remove the lock file `coder ssh` made for a workspace that is now deleted.

    cli/ssh.go (tryPollWorkspaceAutostop) creates `<os.TempDir()>/coder-autostop-notify-<id>`
    for every workspace it connects to and never removes it: one empty file per sandbox would
    pile up in the host's temporary directory. Only an empty regular file of ours, named for a
    UUID, is removed."""
    if not _UUID.fullmatch(workspace_id):
        return
    folder = (env if env is not None else os.environ).get("TMPDIR") or "/tmp"
    path = os.path.join(folder, f"coder-autostop-notify-{workspace_id}")
    try:
        info = os.lstat(path)
        if stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and info.st_size == 0:
            os.unlink(path)
    except OSError:
        pass


def args_name_workspace(args: Sequence[str]) -> bool:
    """Whether a 404 from this command means "the workspace", not e.g. a template."""
    return bool(args) and args[0] in ("start", "stop", "delete", "rm", "ssh", "show")


async def _drain(proc: asyncio.subprocess.Process, out: OutputCapture, err: OutputCapture) -> None:
    async def pump(stream: asyncio.StreamReader | None, capture: OutputCapture) -> None:
        assert stream is not None
        while chunk := await stream.read(64 << 10):
            capture.feed(chunk)

    await asyncio.gather(pump(proc.stdout, out), pump(proc.stderr, err))
    await proc.wait()

