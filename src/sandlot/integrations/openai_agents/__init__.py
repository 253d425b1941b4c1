"""A sandbox client for the OpenAI Agents SDK's sandbox agents over any sandlot provider
(extra `sandlot[openai-agents]`; adr/0044).

    from agents import Runner
    from agents.run import RunConfig
    from agents.sandbox import SandboxAgent, SandboxRunConfig
    from sandlot.integrations.openai_agents import (
        SandlotSandboxClient, SandlotSandboxClientOptions)

    options = SandlotSandboxClientOptions(provider={"type": "local"})
    run_config = RunConfig(sandbox=SandboxRunConfig(client=SandlotSandboxClient(),
                                                    options=options))
    result = await Runner.run(SandboxAgent(name="dev", ...), "...", run_config=run_config)

The options register under the SDK's options type name `sandlot`, so
`BaseSandboxClientOptions.parse({"type": "sandlot", "provider": {...}})` finds them.
"""

from .client import SandlotSandboxClient
from .config import SandlotSandboxClientOptions, SandlotSandboxSessionState
from .session import SandlotSandboxSession

__all__ = [
    "SandlotSandboxClient",
    "SandlotSandboxClientOptions",
    "SandlotSandboxSession",
    "SandlotSandboxSessionState",
]
