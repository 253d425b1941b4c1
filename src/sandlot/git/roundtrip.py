"""The git round trip: a host repository into a sandbox, the agent's commits back as a branch.

push_in builds the sandbox's repository on the host, in a temporary directory (fetch of the one
commit wanted, `depth` honoured, nothing else: no remote, no host path, no credential in its
config), then copies its `.git` into the sandbox as ONE tar stream and checks the branch out
there. pull_out bundles the commits made since `refs/sandlot/base` inside the sandbox, copies the
bundle out, fetches its objects into the host repository and creates the branch with
`git update-ref`: the only host write that is not an object. See adr/0021.
"""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from .. import _shell
from ..errors import (
    COMMIT_UNCOMMITTED,
    FORCE,
    BranchExistsError,
    BundleTooLargeError,
    ConfigurationError,
    GitDestinationError,
    GitError,
    GitNotFoundError,
    GitRefNotFoundError,
    GitStepTimeoutError,
    SandboxGitOutputError,
    SandboxRepositoryError,
)
from ..sandbox import Sandbox
from .host import branch_exists, check_branch_name, git, toplevel

BASE_REF = "refs/sandlot/base"
DEFAULT_BRANCH = "sandlot"
_SYNTHETIC = {
    "GIT_AUTHOR_NAME": "sandlot", "GIT_AUTHOR_EMAIL": "sandlot@sandbox.invalid",
    "GIT_COMMITTER_NAME": "sandlot", "GIT_COMMITTER_EMAIL": "sandlot@sandbox.invalid",
}  # fmt: skip
GIT_MISSING = 127
#: Largest patch diff() returns (a bigger one is a typed error: use pull_out).
DIFF_LIMIT = 64 << 20
_DEST_NOT_EMPTY = 3
_NO_REPOSITORY = 4
_NO_BASE = 5
_INSTALL = (
    "install git in the sandbox: add it to the Docker image (e.g. apt-get install -y git) or to "
    "the Coder template; a local sandbox uses the host's git"
)


@dataclass(frozen=True)
class GitCheckout:
    """What push_in made: the repository at `path`, on `branch`, at `commit`.

    `base` (also `refs/sandlot/base` in the sandbox) is where pull_out counts new commits from:
    `commit`, or the extra commit holding uncommitted host changes when `snapshot` is true."""

    path: str
    branch: str
    commit: str
    base: str
    snapshot: bool = False
    depth: int | None = None
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Commit:
    sha: str
    author: str
    email: str
    date: str
    subject: str


@dataclass(frozen=True)
class FileChange:
    """One changed path: `status` is git's letter (A, M, D, R, T, ...); `old_path` for renames."""

    status: str
    path: str
    old_path: str | None = None


@dataclass(frozen=True)
class PullResult:
    """What came back. `branch` is None when there was nothing new (no branch was written), or
    when the commits went to `rescue_ref` instead."""

    branch: str | None
    head: str
    base: str
    commits: list[Commit]
    files: list[FileChange]
    uncommitted: list[str]
    committed_uncommitted: bool = False
    rewritten: bool = False
    notes: list[str] = field(default_factory=list)
    #: The ref the commits were kept under when `branch` could not be written (rescue=True).
    rescue_ref: str | None = None


@dataclass(frozen=True)
class FileStat:
    path: str
    added: int | None  # None: a binary file
    deleted: int | None


@dataclass(frozen=True)
class GitDiff:
    """The sandbox's work (commits and uncommitted changes) against the base, as one patch."""

    base: str
    patch: str
    files: list[FileStat]


# ---- push_in ---------------------------------------------------------------------------------

_PREFLIGHT = r"""
command -v git >/dev/null 2>&1 || exit 127
mkdir -p -- "$1" || exit 1
[ -z "$(ls -A -- "$1")" ] || exit 3
"""

_CHECKOUT = r"""
cd -- "$1" || exit 1
git reset -q --hard || exit 1
if [ -z "$(git config user.email)" ]; then
  git config user.name sandlot && git config user.email sandlot@sandbox.invalid
fi
"""


async def push_in(
    sandbox: Sandbox,
    repo: str = ".",
    ref: str = "HEAD",
    dest: str | None = None,
    *,
    depth: int | None = None,
    include_uncommitted: bool = False,
    branch: str = DEFAULT_BRANCH,
) -> GitCheckout:
    """Put the host repository's `ref` into the sandbox at `dest` (default: the worktree),
    checked out on `branch`. `dest` must be empty or missing."""
    root = await toplevel(repo)
    await check_branch_name(root, branch)
    if depth is not None and (not isinstance(depth, int) or depth < 1):
        raise ConfigurationError(f"depth must be a positive int or None, got {depth!r}")
    commit = await _resolve(root, ref)
    base, snapshot = commit, False
    if include_uncommitted:
        if commit != await _resolve(root, "HEAD"):
            raise ConfigurationError(
                "include_uncommitted=True brings the work tree's changes, which sit on HEAD; "
                f"ref={ref!r} is another commit: push HEAD, or leave include_uncommitted off"
            )
        base, snapshot = await _snapshot(root, commit)
    notes = await _limitations(root, base)
    where = _shell.validate_sandbox_path(dest or sandbox.worktree, "push_in destination")
    ready = await sandbox.exec(["sh", "-c", _PREFLIGHT, "sh", where])
    if ready.exit_code == GIT_MISSING:
        raise GitNotFoundError(f"git is not installed in sandbox {sandbox.name!r}: {_INSTALL}")
    if ready.exit_code == _DEST_NOT_EMPTY:
        raise GitDestinationError(
            f"push_in destination {where} is not empty; give an empty or new directory as dest="
        )
    if ready.exit_code != 0:
        raise GitError(f"cannot prepare {where} in the sandbox", stderr=ready.stderr)
    with tempfile.TemporaryDirectory(prefix="sandlot-git-") as tmp:
        staging = Path(tmp) / "repo"
        await _build(root, staging, base, branch, depth)
        try:
            await sandbox.copy_in(staging / ".git", posixpath.join(where, ".git"))
            done = await sandbox.exec(["sh", "-c", _CHECKOUT, "sh", where])
            if done.exit_code != 0:
                raise GitError(f"checking out {branch} in {where} failed", stderr=done.stderr)
        except BaseException:
            await sandbox.exec(["rm", "-rf", "--", posixpath.join(where, ".git")])
            raise
    return GitCheckout(path=where, branch=branch, commit=commit, base=base, snapshot=snapshot,
                       depth=depth, notes=notes)


async def _resolve(root: Path, ref: str) -> str:
    if not ref or "\0" in ref:
        raise GitRefNotFoundError(f"ref {ref!r} is empty or holds a NUL byte")
    found = await git(root, "rev-parse", "--verify", "--quiet", "--end-of-options",
                      f"{ref}^{{commit}}", check=False)
    if found.code != 0:
        raise GitRefNotFoundError(
            f"{ref!r} does not name a commit in {root}; check it with `git rev-parse {ref}`",
            stderr=found.stderr,
        )
    return found.text.strip()


async def _snapshot(root: Path, head: str) -> tuple[str, bool]:
    """A commit on `head` holding tracked changes and untracked, non-ignored files, made with
    a temporary index: the host's index, work tree and refs are not touched."""
    with tempfile.TemporaryDirectory(prefix="sandlot-index-") as tmp:
        index = Path(tmp) / "index"
        real = Path((await git(root, "rev-parse", "--git-path", "index")).text.strip())
        real = real if real.is_absolute() else root / real
        if real.exists():
            index.write_bytes(real.read_bytes())
        env = {"GIT_INDEX_FILE": str(index)}
        await git(root, "add", "-A", env=env, what="reading the work tree's changes")
        tree = (await git(root, "write-tree", env=env)).text.strip()
    if tree == (await git(root, "rev-parse", f"{head}^{{tree}}")).text.strip():
        return head, False
    made = await git(root, "commit-tree", tree, "-p", head, "-m",
                     "sandlot: uncommitted changes brought in by push_in", env=_SYNTHETIC)
    return made.text.strip(), True


async def _limitations(root: Path, commit: str) -> list[str]:
    notes: list[str] = []
    listing = await git(root, "ls-tree", "-r", "-z", "--full-tree", commit)
    for entry in listing.stdout.split(b"\0"):
        if entry.startswith(b"160000 "):
            path = entry.split(b"\t", 1)[1].decode("utf-8", "replace")
            notes.append(f"submodule {path} is not brought in (only its commit id is)")
    attributes = await git(root, "show", f"{commit}:.gitattributes", check=False)
    if attributes.code == 0 and b"filter=lfs" in attributes.stdout:
        notes.append("Git LFS files arrive as pointer files (run `git lfs pull` in the sandbox)")
    return notes


async def _build(root: Path, staging: Path, commit: str, branch: str, depth: int | None) -> None:
    staging.mkdir()
    await git(staging, "init", "-q", what="making the sandbox repository")
    fetch = ["fetch", "-q", "--no-tags", "--no-write-fetch-head"]
    if depth is not None:
        fetch.append(f"--depth={depth}")
    await git(staging, *fetch, "--end-of-options", str(root), commit,
              what=f"fetching {commit[:12]}")
    await git(staging, "update-ref", f"refs/heads/{branch}", commit)
    await git(staging, "update-ref", BASE_REF, commit)
    await git(staging, "symbolic-ref", "HEAD", f"refs/heads/{branch}")
    for sample in (staging / ".git" / "hooks").glob("*.sample"):
        sample.unlink()


# ---- pull_out --------------------------------------------------------------------------------

#: Seconds each step inside the sandbox (reading its repository and bundling, copying the
#: bundle out) may take before pull_out gives up with GitStepTimeoutError.
DEFAULT_STEP_TIMEOUT = 600.0
#: Largest bundle pull_out accepts from a sandbox (BundleTooLargeError above it).
DEFAULT_MAX_BUNDLE = 2 << 30
_OBJECT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
# Sandbox git runs with the settings a hostile repository config could turn into a hang or a
# program run neutralised: no fsmonitor (a command run by status), no hooks, no signing program
# for sandlot's own commit. sandlot's commit (commit_uncommitted) is sandlot's act, not the
# agent's, so the agent's hooks do not run for it (the agent's own commits ran them already).
# Whatever still stalls (a clean filter named in .gitattributes) is bounded by step_timeout;
# whatever git prints is validated before any of it reaches the host (adr/0030).
_STATE = r"""
command -v git >/dev/null 2>&1 || exit 127
cd -- "$1" 2>/dev/null && [ -d .git ] || exit 4
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_CONFIG_PARAMETERS
g() {
  git -c core.fsmonitor=false -c core.hooksPath=/dev/null -c commit.gpgSign=false \
    -c core.untrackedCache=false "$@"
}
has_base() { g rev-parse -q --verify "refs/sandlot/base^{commit}" >/dev/null; }
if [ -n "$2" ] && { has_base || exit 5; } && [ -n "$(g status --porcelain)" ]; then
  g add -A && g -c user.name="$(g config user.name || echo sandlot)" \
    -c user.email="$(g config user.email || echo sandlot@sandbox.invalid)" \
    commit -q --no-verify -m "$2" </dev/null || exit 1
  echo committed
else
  echo kept
fi
revs=$(g rev-parse "refs/sandlot/base^{commit}" HEAD) || { has_base || exit 5; exit 1; }
set -- $revs
echo "$1"
echo "$2"
out=.git/sandlot-out.bundle
# The bundle is made while status reads the work tree: neither waits for the other.
bundling=
rm -f "$out"
if [ "$2" != "$1" ]; then
  g bundle create -q "$out" HEAD "^$1" & bundling=$!
fi
g status --porcelain=v1 -z --untracked-files=all >.git/sandlot-status || exit 1
if [ -n "$bundling" ]; then wait "$bundling" || exit 6; fi
if [ -f "$out" ]; then echo $(( $(wc -c <"$out") )); else echo 0; fi
cat .git/sandlot-status; rm -f .git/sandlot-status
"""
_BUNDLE_FAILED = 6


async def pull_out(
    sandbox: Sandbox,
    repo: str = ".",
    branch: str = "sandlot/work",
    *,
    dest: str | None = None,
    commit_uncommitted: str | None = None,
    force: bool = False,
    rescue: bool = False,
    step_timeout: float = DEFAULT_STEP_TIMEOUT,
    max_bundle: int = DEFAULT_MAX_BUNDLE,
) -> PullResult:
    """Bring the commits made in the sandbox since its base back as host branch `branch`.

    Only refs are written on the host (objects, then `branch`); the checked-out branch, index
    and work tree are never touched. Uncommitted sandbox work is committed first when
    `commit_uncommitted` is a message, else listed in `uncommitted`.

    With `rescue`, when `branch` cannot be written (it exists and `force` is off, it is
    checked out, or it appeared meanwhile) the commits come back to a new ref
    `refs/sandlot/rescue/<branch>-<UTC time>` instead (`PullResult.rescue_ref`; `branch` is
    then None), so they are never lost. Each step inside the sandbox is bounded by
    `step_timeout` seconds (GitStepTimeoutError), the bundle by `max_bundle` bytes
    (BundleTooLargeError)."""
    where = _shell.validate_sandbox_path(dest or sandbox.worktree, "pull_out source")
    message = commit_uncommitted or ""
    if "\0" in message:
        raise ConfigurationError("commit_uncommitted holds a NUL byte")
    if not step_timeout > 0:
        raise ConfigurationError(f"step_timeout must be a positive number, got {step_timeout!r}")
    if not isinstance(max_bundle, int) or max_bundle < 1:
        raise ConfigurationError(f"max_bundle must be a positive int, got {max_bundle!r}")
    limits = _Limits(step_timeout, max_bundle)
    bundle = posixpath.join(where, ".git", "sandlot-out.bundle")
    leftover = True  # a bundle may be in the sandbox until _bring_back has removed it
    try:
        if message:
            # The sandbox is changed (a commit) only once the host has accepted the branch.
            target = await _host_accepts(repo, branch, force, rescue)
            state = await _sandbox_state(sandbox, where, message, limits)
        else:
            # Reading the sandbox (and bundling its new commits) changes nothing there, so it
            # runs while the host is checked: a refusal only leaves a bundle, removed below.
            # Both are awaited; the host's refusal is the one reported when both fail.
            host, read = await asyncio.gather(_host_accepts(repo, branch, force, rescue),
                                              _sandbox_state(sandbox, where, message, limits),
                                              return_exceptions=True)
            if isinstance(host, BaseException):
                raise host
            if isinstance(read, BaseException):
                raise read
            target, state = host, read
        result = await _bring_back(sandbox, target, state, bundle, limits)
        leftover = False
    except BaseExceptionGroup as group:  # a failure of _bring_back's tasks: raise it as it is
        raise group.exceptions[0] from None
    finally:
        if leftover:
            # Cleanup of a failed pull must not hide why it failed (e.g. a vanished sandbox).
            with contextlib.suppress(Exception), anyio.move_on_after(min(step_timeout, 30)):
                await sandbox.exec(["rm", "-f", "--", bundle])
    return result


@dataclass(frozen=True)
class _Limits:
    step_timeout: float
    max_bundle: int


@dataclass(frozen=True)
class _SandboxState:
    committed: bool
    base: str
    head: str
    size: int
    uncommitted: list[str]


@dataclass(frozen=True)
class _Target:
    """Where the commits go on the host: `branch`, or a rescue ref when `to_rescue`."""

    root: Path
    branch: str
    force: bool
    rescue: bool
    to_rescue: bool


async def _host_accepts(repo: str, branch: str, force: bool, rescue: bool) -> _Target:
    """The host repository's root, once `branch` may be written there (or, with `rescue`,
    once a rescue ref will be written instead)."""
    root = await toplevel(repo)
    # Independent host checks, at once: each is a git process.
    exists, taken = await asyncio.gather(branch_exists(root, branch),
                                         _refuse_checked_out(root, f"refs/heads/{branch}"),
                                         return_exceptions=True)
    if isinstance(exists, BaseException):
        raise exists
    if isinstance(taken, BaseException):
        if rescue and isinstance(taken, BranchExistsError):
            return _Target(root, branch, force, rescue, to_rescue=True)
        raise taken
    if exists and not force:
        if rescue:
            return _Target(root, branch, force, rescue, to_rescue=True)
        raise BranchExistsError(
            f"branch {branch!r} already exists in {root}; choose another name or "
            f"{FORCE.python} to move it"
        ).hinted(FORCE)
    return _Target(root, branch, force, rescue, to_rescue=False)


async def check_target(repo: str, branch: str, *, force: bool = False) -> Path:
    """The checks pull_out makes on the host, for a command to make before it creates a
    sandbox: `repo` is a git repository, `branch` a valid name that is free (or `force`) and
    not checked out. Returns the repository's root; raises the typed error pull_out would."""
    return (await _host_accepts(repo, branch, force, rescue=False)).root


async def resolve(repo: str, ref: str) -> str:
    """The commit `ref` names in `repo` (GitRefNotFoundError if none), as push_in reads it."""
    return await _resolve(await toplevel(repo), ref)


def _object_id(value: str, what: str) -> str:
    if not _OBJECT_ID.fullmatch(value):
        raise SandboxGitOutputError(
            f"the sandbox's git printed {value[:60]!r} as {what}, which is not a commit id (40 "
            "or 64 hex digits): a replaced or broken git in the sandbox; nothing was written "
            "on the host"
        )
    return value


async def _sandbox_state(sandbox: Sandbox, where: str, message: str,
                         limits: _Limits) -> _SandboxState:
    """The sandbox repository's base, HEAD and status; its new commits bundled when any."""
    state = await sandbox.exec(["sh", "-c", _STATE, "sh", where, message],
                               timeout=limits.step_timeout)
    if state.timed_out:
        raise GitStepTimeoutError(
            f"reading the sandbox repository at {where} (commit, status, bundle) took longer "
            f"than {limits.step_timeout:g}s and was ended; a git setting or filter of that "
            "repository may hang (e.g. a clean filter in .gitattributes)", stderr=state.stderr,
        )
    if state.exit_code == GIT_MISSING:
        raise GitNotFoundError(f"git is not installed in sandbox {sandbox.name!r}: {_INSTALL}")
    if state.exit_code == _NO_REPOSITORY:
        raise SandboxRepositoryError(
            f"there is no git repository at {where} in the sandbox (deleted, or push_in put it "
            "elsewhere: pass the same dest=)", stderr=state.stderr,
        )
    if state.exit_code == _NO_BASE:
        raise SandboxRepositoryError(
            f"the repository at {where} has no {BASE_REF} (was it made by push_in? was the ref "
            "deleted?); without it sandlot cannot tell which commits are new",
            stderr=state.stderr,
        )
    if state.exit_code == _BUNDLE_FAILED:
        raise GitError("bundling the sandbox's new commits failed", stderr=state.stderr)
    if state.exit_code != 0:
        raise GitError(f"reading the sandbox repository at {where} failed", stderr=state.stderr)
    lines = state.stdout.split("\n", 4)
    if len(lines) < 4 or lines[0] not in ("committed", "kept") or not lines[3].isdigit():
        raise SandboxGitOutputError(
            f"the sandbox's answer about its repository at {where} is not in the form sandlot "
            f"asked for (it begins {state.stdout[:80]!r}): a replaced or broken git or shell in "
            "the sandbox; nothing was written on the host"
        )
    base = _object_id(lines[1], "the base commit")
    head = _object_id(lines[2], "HEAD")
    return _SandboxState(lines[0] == "committed", base, head, int(lines[3]),
                         _status_paths(lines[4] if len(lines) > 4 else ""))


def _too_large(size: int, limits: _Limits) -> BundleTooLargeError:
    return BundleTooLargeError(
        f"the bundle of the sandbox's new commits is {size} bytes, more than max_bundle="
        f"{limits.max_bundle} ({limits.max_bundle >> 20} MiB); pass a larger max_bundle= if "
        "that much is expected"
    )


def _rescue_name(branch: str, attempt: int) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return f"refs/sandlot/rescue/{branch}-{stamp}" + (f"-{attempt}" if attempt else "")


async def _write_ref(target: _Target, head: str) -> tuple[str | None, str | None]:
    """Write the branch (or a rescue ref): (branch, rescue_ref), one of them None.

    Each write is conditional on the value sandlot saw (create-only, or with force the value
    read just before): a ref changed meanwhile by someone else is never overwritten."""
    root = target.root
    if not target.to_rescue:
        full = f"refs/heads/{target.branch}"
        old = ""
        if target.force:
            seen = await git(root, "rev-parse", "-q", "--verify", "--end-of-options",
                             f"{full}^{{commit}}", check=False)
            old = seen.text.strip() if seen.code == 0 else ""
        done = await git(root, "update-ref", "-m", "sandlot pull_out", "--end-of-options", full,
                         head, old, check=False)
        if done.code == 0:
            return target.branch, None
        if not target.rescue:
            raise GitError(f"creating branch {target.branch} failed (exit {done.code}; did "
                           "another program create or move it meanwhile?)", stderr=done.stderr)
    for attempt in range(5):
        rescue = _rescue_name(target.branch, attempt)
        done = await git(root, "update-ref", "-m", "sandlot pull_out (rescue)",
                         "--end-of-options", rescue, head, "", check=False)
        if done.code == 0:
            return None, rescue
    raise GitError(f"writing a rescue ref for {target.branch} failed", stderr=done.stderr)


async def _bring_back(sandbox: Sandbox, target: _Target, state: _SandboxState, bundle: str,
                      limits: _Limits) -> PullResult:
    root = target.root
    notes: list[str] = []
    if state.uncommitted:
        notes.append(f"{len(state.uncommitted)} uncommitted path(s) in the sandbox were not "
                     f"brought back; {COMMIT_UNCOMMITTED.python} to include them")
    base, head = state.base, state.head
    if head == base:
        return PullResult(branch=None, head=head, base=base, commits=[], files=[],
                          uncommitted=state.uncommitted,
                          committed_uncommitted=state.committed,
                          notes=[*notes, "no new commits: no branch was written"])
    if state.size > limits.max_bundle:
        raise _too_large(state.size, limits)
    with tempfile.TemporaryDirectory(prefix="sandlot-bundle-") as tmp:
        local = Path(tmp) / "out.bundle"
        with anyio.move_on_after(limits.step_timeout) as copying:
            await sandbox.copy_out(bundle, local)
        if copying.cancelled_caught:
            raise GitStepTimeoutError(
                f"copying the bundle of the sandbox's new commits ({state.size} bytes) out "
                f"took longer than {limits.step_timeout:g}s"
            )
        size = local.stat().st_size
        if size > limits.max_bundle:  # the sandbox said less than it handed over
            raise _too_large(size, limits)
        # Objects only (fetch checks the bundle's prerequisites itself): no ref, no FETCH_HEAD.
        # The sandbox's copy of the bundle is removed meanwhile.
        async with asyncio.TaskGroup() as group:
            group.create_task(git(root, "fetch", "-q", "--no-tags", "--no-write-fetch-head",
                                  "--end-of-options", str(local), head,
                                  what="fetching the sandbox's commits"))
            group.create_task(sandbox.exec(["rm", "-f", "--", bundle],
                                           timeout=limits.step_timeout))
    # The report reads only the fetched objects (the base is a prerequisite of the bundle, so
    # the host has it too): all at once. The ref is written last, so a pull that fails leaves
    # every host ref as it was.
    async with asyncio.TaskGroup() as group:
        commits = group.create_task(_commits(root, base, head))
        files = group.create_task(_files(root, base, head))
        ancestry = group.create_task(git(root, "merge-base", "--is-ancestor",
                                         "--end-of-options", base, head, check=False))
    rewritten = ancestry.result().code != 0
    if rewritten:
        notes.append("the sandbox rewrote history: the base is no longer an ancestor of its HEAD")
    branch, rescue_ref = await _write_ref(target, head)
    if rescue_ref is not None:
        notes.append(
            f"branch {target.branch!r} could not be written (it exists or is checked out); the "
            f"commits are kept as {rescue_ref}: recover them with `git branch NAME {rescue_ref}`"
        )
    return PullResult(
        branch=branch, head=head, base=base, commits=commits.result(), files=files.result(),
        uncommitted=state.uncommitted, committed_uncommitted=state.committed,
        rewritten=rewritten, notes=notes, rescue_ref=rescue_ref,
    )


def _status_paths(porcelain: str) -> list[str]:
    """Paths of `git status --porcelain=v1 -z` (a rename's old path follows it: skipped)."""
    fields = porcelain.split("\0")
    paths: list[str] = []
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if len(entry) > 3:
            paths.append(entry[3:])
            if entry[0] in "RC":
                i += 1
    return paths


async def _refuse_checked_out(root: Path, full: str) -> None:
    listing = await git(root, "worktree", "list", "--porcelain")
    for line in listing.text.splitlines():
        if line == f"branch {full}":
            raise BranchExistsError(
                f"branch {full.removeprefix('refs/heads/')!r} is checked out in a work tree of "
                f"{root}; sandlot never moves a checked-out branch: pick another name"
            )


async def _commits(root: Path, base: str, head: str) -> list[Commit]:
    out = await git(root, "log", "-z", "--format=%H%x1f%an%x1f%ae%x1f%aI%x1f%s",
                    "--end-of-options", f"^{base}", head)
    commits = []
    for record in out.text.split("\0"):
        if record.strip():
            sha, author, email, date, subject = record.strip("\n").split("\x1f", 4)
            commits.append(Commit(sha, author, email, date, subject))
    return commits


async def _files(root: Path, base: str, head: str) -> list[FileChange]:
    out = await git(root, "diff", "--name-status", "-z", "-M", "--end-of-options", base, head)
    fields = out.text.split("\0")
    changes: list[FileChange] = []
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i]
        if status[0] in "RC":
            changes.append(FileChange(status[0], fields[i + 2], fields[i + 1]))
            i += 3
        else:
            changes.append(FileChange(status[0], fields[i + 1]))
            i += 2
    return changes


# ---- diff ------------------------------------------------------------------------------------

_DIFF = r"""
command -v git >/dev/null 2>&1 || exit 127
cd -- "$1" 2>/dev/null && [ -d .git ] || exit 4
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_CONFIG_PARAMETERS
g() { git -c core.fsmonitor=false -c core.hooksPath=/dev/null "$@"; }
base=$(g rev-parse -q --verify "refs/sandlot/base^{commit}") || exit 5
idx=.git/sandlot-diff-index
cp .git/index "$idx" 2>/dev/null || rm -f "$idx"
GIT_INDEX_FILE=$idx g add -A || { rm -f "$idx"; exit 1; }
echo "$base"
GIT_INDEX_FILE=$idx g diff --no-ext-diff --no-textconv --cached -z --numstat -M "$base"
printf '\036'
GIT_INDEX_FILE=$idx g diff --no-ext-diff --no-textconv --cached --binary -M "$base"
rm -f "$idx"
"""


async def diff(sandbox: Sandbox, dest: str | None = None, *,
               step_timeout: float = DEFAULT_STEP_TIMEOUT) -> GitDiff:
    """The sandbox's work against its base (commits and uncommitted changes, untracked files
    included) as a unified diff with binary patches, plus per-file line counts."""
    where = _shell.validate_sandbox_path(dest or sandbox.worktree, "diff source")
    done = await sandbox.exec(["sh", "-c", _DIFF, "sh", where], max_output=DIFF_LIMIT,
                              timeout=step_timeout)
    if done.timed_out:
        raise GitStepTimeoutError(f"diffing the sandbox repository at {where} took longer "
                                  f"than {step_timeout:g}s and was ended", stderr=done.stderr)
    if done.exit_code == GIT_MISSING:
        raise GitNotFoundError(f"git is not installed in sandbox {sandbox.name!r}: {_INSTALL}")
    if done.exit_code in (_NO_REPOSITORY, _NO_BASE):
        raise SandboxRepositoryError(
            f"no push_in repository with {BASE_REF} at {where} in the sandbox",
            stderr=done.stderr,
        )
    if done.exit_code != 0:
        raise GitError(f"diffing the sandbox repository at {where} failed", stderr=done.stderr)
    if done.stdout_truncated:
        raise GitError(
            f"the sandbox's diff is larger than {DIFF_LIMIT >> 20} MiB; bring the work back "
            "with pull_out instead"
        )
    base, _, rest = done.stdout.partition("\n")
    numstat, _, patch = rest.partition("\x1e")
    return GitDiff(base=base.strip(), patch=patch, files=_numstat(numstat))


def _numstat(text: str) -> list[FileStat]:
    fields = text.split("\0")
    stats: list[FileStat] = []
    i = 0
    while i < len(fields) and fields[i].strip():
        added, deleted, path = fields[i].lstrip("\n").split("\t", 2)
        if not path:  # a rename: the old and new paths follow as their own fields
            path = fields[i + 2]
            i += 3
        else:
            i += 1
        stats.append(FileStat(path, None if added == "-" else int(added),
                              None if deleted == "-" else int(deleted)))
    return stats
