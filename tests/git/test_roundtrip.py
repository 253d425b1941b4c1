"""The git round trip on every contract backend, with real git repositories on both sides."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import anyio
import pytest

from sandlot import (
    BranchExistsError,
    GitDestinationError,
    GitRefNotFoundError,
    InvalidBranchNameError,
    NotAGitRepositoryError,
    Sandbox,
    SandboxRepositoryError,
    git,
)

from .conftest import run

pytestmark = pytest.mark.anyio

BOB = ("GIT_AUTHOR_NAME=Bob GIT_AUTHOR_EMAIL=bob@example.org "
       "GIT_AUTHOR_DATE='2001-02-03T04:05:06+07:00'")


def _host_state(repo: Path) -> str:
    """Everything pull_out must not change: refs, HEAD, index, every work tree file."""
    digest = hashlib.sha256()
    for path in sorted(repo.rglob("*")):
        if ".git" in path.relative_to(repo).parts[:1] and path.name not in ("HEAD", "index"):
            continue
        if path.is_file():
            digest.update(str(path).encode() + path.read_bytes())
    digest.update(run(repo, "for-each-ref").encode())
    return digest.hexdigest()


async def _sh(sandbox: Sandbox, path: str, line: str) -> str:
    done = await sandbox.exec(line, cwd=path)
    assert done.exit_code == 0, (line, done.stderr)
    return done.stdout


async def test_commits_come_back_whole(git_sandbox: Sandbox, host_repo: Path) -> None:
    checkout = await git.push_in(git_sandbox, repo=str(host_repo))
    assert checkout.commit == run(host_repo, "rev-parse", "HEAD").strip()
    path = checkout.path
    assert (await _sh(git_sandbox, path, "git rev-parse --abbrev-ref HEAD")).strip() == "sandlot"
    assert (await _sh(git_sandbox, path, "cat run.sh; test -x run.sh && echo x")) == \
        "#!/bin/sh\necho run\nx\n"
    # Two authors, a binary change, a rename, a deletion, a mode change, a merge commit.
    await _sh(git_sandbox, path, (
        "printf '\\000\\001\\002' >> data.bin && git mv old-name.txt new-name.txt && "
        "git rm -q gone.txt && chmod -x run.sh && git add -A && git commit -qm 'agent: many' && "
        f"git checkout -qb side && echo side > 'dir with space/side ü.txt' && git add -A && "
        f"env {BOB} git commit -qm 'bob: side' && git checkout -q sandlot && "
        "echo main >> README.md && git commit -qam 'agent: readme' && "
        "git merge -q --no-edit side"
    ))
    sandbox_head = (await _sh(git_sandbox, path, "git rev-parse HEAD")).strip()
    before = _host_state(host_repo)
    result = await git.pull_out(git_sandbox, repo=str(host_repo), branch="sandlot/try-1")
    assert _host_state(host_repo) != before  # a branch appeared ...
    assert result.branch == "sandlot/try-1" and result.head == sandbox_head
    # ... and it IS the sandbox's history: same commit id means same trees, modes, authors,
    # dates and messages, bit for bit.
    assert run(host_repo, "rev-parse", "sandlot/try-1").strip() == sandbox_head
    authors = {c.author for c in result.commits}
    assert authors == {"sandlot", "Bob"} or authors >= {"Bob"}
    assert any(c.subject == "bob: side" and c.date.startswith("2001-02-03") for c in result.commits)
    assert len(run(host_repo, "rev-list", "--merges", "main..sandlot/try-1").split()) == 1
    changes = {(f.status, f.path) for f in result.files}
    assert ("D", "gone.txt") in changes and ("R", "new-name.txt") in changes
    assert ("M", "run.sh") in changes and ("M", "data.bin") in changes
    assert ("A", "dir with space/side ü.txt") in changes
    assert run(host_repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"


async def test_host_checkout_dirty_and_elsewhere_is_untouched(
    git_sandbox: Sandbox, host_repo: Path
) -> None:
    checkout = await git.push_in(git_sandbox, repo=str(host_repo))
    await _sh(git_sandbox, checkout.path, "echo work > work.txt && git add work.txt && "
              "git commit -qm work")
    run(host_repo, "checkout", "-qb", "elsewhere")
    (host_repo / "README.md").write_text("dirty, unstaged\n")
    (host_repo / "staged.txt").write_text("staged\n")
    run(host_repo, "add", "staged.txt")
    (host_repo / "untracked.txt").write_text("untracked\n")
    files_before = {p: p.read_bytes() for p in host_repo.rglob("*") if p.is_file()
                    and ".git" not in p.relative_to(host_repo).parts}
    index_before = (host_repo / ".git" / "index").read_bytes()
    await git.pull_out(git_sandbox, repo=str(host_repo), branch="sandlot/dirty")
    files_after = {p: p.read_bytes() for p in host_repo.rglob("*") if p.is_file()
                   and ".git" not in p.relative_to(host_repo).parts}
    assert files_after == files_before
    assert (host_repo / ".git" / "index").read_bytes() == index_before
    assert run(host_repo, "symbolic-ref", "HEAD").strip() == "refs/heads/elsewhere"
    assert run(host_repo, "log", "-1", "--format=%s", "sandlot/dirty").strip() == "work"


async def test_nothing_of_the_host_is_left_in_the_sandbox_repository(
    git_sandbox: Sandbox, host_repo: Path
) -> None:
    run(host_repo, "remote", "add", "origin", "https://user:s3cret-token@example.org/x.git")
    checkout = await git.push_in(git_sandbox, repo=str(host_repo))
    listing = await _sh(git_sandbox, checkout.path,
                        "cat .git/config; ls .git; grep -rl . .git --exclude-dir=objects || true")
    text = listing + await _sh(git_sandbox, checkout.path, "grep -r . .git/config .git/HEAD "
                               ".git/refs 2>/dev/null || true")
    assert str(host_repo) not in text and "s3cret" not in text and "example.org" not in text
    assert "FETCH_HEAD" not in listing and "[remote" not in listing


async def test_existing_branch_force_and_checked_out_branch(
    git_sandbox: Sandbox, host_repo: Path
) -> None:
    checkout = await git.push_in(git_sandbox, repo=str(host_repo))
    await _sh(git_sandbox, checkout.path, "echo 1 > a && git add a && git commit -qm one")
    run(host_repo, "branch", "taken")
    taken = run(host_repo, "rev-parse", "taken")
    with pytest.raises(BranchExistsError, match="force=True"):
        await git.pull_out(git_sandbox, repo=str(host_repo), branch="taken")
    assert run(host_repo, "rev-parse", "taken") == taken
    with pytest.raises(BranchExistsError, match="checked out"):
        await git.pull_out(git_sandbox, repo=str(host_repo), branch="main", force=True)
    moved = await git.pull_out(git_sandbox, repo=str(host_repo), branch="taken", force=True)
    assert run(host_repo, "rev-parse", "taken").strip() == moved.head


@pytest.mark.parametrize("name", ["-x", "a b", "a..b", "x;rm -rf /", "new\nline", "x.lock",
                                  "$(touch pwned)", "back\\slash", ""])
async def test_hostile_branch_names_are_refused_before_anything(
    git_sandbox: Sandbox, host_repo: Path, name: str
) -> None:
    refs = run(host_repo, "for-each-ref")
    with pytest.raises(InvalidBranchNameError):
        await git.pull_out(git_sandbox, repo=str(host_repo), branch=name)
    with pytest.raises(InvalidBranchNameError):
        await git.push_in(git_sandbox, repo=str(host_repo), branch=name)
    assert run(host_repo, "for-each-ref") == refs
    assert not (host_repo / "pwned").exists()


async def test_bad_repo_ref_and_destination(git_sandbox: Sandbox, host_repo: Path,
                                            tmp_path: Path) -> None:
    with pytest.raises(NotAGitRepositoryError):
        await git.push_in(git_sandbox, repo=str(tmp_path))
    with pytest.raises(GitRefNotFoundError):
        await git.push_in(git_sandbox, repo=str(host_repo), ref="--upload-pack=touch pwned")
    with pytest.raises(GitRefNotFoundError):
        await git.push_in(git_sandbox, repo=str(host_repo), ref="no-such-branch")
    await git_sandbox.exec(f"echo x > {git_sandbox.worktree}/occupied")
    with pytest.raises(GitDestinationError):
        await git.push_in(git_sandbox, repo=str(host_repo))
    assert (await git_sandbox.exec("ls -A", check=True)).stdout == "occupied\n"


async def test_rewritten_history_still_comes_back(git_sandbox: Sandbox, host_repo: Path) -> None:
    checkout = await git.push_in(git_sandbox, repo=str(host_repo))
    await _sh(git_sandbox, checkout.path,
              "echo new > n && git add n && git commit -q --amend -m 'rewritten initial'")
    result = await git.pull_out(git_sandbox, repo=str(host_repo), branch="sandlot/rewritten")
    assert result.rewritten and any("rewrote history" in n for n in result.notes)
    assert run(host_repo, "log", "-1", "--format=%s", "sandlot/rewritten").strip() == \
        "rewritten initial"


async def test_deleted_repository_is_a_typed_error(git_sandbox: Sandbox, host_repo: Path) -> None:
    checkout = await git.push_in(git_sandbox, repo=str(host_repo))
    refs = run(host_repo, "for-each-ref")
    await _sh(git_sandbox, checkout.path, "git update-ref -d refs/sandlot/base")
    with pytest.raises(SandboxRepositoryError, match="refs/sandlot/base"):
        await git.pull_out(git_sandbox, repo=str(host_repo), branch="sandlot/x")
    await _sh(git_sandbox, checkout.path, "rm -rf .git")
    with pytest.raises(SandboxRepositoryError, match="no git repository"):
        await git.pull_out(git_sandbox, repo=str(host_repo), branch="sandlot/x")
    assert run(host_repo, "for-each-ref") == refs


async def test_uncommitted_work_is_reported_or_committed(
    git_sandbox: Sandbox, host_repo: Path
) -> None:
    checkout = await git.push_in(git_sandbox, repo=str(host_repo))
    await _sh(git_sandbox, checkout.path, "echo a > done.txt && git add done.txt && "
              "git commit -qm done && echo b > loose.txt && echo c >> README.md")
    kept = await git.pull_out(git_sandbox, repo=str(host_repo), branch="sandlot/kept")
    assert sorted(kept.uncommitted) == ["README.md", "loose.txt"]
    assert any("not brought back" in n for n in kept.notes)
    assert [c.subject for c in kept.commits] == ["done"]
    taken = await git.pull_out(git_sandbox, repo=str(host_repo), branch="sandlot/taken",
                               commit_uncommitted="agent: leftovers")
    assert taken.committed_uncommitted and taken.uncommitted == []
    assert [c.subject for c in taken.commits] == ["agent: leftovers", "done"]
    shown = run(host_repo, "show", "sandlot/taken:loose.txt")
    assert shown == "b\n"


async def test_include_uncommitted_and_diff(git_sandbox: Sandbox, host_repo: Path) -> None:
    (host_repo / "README.md").write_text("changed on the host\n")
    (host_repo / "new-untracked.txt").write_text("brought along\n")
    (host_repo / "ignored.log").write_text("not brought\n")
    checkout = await git.push_in(git_sandbox, repo=str(host_repo), include_uncommitted=True)
    assert checkout.snapshot and checkout.base != checkout.commit
    shown = await _sh(git_sandbox, checkout.path, "cat README.md new-untracked.txt; "
                      "ls ignored.log 2>/dev/null; git status --porcelain")
    assert shown == "changed on the host\nbrought along\n"
    await _sh(git_sandbox, checkout.path, "echo more >> README.md && printf 'a\\000b' > b.bin")
    patch = await git.diff(git_sandbox)
    assert patch.base == checkout.base
    assert {f.path for f in patch.files} == {"README.md", "b.bin"}
    assert {f.path: f.added for f in patch.files}["b.bin"] is None  # binary
    assert "+more" in patch.patch and "GIT binary patch" in patch.patch
    # The host's index and work tree are as they were.
    assert run(host_repo, "status", "--porcelain") == " M README.md\n?? new-untracked.txt\n"


async def test_depth(git_sandbox: Sandbox, host_repo: Path) -> None:
    for i in range(5):
        (host_repo / "n").write_text(str(i))
        run(host_repo, "add", "n")
        run(host_repo, "commit", "-qm", f"c{i}")
    checkout = await git.push_in(git_sandbox, repo=str(host_repo), depth=2)
    count = await _sh(git_sandbox, checkout.path, "git rev-list --count HEAD")
    assert count.strip() == "2"
    await _sh(git_sandbox, checkout.path, "echo x > y && git add y && git commit -qm shallow")
    result = await git.pull_out(git_sandbox, repo=str(host_repo), branch="sandlot/shallow")
    assert [c.subject for c in result.commits] == ["shallow"]


async def test_two_sandboxes_pull_into_one_repository_at_once(
    git_provider: object, host_repo: Path
) -> None:
    from sandlot import IsolatedSandboxProvider

    assert isinstance(git_provider, IsolatedSandboxProvider)

    async def one(index: int) -> None:
        async with git_provider.session() as sandbox:
            checkout = await git.push_in(sandbox, repo=str(host_repo))
            await _sh(sandbox, checkout.path, f"echo {index} > f{index} && git add -A && "
                      f"git commit -qm 'from {index}'")
            await git.pull_out(sandbox, repo=str(host_repo), branch=f"sandlot/par-{index}")

    async with anyio.create_task_group() as group:
        for index in range(2):
            group.start_soon(one, index)
    for index in range(2):
        assert run(host_repo, "log", "-1", "--format=%s", f"sandlot/par-{index}").strip() == \
            f"from {index}"
    assert os.path.exists(host_repo / ".git")


async def test_submodules_and_lfs_are_named_not_corrupted(
    git_sandbox: Sandbox, host_repo: Path
) -> None:
    head = run(host_repo, "rev-parse", "HEAD").strip()
    run(host_repo, "update-index", "--add", "--cacheinfo", f"160000,{head},vendor/lib")
    (host_repo / ".gitattributes").write_text("*.psd filter=lfs diff=lfs merge=lfs -text\n")
    run(host_repo, "add", ".gitattributes")
    run(host_repo, "commit", "-qm", "a submodule and LFS")
    checkout = await git.push_in(git_sandbox, repo=str(host_repo))
    assert any("submodule vendor/lib" in n for n in checkout.notes)
    assert any("LFS" in n for n in checkout.notes)
    gitlink = await _sh(git_sandbox, checkout.path, "git ls-files -s vendor/lib")
    assert gitlink.startswith(f"160000 {head}")
