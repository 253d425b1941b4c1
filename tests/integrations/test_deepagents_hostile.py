"""Hostile inputs through the Deep Agents backend: paths outside its root, symlinks the
sandbox's own commands plant, names with newlines, relative paths. Each gives the framework's
own error shape (an `error` field, a per-file error code) and nothing outside the root is read
or written. On local (the host file system is right there to check) and local-bwrap.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integrations.deepagents_harness import deepagents_backend, require_packages

require_packages()

from deepagents.backends.protocol import FileDownloadResponse, FileUploadResponse  # noqa: E402

from sandlot.errors import ConfigurationError  # noqa: E402
from sandlot.integrations.deepagents import SandlotBackend, SandlotProvider  # noqa: E402


@pytest.fixture(scope="module", params=["local", "local-bwrap"])
def backend(request: pytest.FixtureRequest) -> Iterator[SandlotBackend]:
    with deepagents_backend(request.param) as made:
        assert isinstance(made, SandlotBackend)
        yield made


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A host directory outside the sandbox's root, holding a secret."""
    path = tmp_path_factory.mktemp("outside")
    (path / "secret.txt").write_text("TOP SECRET\n")
    return path


def _q(path: object) -> str:
    return shlex.quote(str(path))


def _assert_untouched(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


def test_paths_outside_the_root_are_refused(backend: SandlotBackend, outside: Path) -> None:
    escapes = [str(outside / "secret.txt"), f"{backend.root}/../{outside.name}/secret.txt",
               "/etc/passwd"]
    for path in escapes:
        read = backend.read(path)
        assert read.file_data is None and read.error is not None
        assert "TOP SECRET" not in read.error and "outside" in read.error
        assert backend.download_files([path]) == [
            FileDownloadResponse(path=path, content=None, error="invalid_path")]
        assert backend.edit(path, "TOP", "NOT").error is not None
        assert backend.ls(path).error is not None
        assert backend.grep("SECRET", path=path).error is not None
        assert backend.glob("*", path=path).error is not None
    target = str(outside / "new.txt")
    assert backend.write(target, "x").error is not None
    assert backend.upload_files([(target, b"x")]) == [
        FileUploadResponse(path=target, error="invalid_path")]
    _assert_untouched(outside)


def test_symlinks_planted_by_the_sandbox_lead_nowhere(backend: SandlotBackend,
                                                      outside: Path) -> None:
    base = f"{backend.root}/planted"
    done = backend.execute(f"rm -rf {_q(base)} && mkdir -p {_q(base)} && "
                           f"ln -s {_q(outside)} {_q(base)}/dir && "
                           f"ln -s {_q(outside / 'secret.txt')} {_q(base)}/file && "
                           f"ln -s {_q(outside / 'new.txt')} {_q(base)}/dangling")
    assert done.exit_code == 0, done.output
    for path in (f"{base}/file", f"{base}/dir/secret.txt"):
        read = backend.read(path)
        assert read.file_data is None and read.error is not None
        assert "TOP SECRET" not in read.error
        [down] = backend.download_files([path])
        assert down.content is None and down.error == "invalid_path"
        assert backend.edit(path, "TOP", "NOT").error is not None
    for path in (f"{base}/dangling", f"{base}/dir/new.txt", f"{base}/file"):
        assert backend.write(path, "pwned").error is not None
        assert backend.upload_files([(path, b"pwned")]) == [
            FileUploadResponse(path=path, error="invalid_path")]
    listing = backend.ls(f"{base}/dir")
    assert listing.entries is None and listing.error is not None
    assert backend.glob("*", path=f"{base}/dir").error is not None
    # A search of the directory holding the links lists them, but never reads through them.
    found = backend.grep("SECRET", path=base)
    assert found.error is None and found.matches == []
    _assert_untouched(outside)


def test_names_with_newlines(backend: SandlotBackend) -> None:
    base = f"{backend.root}/newlines"
    bad = f"{base}/a\nb.txt"
    assert backend.write(bad, "x").error is not None
    assert backend.upload_files([(bad, b"x")]) == [
        FileUploadResponse(path=bad, error="invalid_path")]
    assert backend.download_files([bad]) == [
        FileDownloadResponse(path=bad, content=None, error="invalid_path")]
    # A name the sandbox's own command made is listed whole, not split at its newline.
    made = backend.execute(f"mkdir -p {_q(base)} && printf x > {_q(base)}/\"$(printf 'c\\nd')\"")
    assert made.exit_code == 0, made.output
    listing = backend.ls(base)
    assert listing.entries is not None
    assert [e["path"] for e in listing.entries] == [f"{base}/c\nd"]
    globbed = backend.glob("c*", path=base)
    assert globbed.matches is not None
    assert [m["path"] for m in globbed.matches] == ["c\nd"]


def test_relative_and_malformed_paths(backend: SandlotBackend) -> None:
    for path in ("relative.txt", "", "./x"):
        assert backend.upload_files([(path, b"x")]) == [
            FileUploadResponse(path=path, error="invalid_path")]
        assert backend.download_files([path]) == [
            FileDownloadResponse(path=path, content=None, error="invalid_path")]
        assert backend.read(path).error is not None
        assert backend.write(path, "x").error is not None


def test_execute_timeout_is_the_frameworks(backend: SandlotBackend) -> None:
    started = time.monotonic()
    result = backend.execute("echo started; sleep 60", timeout=1)
    assert time.monotonic() - started < 30  # bounded: the command is ended, not awaited
    assert result.exit_code == 124
    assert "timed out after 1 seconds" in result.output
    failed = backend.execute("echo out; echo err >&2; exit 3")
    assert failed.exit_code == 3
    assert failed.output == "out\n\n[stderr] err\n\nExit code: 3"


def test_provider_by_id_and_bad_configuration() -> None:
    with pytest.raises(ConfigurationError):
        SandlotProvider({"type": "no-such-backend"})
    with SandlotProvider({"type": "local", "on_close": "delete"}) as provider:
        first = provider.get_or_create()
        assert provider.get_or_create(first.id) is first
        second = provider.get_or_create()
        assert second.id != first.id and sorted(provider.ids()) == sorted([first.id, second.id])
        assert first.execute("echo hi").output == "hi\n"
        root = Path(first.root)
        provider.delete(first.id)
        assert first.id not in provider.ids() and not root.exists()
        with pytest.raises(ConfigurationError, match="no sandbox with id"):
            provider.get_or_create(first.id)
        kept: Any = second
    assert kept.sandbox.closed


def test_a_sandbox_gone_mid_session_gives_error_results() -> None:
    """Closed under the backend (as a vanished sandbox): every operation returns the
    framework's error shape, none raises or hangs."""
    with SandlotProvider({"type": "local", "on_close": "delete"}) as provider:
        backend = provider.get_or_create()
        path = f"{backend.root}/f.txt"
        assert backend.write(path, "x").error is None
        provider.delete(backend.id)
        assert backend.sandbox.closed
        assert "closed" in (backend.read(path).error or "")
        assert backend.write(f"{backend.root}/g.txt", "x").error is not None
        assert backend.edit(path, "x", "y").error is not None
        assert backend.ls(backend.root).error is not None
        assert backend.grep("x", path=backend.root).error is not None
        assert backend.glob("*", path=backend.root).error is not None
        [up] = backend.upload_files([(path, b"y")])
        [down] = backend.download_files([path])
        assert up.error is not None and up.error.startswith("sandbox error:")
        assert down.content is None and (down.error or "").startswith("sandbox error:")
        ran = backend.execute("echo hi")
        assert ran.exit_code is None and "closed" in ran.output


def test_import_sandlot_never_imports_the_framework() -> None:
    import subprocess
    import sys

    probe = ("import sys, sandlot, sandlot.tools, sandlot.integrations; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('deepagents', 'langchain_core', 'langchain_tests', 'agents', 'openai')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


def _thousand_uploads(backend: SandlotBackend, outside: Path | None) -> None:
    """1,000 files in one upload_files call, a few hostile ones among them: one round trip per
    batch (it was one per file), every file's own result, the rest written."""
    base = f"{backend.root}/many"
    planted = backend.execute(f"mkdir -p {_q(base)} && ln -s /etc {_q(base)}/etc")
    assert planted.exit_code == 0, planted.output
    files = [(f"{base}/f{i:04}.txt", f"{i}\n".encode()) for i in range(1000)]
    hostile = {
        100: (f"{base}/etc/pwned", "invalid_path"),
        200: ("/etc/pwned", "invalid_path"),
        300: (f"{base}/bad\nname", "invalid_path"),
        400: (f"{base}", "is_directory"),
    }
    for index, (path, _) in hostile.items():
        files[index] = (path, b"pwned")
    started = time.monotonic()
    results = backend.upload_files(files)
    took = time.monotonic() - started
    assert took < 120, f"1,000 uploads took {took:.1f}s"  # bounded: it took minutes per file
    assert [r.path for r in results] == [path for path, _ in files]
    for index, result in enumerate(results):
        want = hostile[index][1] if index in hostile else None
        assert result.error == want, (index, result)
    listing = backend.execute(f"ls {_q(base)} | wc -l; cat {_q(base)}/f0999.txt")
    assert listing.output.split() == ["997", "999"]  # 996 files and the planted link
    if outside is not None:
        assert not Path("/etc/pwned").exists()


def test_a_thousand_uploads_at_once(backend: SandlotBackend) -> None:
    _thousand_uploads(backend, None)


@pytest.mark.xdist_group("docker")
def test_a_thousand_uploads_at_once_without_python() -> None:
    """The docker tier's busybox has no python3: the batch runs the sh script instead."""
    with deepagents_backend("docker") as made:
        assert isinstance(made, SandlotBackend)
        assert made.execute("command -v python3 || echo none").output.strip() == "none"
        _thousand_uploads(made, None)


@pytest.mark.xdist_group("docker")
def test_a_sandbox_vanished_mid_call() -> None:
    """docker: the container is removed from outside while a command runs; that command and
    every later call return the framework's error shapes, within bounds."""
    import threading

    from tests.backends.docker import engine

    with deepagents_backend("docker") as made:
        assert isinstance(made, SandlotBackend)
        path = f"{made.root}/f.txt"
        assert made.write(path, "x").error is None
        box: dict[str, Any] = {}
        runner = threading.Thread(target=lambda: box.update(ran=made.execute("sleep 60")))
        runner.start()
        time.sleep(1.0)
        engine().docker("rm", "-f", made.sandbox.container_id)  # type: ignore[attr-defined]
        runner.join(60)
        assert not runner.is_alive(), "execute hung on a vanished sandbox"
        ran = box["ran"]
        assert ran.exit_code is None and ran.output.startswith("Error:")
        started = time.monotonic()
        assert made.read(path).error is not None
        assert made.write(f"{made.root}/g.txt", "x").error is not None
        assert made.edit(path, "x", "y").error is not None
        assert made.ls(made.root).error is not None
        [up] = made.upload_files([(path, b"y"), (f"{made.root}/h.txt", b"z")])[:1]
        assert (up.error or "").startswith("sandbox error:")
        [down] = made.download_files([path])
        assert down.content is None and (down.error or "").startswith("sandbox error:")
        assert made.execute("echo hi").exit_code is None
        assert time.monotonic() - started < 60
