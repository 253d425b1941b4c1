"""Smoke runs of sandlot, end to end, on every backend that is available here.

    python -m dogfood                          # local always; docker / coder when reachable
    python -m dogfood --backends coder --fake-coder
    python -m dogfood --json                   # the JSON report on stdout

Each backend gets the same scenarios (exec with streaming, stdin, copies with checksums, the
verify tools on the bundled example projects, run_code in every mode the sandbox has, a timeout
that leaves nothing behind, close); the coder backend also gets one workspace per `on_close`
value, checked afterwards through the `coder` CLI. Progress goes to stderr, a summary table to
stdout, and a JSON report to dogfood/reports/. The exit code is non-zero when a scenario failed.

`python -m dogfood --help` lists the options; `--inject-failure SCENARIO` is the documented hook
that makes a scenario fail on purpose (see `dogfood.runner.INJECT_ENV`).
"""

REPORT_SCHEMA = 1
