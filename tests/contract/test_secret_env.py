"""No sandlot secret of the calling program reaches a sandbox's commands, on any backend."""

from __future__ import annotations

import pytest

from sandlot import IsolatedSandboxProvider

pytestmark = pytest.mark.anyio

SERVER_TOKEN = "srv-token-9f8e7d6c5b4a39281706"
SESSION_TOKEN = "coder-sess-0a1b2c3d4e5f60718293"


def fragments(secret: str, size: int = 12) -> list[str]:
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


async def test_sandlot_tokens_are_not_in_the_sandbox_environment(
    provider: IsolatedSandboxProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SANDLOT_TOKEN", SERVER_TOKEN)
    monkeypatch.setenv("CODER_SESSION_TOKEN", SESSION_TOKEN)
    async with provider.session() as sandbox:
        shown = (await sandbox.exec("env; cat /proc/self/environ 2>/dev/null", check=True)).stdout
    for secret in (SERVER_TOKEN, SESSION_TOKEN):
        leaked = [piece for piece in fragments(secret) if piece in shown]
        assert not leaked, f"a sandlot secret reached the sandbox: {len(leaked)} fragments"
