"""A bounded schemathesis run over the server's own OpenAPI document: no 5xx, every answer
conforms to the documented statuses, content types and schemas.

The fuzzed server runs python mode in a bubblewrap sandbox (host read-only, no network), so
generated code and requirement names can neither touch this machine nor reach a registry.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandlot.server.runner import SandboxServer
from tests.helpers import require_binary
from tests.server.conftest import serve, toolchain_provider

TOKEN = "fuzz-token-0123456789abcdef"
EXAMPLES = {"POST /execute": 40, "GET /health": 10, "POST /forwards": 10, "GET /forwards": 3,
            "DELETE /forwards/{port}": 10, "POST /processes": 15, "GET /processes": 3,
            "GET /processes/{process_id}": 8, "GET /processes/{process_id}/output": 8,
            "POST /processes/{process_id}/signal": 8, "DELETE /processes/{process_id}": 8}


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[SandboxServer]:
    require_binary("bwrap", "apt-get install bubblewrap")
    require_binary("python3")
    # With uv on PATH, a requirement fails at once (no network, read-only cache) instead of
    # waiting for pip's retries.
    provider = toolchain_provider(isolation="bwrap")
    with serve(
        provider, mode="python", token=TOKEN, default_timeout=2, max_timeout=5,
        max_code_chars=2048, max_body_bytes=1 << 20, max_concurrency=2,
    ) as server:  # fmt: skip
        yield server


def test_openapi_fuzz_has_no_server_errors(fuzzed: SandboxServer) -> None:
    assert fuzzed.url is not None
    auth = {"Authorization": f"Bearer {TOKEN}"}
    raw = httpx.get(f"{fuzzed.url}/openapi.json", headers=auth, timeout=30).json()
    schema = schemathesis.openapi.from_dict(raw)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.label for op in operations} == set(EXAMPLES)
    statuses: dict[str, set[int]] = {}
    for operation in operations:

        modes = [schemathesis.GenerationMode.POSITIVE]
        if operation.label == "POST /execute":  # /health takes no input to get wrong
            modes.append(schemathesis.GenerationMode.NEGATIVE)
        cases = st.one_of(*(operation.as_strategy(mode) for mode in modes))

        @given(case=cases, with_auth=st.booleans())
        @settings(
            max_examples=EXAMPLES[operation.label],
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def check(case: schemathesis.Case, with_auth: bool) -> None:
            response = case.call_and_validate(
                base_url=fuzzed.url,
                headers=auth if with_auth else {},
                timeout=60,
                # A schema-valid requirement may name no real package: its 422
                # (requirements_install_failed) depends on the registry, not on the schema.
                excluded_checks=[schemathesis.checks.positive_data_acceptance],
            )
            assert response.status_code < 500
            statuses.setdefault(case.operation.label, set()).add(response.status_code)

        check()
    # The run reached the code paths that matter, not just the auth wall.
    assert 200 in statuses["POST /execute"] and 401 in statuses["POST /execute"]
    assert 422 in statuses["POST /execute"]
    assert statuses["GET /health"] <= {200, 401}
    assert statuses["POST /forwards"] <= {200, 401, 422}
    assert statuses["DELETE /forwards/{port}"] <= {204, 401, 404, 422}
    assert statuses["POST /processes"] & {201, 422}  # past the auth wall
    assert statuses["DELETE /processes/{process_id}"] <= {204, 401, 404, 409, 422}
