"""The corpus: which projects, at which versions, and what each one exercises."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

OVERLAYS = Path(__file__).with_name("overlays")


@dataclass(frozen=True)
class Project:
    name: str
    language: str
    registry: str  # go, crate, pypi, npm
    package: str
    version: str
    covers: str

    @property
    def overlay(self) -> Path:
        return OVERLAYS / self.name


PROJECTS: tuple[Project, ...] = (
    Project("go-uuid", "go", "go", "github.com/google/uuid", "v1.6.0",
            "subtests and table tests failing, vet and lint findings"),
    Project("go-errors", "go", "go", "github.com/pkg/errors", "v0.9.1",
            "a module without go.mod; a panicking test; more than 50 findings of one linter"),
    Project("go-xxhash", "go", "go", "github.com/cespare/xxhash/v2", "v2.3.0",
            "a nested package's failures beside the root's"),
    Project("rust-fnv", "rust", "crate", "fnv", "1.0.7",
            "unit tests in lib.rs, a failing doctest, clippy findings"),
    Project("rust-itoa", "rust", "crate", "itoa", "1.0.15",
            "benches that need nightly; a test name in two test binaries"),
    Project("rust-semver", "rust", "crate", "semver", "1.0.26",
            "several test binaries, a panic, a type error in a test target"),
    Project("py-six", "python", "pypi", "six", "1.17.0",
            "a single-module project, parametrized failures, ruff and mypy findings"),
    Project("py-more-itertools", "python", "pypi", "more-itertools", "10.5.0",
            "a typed package with stubs, unittest-style classes run by pytest"),
    Project("py-toolz", "python", "pypi", "toolz", "1.0.0",
            "tests inside the package, an error in a fixture"),
    Project("node-json-schema-traverse", "node", "npm", "json-schema-traverse", "1.0.0",
            "its own composite script (npm run eslint && nyc npm run test-spec), mocha, no "
            "type checker"),
    Project("node-dequal", "node", "npm", "dequal", "2.0.3",
            "vitest, tsc over its .d.ts"),
    Project("node-mri", "node", "npm", "mri", "1.2.0",
            "jest under cross-env and node:test under c8, chained; tsc"),
    # The shapes a held-out run found wrong (issue 35); tests only, each with its rerun checked.
    Project("go-humanize", "go", "go", "github.com/dustin/go-humanize", "v1.0.1",
            "table-driven subtests: one failing row among passing ones in two tests"),
    Project("rust-cfg-if", "rust", "crate", "cfg-if", "1.0.0",
            "a failing doctest beside failing unit and integration tests"),
    Project("node-ms", "node", "npm", "ms", "2.1.3",
            "vitest 3 whose script already says `vitest --coverage --run`"),
    Project("node-escape-html", "node", "npm", "escape-html", "1.0.3",
            "vitest 1.x (`vitest --run`): an empty file-level title first in ancestorTitles"),
    Project("node-bytes", "node", "npm", "bytes", "3.1.2",
            "mocha 9 with its own `--reporter spec` and a failing `before all` hook"),
)


def by_name(names: list[str] | None) -> list[Project]:
    if not names:
        return list(PROJECTS)
    known = {p.name: p for p in PROJECTS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown corpus projects: {', '.join(unknown)}; known: "
                         f"{', '.join(known)}")
    return [known[n] for n in names]
