"""What the session helper sends is untrusted (adr/0043): a helper that ignores the window of
a command's output, or floods control messages, costs that request, never the host's memory.
The helper's side of the transport is swapped for a scripted one here (the real helper keeps
its bounds, which tests/docker/test_session_helper.py measures)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sandlot._session.client import HelperLost
from sandlot._session.helper import flow
from sandlot.backends.docker.helper import _Stream

pytestmark = pytest.mark.anyio


class ScriptedCall:
    """Stands for a client.Call: yields the frames a (hostile) helper would send."""

    def __init__(self, items: list[tuple[int, bytes]]) -> None:
        self.items = items
        self.result: dict[str, Any] | None = None
        self.received = 0

    async def receive(self) -> tuple[int, bytes] | None:
        if not self.items:
            self.result = {"code": 0}
            return None
        self.received += 1
        return self.items.pop(0)


async def test_output_past_the_window_ends_the_request() -> None:
    chunk = b"x" * flow.CHUNK
    call = ScriptedCall([(1, chunk)] * (flow.WINDOW // flow.CHUNK + 1000))
    stream = _Stream(call, (1, 2))  # type: ignore[arg-type]
    with pytest.raises(HelperLost, match="window"):
        await stream.pump()
    assert call.received == flow.WINDOW // flow.CHUNK + 1  # stopped at the first excess
    assert stream.outputs[1].queued <= flow.WINDOW + flow.CHUNK


async def test_a_flood_of_control_messages_ends_the_request() -> None:
    message = json.dumps({"pid": 1}).encode()
    call = ScriptedCall([(flow.CONTROL, message)] * 10_000)
    stream = _Stream(call, (1, 2))  # type: ignore[arg-type]
    with pytest.raises(HelperLost, match="control"):
        await stream.pump()
    assert call.received < 100
