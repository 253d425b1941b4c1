"""The OpenAI Agents SDK side of the integration tests: a scripted model (the SDK's own
`Model` interface, fixed tool calls, no network) and a sandlot provider configuration per
contract-suite backend (tests/backends), as a user would write it in `--provider-config`.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest

from tests import backends
from tests.helpers import in_ci


def require_packages() -> None:
    """Skip the module without the SDK; in CI that is a failure."""
    if importlib.util.find_spec("agents") is not None:
        return
    reason = "openai-agents not installed: pip install -e '.[dev]'"
    if in_ci():
        raise ImportError(f"required component missing in CI: {reason}")
    pytest.skip(reason, allow_module_level=True)


@asynccontextmanager
async def provider_config(name: str) -> AsyncIterator[tuple[dict[str, Any], str | None]]:
    """Backend `name`'s provider as (JSON configuration, Coder token or None): what a user
    passes as `SandlotSandboxClientOptions(provider=...)` and `SandlotSandboxClient(...)`."""
    module = backends.load(name)
    async with module.provider() as provider:
        options = provider.options
        config = json.loads(options.model_dump_json(exclude_none=True))
        token = None
        secret = getattr(options, "session_token", None)
        if secret is not None:
            token = secret.get_secret_value()
            config.pop("session_token", None)
        yield config, token


# ---- the scripted model --------------------------------------------------------------------


def call(name: str, arguments: dict[str, Any], call_id: str) -> Any:
    from openai.types.responses import ResponseFunctionToolCall

    return ResponseFunctionToolCall(type="function_call", name=name, call_id=call_id,
                                    arguments=json.dumps(arguments), id=f"fc_{call_id}")


def patch(text: str, call_id: str) -> Any:
    from openai.types.responses import ResponseCustomToolCall

    return ResponseCustomToolCall(type="custom_tool_call", name="apply_patch", call_id=call_id,
                                  input=text, id=f"ctc_{call_id}")


def message(text: str) -> Any:
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    return ResponseOutputMessage(
        id="msg_final", role="assistant", status="completed", type="message",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


def scripted_model(turns: Sequence[Any]) -> Any:
    """A `Model` that answers turn i with `turns[i]` (or, when it is a function, with what it
    returns for the model's input: a call that needs an earlier output, e.g. a process id)
    and records every input it was given (`model.inputs`)."""
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage

    class Scripted(Model):
        def __init__(self) -> None:
            self.turns = list(turns)
            self.inputs: list[Any] = []
            self.tools: list[str] = []

        async def get_response(self, system_instructions: Any, input: Any, model_settings: Any,
                               tools: Any, output_schema: Any, handoffs: Any, tracing: Any, *,
                               previous_response_id: Any = None, conversation_id: Any = None,
                               prompt: Any = None, **_: Any) -> ModelResponse:
            self.inputs.append(input)
            self.tools = [tool.name for tool in tools]
            if not self.turns:
                raise AssertionError("the scripted model ran out of turns")
            turn = self.turns.pop(0)
            items = turn(input) if callable(turn) else turn
            return ModelResponse(output=list(items), usage=Usage(),
                                 response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the scripted model does not stream")

    return Scripted()


def tool_outputs(model: Any) -> dict[str, str]:
    """call_id -> the output the agent returned for it, from the model's last input."""
    out: dict[str, str] = {}
    for item in model.inputs[-1]:
        if isinstance(item, dict) and item.get("type") in ("function_call_output",
                                                           "custom_tool_call_output"):
            value = item.get("output")
            out[item["call_id"]] = value if isinstance(value, str) else json.dumps(value)
    return out
