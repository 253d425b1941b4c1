"""One masker for `coder` CLI output, shared by the recorder and the replay against the fake.

scripts/record-coder-cli.py masks what the REAL CLI printed before storing it; the replay in
tests/testing/recorded.py masks what the fake printed the same way, so the two compare case by
case. Both sides must apply the same passes in the same order: a pass that exists on one side
only would make a recorded value differ from a replayed one for no reason of the fake's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
RFC3339_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})")
STAMP_RE = re.compile(
    r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d\b"
)
# Not after "?": terminal escapes such as "\x1b[?25h" are no durations.
DURATION_RE = re.compile(r"(?<![?\d.])\b\d+(?:\.\d+)?(?:ns|µs|us|ms|s|m|h)\b")

Pass = tuple["re.Pattern[str]", str]

# Build-log lines ("2024-01-01 12:00:00.000Z") and JSON latencies vary per run.
LOGTIME_PASS: Pass = (re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?Z?"), "<time>")
LATENCY_PASS: Pass = (re.compile(r'("latency_ms":) [0-9.e+-]+'), r"\1 0")
AGENT_HOME_PASS: Pass = (re.compile(r"<root>/agents/[^/\s\"]+/[^/\s\"]+/home"), "<agent-home>")
# os.Executable() differs between the real binary and the fake launcher.
LOGIN_HINT_PASS: Pass = (
    re.compile(r"Try logging in using '[^']*? login <url>'"),
    "Try logging in using '<coder> login <url>'",
)


class Masker:
    """Masks one case's output; ids are numbered consistently across its streams.

    Order: literal values (longest first), UUIDs, the caller's `extra` passes, then times,
    stamps and durations, then the caller's `last` passes.
    """

    def __init__(
        self,
        literal: dict[str, str],
        *,
        extra: Sequence[Pass] = (),
        last: Sequence[Pass] = (),
    ) -> None:
        self.ids: dict[str, str] = {}
        self.literal = literal
        self.extra = tuple(extra)
        self.last = tuple(last)

    def _uuid(self, m: re.Match[str]) -> str:
        return self.ids.setdefault(m.group(0), f"<uuid:{len(self.ids) + 1}>")

    def text(self, s: str) -> str:
        for real, mask in sorted(self.literal.items(), key=lambda kv: -len(kv[0])):
            if real:
                s = s.replace(real, mask)
        s = UUID_RE.sub(self._uuid, s)
        for pattern, replacement in self.extra:
            s = pattern.sub(replacement, s)
        s = RFC3339_RE.sub("<time>", s)
        s = STAMP_RE.sub("<stamp>", s)
        s = DURATION_RE.sub("<duration>", s)
        for pattern, replacement in self.last:
            s = pattern.sub(replacement, s)
        return s

    def value(self, v: Any, key: str = "") -> Any:
        if isinstance(v, dict):
            return {k: self.value(x, k) for k, x in v.items()}
        if isinstance(v, list):
            return [self.value(x, key) for x in v]
        if isinstance(v, str):
            return self.text(v)
        if key in {"latency_ms", "latency"} and isinstance(v, int | float):
            return 0
        return v
