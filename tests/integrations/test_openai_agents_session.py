"""The OpenAI Agents SDK session's own parts on local and local-bwrap: options and state as the
SDK round-trips them (registered type, no secret), processes without a terminal (running,
polled, ended), exposed ports through `forward_port`, the workspace tar round trip.
"""

from __future__ import annotations

import asyncio
import io
import json
import tarfile
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.integrations.openai_harness import provider_config, require_packages

require_packages()

from agents.sandbox.errors import ExposedPortUnavailableError  # noqa: E402
from agents.sandbox.session.sandbox_client import BaseSandboxClientOptions  # noqa: E402

from sandlot.config import parse_config  # noqa: E402
from sandlot.errors import ConfigurationError  # noqa: E402
from sandlot.integrations.openai_agents import (  # noqa: E402
    SandlotSandboxClient,
    SandlotSandboxClientOptions,
)
from sandlot.integrations.openai_agents.config import attach_config  # noqa: E402

pytestmark = pytest.mark.anyio


def test_options_are_the_sdks_registered_type_and_refuse_secrets() -> None:
    parsed = BaseSandboxClientOptions.parse(
        {"type": "sandlot", "provider": {"type": "docker", "image": "x", "on_close": "stop"}})
    assert isinstance(parsed, SandlotSandboxClientOptions)
    assert parsed.model_dump()["type"] == "sandlot"
    with pytest.raises(ConfigurationError, match="session_token must not be in the options"):
        SandlotSandboxClientOptions(provider={"type": "coder", "template": "t",
                                              "on_close": "delete", "session_token": "s3cr3t"})
    with pytest.raises(ConfigurationError) as bad:
        SandlotSandboxClientOptions(provider={"type": "docker", "image": "x"})  # no on_close
    assert "on_close" in str(bad.value)
    with pytest.raises(ValueError) as parsed_bad:  # through the SDK's parse: input hidden
        BaseSandboxClientOptions.parse({"type": "sandlot", "provider": {
            "type": "coder", "template": "t", "on_close": "delete", "session_token": "s3cr3t"}})
    assert "s3cr3t" not in str(parsed_bad.value)
    assert "SandlotSandboxClient" in repr(SandlotSandboxClient(session_token="s3cr3t")) and \
        "s3cr3t" not in repr(SandlotSandboxClient(session_token="s3cr3t"))


def test_attach_configurations_are_valid_for_every_backend() -> None:
    made = {
        "local": ({"type": "local", "on_close": "delete", "root": "/tmp"}, "/tmp/sandlot-x"),
        "docker": ({"type": "docker", "image": "img", "on_close": "stop", "memory": "1g",
                    "env": {"A": "1"}, "network": "bridge",
                    "security_opt": ["seccomp=unconfined"]}, "sandlot-1234"),
        "coder": ({"type": "coder", "template": "t", "on_close": "delete",
                   "parameters": {"cpu": 2}, "workspace_name": "w"}, "alice/w"),
    }
    for backend, (config, ref) in made.items():
        attach = attach_config(config, backend, ref, "/work/tree")
        options = parse_config(attach)  # what resume builds is a valid configuration
        assert options.on_close == config["on_close"]


@pytest.fixture(params=["local", "local-bwrap"])
async def session(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    async with provider_config(request.param) as (config, token):
        client = SandlotSandboxClient(session_token=token)
        made = await client.create(options=SandlotSandboxClientOptions(
            provider=config, exposed_ports=(18731,)))
        try:
            async with made:
                yield made
        finally:
            await client.delete(made)


async def test_processes_without_a_terminal(session: Any) -> None:
    started = await session.pty_exec_start("echo first; sleep 1; echo second", yield_time_s=0.3)
    assert started.process_id is not None and started.exit_code is None
    assert b"first" in started.output
    later = await session.pty_write_stdin(session_id=started.process_id, chars="",
                                          yield_time_s=5)
    assert later.exit_code == 0 and later.process_id is None and b"second" in later.output
    with pytest.raises(RuntimeError, match="stdin is not available"):
        running = await session.pty_exec_start("sleep 30", yield_time_s=0.3)
        await session.pty_write_stdin(session_id=running.process_id, chars="x")
    await asyncio.wait_for(session.pty_terminate_all(), 30)  # ends the sleep, bounded


async def test_exposed_port_is_forwarded(session: Any) -> None:
    server = ("python3 -c \"import http.server as h; h.HTTPServer(('127.0.0.1', 18731), "
              "h.SimpleHTTPRequestHandler).serve_forever()\"")
    await session.write(Path("index.html"), io.BytesIO(b"served by the sandbox\n"))
    await session.pty_exec_start(server, yield_time_s=1.0)
    endpoint = await session.resolve_exposed_port(18731)

    def fetch() -> bytes:
        for _ in range(50):
            try:
                with urllib.request.urlopen(f"http://{endpoint.host}:{endpoint.port}/",
                                            timeout=5) as answer:
                    return bytes(answer.read())
            except OSError:
                import time

                time.sleep(0.2)
        raise AssertionError("the forwarded port never answered")

    assert await asyncio.to_thread(fetch) == b"served by the sandbox\n"
    with pytest.raises(ExposedPortUnavailableError):
        await session.resolve_exposed_port(18732)  # not configured
    await session.pty_terminate_all()


async def test_workspace_tar_round_trip(session: Any) -> None:
    await session.write(Path("a/b.txt"), io.BytesIO(b"bee\n"))
    made = await session.exec("ln -s a/b.txt inside && chmod 755 a/b.txt")
    assert made.exit_code == 0
    archive = await session.persist_workspace()
    raw = archive.read()
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        names = set(tar.getnames())
        assert {"./a/b.txt", "./inside"} <= names
        assert all(not n.startswith("/") and ".." not in n.split("/") for n in names)
    await session.exec("rm -rf a inside")
    await session.hydrate_workspace(io.BytesIO(raw))
    assert (await session.read(Path("inside"))).read() == b"bee\n"
    mode = await session.exec("stat -c %a a/b.txt")
    assert mode.stdout.decode().strip() == "755"
    state = json.dumps(SandlotSandboxClient().serialize_session_state(session.state))
    assert json.loads(state)["type"] == "sandlot"
