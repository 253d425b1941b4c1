"""Code navigation: find_references through sandlot.lsp against a bare LSP client, per language,
on a real project of the verify corpus (bench/verify_corpus, the pristine download).

Cold is from nothing running to the first answer (the server's start, its indexing, the
file's opening); warm is one more find_references on the same symbol, with the answer's
locations turned into the model's positions and lines. The baseline is a bare client in this
process talking to the same server binary over a pipe, in the same run: the server's own
response time plus framing, nothing else. Warm target: at most 2x.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import sandlot
from sandlot.lsp import LanguageServers
from sandlot.lsp.rpc import FrameReader, encode
from sandlot.lsp.server import file_uri
from sandlot.verify.detector import _registry

from .core import Measurement, Unavailable

CORPUS = Path(os.environ.get("SANDLOT_CORPUS_CACHE",
                             Path.home() / ".cache/sandlot/verify-corpus")) / "pristine"
SERVERS = Path(os.environ.get("SANDLOT_LANGUAGE_SERVERS", "/opt/sandlot/language-servers"))

#: language -> (corpus project, file, regex whose group 1 is the symbol at its definition).
TARGETS: dict[str, tuple[str, str, str]] = {
    "go": ("go-uuid-v1.6.0", "uuid.go", r"^func \(uuid UUID\) (String)\(\)"),
    "python": ("py-toolz-1.0.0", "toolz/functoolz.py", r"^def (identity)\("),
    "node": ("node-bytes-3.1.2", "index.js", r"^function (format)\("),
    "rust": ("rust-semver-1.0.26", "src/lib.rs", r"^    pub fn (parse)\("),
}


#: Requests of each client before the warm rounds are timed.
WARMUP = 10


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _until_idle(pid: int, window: float = 0.5, limit: float = 60.0) -> None:
    """Until the server used under a tenth of a core over `window` (its background load of
    the workspace over), at most `limit` s."""
    ends = time.monotonic() + limit
    while time.monotonic() < ends:
        before = _cpu_seconds(pid)
        await asyncio.sleep(window)
        if _cpu_seconds(pid) - before < 0.1 * window:
            return


@contextlib.asynccontextmanager
async def _copy(source: Path) -> AsyncIterator[str]:
    """A copy of the project of the bare client's own: its server builds in its own target
    directory (cargo's, a cache of the server's), not after sandlot's server has built."""
    with tempfile.TemporaryDirectory(prefix="sandlot-lsp-bench-") as scratch:
        root = Path(scratch) / "project"
        await asyncio.to_thread(shutil.copytree, source, root, symlinks=True)
        yield str(root)


def _where(root: Path, path: str, pattern: str) -> tuple[int, int]:
    """1-based (line, column) of the symbol (the corpus holds ASCII sources)."""
    for number, line in enumerate((root / path).read_text().splitlines(), 1):
        match = re.search(pattern, line)
        if match:
            return number, match.start(1) + 1
    raise Unavailable(f"{pattern!r} not found in {root / path}")


class BareClient:
    """The least a correct client can do: frames over a pipe, null answers to the server's
    requests, and -- where the server says when it has loaded the workspace (rust-analyzer's
    serverStatus) -- no answer taken before it has."""

    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.ids = 0
        self.reader = FrameReader()
        self.pump: asyncio.Task[None] | None = None
        #: None until the server sends a status; then whether it said it is fully loaded.
        self.quiescent: bool | None = None

    async def start(self, argv: list[str], root: str, env: dict[str, str]) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *argv, cwd=root, env={**os.environ, **env}, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        self.pump = asyncio.create_task(self._read())
        await self.request("initialize", {
            "processId": None, "rootUri": file_uri(root),
            "workspaceFolders": [{"uri": file_uri(root), "name": "root"}],
            "capabilities": {"window": {"workDoneProgress": True},
                             "workspace": {"configuration": True},
                             "experimental": {"serverStatusNotification": True}}})
        self.notify("initialized", {})

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while chunk := await self.proc.stdout.read(65536):
            for message in self.reader.feed(chunk):
                if "method" in message and "id" in message:
                    items = (message.get("params") or {}).get("items")
                    result = [None] * len(items) if isinstance(items, list) else None
                    self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})
                elif "id" in message and message["id"] in self.pending:
                    self.pending.pop(message["id"]).set_result(message.get("result"))
                elif message.get("method") == "experimental/serverStatus":
                    self.quiescent = bool((message.get("params") or {}).get("quiescent"))

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(encode(message))

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any) -> Any:
        self.ids += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[self.ids] = future
        self._send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        return await asyncio.wait_for(future, 600)

    async def close(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(Exception):
                self.proc.kill()
                await self.proc.wait()
        if self.pump is not None:
            self.pump.cancel()


async def _bare_cold(argv: list[str], root: str, env: dict[str, str], path: str,
                     language_id: str, position: dict[str, int]) -> tuple[float, BareClient]:
    started = time.perf_counter()
    client = BareClient()
    await client.start(argv, root, env)
    uri = file_uri(f"{root}/{path}")
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": language_id, "version": 1,
        "text": Path(root, path).read_text()}})
    params = {"textDocument": {"uri": uri}, "position": position,
              "context": {"includeDeclaration": True}}
    # A server still loading answers [] (typescript-language-server): ask until it knows; one
    # that says when it is loaded (rust-analyzer) may answer from half a workspace before.
    while True:
        answer = await client.request("textDocument/references", params)
        if answer and client.quiescent is not False:
            break
        await asyncio.sleep(0.05)
    return time.perf_counter() - started, client


async def _one(language: str, quick: bool) -> list[Measurement]:
    project, path, pattern = TARGETS[language]
    source = CORPUS / project
    detector = next(d for d in _registry() if d.language == language)
    binary = SERVERS / "bin" / detector.lsp_command[0]
    if not source.is_dir():
        raise Unavailable(f"{source} is missing (python -m bench.verify_corpus fetches it)")
    if not binary.exists():
        raise Unavailable(f"{binary} is missing (scripts/setup.d/50-language-servers.sh)")
    line, column = _where(source, path, pattern)
    env = {"PATH": f"{SERVERS / 'bin'}:{os.environ.get('PATH', '')}"}
    rounds = 5 if quick else 40
    async with sandlot.local(env=env).session() as sandbox, _copy(source) as bare_root:
        await sandbox.copy_in(source, sandbox.worktree)
        started = time.perf_counter()
        async with LanguageServers(sandbox, env=env) as lsp:
            refs = await lsp.find_references(path, line, column)
            cold = time.perf_counter() - started
            ext = "." + path.rsplit(".", 1)[-1]
            position = {"line": line - 1, "character": column - 1}
            bare_cold, bare = await _bare_cold(list(detector.lsp_command), bare_root, env,
                                               path, detector.lsp_extensions[ext], position)
            try:
                uri = file_uri(f"{bare_root}/{path}")
                params = {"textDocument": {"uri": uri}, "position": position,
                          "context": {"includeDeclaration": True}}
                ours: list[float] = []
                theirs: list[float] = []
                # Warm for both first: the bare server has only just answered its first
                # request and may still be loading the workspace in the background, taking
                # the CPU from both (on 2 cores the warm ratio then ran from 1.4x to 3.4x).
                assert bare.proc is not None
                await _until_idle(bare.proc.pid)
                for _ in range(WARMUP):
                    await lsp.find_references(path, line, column)
                    await bare.request("textDocument/references", params)
                for i in range(rounds):
                    steps = [("ours", ours), ("bare", theirs)]
                    for name, sink in (steps if i % 2 == 0 else steps[::-1]):
                        t = time.perf_counter()
                        if name == "ours":
                            assert len(await lsp.find_references(path, line, column)) == len(refs)
                        else:
                            await bare.request("textDocument/references", params)
                        sink.append(time.perf_counter() - t)
            finally:
                await bare.close()
    where = f"{project} {path}:{line}:{column}, {len(refs)} refs"
    return [
        Measurement("lsp", "local", f"find_references cold ({language})",
                    "bare client cold", cold, bare_cold, "s", target="~1x", notes=where),
        Measurement("lsp", "local", f"find_references warm ({language})",
                    "bare client warm", statistics.median(ours), statistics.median(theirs),
                    "s", target="<=2x", notes=where),
    ]


async def run(quick: bool = False) -> list[Measurement]:
    out: list[Measurement] = []
    skipped: list[str] = []
    for language in TARGETS:
        try:
            out += await _one(language, quick)
        except Unavailable as exc:
            skipped.append(f"{language}: {exc}")
    if not out:
        raise Unavailable("; ".join(skipped))
    if skipped:
        print(json.dumps({"lsp bench skipped": skipped}))
    return out
