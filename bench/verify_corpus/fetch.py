"""Fetch a corpus project from its registry (cached) and prepare it: overlay, dependencies.

The cache (`$SANDLOT_CORPUS_CACHE`, default ~/.cache/sandlot/verify-corpus) keeps each
pristine download and one prepared copy per overlay content, so a second run downloads and
installs nothing.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path

from .projects import Project

CACHE = Path(os.environ.get("SANDLOT_CORPUS_CACHE", Path.home() / ".cache/sandlot/verify-corpus"))


def _download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as answer:
        data: bytes = answer.read()
        return data


def _strip_top(names: list[str]) -> str:
    tops = {n.split("/", 1)[0] for n in names}
    return next(iter(tops)) + "/" if len(tops) == 1 else ""


def _untar(data: bytes, dest: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        members = [m for m in archive.getmembers() if m.isfile() or m.isdir()]
        top = _strip_top([m.name for m in members])
        for member in members:
            member.name = member.name[len(top):] if member.name.startswith(top) else member.name
        archive.extractall(dest, members=[m for m in members if m.name], filter="data")


def _unzip(data: bytes, dest: Path, top: str) -> None:
    """A module zip: every path starts with `module@version/`."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            if not info.filename.startswith(top):
                continue
            name = info.filename[len(top):]
            if not name or info.is_dir():
                continue
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(info))


def pristine(project: Project) -> Path:
    """The project as its registry publishes it (downloaded once)."""
    where = CACHE / "pristine" / f"{project.name}-{project.version}"
    if (where / ".corpus-complete").exists():
        return where
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    if project.registry == "go":
        _unzip(_download(f"https://proxy.golang.org/{project.package}/@v/{project.version}.zip"),
               where, f"{project.package}@{project.version}/")
    elif project.registry == "crate":
        _untar(_download(f"https://static.crates.io/crates/{project.package}/"
                         f"{project.package}-{project.version}.crate"), where)
    elif project.registry == "pypi":
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["python3", "-m", "pip", "download", "-q", "--no-deps",
                            "--no-binary", ":all:", f"{project.package}=={project.version}",
                            "-d", tmp], check=True)
            (sdist,) = Path(tmp).iterdir()
            _untar(sdist.read_bytes(), where)
    elif project.registry == "npm":
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["npm", "pack", "-q", f"{project.package}@{project.version}"],
                           cwd=tmp, check=True, capture_output=True)
            (tgz,) = Path(tmp).glob("*.tgz")
            _untar(tgz.read_bytes(), where)
    else:
        raise ValueError(f"unknown registry {project.registry!r}")
    (where / ".corpus-complete").write_text(project.version)
    return where


def _overlay_digest(project: Project) -> str:
    digest = hashlib.sha256()
    for path in sorted(project.overlay.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(project.overlay)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def prepared(project: Project) -> Path:
    """Pristine + overlay + dependencies, ready to copy into a sandbox."""
    where = CACHE / "prepared" / f"{project.name}-{project.version}-{_overlay_digest(project)}"
    if (where / ".corpus-complete").exists():
        return where
    shutil.rmtree(where, ignore_errors=True)
    shutil.copytree(pristine(project), where, symlinks=True)
    (where / ".corpus-complete").unlink()
    if project.overlay.is_dir():
        shutil.copytree(project.overlay, where, dirs_exist_ok=True)
    if project.registry == "npm":
        lock = (where / "package-lock.json").exists()
        # No install scripts: a package's git hooks (pre-commit) have no business here.
        subprocess.run(["npm", "ci" if lock else "install", "--ignore-scripts", "--no-audit",
                        "--no-fund", "--loglevel=error"], cwd=where, check=True)
    if project.registry == "go" and not (where / "go.mod").exists():
        # A module from before modules: the proxy serves it without a go.mod.
        subprocess.run(["go", "mod", "init", project.package], cwd=where, check=True,
                       capture_output=True)
    (where / ".corpus-complete").write_text(project.version)
    return where
