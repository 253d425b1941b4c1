"""A sandbox that lies to pull_out (issue 35, items 1 and 4): what its git prints never reaches
the host's git as an argument, no host ref moves, no host file is written, every wait is bounded.

The attacks are the attacker run's: a program the sandbox's git runs during pull_out (a clean
filter of the sandbox repository, a post-commit hook) writes into pull_out's answer through
/proc/$PPID/fd/1, or a `git` wrapper first on the sandbox's PATH answers for git."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

import sandlot
from sandlot import (
    BranchExistsError,
    BundleTooLargeError,
    GitStepTimeoutError,
    Sandbox,
    SandboxGitOutputError,
    git,
)

from .conftest import run
from .test_roundtrip import _host_state, _sh

pytestmark = pytest.mark.anyio

#: A generous bound for "does not hang" (the old code waited for ten minutes or forever).
NO_HANG = 90


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A host file outside the repository that `--output=` would overwrite."""
    path = tmp_path / "victim.txt"
    path.write_text("precious\n")
    return path


def _with_release(host_repo: Path) -> str:
    """A host branch the user never names; `+HEAD:refs/heads/release` would move it."""
    run(host_repo, "branch", "release")
    return run(host_repo, "rev-parse", "release").strip()


def _assert_host_unharmed(host_repo: Path, before: str, victim: Path, release: str) -> None:
    assert victim.read_text() == "precious\n"
    assert run(host_repo, "rev-parse", "release").strip() == release
    assert _host_state(host_repo) == before


# ---- a program the sandbox's own git runs prints into pull_out's answer ------------------------

# A clean filter runs for every file `git add -A` reads (commit_uncommitted). Its parent is that
# git, whose stdout is the answer pull_out reads: the filter writes its own lines first.
_LYING_FILTER = (
    "printf '%s\\n' kept \"$(git rev-parse refs/sandlot/base)\" '{head}' > /proc/$PPID/fd/1; cat"
)


@pytest.mark.parametrize("fake_head", ["+HEAD:refs/heads/release", "--output={victim}"])
async def test_a_filter_printing_options_for_ids_is_refused(
    git_sandbox: Sandbox, host_repo: Path, victim: Path, fake_head: str
) -> None:
    release = _with_release(host_repo)
    checkout = await git.push_in(git_sandbox, repo=str(host_repo))
    path = checkout.path
    await _sh(git_sandbox, path, "echo '* filter=evil' > .gitattributes && "
              "git add .gitattributes && git commit -qm attrs")
    filter_line = _LYING_FILTER.format(head=fake_head.format(victim=victim))
    await _sh(git_sandbox, path, f"git config filter.evil.clean {_quote(filter_line)} && "
              "echo work > new.txt")
    before = _host_state(host_repo)
    with pytest.raises(SandboxGitOutputError, match=r"not in the form|not a commit id"):
        await git.pull_out(git_sandbox, repo=str(host_repo), branch="sandlot/evil",
                           commit_uncommitted="agent work")
    _assert_host_unharmed(host_repo, before, victim, release)
    assert "sandlot/evil" not in run(host_repo, "branch", "--list")


async def test_sandlots_commit_runs_no_hook_of_the_sandbox(
    git_sandbox: Sandbox, host_repo: Path, victim: Path
) -> None:
    """The attacker's post-commit hook: it would print `--output=` in place of the base."""
    release = _with_release(host_repo)
    checkout = await git.push_in(git_sandbox, repo=str(host_repo))
    path = checkout.path
    hook = ("#!/bin/sh\ntouch .git/hook-ran\n"
            f"printf '%s\\n' kept '--output={victim}' \"$(git rev-parse HEAD)\" "
            "> /proc/$PPID/fd/1\n")
    await _sh(git_sandbox, path, f"printf '%s' {_quote(hook)} > .git/hooks/post-commit && "
              "chmod +x .git/hooks/post-commit && echo work > new.txt")
    back = await git.pull_out(git_sandbox, repo=str(host_repo), branch="sandlot/hooked",
                              commit_uncommitted="agent work")
    assert victim.read_text() == "precious\n"
    assert run(host_repo, "rev-parse", "release").strip() == release
    assert back.branch == "sandlot/hooked" and [c.subject for c in back.commits] == ["agent work"]
    hook_ran = await git_sandbox.exec(["test", "-e", f"{path}/.git/hook-ran"])
    assert hook_ran.exit_code != 0  # sandlot's commit is sandlot's act: no hook of the agent's


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# ---- a git wrapper first on the sandbox's PATH ----------------------------------------------

_WRAPPER = r"""#!/bin/sh
# Answers for git where pull_out reads the base and HEAD; bundles what pull_out expects.
real=/usr/bin/git
rp=
for a in "$@"; do
  case "$a" in
    rev-parse) rp=1 ;;
    bundle) exec "$real" bundle create -q .git/sandlot-out.bundle HEAD \
              "^$("$real" rev-parse refs/sandlot/base)" ;;
    HEAD) if [ -n "$rp" ]; then
            base=$("$real" rev-parse refs/sandlot/base); head=$("$real" rev-parse HEAD)
            printf '%s\n' "$BASE_LIE" "$HEAD_LIE" | sed "s/@base@/$base/;s/@head@/$head/"
            exit 0
          fi ;;
  esac
done
exec "$real" "$@"
"""


@pytest.fixture(params=["local", "docker"])
async def wrapped_sandbox(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Sandbox, str]]:
    """A sandbox whose PATH starts with a directory the test fills with a `git` wrapper."""
    evil = f"/tmp/sandlot-evil-{uuid.uuid4().hex[:12]}"
    provider: sandlot.IsolatedSandboxProvider
    if request.param == "docker":
        from tests.backends import docker
        from tests.docker_engine import TOOLCHAIN_ENV

        provider = docker.toolchain_provider(
            env={**TOOLCHAIN_ENV, "PATH": f"{evil}:{TOOLCHAIN_ENV['PATH']}"})
    else:
        provider = sandlot.local(env={"PATH": f"{evil}:{os.environ['PATH']}"})
    try:
        async with provider.session() as sandbox:
            yield sandbox, evil
    finally:
        if request.param == "local":
            import shutil

            shutil.rmtree(evil, ignore_errors=True)


@pytest.mark.parametrize(("base_lie", "head_lie"), [
    ("@base@", "+HEAD:refs/heads/release"),
    ("--output={victim}", "@head@"),
    ("@base@", "HEAD"),
])  # fmt: skip
async def test_a_git_wrapper_on_the_sandbox_path_cannot_reach_host_git(
    wrapped_sandbox: tuple[Sandbox, str], host_repo: Path, victim: Path, base_lie: str,
    head_lie: str,
) -> None:
    sandbox, evil = wrapped_sandbox
    release = _with_release(host_repo)
    checkout = await git.push_in(sandbox, repo=str(host_repo))
    await _sh(sandbox, checkout.path, "echo fix >> README.md && git commit -qam fix")
    lies = {"BASE_LIE": base_lie.format(victim=victim), "HEAD_LIE": head_lie}
    wrapper = _WRAPPER.replace("#!/bin/sh\n", "#!/bin/sh\n" + "".join(
        f"{k}={_quote(v)}\n" for k, v in lies.items()), 1)
    await sandbox.exec(["sh", "-c", 'mkdir -p "$1" && cat > "$1/git" && chmod +x "$1/git"',
                        "sh", evil], stdin=wrapper, check=True)
    assert (await sandbox.exec("command -v git")).stdout.strip() == f"{evil}/git"
    before = _host_state(host_repo)
    with anyio.fail_after(NO_HANG), pytest.raises(SandboxGitOutputError, match="not a commit id"):
        await git.pull_out(sandbox, repo=str(host_repo), branch="sandlot/evil")
    _assert_host_unharmed(host_repo, before, victim, release)


# ---- bounds ----------------------------------------------------------------------------------


async def test_a_hostile_fsmonitor_does_not_stall_pull_out(
    git_sandbox: Sandbox, host_repo: Path
) -> None:
    checkout = await git.push_in(git_sandbox, repo=str(host_repo))
    await _sh(git_sandbox, checkout.path, "echo fix >> README.md && git commit -qam fix && "
              "echo left > new.txt && git config core.fsmonitor 'sleep 600'")
    with anyio.fail_after(NO_HANG):  # the old code ran `sleep 600` inside git status
        back = await git.pull_out(git_sandbox, repo=str(host_repo), branch="sandlot/fsm",
                                  commit_uncommitted="left over")
    assert [c.subject for c in back.commits] == ["left over", "fix"]


async def test_a_stalling_sandbox_step_is_a_typed_error_naming_it(
    git_sandbox: Sandbox, host_repo: Path
) -> None:
    checkout = await git.push_in(git_sandbox, repo=str(host_repo))
    await _sh(git_sandbox, checkout.path, "echo '* filter=slow' > .gitattributes && "
              "git config filter.slow.clean 'sleep 600' && echo x > new.txt")
    before = _host_state(host_repo)
    with anyio.fail_after(NO_HANG), pytest.raises(GitStepTimeoutError, match="took longer"):
        await git.pull_out(git_sandbox, repo=str(host_repo), branch="sandlot/slow",
                           commit_uncommitted="slow", step_timeout=2)
    assert _host_state(host_repo) == before


async def test_a_bundle_over_the_limit_is_refused(git_sandbox: Sandbox, host_repo: Path) -> None:
    checkout = await git.push_in(git_sandbox, repo=str(host_repo))
    await _sh(git_sandbox, checkout.path,
              "head -c 200000 /dev/urandom > big.bin && git add big.bin && git commit -qm big")
    before = _host_state(host_repo)
    with pytest.raises(BundleTooLargeError, match="max_bundle"):
        await git.pull_out(git_sandbox, repo=str(host_repo), branch="sandlot/big",
                           max_bundle=100_000)
    assert _host_state(host_repo) == before
    back = await git.pull_out(git_sandbox, repo=str(host_repo), branch="sandlot/big")
    assert back.branch == "sandlot/big"


# ---- rescue ----------------------------------------------------------------------------------


async def test_rescue_keeps_the_commits_when_the_branch_is_taken(
    git_sandbox: Sandbox, host_repo: Path
) -> None:
    run(host_repo, "branch", "taken")
    taken = run(host_repo, "rev-parse", "taken").strip()
    checkout = await git.push_in(git_sandbox, repo=str(host_repo))
    await _sh(git_sandbox, checkout.path, "echo fix >> README.md && git commit -qam fix")
    with pytest.raises(BranchExistsError):
        await git.pull_out(git_sandbox, repo=str(host_repo), branch="taken")
    back = await git.pull_out(git_sandbox, repo=str(host_repo), branch="taken", rescue=True)
    assert back.branch is None and back.rescue_ref is not None
    assert back.rescue_ref.startswith("refs/sandlot/rescue/taken-")
    assert run(host_repo, "rev-parse", back.rescue_ref).strip() == back.head
    assert run(host_repo, "rev-parse", "taken").strip() == taken
    assert any(f"git branch NAME {back.rescue_ref}" in note for note in back.notes)


async def test_diff_is_not_stalled_by_a_hostile_fsmonitor_and_is_bounded(
    git_sandbox: Sandbox, host_repo: Path
) -> None:
    checkout = await git.push_in(git_sandbox, repo=str(host_repo))
    await _sh(git_sandbox, checkout.path, "echo more >> README.md && "
              "git config core.fsmonitor 'sleep 600'")
    with anyio.fail_after(NO_HANG):
        patch = await git.diff(git_sandbox, step_timeout=60)
    assert "+more" in patch.patch
    await _sh(git_sandbox, checkout.path, "echo '* filter=slow' > .gitattributes && "
              "git config filter.slow.clean 'sleep 600'")
    with anyio.fail_after(NO_HANG), pytest.raises(GitStepTimeoutError, match="diffing"):
        await git.diff(git_sandbox, step_timeout=2)
