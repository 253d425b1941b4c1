#!/usr/bin/env python3
"""Record what the toolbox's glob and grep scripts print with each real search engine.

    .venv/bin/python scripts/capture-toolbox-fixtures.py

Runs sandlot.tools.scripts.GREP / GLOB with `sh` on this host over a small tree, once with
ripgrep, once with GNU grep/find and once with a busybox-only PATH, and writes the raw stdout
to tests/fixtures/toolbox/captured/. tests/unit/test_tool_parse.py parses those files.
Needs rg and busybox (scripts/setup.d/40-toolbox.sh installs both).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sandlot.tools import scripts
from sandlot.tools.patterns import glob_to_ere, pcre_to_ere

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "toolbox" / "captured"
EXCLUDES = ".git/node_modules"


def make_tree(root: Path) -> None:
    files = {
        "a.txt": "alpha\nneedle one\nbeta\ngamma\ndelta\nneedle two\n",
        "dir-1-x/b.go": "package b\n// Needle in go\nfunc B() {}\n",
        "odd:name:7:.txt": "needle: with colons\n",
        "sub/deep/c.md": "no match here\n",
        "node_modules/dep/index.js": "needle in a dependency\n",
        "v2.txt": "version 12 and 7\n",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "blob.bin").write_bytes(b"needle\x00\x01\x02 binary\n")
    # Hostile names: a newline before an absolute-looking tail, a lone "-", a backslash, and
    # a text file that is not UTF-8.
    (root / "y\n" / "etc").mkdir(parents=True)
    (root / "y\n" / "etc" / "os-release").write_text("PRETTY_NAME=inside\n")
    (root / "-").write_text("needle in a file named dash\n")
    (root / "back\\slash.txt").write_text("plain\n")
    (root / "latin1.txt").write_bytes(b"caf\xe9 needle\n")


def busybox_path(where: Path) -> str:
    busybox = shutil.which("busybox")
    if busybox is None:
        sys.exit("busybox is not installed (apt-get install busybox)")
    where.mkdir()
    applets = subprocess.run([busybox, "--list"], capture_output=True, text=True, check=True)
    for name in applets.stdout.split():
        (where / name).symlink_to(busybox)
    return str(where)


def run(script: str, args: list[str], env: dict[str, str]) -> bytes:
    done = subprocess.run(["sh", "-c", script, "capture", *args], capture_output=True,
                          env=env, check=False)
    if done.returncode != 0:
        sys.exit(f"script failed ({done.returncode}): {done.stderr.decode()}")
    return done.stdout


def main() -> None:
    if shutil.which("rg") is None:
        sys.exit("ripgrep is not installed (apt-get install ripgrep)")
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        make_tree(root)
        host_env = dict(os.environ)
        bb_env = {"PATH": busybox_path(Path(tmp) / "bb")}
        engines = {"rg": ("1", host_env), "gnu": ("0", host_env), "busybox": ("0", bb_env)}
        for label, (use_rg, env) in engines.items():
            for case, pattern, flags, ctx, selector in [
                ("needle", "needle", "i", "1", ""),
                ("digits", r"\d+ and", "", "0", glob_to_ere("*.txt")),
            ]:
                raw = run(scripts.GREP, [str(root), str(root), pattern, pcre_to_ere(pattern),
                                         selector, flags, ctx, "1000000", use_rg, EXCLUDES],
                          env)
                (OUT / f"grep-{case}-{label}.out").write_bytes(raw)
            raw = run(scripts.GREP, [str(root), str(root), "^PRETTY", "^PRETTY", "", "", "0",
                                     "1000000", use_rg, EXCLUDES], env)
            (OUT / f"grep-pretty-{label}.out").write_bytes(raw)
            raw = run(scripts.GREP, [str(root), str(root / "-"), "needle", "needle", "", "", "0",
                                     "1000000", use_rg, EXCLUDES], env)
            (OUT / f"grep-dash-{label}.out").write_bytes(raw)
            raw = run(scripts.GLOB, [str(root), str(root), glob_to_ere("*.txt"), "1000000",
                                     use_rg, EXCLUDES], env)
            (OUT / f"glob-{label}.out").write_bytes(raw)
            raw = run(scripts.GLOB, [str(root), str(root), glob_to_ere("**/*"), "1000000",
                                     use_rg, EXCLUDES], env)
            (OUT / f"glob-all-{label}.out").write_bytes(raw)
    print(f"wrote {len(list(OUT.iterdir()))} files to {OUT}")


if __name__ == "__main__":
    main()
