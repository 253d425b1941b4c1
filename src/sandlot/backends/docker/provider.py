"""Creating (or attaching to) the container behind a docker sandbox, and undoing it on failure."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

import anyio

from ...errors import (
    BackendUnavailableError,
    HostPathNotFoundError,
    ImageNotFoundError,
    SandboxStartError,
    join_errors,
)
from ...provider import IsolatedSandboxProvider
from ...secrets import reveal
from . import handover, labels
from .cli import PROVIDER, DockerCLI
from .options import DockerOptions
from .sandbox import DockerSandbox, apply_on_close, split_env

#: The container's long-lived command: PID 1 (tini with `init`) forwards SIGTERM and the loop
#: exits at once, so `docker stop` takes no grace period. Only `sh` and `sleep` are needed.
KEEPALIVE = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"

# Make the worktree if missing; hand it to the sandbox user when one is set (docker would
# otherwise create it root-owned and unwritable for that user).
_PREPARE = '[ -d "$1" ] || { mkdir -p -- "$1" && { [ -z "$2" ] || chown -- "$2" "$1"; }; }'

NO_IMAGE_HINT = (
    "sandlot does not pull images by default (pull='never'): build or import the image into "
    "this engine first -- see providers/docker/README.md, or offline `tar -C ROOTFS -c . | "
    "docker import - IMAGE` -- or pass pull='missing' to let the engine pull it from its registry"
)


class DockerProvider(IsolatedSandboxProvider):
    """Makes sandboxes that are Docker containers (see `DockerOptions`)."""

    name = "docker"

    def __init__(self, options: DockerOptions) -> None:
        self.options = options

    def __repr__(self) -> str:
        what = f"attach={self.options.attach!r}" if self.options.attach else (
            f"image={self.options.image!r}")
        return f"<DockerProvider {what} on_close={self.options.on_close}>"

    async def create(self) -> DockerSandbox:
        cli = DockerCLI.from_options(self.options)
        if self.options.attach is not None:
            return await self._attach(cli, self.options.attach)
        return await self._create(cli)

    # ---- a new container ----------------------------------------------------------------

    async def _create(self, cli: DockerCLI) -> DockerSandbox:
        opts = self.options
        assert opts.image is not None
        for mount in opts.mounts:
            if not os.path.exists(mount.source):
                raise HostPathNotFoundError(
                    f"mount source does not exist on the host: {mount.source!r} (for "
                    f"{mount.target!r}); create it or fix the path"
                )
        name = opts.name or f"sandlot-{secrets.token_hex(4)}"
        session = secrets.token_hex(8)
        # Forwarded connections are handed into the container over a socket in a directory
        # of ours, mounted read-only (adr/0055): only for an engine on this kernel.
        folder = handover.make_dir(session) if handover.wanted(opts, cli) else None
        args, env = self._run_args(name, session, opts.image, folder)
        # Shielded: a client killed mid-request can still leave the engine creating the
        # container, which nothing would then clean up. A cancellation lands right after.
        with anyio.CancelScope(shield=True):
            try:
                done = await cli.run(*args, env=env, timeout=1800)
            except BaseException:
                handover.remove_dir(folder)
                raise
            if done.code != 0:
                handover.remove_dir(folder)
                raise await self._run_failed(cli, done.stderr, name, session, opts.image)
        container_id = done.stdout.strip().splitlines()[-1]
        try:
            await anyio.lowlevel.checkpoint()
            if opts.user:
                await self._prepare(cli, container_id, name)
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await self._undo(cli, container_id, name, exc)
                if opts.on_close == "delete":
                    handover.remove_dir(folder)
            raise
        return DockerSandbox(
            cli, container_id=container_id, name=name, options=opts, on_close=opts.on_close,
            handover_dir=folder,
        )

    async def _run_failed(
        self, cli: DockerCLI, stderr: str, name: str, session: str, image: str
    ) -> Exception:
        """The typed error of a failed `docker run`, after removing what it left."""
        if "already in use" in stderr:
            return SandboxStartError(
                f"a container named {name!r} already exists; choose another name, or use "
                f"attach={name!r} to work in it",
                provider=PROVIDER, sandbox=name,
            )  # fmt: skip
        error: Exception = cli.error(
            stderr, what=f"docker run {image}", container=name, fallback=SandboxStartError
        )
        if isinstance(error, ImageNotFoundError):
            if self.options.pull == "never":
                error = ImageNotFoundError(
                    f"image {image!r} is not in the local store of the Docker {cli.target}. "
                    + NO_IMAGE_HINT,
                    provider=PROVIDER,
                )
            else:
                error = ImageNotFoundError(
                    f"image {image!r} is not in the local store of the Docker {cli.target} "
                    f"and the engine could not pull it: {stderr.strip()}. Build or import it "
                    "first (see providers/docker/README.md)",
                    provider=PROVIDER,
                )
        if isinstance(error, BackendUnavailableError):
            return error
        # A failed run can leave a created-but-never-started container: ours, by its label.
        left = await cli.run("ps", "-aq", "--filter", f"label={labels.SESSION}={session}")
        for cid in left.stdout.split():
            try:
                await self._undo(cli, cid, name, error)
            except SandboxStartError as joined:
                error = joined
        return error

    def _run_args(self, name: str, session: str, image: str,
                  handover_dir: Path | None = None) -> tuple[list[str], dict[str, str]]:
        opts = self.options
        args = ["run", "-d", "--name", name, "--network", opts.network, "--entrypoint", "sh",
                "--pull", opts.pull]
        if not opts.user:
            # The engine makes the worktree (root-owned); for another user _prepare makes it.
            args += ["--workdir", opts.workdir]
        if opts.init:
            args.append("--init")
        for key, value in labels.make(opts.on_close, session).items():
            args += ["--label", f"{key}={value}"]
        if opts.user:
            args += ["--user", opts.user]
        if opts.memory:
            args += ["--memory", opts.memory]
        if opts.cpus:
            args += ["--cpus", f"{opts.cpus:g}"]
        if opts.pids_limit:
            args += ["--pids-limit", str(opts.pids_limit)]
        for value in opts.security_opt:
            args += ["--security-opt", value]
        for mount in opts.mounts:
            spec = f"type=bind,source={mount.source},target={mount.target}"
            args += ["--mount", spec + (",readonly" if mount.read_only else "")]
        if handover_dir is not None:
            # --volume, not --mount: a kept container whose directory the host's temporary
            # cleaner removed still starts (the engine makes the directory again).
            args += ["--volume", f"{handover_dir}:{handover.CONTAINER_DIR}:ro"]
        passed, own = split_env(reveal(opts.env))
        for key in passed:  # the value comes from the client's environment, not argv
            args += ["--env", key]
        for key, value in own.items():
            args += ["--env", f"{key}={value}"]
        args += [image, "-c", KEEPALIVE]
        return args, passed

    async def _prepare(self, cli: DockerCLI, container: str, name: str) -> None:
        done = await cli.run(
            "exec", "-u", "0", container, "sh", "-c", _PREPARE, "sh", self.options.workdir,
            self.options.user or "", timeout=120,
        )  # fmt: skip
        if done.code == 0:
            return
        state = await cli.run(
            "container", "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", container
        )
        if state.code == 0 and not state.stdout.startswith("running"):
            logs = await cli.run("logs", "--tail", "20", container)
            raise SandboxStartError(
                f"container {name!r} stopped right after it started ({state.stdout.strip()}); "
                "the image needs /bin/sh and sleep. Its output: "
                f"{(logs.stdout + logs.stderr).strip() or '(none)'}",
                provider=PROVIDER, sandbox=name,
            )  # fmt: skip
        raise cli.error(
            done.stderr, what=f"preparing the worktree {self.options.workdir!r}",
            container=name, fallback=SandboxStartError,
        )  # fmt: skip

    async def _undo(self, cli: DockerCLI, container: str, name: str, cause: BaseException) -> None:
        """Apply on_close to a container whose sandbox never came to be."""
        try:
            await apply_on_close(cli, container, name, self.options.on_close)
        except Exception as cleanup:
            if isinstance(cause, Exception):
                raise SandboxStartError(
                    join_errors([cause, cleanup]), provider=PROVIDER, sandbox=name
                ) from cause
            raise

    # ---- an existing container ----------------------------------------------------------

    async def _attach(self, cli: DockerCLI, target: str) -> DockerSandbox:
        done = await cli.run("container", "inspect", "--format", "{{json .}}", target)
        if done.code != 0:
            if cli.is_unreachable(done.stderr):
                raise cli.error(done.stderr, what=f"attach {target!r}",
                                fallback=SandboxStartError)
            raise SandboxStartError(
                f"attach: no container {target!r} in the Docker {cli.target}: "
                f"{done.stderr.strip()}",
                provider=PROVIDER, sandbox=target,
            )  # fmt: skip
        info: dict[str, Any] = json.loads(done.stdout)
        container_id = str(info["Id"])
        name = str(info.get("Name", target)).lstrip("/")
        state: dict[str, Any] = info.get("State", {})
        try:
            if state.get("Paused"):
                await cli.check("unpause", container_id, what=f"attach {name!r}",
                                container=name, fallback=SandboxStartError)
            elif not state.get("Running"):
                await cli.check("start", container_id, what=f"attach {name!r}",
                                container=name, fallback=SandboxStartError)
            await self._prepare(cli, container_id, name)
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await self._undo(cli, container_id, name, exc)
            raise
        return DockerSandbox(
            cli, container_id=container_id, name=name, options=self.options,
            on_close=self.options.on_close, handover_dir=_handover_dir(cli, info, self.options),
        )  # fmt: skip


def _handover_dir(cli: DockerCLI, info: dict[str, Any], options: DockerOptions) -> Path | None:
    """The handover directory of a container sandlot made (found by its mount), when it
    still is there on this host."""
    if not handover.wanted(options, cli):
        return None
    for mount in info.get("Mounts") or []:
        if mount.get("Destination") == handover.CONTAINER_DIR:
            return handover.existing_dir(str(mount.get("Source", "")))
    return None
