"""The tool schemas a model is shown stay exactly as recorded (key order included).

tests/fixtures/toolbox/tool_schemas.json was written by scripts/record-tool-schemas.py before
toolbox.py was split; this compares what the toolbox and the MCP tool list give now with it.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.anyio


async def test_tool_schemas_match_the_recording() -> None:
    spec = importlib.util.spec_from_file_location(
        "record_tool_schemas", ROOT / "scripts" / "record-tool-schemas.py")
    assert spec is not None and spec.loader is not None
    recorder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recorder)
    now = json.dumps(await recorder.schemas(), indent=1, ensure_ascii=False) + "\n"
    recorded = (ROOT / "tests" / "fixtures" / "toolbox" / "tool_schemas.json").read_text()
    assert now == recorded
