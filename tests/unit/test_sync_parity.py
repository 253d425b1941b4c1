"""The blocking facade is held to the async API, pair by pair (adr/0001, issue 27).

Every public method and property of each async class has its twin in `sandlot.sync` with the
same parameters (names, kinds, defaults): coroutines become plain methods, async generators
generators, async context managers context managers, `__aenter__`/`__aexit__` their sync
forms. A parameter added to the async API and not to the facade fails here.
"""

from __future__ import annotations

import inspect
import json
import urllib.request
from typing import Any

import pytest

import sandlot
import sandlot.sync
from sandlot.processes import DurableProcess, DurableProcesses
from sandlot.sandbox import Process, Sandbox
from sandlot.sync import SyncDurableProcess, SyncDurableProcesses, SyncProcess, SyncSandbox

PAIRS = [
    (Sandbox, SyncSandbox),
    (Process, SyncProcess),
    (DurableProcess, SyncDurableProcess),
    (DurableProcesses, SyncDurableProcesses),
]

#: Async dunders and their sync forms.
DUNDERS = {"__aenter__": "__enter__", "__aexit__": "__exit__"}

#: Sync members whose async twin is a plain instance attribute, not a class member.
ATTRIBUTES = {SyncSandbox: {"provider", "worktree", "name"}, SyncDurableProcess: {"id"}}


def public_members(cls: type) -> dict[str, Any]:
    """name -> the member as found on the class (staticmethod, property, function...)."""
    members: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        for name, value in vars(klass).items():
            if not name.startswith("_") or name in DUNDERS or name in DUNDERS.values():
                members[name] = value
    return members


def shape(member: Any) -> tuple[str, Any]:
    """("property", None) or (form, function) where form says how it is called."""
    if isinstance(member, property):
        return "property", None
    func = member.__func__ if isinstance(member, staticmethod | classmethod) else member
    wrapped = getattr(func, "__wrapped__", None)
    if wrapped is not None and inspect.isasyncgenfunction(wrapped):
        return "context manager", wrapped  # @asynccontextmanager
    if wrapped is not None and inspect.isgeneratorfunction(wrapped):
        return "context manager", wrapped  # @contextmanager
    if inspect.isasyncgenfunction(func) or inspect.isgeneratorfunction(func):
        return "iterator", func
    return "call", func


def parameters(func: Any) -> list[tuple[str, str, Any]]:
    return [(p.name, p.kind.name, p.default)
            for p in inspect.signature(func).parameters.values() if p.name != "self"]


def drift(async_cls: type, sync_cls: type) -> list[str]:
    problems: list[str] = []
    sync_members = public_members(sync_cls)
    async_members = public_members(async_cls)
    for name, member in async_members.items():
        twin_name = DUNDERS.get(name, name)
        if name in DUNDERS.values():
            continue
        twin = sync_members.get(twin_name)
        if twin is None:
            problems.append(f"{sync_cls.__name__}.{twin_name} is missing")
            continue
        (form, func), (twin_form, twin_func) = shape(member), shape(twin)
        if form != twin_form:
            problems.append(f"{sync_cls.__name__}.{twin_name} is a {twin_form}, not a {form}")
            continue
        if form == "property":
            continue
        if inspect.iscoroutinefunction(twin_func) or inspect.isasyncgenfunction(twin_func):
            problems.append(f"{sync_cls.__name__}.{twin_name} is async")
        if parameters(func) != parameters(twin_func):
            problems.append(
                f"{sync_cls.__name__}.{twin_name}{inspect.signature(twin_func)} differs from "
                f"{async_cls.__name__}.{name}{inspect.signature(func)}"
            )
    for name in sync_members:
        async_name = {v: k for k, v in DUNDERS.items()}.get(name, name)
        if async_name not in async_members and name not in ATTRIBUTES.get(sync_cls, set()):
            problems.append(f"{sync_cls.__name__}.{name} has no async twin")
    return problems


@pytest.mark.parametrize(("async_cls", "sync_cls"), PAIRS, ids=[s.__name__ for _, s in PAIRS])
def test_every_public_member_has_its_sync_twin_with_the_same_parameters(
    async_cls: type, sync_cls: type
) -> None:
    assert drift(async_cls, sync_cls) == []


def test_the_parity_check_sees_a_broken_pair() -> None:
    # The check itself can fail: a twin that lost a keyword, and one that is missing.
    class Broken(SyncProcess):
        def kill(self, *, force: bool = False) -> Any:  # not the async signature
            raise NotImplementedError

    class Lacking(SyncProcess):
        exit_code = 0  # no longer a property

    assert any("Broken.kill" in p for p in drift(Process, Broken))
    assert any("Lacking.exit_code is a" in p for p in drift(Process, Lacking))


def test_the_new_twins_work_on_a_local_sandbox() -> None:
    with sandlot.sync.session(sandlot.local()) as sandbox:
        assert not sandbox.closed
        process = sandbox.start("exit 4", sudo=False)
        assert process.wait().exit_code == 4 and process.exit_code == 4
        assert sandbox.interactive(["sh", "-c", "exit $CODE"], env={"CODE": "6"}, tty=False) == 6
        durable = sandbox.processes.start("head -c 3000 /dev/zero; sleep 600")
        first = next(iter(durable.follow(max_bytes=1000)))
        assert len(first.data) == 1000
        assert durable.directory.endswith(durable.id) and durable.mark
        assert durable.kill(timeout=30).exit_code == 137
        server = sandbox.start(["python3", "-c", SERVE])
        port = int(_first_line(server))
        # A blocking request from this thread: the relay runs on the portal's thread.
        with (sandbox.forward_port(port) as address,
              urllib.request.urlopen(address.url, timeout=30) as response):
            assert json.loads(response.read()) == {"ok": True}
        server.kill()
    assert sandbox.closed


def test_a_sync_sandbox_is_a_context_manager_that_closes() -> None:
    with sandlot.sync.session(sandlot.local()) as outer:
        with outer as sandbox:
            assert sandbox.exec("true").ok
        assert outer.closed


SERVE = """
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"ok": True}).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
    def log_message(self, *args): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"""


def _first_line(process: SyncProcess) -> str:
    import time

    deadline = time.monotonic() + 30  # "does not hang", not a timing claim
    while "\n" not in process.stdout:
        assert time.monotonic() < deadline and not process.done, process.stderr
        time.sleep(0.05)
    return process.stdout.split("\n", 1)[0]
