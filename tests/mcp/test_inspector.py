"""A third-party MCP client no one here wrote: the MCP Inspector's CLI mode (npm
@modelcontextprotocol/inspector, installed by scripts/setup.d/45-mcp-inspector.sh) lists and
calls sandlot's tools over stdio."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.helpers import require
from tests.mcp.support import INSPECTOR, command, env


def inspect(tmp_path: Path, *method: str) -> dict[str, Any]:
    require(INSPECTOR.exists(), f"{INSPECTOR} missing; run scripts/setup.d/45-mcp-inspector.sh")
    done = subprocess.run(
        [str(INSPECTOR), "--cli", *command("--root", f"w={tmp_path}"), "--method", *method],
        env=env(), capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def test_the_inspector_lists_the_tools_with_their_schemas(tmp_path: Path) -> None:
    tools = inspect(tmp_path, "tools/list")["tools"]
    assert [t["name"] for t in tools][:5] == ["read", "write", "edit", "glob", "grep"]
    read = next(t for t in tools if t["name"] == "read")
    assert read["inputSchema"]["required"] == ["path"]
    assert read["annotations"]["readOnlyHint"] is True


def test_the_inspector_calls_tools(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("from the host\n")
    read = inspect(tmp_path, "tools/call", "--tool-name", "read", "--tool-arg", "path=notes.txt")
    assert read["isError"] is False
    assert read["content"][0]["text"] == "     1\tfrom the host"
    assert read["structuredContent"]["total_lines"] == 1
    ran = inspect(tmp_path, "tools/call", "--tool-name", "bash", "--tool-arg",
                  "command=wc -l < notes.txt")
    assert ran["structuredContent"]["stdout"].strip() == "1"
    refused = inspect(tmp_path, "tools/call", "--tool-name", "read", "--tool-arg",
                      "path=../../etc/passwd")
    assert refused["isError"] is True
    assert refused["structuredContent"]["error"] == "PathOutsideWorkspaceError"
