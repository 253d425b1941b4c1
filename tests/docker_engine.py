"""A private Docker engine for the tests and the benchmarks, started and stopped by them.

`DockerEngine` runs Debian's `containerd` and `dockerd` (installed by scripts/setup.d/20-docker.sh)
on unix sockets in a temp directory of its own, with `--bridge=none --iptables=false
--ip6tables=false` and an empty daemon config, so it never touches a daemon the machine may
already run nor the host's network setup. Every docker command here passes `--host` explicitly.

Images are made offline with `docker import` (no registry is reachable):

* `busybox_image()`: a static busybox with its applets linked -- enough for the contract suite.
* `toolchain_image()`: a near-empty root whose /usr, /etc and toolchain directories come from the
  host as read-only bind mounts (`TOOLCHAIN_MOUNTS`), for tests that need go, cargo, node, python.

The data root persists under ~/.cache/sandlot/docker-data (the imported images are cached
there between runs; a second concurrent run gets a throwaway data root instead). The daemons
never outlive the process that started them: `stop()` runs at the end of the test session, from
`atexit` as a fallback, and the kernel sends SIGTERM to them if this process dies (PDEATHSIG).

    python -m tests.docker_engine        # start, build both images, print timings, stop
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import fcntl
import hashlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from sandlot._tree import remove_tree

DOCKERD = "/usr/sbin/dockerd"
CONTAINERD = "/usr/bin/containerd"
CACHE = Path(os.environ.get("SANDLOT_CACHE", str(Path.home() / ".cache" / "sandlot")))
BUSYBOX = CACHE / "busybox-static" / "bin" / "busybox"
INSTALL_HINT = "run scripts/setup.d/20-docker.sh (installs docker.io and a static busybox)"

#: Bump when the image recipes below change, so cached images are rebuilt.
RECIPE_VERSION = "4"

#: Host directories the toolchain image gets read-only (those that exist on this host).
TOOLCHAIN_HOST_DIRS = ["/usr", "/etc", "/root/.cargo", "/root/.rustup", "/root/.pyenv", "/root/go"]

#: Environment for commands in the toolchain image: the host's toolchain PATH.
TOOLCHAIN_ENV = {
    "HOME": "/root",
    "PATH": ":".join([
        "/usr/local/go/bin", "/root/go/bin", "/root/.cargo/bin", "/root/.pyenv/shims",
        "/root/.pyenv/bin", "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin",
        "/sbin", "/bin",
    ]),
    "PYENV_ROOT": "/root/.pyenv",
    "GOTOOLCHAIN": "local",
}  # fmt: skip

# busybox in Debian's static build has no `printenv` applet; the contract suite uses it.
_PRINTENV = """#!/bin/sh
# printenv for a busybox userland without that applet: print named variables, or all.
[ $# -eq 0 ] && exec env
rc=0
for n in "$@"; do
  case $n in ''|[0-9]*|*[!A-Za-z0-9_]*) rc=1; continue ;; esac
  eval "if [ -n \\"\\${$n+x}\\" ]; then printf '%s\\\\n' \\"\\$$n\\"; else rc=1; fi"
done
exit $rc
"""

_PASSWD = "root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh\n"
_GROUP = "root:x:0:\nsandbox:x:1000:\n"


class EngineUnavailable(RuntimeError):
    """The private engine cannot run here; the message says why and what to install."""


def missing_components() -> list[str]:
    """What this host lacks to run the private engine (empty when everything is there)."""
    missing = [p for p in (DOCKERD, CONTAINERD) if not os.access(p, os.X_OK)]
    if shutil.which("docker") is None:
        missing.append("docker (client)")
    if not BUSYBOX.is_file():
        missing.append(str(BUSYBOX))
    return missing


def _set_pdeathsig() -> None:
    # Runs in the child between fork and exec: die with the process that started us.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG


@dataclass
class DockerEngine:
    """One private dockerd + containerd pair; use as a context manager or start()/stop()."""

    data_root: Path | None = None
    storage_driver: str | None = None
    run_dir: Path = field(init=False)
    host: str = field(init=False, default="")
    driver: str = field(init=False, default="")
    start_seconds: float = field(init=False, default=0.0)
    _procs: dict[str, subprocess.Popen[bytes]] = field(init=False, default_factory=dict)
    _lock: IO[str] | None = field(init=False, default=None)
    _throwaway_root: bool = field(init=False, default=False)

    # ---- lifecycle ----------------------------------------------------------------------

    def start(self) -> DockerEngine:
        missing = missing_components()
        if missing:
            raise EngineUnavailable(f"missing {', '.join(missing)}; {INSTALL_HINT}")
        began = time.monotonic()
        reap_stale()
        self.run_dir = Path(tempfile.mkdtemp(prefix="sdk-", dir="/tmp"))
        self.host = f"unix://{self.run_dir}/docker.sock"
        self._pick_data_root()
        try:
            self._start_containerd()
            drivers = [self.storage_driver] if self.storage_driver else ["overlay2", "vfs"]
            errors: list[str] = []
            for driver in drivers:
                try:
                    self._start_dockerd(driver)
                    self.driver = driver
                    break
                except EngineUnavailable as exc:
                    errors.append(f"{driver}: {exc}")
            else:
                raise EngineUnavailable("dockerd did not start: " + " | ".join(errors))
        except BaseException:
            self.stop()
            raise
        atexit.register(self.stop)
        self.start_seconds = time.monotonic() - began
        return self

    def stop(self, *, remove_containers: bool = True) -> None:
        """Stop both daemons and remove everything of ours except the cached data root.

        Idempotent. With `remove_containers`, every container of THIS engine is removed first
        so the cached data root does not grow (the session-end leak check runs before this).
        """
        dockerd = self._procs.pop("dockerd", None)
        if dockerd is not None and dockerd.poll() is None:
            if remove_containers:
                with contextlib.suppress(Exception):
                    ids = self.docker("ps", "-aq", timeout=20).stdout.split()
                    if ids:
                        self.docker("rm", "-f", *ids, timeout=60, check=False)
            _terminate(dockerd, 30)
        containerd = self._procs.pop("containerd", None)
        if containerd is not None and containerd.poll() is None:
            _terminate(containerd, 15)
        if not getattr(self, "run_dir", None):
            return
        self._kill_stray_shims()
        roots = [self.run_dir] + ([self.data_root] if self.data_root else [])
        _unmount_under(roots)
        shutil.rmtree(self.run_dir, ignore_errors=True)
        if self._throwaway_root and self.data_root is not None:
            remove_tree(self.data_root)
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)

    def __enter__(self) -> DockerEngine:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        proc = self._procs.get("dockerd")
        return proc is not None and proc.poll() is None

    # ---- using it ---------------------------------------------------------------------------

    def docker(
        self, *args: str, input: bytes | None = None, timeout: float = 120, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run the docker client against THIS engine only."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKER_")}
        proc = subprocess.run(
            ["docker", "--host", self.host, *args], input=input, capture_output=True,
            timeout=timeout, env=env,
        )  # fmt: skip
        result = subprocess.CompletedProcess(
            proc.args, proc.returncode, proc.stdout.decode(errors="replace"),
            proc.stderr.decode(errors="replace"),
        )  # fmt: skip
        if check and proc.returncode != 0:
            raise RuntimeError(f"docker {' '.join(args)} failed: {result.stderr.strip()}")
        return result

    def sandlot_containers(self) -> list[str]:
        """Names of containers carrying sandlot's label, running or not."""
        out = self.docker("ps", "-a", "--filter", "label=sandlot.managed", "--format",
                          "{{.Names}}").stdout
        return sorted(out.split())

    def busybox_image(self) -> str:
        """A static-busybox image (sh, tar, cat, sha256sum, ... and a printenv script)."""
        digest = hashlib.sha256(BUSYBOX.read_bytes()).hexdigest()[:12]
        return self._import(f"sandlot-test/busybox:{RECIPE_VERSION}-{digest}", _busybox_rootfs)

    def toolchain_image(self) -> str:
        """A near-empty root meant to run with `toolchain_mounts()` (the host's toolchains)."""
        return self._import(f"sandlot-test/toolchain:{RECIPE_VERSION}", _toolchain_rootfs)

    @staticmethod
    def toolchain_mounts() -> list[dict[str, object]]:
        """Read-only bind mounts of the host's /usr, /etc and toolchain homes (those present)."""
        return [
            {"source": d, "target": d, "read_only": True}
            for d in TOOLCHAIN_HOST_DIRS
            if os.path.isdir(d)
        ]

    # ---- internals --------------------------------------------------------------------------

    def _import(self, tag: str, build: Callable[[tarfile.TarFile], None]) -> str:
        if self.docker("image", "inspect", tag, check=False).returncode == 0:
            return tag
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            build(tar)
        self.docker(
            "import", "-c", f"ENV PATH={TOOLCHAIN_ENV['PATH']}", "-c", 'CMD ["sh"]', "-", tag,
            input=buffer.getvalue(),
        )  # fmt: skip
        return tag

    def _pick_data_root(self) -> None:
        if self.data_root is not None:
            self.data_root.mkdir(parents=True, exist_ok=True)
            return
        cached = CACHE / "docker-data"
        cached.mkdir(parents=True, exist_ok=True)
        lock = open(CACHE / "docker-data.lock", "w")  # noqa: SIM115 - held until stop()
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            # Another run owns the cache: never share a data root between two daemons.
            lock.close()
            self.data_root = self.run_dir / "data"
            self._throwaway_root = True
            self.data_root.mkdir()
            return
        self._lock = lock
        self.data_root = cached

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = open(self.run_dir / f"{name}.log", "wb")  # noqa: SIM115 - child keeps the fd
        main = threading.current_thread() is threading.main_thread()
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=_set_pdeathsig if main else None,
        )  # fmt: skip
        log.close()
        self._procs[name] = proc
        return proc

    def _log_tail(self, name: str, lines: int = 15) -> str:
        with contextlib.suppress(OSError):
            text = (self.run_dir / f"{name}.log").read_text(errors="replace")
            return "\n".join(text.splitlines()[-lines:])
        return ""

    def _start_containerd(self) -> None:
        sock = self.run_dir / "containerd.sock"
        config = self.run_dir / "containerd.toml"
        config.write_text(
            "version = 2\n"
            f'root = "{self.run_dir}/containerd-root"\n'
            f'state = "{self.run_dir}/containerd-state"\n'
            'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
            f'[grpc]\n  address = "{sock}"\n'
            f'[ttrpc]\n  address = "{sock}.ttrpc"\n'
            '[debug]\n  address = ""\n[metrics]\n  address = ""\n'
        )
        proc = self._spawn("containerd", [CONTAINERD, "--config", str(config)])
        _wait_for(lambda: sock.is_socket(), proc, 30, "containerd", self._log_tail)

    def _start_dockerd(self, driver: str) -> None:
        assert self.data_root is not None
        (self.run_dir / "daemon.json").write_text("{}\n")  # never read /etc/docker/daemon.json
        sock = self.run_dir / "docker.sock"
        with contextlib.suppress(FileNotFoundError):
            sock.unlink()
        argv = [
            DOCKERD,
            "--config-file", str(self.run_dir / "daemon.json"),
            "--data-root", str(self.data_root),
            "--exec-root", str(self.run_dir / "exec"),
            "--pidfile", str(self.run_dir / "dockerd.pid"),
            "--host", self.host,
            "--containerd", str(self.run_dir / "containerd.sock"),
            "--bridge=none", "--iptables=false", "--ip6tables=false",
            "--storage-driver", driver,
            "--log-level", "warn",
        ]  # fmt: skip
        proc = self._spawn("dockerd", argv)
        try:
            _wait_for(lambda: _ping(sock), proc, 60, "dockerd", self._log_tail)
        except EngineUnavailable:
            if proc.poll() is None:
                _terminate(proc, 10)
            self._procs.pop("dockerd", None)
            raise

    def _kill_stray_shims(self) -> None:
        _kill_shims(self.run_dir)


def _cmdlines() -> Iterator[tuple[Path, list[bytes]]]:
    for pid_dir in Path("/proc").iterdir():
        if pid_dir.name.isdigit():
            with contextlib.suppress(OSError):
                yield pid_dir, (pid_dir / "cmdline").read_bytes().split(b"\0")


def _kill_shims(run_dir: Path) -> None:
    """SIGKILL the containerd shims (and their containers) of the containerd in `run_dir`."""
    address = f"{run_dir}/containerd.sock".encode()
    for pid_dir, cmdline in _cmdlines():
        if not cmdline or b"containerd-shim" not in cmdline[0] or address not in cmdline:
            continue
        with contextlib.suppress(OSError):
            children = (pid_dir / "task" / pid_dir.name / "children").read_text().split()
            for child in children:  # a container's init: its PID namespace dies with it
                os.kill(int(child), signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(int(pid_dir.name), signal.SIGKILL)


def reap_stale(min_age: float = 600) -> list[Path]:
    """Clean up after engines whose test process was SIGKILLed (so stop() never ran).

    A run dir is stale when it is older than `min_age` seconds and no dockerd or containerd
    names it any more; its orphaned shims are killed, mounts released, the dir removed.
    """
    reaped: list[Path] = []
    now = time.time()
    for run_dir in Path("/tmp").glob("sdk-*"):
        try:
            if not run_dir.is_dir() or now - run_dir.stat().st_mtime < min_age:
                continue
        except OSError:
            continue
        needle = str(run_dir).encode()
        in_use = any(
            cmd and b"containerd-shim" not in cmd[0] and any(needle in arg for arg in cmd)
            for _, cmd in _cmdlines()
        )
        if in_use:
            continue
        _kill_shims(run_dir)
        _unmount_under([run_dir])
        shutil.rmtree(run_dir, ignore_errors=True)
        reaped.append(run_dir)
    return reaped


def _ping(sock: Path) -> bool:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(2)
            conn.connect(str(sock))
            conn.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            return b" 200 " in conn.recv(64).split(b"\r\n", 1)[0]
    except OSError:
        return False


def _wait_for(
    ready: Callable[[], bool],
    proc: subprocess.Popen[bytes],
    limit: float,
    name: str,
    log_tail: Callable[[str], str],
) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if ready():
            return
        if proc.poll() is not None:
            raise EngineUnavailable(
                f"{name} exited with {proc.returncode} while starting:\n{log_tail(name)}"
            )
        time.sleep(0.05)
    raise EngineUnavailable(f"{name} did not answer within {limit:.0f}s:\n{log_tail(name)}")


def _terminate(proc: subprocess.Popen[bytes], grace: float) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(10)


def _unmount_under(roots: list[Path]) -> None:
    """Lazily unmount whatever a crashed daemon left mounted below our directories."""
    prefixes = tuple(str(r) + "/" for r in roots)
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return
    points = [ln.split()[4] for ln in lines if len(ln.split()) > 4]
    for point in sorted((p for p in points if p.startswith(prefixes)), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


# ---- root file systems ------------------------------------------------------------------------


def _add_dir(tar: tarfile.TarFile, name: str, mode: int = 0o755, owner: int = 0) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = mode
    info.uid = info.gid = owner
    tar.addfile(info)


def _add_file(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    tar.addfile(info, io.BytesIO(data))


def _add_link(tar: tarfile.TarFile, name: str, target: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    info.mode = 0o777
    tar.addfile(info)


def _busybox_rootfs(tar: tarfile.TarFile) -> None:
    for d in ("bin", "etc", "home", "proc", "sys", "dev", "usr", "usr/bin", "var"):
        _add_dir(tar, d)
    _add_dir(tar, "root", 0o700)
    _add_dir(tar, "tmp", 0o1777)
    _add_dir(tar, "home/sandbox", owner=1000)
    _add_file(tar, "bin/busybox", BUSYBOX.read_bytes(), 0o755)
    applets = subprocess.run([str(BUSYBOX), "--list"], capture_output=True, text=True, check=True)
    for applet in applets.stdout.split():
        if applet != "busybox":
            _add_link(tar, f"bin/{applet}", "busybox")
    _add_file(tar, "usr/bin/printenv", _PRINTENV.encode(), 0o755)
    _add_file(tar, "etc/passwd", _PASSWD.encode())
    _add_file(tar, "etc/group", _GROUP.encode())


def _toolchain_rootfs(tar: tarfile.TarFile) -> None:
    # Debian is merged-/usr: /bin, /lib, ... are links into /usr, which the host lends. /sbin
    # stays a real directory: docker mounts its init at /sbin/docker-init, which must not land
    # in the read-only /usr (PATH has /usr/sbin for the rest).
    for d in ("usr", "etc", "root", "proc", "sys", "dev", "var", "home", "sbin"):
        _add_dir(tar, d)
    _add_dir(tar, "tmp", 0o1777)
    for name in ("bin", "lib", "lib64"):
        _add_link(tar, name, f"usr/{name}")


@contextlib.contextmanager
def running(**kwargs: object) -> Iterator[DockerEngine]:
    """Start an engine, yield it, always stop it."""
    engine = DockerEngine(**kwargs)  # type: ignore[arg-type]
    with engine:
        yield engine


# ---- one engine shared by a whole test session ----------------------------------------------

_shared: DockerEngine | None = None
_shared_error: str | None = None


def shared() -> DockerEngine:
    """The session's engine, started on first use (stopped by `shutdown_shared`, or atexit)."""
    global _shared, _shared_error
    if _shared is not None and _shared.running:
        return _shared
    if _shared_error is not None:
        raise EngineUnavailable(_shared_error)
    try:
        _shared = DockerEngine().start()
    except EngineUnavailable as exc:
        _shared_error = str(exc)
        raise
    return _shared


_first_seen: dict[str, str] = {}


def note_containers(where: str) -> None:
    """Remember the test module in which each sandlot container was first seen, so a leak
    reported at the end of the session names where it began."""
    if _shared is None or not _shared.running:
        return
    with contextlib.suppress(Exception):
        for name in _shared.sandlot_containers():
            _first_seen.setdefault(name, where)


def first_seen(name: str) -> str:
    return _first_seen.get(name, "unknown")


def shutdown_shared() -> list[str]:
    """Stop the shared engine if it ran; return the sandlot containers it still held."""
    global _shared
    if _shared is None:
        return []
    engine, _shared = _shared, None
    leftovers: list[str] = []
    if engine.running:
        with contextlib.suppress(Exception):
            leftovers = engine.sandlot_containers()
    engine.stop()
    return leftovers


def main() -> None:
    began = time.monotonic()
    with running() as engine:
        started = time.monotonic() - began
        t0 = time.monotonic()
        engine.docker("rmi", "-f", engine.busybox_image(), engine.toolchain_image(), check=False)
        t1 = time.monotonic()
        busybox = engine.busybox_image()
        t2 = time.monotonic()
        toolchain = engine.toolchain_image()
        t3 = time.monotonic()
        print(json.dumps({
            "host": engine.host, "storage_driver": engine.driver,
            "engine_start_s": round(started, 3), "rmi_s": round(t1 - t0, 3),
            "busybox_image": busybox, "busybox_build_s": round(t2 - t1, 3),
            "toolchain_image": toolchain, "toolchain_build_s": round(t3 - t2, 3),
        }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
