"""`python -m tests.template dogfood [REPORT]`: the smoke run against the template tier.

Starts the tier's deployment (the real `coder server` provisioning providers/coder through
Terraform on the private Docker engine, see harness.py), runs
`python -m dogfood --backends coder --coder-template sandlot --coder-preset small` against it
exactly as an operator would (the CLI logged in through CODER_URL / CODER_SESSION_TOKEN), and
writes its JSON report to REPORT (default providers/coder/dogfood-report.sample.json).
Exits with dogfood's status.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests import docker_engine

from .harness import REPO, TemplateCoder, cached_rootfs, import_image, missing_parts

SAMPLE = REPO / "providers" / "coder" / "dogfood-report.sample.json"


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "dogfood":
        print(__doc__, file=sys.stderr)
        return 2
    report = Path(argv[1]) if len(argv) > 1 else SAMPLE
    missing = missing_parts()
    rootfs = cached_rootfs()
    if missing or rootfs is None:
        print(f"the template tier needs: {missing or ['the workspace image']}", file=sys.stderr)
        return 2
    with docker_engine.DockerEngine() as engine:
        image, _ = import_image(engine, rootfs)
        with TemplateCoder(engine, image) as coder:
            env = coder.cli_env({"PATH": f"{coder.binary.parent}:{os.environ['PATH']}"})
            done = subprocess.run(
                [sys.executable, "-m", "dogfood", "--backends", "coder",
                 "--coder-template", coder.template, "--coder-preset", "small",
                 "--coder-param", "extra_packages=", "--coder-param", "ci_mode=false",
                 "--report", str(report)],
                cwd=REPO, env={**os.environ, **env}, stdin=subprocess.DEVNULL, timeout=3600,
                check=False,
            )  # fmt: skip
            return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
