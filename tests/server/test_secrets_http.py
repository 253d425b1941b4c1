"""`sandlot serve --secret`: every run gets the secret, no response shows it (issue 32)."""

from __future__ import annotations

import secrets

import anyio
import pytest

from sandlot import Secret
from tests.server.conftest import http, serve

pytestmark = pytest.mark.anyio

ONE_BYTE = ('s="$TOK"; while [ -n "$s" ]; do r="${s#?}"; printf %s "${s%"$r"}"; s="$r"; '
            "sleep 0.01; done; echo")


async def test_responses_never_show_a_configured_secret() -> None:
    value = f"srv_{secrets.token_hex(10)}+/\"x"
    with serve(mode="shell", env={"TOK": Secret(value)}) as server:
        async with http(server) as client:
            bodies: list[bytes] = []
            for code in ['printf "%s\\n" "$TOK"', 'printf "%s" "$TOK" | base64',
                         'printf "%s" "$TOK" >&2; exit 4', ONE_BYTE]:
                answer = await client.post("/execute", json={"code": code})
                assert answer.status_code == 200, answer.text
                bodies.append(answer.content)
            started = await client.post("/processes", json={"command": ONE_BYTE + "; sleep 1"})
            assert started.status_code == 201, started.text
            process, since, text = started.json()["id"], 0, ""
            with anyio.fail_after(60):
                while True:  # read in tiny windows: the secret is cut across reads
                    body = (await client.get(f"/processes/{process}/output",
                                             params={"since": since, "max_bytes": 7})).json()
                    text, since = text + body["text"], body["next"]
                    if body["complete"]:
                        break
                    await anyio.sleep(0.05)
    for body in [*bodies, text.encode()]:
        assert value.encode() not in body and value.encode().hex() not in body.decode()
    assert all(b"[secret:TOK]" in body for body in bodies)
    assert text.strip() == "[secret:TOK]", text
