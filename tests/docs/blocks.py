"""README.md's fenced code blocks, each with the marker that says how tests/docs runs it.

The convention (README blocks are checked by tests/docs/test_readme.py):

- A block's language is one of python, sh, json, text. ``text`` is output or a listing and is
  not run; any other language fails the test.
- A python block with no marker is a complete program; a sh block with no marker is a shell
  script (bash, ``set -eu``) run in a scratch directory holding a copy of examples/, with the
  project's `sandlot` on PATH; a json block must parse.
- Anything else is said by an HTML comment on the line right before the fence:
  ``<!-- readme-test: KIND[; key=value]... (why) -->``. KIND is one of:

  ``fragment``  the body of an ``async def`` given a ready ``sandbox`` (and nothing else: it
                imports what it uses); ``backend=local|coder|docker`` picks the tier (the fake
                Coder deployment, the tests' private Docker engine), ``setup=NAME`` prepares
                the scratch directory or the sandbox (tests/docs/harness.py).
  ``program``   the default for python, stated when options are needed.
  ``shell``     a shell script with options: ``cwd=repo`` (runs in the repository itself),
                ``backend=docker`` (DOCKER_HOST is the tests' private engine),
                ``setup=NAME``, ``net=private`` (its own network namespace, so fixed ports
                never collide with anything else on the machine), ``server=COMMAND`` (started
                before, in the same namespace, and stopped after).
  ``servers``   each command line starts a server that runs until stopped: started in a
                private network namespace, it must accept connections on its port, then it
                is sent SIGTERM and must exit cleanly.
  ``install``   pip installs into a fresh virtualenv (the git URL is this clone's).
  ``pytest``    a test file, run by pytest alone in a scratch directory.
  ``not-run``   explained in the parentheses; the explanation is required.

  ``net=private``, ``server=COMMAND`` and ``tools=verify`` (the verify tools of
  scripts/setup.d/40-verify-tools.sh first on PATH) apply to any kind that runs.
  Any kind takes ``expect=TEXT[|TEXT]...``: each text must appear in what the block prints
  (for examples whose failure would otherwise only be printed, not raised).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
LANGUAGES = frozenset({"python", "sh", "json", "text"})
KINDS = frozenset({"program", "fragment", "shell", "servers", "install", "pytest", "not-run",
                   "parse", "text"})
_MARKER = re.compile(r"^<!--\s*readme-test:\s*(?P<body>.*?)\s*-->$")


@dataclass(frozen=True)
class Block:
    line: int           # of the opening fence, 1-based
    section: str        # the heading it is under
    lang: str
    code: str
    kind: str
    options: dict[str, str] = field(default_factory=dict)
    why: str = ""

    @property
    def id(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.section.lower()).strip("-")[:40]
        return f"L{self.line}-{self.lang}-{slug}"


def _parse_marker(body: str) -> tuple[str, dict[str, str], str]:
    why = ""
    if body.endswith(")") and "(" in body:
        body, why = body[: body.index("(")].strip(), body[body.index("(") + 1 : -1].strip()
    kind, *rest = [part.strip() for part in body.split(";")]
    options = dict(part.split("=", 1) for part in rest if part)
    return kind, options, why


def blocks(text: str | None = None) -> list[Block]:
    lines = (README.read_text(encoding="utf-8") if text is None else text).splitlines()
    found: list[Block] = []
    section = "top"
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#") and not line.startswith("#!"):
            section = line.lstrip("#").strip()
        if line.startswith("```"):
            lang = line[3:].strip()
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            code = "\n".join(lines[i + 1 : end]) + "\n"
            marker = _MARKER.match(lines[i - 1].strip()) if i else None
            if marker:
                kind, options, why = _parse_marker(marker["body"])
            else:
                kind, options, why = {"python": "program", "sh": "shell", "json": "parse",
                                      "text": "text"}.get(lang, "unknown"), {}, ""
            found.append(Block(i + 1, section, lang, code, kind, options, why))
            i = end + 1
            continue
        i += 1
    return found
