"""The verify corpus: real open-source projects with planted failures and findings, scored
against the tools' own machine-readable output.

    python -m bench.verify_corpus                # fetch (cached), run, score, write results
    python -m bench.verify_corpus --only go-uuid # some projects

Each project is fetched at a pinned version from its registry (the Go module proxy,
crates.io, PyPI, npm) into a cache, its overlay (bench/verify_corpus/overlays/<name>) is copied
on top (planted failures and findings; for npm packages, which rarely publish their tests, the
tests themselves), and its dependencies are installed. Then sandlot's run_tests, run_lint and
run_typecheck run in a local sandbox, and the same tools run directly with their machine
output (JUnit, `go test -json`, libtest JSON, cargo/eslint/ruff/golangci-lint/mypy JSON, tsc's
`file(line,col): error TSnnnn`), read by truth.py without any of sandlot's parsers. Recall and
precision per project and tool must both be 100 %.
"""
