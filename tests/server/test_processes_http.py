"""Durable processes over the sandbox server's HTTP API: a client that goes away (or a new
one) picks a process up by its id and reads on from its cursor."""

from __future__ import annotations

import anyio
import httpx
import pytest

from sandlot.server.processes import utf8_prefix
from tests.helpers import eventually
from tests.server.conftest import http, serve
from tests.toolchains import provider_for, toolchain_backends

pytestmark = pytest.mark.anyio

PROCESS_KEYS = {"id", "command", "cwd", "started_at", "state", "exit_code", "ended_by",
                "output_bytes"}


async def _read_lines(
    client: httpx.AsyncClient, process_id: str, since: int, lines: int
) -> tuple[str, int]:
    text = ""
    with anyio.fail_after(60):
        while text.count("\n") < lines:
            body = (await client.get(f"/processes/{process_id}/output",
                                     params={"since": since})).json()
            assert body["start"] == since and body["dropped"] == 0
            text += body["text"]
            since = body["next"]
            await anyio.sleep(0.1)
    return text, since


async def _until_ended(client: httpx.AsyncClient, process_id: str) -> None:
    async def ended() -> bool:
        return bool((await client.get(f"/processes/{process_id}")).json()["state"] != "running")

    await eventually(ended, what=f"the end of process {process_id}")


@pytest.mark.parametrize("backend", toolchain_backends())
async def test_a_process_started_over_http_is_read_on_by_another_client(
    runtimes: None, backend: str
) -> None:
    provider = provider_for(backend)  # skips (fails in CI) when the backend cannot run here
    with serve(provider, mode="shell") as server:
        async with http(server) as first:
            started = await first.post("/processes", json={
                "command": "i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.2; done"})
            assert started.status_code == 201, started.text
            process = started.json()
            assert set(process) == PROCESS_KEYS and process["state"] == "running"
            seen, cursor = await _read_lines(first, process["id"], 0, 3)
        async with http(server) as second:  # the first client is gone
            listed = (await second.get("/processes")).json()
            assert process["id"] in [p["id"] for p in listed]
            more, cursor = await _read_lines(second, process["id"], cursor, 3)
            ticks = (seen + more).splitlines()
            assert ticks == [f"tick {i}" for i in range(len(ticks))]
            busy = await second.delete(f"/processes/{process['id']}")
            assert busy.status_code == 409 and busy.json()["error"] == "still_running"
            sent = await second.post(f"/processes/{process['id']}/signal",
                                     json={"signal": "SIGTERM"})
            assert sent.json() == {"sent": True}
            await _until_ended(second, process["id"])
            state = (await second.get(f"/processes/{process['id']}")).json()
            assert state["exit_code"] == 143
            assert (await second.delete(f"/processes/{process['id']}")).status_code == 204
            gone = await second.get(f"/processes/{process['id']}")
            assert gone.status_code == 404 and gone.json()["error"] == "not_found"


async def test_bad_requests_are_refused_with_the_servers_error_shape(runtimes: None) -> None:
    with serve(mode="shell") as server:
        async with http(server) as client:
            missing = await client.post("/processes", json={"command": "true",
                                                            "cwd": "/no/such/dir"})
            assert missing.status_code == 422 and "no such directory" in missing.json()["detail"]
            relative = await client.post("/processes", json={"command": "true", "cwd": "x"})
            assert relative.status_code == 422
            empty = await client.post("/processes", json={"command": ""})
            assert empty.status_code == 422
            assert (await client.get("/processes/../../etc")).status_code == 404
            unknown = await client.get("/processes/0123456789ab/output")
            assert unknown.status_code == 404
            done = (await client.post("/processes", json={"command": "printf 'é'"})).json()
            await _until_ended(client, done["id"])
            # One byte asked for: the reply holds no half character, and says where to go on.
            half = (await client.get(f"/processes/{done['id']}/output",
                                     params={"max_bytes": 1})).json()
            assert (half["text"], half["next"]) == ("", 0)
            whole = (await client.get(f"/processes/{done['id']}/output")).json()
            assert (whole["text"], whole["next"], whole["complete"]) == ("é", 2, True)
            bad = await client.post(f"/processes/{done['id']}/signal", json={"signal": "NOPE"})
            assert bad.status_code == 422 and "cannot send signal" in bad.json()["detail"]
            far = await client.get(f"/processes/{done['id']}/output", params={"since": 99})
            assert far.status_code == 422 and "past the end" in far.json()["detail"]


@pytest.mark.parametrize(
    ("data", "keep"),
    [(b"", 0), (b"abc", 3), ("é".encode(), 2), ("é".encode()[:1], 0), (b"a\xe2\x82", 1),
     ("€".encode(), 3), ("😀".encode()[:3], 0), ("😀".encode(), 4), (b"\xff", 1),
     (b"\x80\x80\x80\x80", 4)],
)
def test_utf8_prefix(data: bytes, keep: int) -> None:
    assert utf8_prefix(data) == keep
