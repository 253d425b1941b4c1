"""A throwaway PostgreSQL server (Debian's binaries) on a unix socket we own.

Coder needs PostgreSQL; without CODER_PG_CONNECTION_URL it tries to download one,
which cannot work offline. The cluster lives in a temp directory, listens on no
TCP port at all (only a socket in that directory) and trusts local connections,
which is safe because only root and the server's own account can enter the
directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import urllib.parse
from pathlib import Path

from .procs import Account, Service, run, unprivileged_account, wait_until

DEFAULT_BIN_DIRS = ("/usr/lib/postgresql/15/bin",)


def find_pg_bin() -> Path | None:
    """Where initdb/postgres live: $SANDLOT_PG_BIN, Debian's directory, or PATH."""
    candidates = [os.environ.get("SANDLOT_PG_BIN", ""), *DEFAULT_BIN_DIRS]
    for c in candidates:
        if c and (Path(c) / "initdb").is_file():
            return Path(c)
    found = shutil.which("initdb")
    return Path(found).parent if found else None


class Postgres:
    """initdb + postgres in `root`; stop() ends it; the caller removes `root`."""

    def __init__(self, root: Path, *, bin_dir: Path | None = None) -> None:
        pg_bin = bin_dir or find_pg_bin()
        if pg_bin is None:
            raise FileNotFoundError(
                "PostgreSQL binaries not found: install Debian's postgresql package "
                "(scripts/setup.d installs it) or set SANDLOT_PG_BIN"
            )
        self.bin = pg_bin
        self.root = root
        self.data = root / "data"
        self.socket_dir = root / "run"
        self.account: Account | None = unprivileged_account()
        self.superuser = "postgres"
        self.service: Service | None = None

    def _env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "TZ": "UTC"}

    def _as_owner(self, argv: list[str]) -> list[str]:
        if self.account is None:
            return argv
        a = self.account
        return ["setpriv", f"--reuid={a.uid}", f"--regid={a.gid}", "--clear-groups", "--", *argv]

    def start(self, timeout: float = 60.0) -> Postgres:
        self.root.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(exist_ok=True)
        if self.account is not None:
            for d in (self.root, self.socket_dir):
                os.chown(d, self.account.uid, self.account.gid)
        os.chmod(self.root, 0o700)
        init = run(
            self._as_owner(
                [
                    str(self.bin / "initdb"),
                    "-D",
                    str(self.data),
                    "-U",
                    self.superuser,
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--no-sync",
                ]
            ),
            env=self._env(),
        )
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed ({init.returncode}): {init.stderr[-2000:]}")
        self.service = Service(
            name="postgres",
            argv=[
                str(self.bin / "postgres"),
                "-D",
                str(self.data),
                "-k",
                str(self.socket_dir),
                # No TCP at all: only the socket in our private directory.
                "-c",
                "listen_addresses=",
                # A test database: durability is worthless, speed is not.
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ],
            env=self._env(),
            log_path=self.root / "postgres.log",
            account=self.account,
            # SIGINT is PostgreSQL's "fast" shutdown: it does not wait for clients.
            stop_signal=signal.SIGINT,
        ).start()
        wait_until(
            lambda: True if self._ready() else None,
            timeout=timeout,
            what="postgres to accept connections",
            alive=self.service.exited,
        )
        return self

    def _ready(self) -> bool:
        probe = run(
            [str(self.bin / "pg_isready"), "-h", str(self.socket_dir), "-U", self.superuser],
            env=self._env(),
            timeout=10,
        )
        return probe.returncode == 0

    def psql(self, sql: str, *, database: str = "postgres") -> str:
        """Run one SQL statement, return unaligned tuples-only output."""
        out = run(
            [
                str(self.bin / "psql"),
                "-h",
                str(self.socket_dir),
                "-U",
                self.superuser,
                "-d",
                database,
                "-v",
                "ON_ERROR_STOP=1",
                "-Atc",
                sql,
            ],
            env=self._env(),
            timeout=30,
        )
        if out.returncode != 0:
            raise RuntimeError(f"psql failed ({out.returncode}): {out.stderr.strip()}")
        return out.stdout.strip()

    def create_database(self, name: str) -> str:
        """Create `name` and return a libpq URL for it over the socket."""
        if not name.isidentifier():
            raise ValueError(f"database name must be an identifier: {name!r}")
        self.psql(f"CREATE DATABASE {name}")
        host = urllib.parse.quote(str(self.socket_dir), safe="")
        return f"postgres://{self.superuser}@/{name}?host={host}&sslmode=disable"

    def stop(self) -> None:
        if self.service is not None:
            self.service.stop(grace=20.0)
            self.service = None
