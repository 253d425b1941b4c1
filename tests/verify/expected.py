"""What the fixture projects are known to contain: the failures and findings every verify test
(recorded output and live runs alike) must report exactly, file and line included.

Lines refer to the fixture sources under tests/fixtures/verify/ (and overlays/).
"""

from __future__ import annotations

from sandlot.verify import Finding, LintReport, TestFailure, TestReport

# (name, file, line) of each failing test, and (passed, failed, skipped).
TESTS: dict[str, tuple[tuple[int, int, int], list[tuple[str, str | None, int | None]]]] = {
    "go": (
        (3, 2, 1),
        [("TestSub", "calc/calc_test.go", 13), ("TestTable/negative", "calc/calc_test.go", 25)],
    ),
    "go+go-broken": (
        (3, 2, 1),
        [
            ("TestSub", "calc/calc_test.go", 13),
            ("TestTable/negative", "calc/calc_test.go", 25),
            ("example.com/verifyfixture/broken [build failed]", "broken/broken.go", 6),
        ],
    ),
    # A panic (nil map write) is located by its stack trace.
    "go+go-panic": (
        (3, 3, 1),
        [
            ("TestSub", "calc/calc_test.go", 13),
            ("TestTable/negative", "calc/calc_test.go", 25),
            ("TestPanics", "panicky/panicky_test.go", 8),
        ],
    ),
    "rust": (
        (2, 2, 1),
        [
            ("tests::sub_works", "src/lib.rs", 27),
            ("panics_with_message", "tests/integration.rs", 12),
        ],
    ),
    "rust+rust-broken": ((0, 0, 0), [("tests/broken.rs [build failed]", "tests/broken.rs", 4)]),
    # One test name in two test binaries: two failures, each with its own place.
    "rust+rust-dupnames": (
        (2, 4, 1),
        [
            ("tests::sub_works", "src/lib.rs", 27),
            ("panics_with_message", "tests/integration.rs", 12),
            ("test_parse", "tests/alpha.rs", 4),
            ("test_parse", "tests/beta.rs", 7),
        ],
    ),
    "python": (
        (3, 3, 1),
        [
            ("test_sub", "tests/test_calc.py", 11),
            ("TestGroup::test_fails_inside", "tests/test_calc.py", 19),
            ("test_param[2-2-5]", "tests/test_calc.py", 24),
        ],
    ),
    "node": (
        (2, 2, 1),
        [("sub works", "test/math.test.js", 10), ("group > fails inside", "test/math.test.js", 18)],
    ),
    "node-jest": (
        (2, 2, 1),
        [("sub works", "test/math.test.js", 8), ("group > fails inside", "test/math.test.js", 16)],
    ),
    "node-vitest": (
        (2, 2, 1),
        [("sub works", "test/math.test.js", 9), ("group > fails inside", "test/math.test.js", 17)],
    ),
    # One test script chaining three scripts, each under a wrapper: cross-env + c8 + node
    # --test, nyc + mocha, tsx --test (tests/fixtures/verify/node-composite).
    "node-composite": (
        (3, 3, 1),
        [
            ("add is wrong on purpose", "test/unit.test.js", 10),
            ("sub fails on purpose", "tests/math.spec.js", 10),
            ("twice fails on purpose", "ts/typed.test.ts", 13),
        ],
    ),
    "polyglot-go": ((1, 1, 0), [("TestHelloFails", "greet/greet_test.go", 13)]),
    "polyglot-node": ((1, 1, 0), [("greets wrongly", "web/greet.test.js", 11)]),
}

#: After run_failing_tests: only the failures ran (deselected tests count as skipped where the
#: runner reports them so).
RERUN_COUNTS: dict[str, tuple[int, int, int]] = {
    "go": (0, 2, 0),  # only TestTable/negative of TestTable runs again (issue 35)
    "rust": (0, 2, 0),
    "rust+rust-dupnames": (0, 4, 0),
    "python": (0, 3, 0),
    "node": (0, 2, 3),
    "node-jest": (0, 2, 3),
    "node-vitest": (0, 2, 3),
    # node --test steps run whole (no name pattern reaches them through NODE_OPTIONS); mocha
    # runs only its failure (--grep).
    "node-composite": (2, 3, 0),
}

# (file, line, column, rule, severity) of each finding.
Row = tuple[str, int | None, int | None, str, str]
LINT: dict[str, list[Row]] = {
    "go": [
        ("calc/calc.go", 27, 14, "errcheck", "error"),
        ("calc/calc.go", 21, 2, "govet", "error"),
        # Same line, another linter: golangci-lint's default uniq-by-line would hide it.
        ("calc/calc.go", 21, 2, "staticcheck", "error"),
    ],
    # A package that does not compile: golangci-lint reports only the compile error.
    "go+go-broken": [("broken/broken.go", 6, 9, "typecheck", "error")],
    "rust": [
        ("src/lib.rs", 12, 9, "unused_variables", "warning"),
        ("src/lib.rs", 4, 5, "clippy::needless_return", "warning"),
    ],
    "python": [
        ("src/pyfix/calc.py", 2, 8, "F401", "error"),
        ("src/pyfix/calc.py", 18, 21, "E711", "error"),
    ],
    "node": [
        ("src/math.js", 26, 3, "no-var", "warning"),
        ("src/math.js", 26, 7, "no-unused-vars", "error"),
        ("src/math.js", 27, 12, "eqeqeq", "error"),
    ],
}
TYPECHECK: dict[str, list[Row]] = {
    "go": [("calc/calc.go", 21, 2, "assign", "error")],
    "go+go-broken": [
        ("calc/calc.go", 21, 2, "assign", "error"),
        ("broken/broken.go", 6, 9, "typecheck", "error"),
    ],
    "rust": [("src/lib.rs", 12, 9, "unused_variables", "warning")],
    "rust+rust-broken": [
        ("src/lib.rs", 12, 9, "unused_variables", "warning"),
        ("tests/broken.rs", 4, 18, "E0308", "error"),
    ],
    "python": [("src/pyfix/calc.py", 14, 12, "return-value", "error")],
    "node": [
        ("src/math.js", 23, 7, "TS2322", "error"),
        ("src/math.js", 25, 17, "TS7006", "error"),
    ],
}

#: Messages worth pinning exactly (one per runner / tool), by (case, name-or-rule).
MESSAGES: dict[tuple[str, str], str] = {
    ("go", "TestSub"): "Sub(5, 3) = 8, want 2",
    ("rust", "tests::sub_works"): "assertion `left == right` failed; left: 8; right: 2",
    ("rust", "panics_with_message"): "one plus one was 2",
    ("python", "test_sub"): "assert 8 == 2",
    ("node", "group > fails inside"): "AssertionError: one plus one; 2 !== 3",
    ("node-jest", "sub works"): (
        "Error: expect(received).toBe(expected) // Object.is equality; Expected: 2; Received: 8"
    ),
    ("node-vitest", "sub works"): "AssertionError: expected 8 to be 2 // Object.is equality",
    ("node-composite", "sub fails on purpose"): (
        "AssertionError [ERR_ASSERTION]: five minus three; 2 !== 3"
    ),
    ("lint:go", "errcheck"): "Error return value of `os.WriteFile` is not checked",
    ("lint:rust", "clippy::needless_return"): "unneeded `return` statement",
    ("lint:python", "F401"): "`os` imported but unused",
    ("lint:node", "eqeqeq"): "Expected '===' and instead saw '=='.",
    ("typecheck:python", "return-value"): (
        'Incompatible return value type (got "int", expected "str")'
    ),
    ("typecheck:node", "TS2322"): "Type 'string' is not assignable to type 'number'.",
    ("typecheck:go", "assign"): "self-assignment of name",
}


#: Line coverage of each fixture's test run: file -> (lines, covered, uncovered ranges), from
#: reading the sources: in Go every line of a statement block counts (calc.go: Add 10-12 and
#: Sub 15-17 run, Describe 20-23 and Save 26-28 never); coverage.py counts statements (calc.py:
#: the bodies of label, 14, and is_empty, 18, never run; test_calc.py: the skipped test's body).
COVERAGE: dict[str, dict[str, tuple[int, int, list[tuple[int, int]]]]] = {
    "go": {"calc/calc.go": (13, 6, [(20, 23), (26, 28)]), "strs/strs.go": (3, 3, [])},
    # The package that does not build has no profile; the others still do.
    "go+go-broken": {"calc/calc.go": (13, 6, [(20, 23), (26, 28)]), "strs/strs.go": (3, 3, [])},
    # tarpaulin traces the lines it can place a breakpoint on; the library is run whole by
    # its tests, the overlay's binary (half and main) never.
    "rust+rust-uncovered": {"src/bin/half.rs": (6, 0, [(4, 6), (8, 8), (11, 12)]),
                            "src/lib.rs": (7, 7, [])},
    # c8 (V8's coverage) counts every line of a loaded file: isZero, 25-28, never runs.
    "node": {"src/math.js": (30, 26, [(25, 28)])},
    # jest (istanbul) counts statements: half's if, throw and return (14, 15, 17).
    "node-jest": {"src/math.js": (7, 4, [(14, 15), (17, 17)])},
    # vitest's V8 provider counts the lines of code: half, 12-16, never runs.
    "node-vitest": {"src/math.js": (14, 9, [(12, 16)])},
    "python": {
        "src/pyfix/__init__.py": (0, 0, []),
        "src/pyfix/calc.py": (9, 7, [(14, 14), (18, 18)]),
        "tests/test_calc.py": (17, 16, [(29, 29)]),
    },
}


def coverage_rows(report: TestReport) -> dict[str, tuple[int, int, list[tuple[int, int]]]]:
    assert report.coverage is not None
    return {f.file: (f.lines, f.covered, f.uncovered) for f in report.coverage.files}


def assert_coverage(case: str, report: TestReport) -> None:
    """The exact line sets, and totals that add up."""
    assert coverage_rows(report) == COVERAGE[case]
    assert report.coverage is not None
    lines = sum(row[0] for row in COVERAGE[case].values())
    covered = sum(row[1] for row in COVERAGE[case].values())
    assert (report.coverage.lines, report.coverage.covered) == (lines, covered)
    assert report.coverage.percent == round(100 * covered / lines, 2)


def failure_rows(report: TestReport) -> list[tuple[str, str | None, int | None]]:
    return [(f.name, f.file, f.line) for f in report.failures]


def finding_rows(report: LintReport) -> list[Row]:
    return [(f.file, f.line, f.column, f.rule, f.severity) for f in report.findings]


def assert_tests(case: str, report: TestReport) -> None:
    counts, failures = TESTS[case]
    assert (report.passed, report.failed, report.skipped) == counts
    assert sorted(failure_rows(report), key=str) == sorted(failures, key=str)
    assert not report.ok
    for (which, name), message in MESSAGES.items():
        if which == case:
            assert _by_name(report.failures, name).message == message


def assert_findings(kind: str, case: str, report: LintReport) -> None:
    expected = (LINT if kind == "lint" else TYPECHECK)[case]
    assert sorted(finding_rows(report), key=str) == sorted(expected, key=str)
    assert not report.ok
    for (which, rule), message in MESSAGES.items():
        if which == f"{kind}:{case}":
            assert _by_rule(report.findings, rule).message == message


def _by_name(failures: list[TestFailure], name: str) -> TestFailure:
    return next(f for f in failures if f.name == name)


def _by_rule(findings: list[Finding], rule: str) -> Finding:
    return next(f for f in findings if f.rule == rule)
