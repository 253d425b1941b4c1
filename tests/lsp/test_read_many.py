"""The navigation calls' file reads: served by the session helper's `read_many`, they give the
same bytes as the READ_MANY script they replace, the same refusals (a symlink below the root,
a path outside it, something not a regular file) and the same cap."""

from __future__ import annotations

import os

import anyio
import pytest

import sandlot
from sandlot._engine import engine_of
from sandlot._session.client import session_for
from sandlot.lsp import cache, files
from sandlot.tools.runner import run_script

TREE = r"""
mkdir -p src/deep outside && printf 'fn a() {}\n' > src/a.rs && printf '\xff\xfe bytes\n' > src/b.rs
printf 'new\nline\n' > "src/odd
name.rs" && printf 'secret\n' > outside/s.rs && ln -s ../outside src/link
ln -s ../outside/s.rs src/file-link.rs && mkfifo src/pipe.rs && : > src/empty.rs
"""


async def _both(sandbox: sandlot.Sandbox, root: str, paths: list[str], cap: int
                ) -> tuple[bytes, bytes]:
    script = await run_script(sandbox, files.READ_MANY, [root, str(cap), *paths],
                              name="lsp-read", timeout=60, limit=files.TOTAL_CAP)
    got = bytearray()

    async def on_data(channel: int, data: bytes) -> None:
        got.extend(data)

    session = session_for(engine_of(sandbox), {})
    result = await session.run("read_many", {"root": root, "cap": cap, "paths": paths},
                               on_data=on_data, timeout=60)
    assert result is not None and result["code"] == script.exit_code == 0
    return bytes(got), script.stdout


@pytest.mark.anyio
async def test_the_helper_reads_what_the_script_reads() -> None:
    async with sandlot.local().session() as sandbox:
        root = sandbox.worktree
        await sandbox.exec(["sh", "-c", TREE], cwd=root, check=True)
        paths = [f"{root}/{name}" for name in (
            "src/a.rs", "src/b.rs", "src/odd\nname.rs", "src/link/s.rs", "src/file-link.rs",
            "src/pipe.rs", "src/empty.rs", "src/missing.rs", "outside/s.rs", "src/deep")]
        paths.append(f"{root}/../{os.path.basename(root)}/src/a.rs")
        for cap in (files.TOTAL_CAP, 12):  # the cap: a.rs (10 bytes) fits, b.rs does not
            helper, script = await _both(sandbox, root, paths, cap)
            assert helper == script
        texts = await files.read_many(sandbox, root, paths)
        assert texts[f"{root}/src/a.rs"] == "fn a() {}\n"
        assert texts[f"{root}/src/odd\nname.rs"] == "new\nline\n"
        refused = ("src/link/s.rs", "src/file-link.rs", "src/pipe.rs", "src/missing.rs",
                   "src/deep")
        assert all(texts[f"{root}/{name}"] is None for name in refused)
        assert session_for(engine_of(sandbox), {}).starts == 1  # served, not fallen back


@pytest.mark.anyio
async def test_files_the_host_holds_are_not_sent_again_until_they_change() -> None:
    async with sandlot.local().session() as sandbox:
        root = sandbox.worktree
        await sandbox.exec(["sh", "-c", TREE], cwd=root, check=True)
        paths = [f"{root}/{name}" for name in ("src/a.rs", "src/b.rs", "src/link/s.rs",
                                               "src/empty.rs", "src/missing.rs")]
        a, b = paths[0], paths[1]
        plain = await files.read_many(sandbox, root, paths)
        texts = cache.TextCache()
        assert await files.read_many(sandbox, root, paths, cache=texts) == plain
        young = texts.get(a)
        # Written just now, within the racy window: held, but no stat will prove it unchanged.
        assert young is not None and young[0] is None and young[2] == plain[a]
        assert texts.get(paths[2]) is None and texts.get(paths[4]) is None  # refused, missing
        sent = await _sent(sandbox, root, paths, texts)
        assert sent[-1] == b""  # read and hashed again: the same digests, nothing sent

        await anyio.sleep(cache.RACY_NS / 1e9 + 0.5)
        assert await files.read_many(sandbox, root, paths, cache=texts) == plain
        old, old_b = texts.get(a), texts.get(b)
        assert old is not None and old[0] is not None and old_b is not None
        tokens = (await _sent(sandbox, root, paths, texts))[2].split()[1:]
        assert all(t.endswith(b":") for t in tokens)  # proven by a stat: not even read

        # In place, the same size, at once: the next read has the new text.
        await sandbox.exec(["sh", "-c", "printf 'fn b() {}\\n' > src/a.rs"], cwd=root,
                           check=True)
        again = await files.read_many(sandbox, root, paths, cache=texts)
        assert again == {**plain, a: "fn b() {}\n"}
        assert texts.get(b) == old_b  # b unchanged: still held as it was
        await sandbox.exec(["rm", "src/b.rs"], cwd=root, check=True)
        gone = await files.read_many(sandbox, root, paths, cache=texts)
        assert gone[b] is None and texts.get(b) is None and gone[a] == "fn b() {}\n"


async def _sent(sandbox: sandlot.Sandbox, root: str, paths: list[str],
                texts: cache.TextCache) -> list[bytes]:
    """The helper's answer to a read with what `texts` holds: its four parts."""
    got = bytearray()

    async def on_data(channel: int, data: bytes) -> None:
        got.extend(data)

    session = session_for(engine_of(sandbox), {})
    await session.run("read_many", {"root": root, "cap": files.TOTAL_CAP, "paths": paths,
                                    "known": cache.known([texts.get(p) for p in paths])},
                      on_data=on_data, timeout=60)
    return bytes(got).split(b"\n", 3)


def test_a_known_answer_is_parsed_as_the_helper_wrote_it() -> None:
    paths = ["/r/a", "/r/b", "/r/c", "/r/d"]
    old = 10**10
    held: list[cache.Held | None] = [("1.1.3.0.5", "da", "aaa"), None, (None, "dc", "cc"),
                                     (None, "dd", "dd")]
    # a proven by its stat, b new, c read again with the same digest, d changed.
    data = (b"1 2 3 4\n3 4 2 3\n" + str(old).encode()
            + b" 1.1.3.0.5: 1.2.4.0.6:db 1.3.2.0.7:dc 1.4.3.0.8:de\nbbbbDDD")
    texts, keep = cache.parse_known(data, paths, held)
    assert texts == {"/r/a": "aaa", "/r/b": "bbbb", "/r/c": "cc", "/r/d": "DDD"}
    assert keep["/r/b"] == ("1.2.4.0.6", "db", "bbbb") and keep["/r/c"][1] == "dc"
    # A ctime within the racy window of the helper's clock: held, but no fingerprint.
    young = data.replace(str(old).encode(), b"2000000007")
    assert cache.parse_known(young, paths, held)[1]["/r/c"] == (None, "dc", "cc")
    # Past the cap (d not read): d is None and forgotten, the rest stands.
    capped = data.replace(b"1.4.3.0.8:de", b"1.4.3.0.8:-").removesuffix(b"DDD")
    texts, keep = cache.parse_known(capped, paths, held)
    assert texts["/r/d"] is None and "/r/d" not in keep and texts["/r/b"] == "bbbb"
    # Sizes that do not add up, or a stat proof of a text never held: nothing is trusted.
    for bad in (data + b"x", data.replace(b"1.2.4.0.6:db", b"1.2.4.0.6:")):
        assert cache.parse_known(bad, paths, held) == (dict.fromkeys(paths), {})
