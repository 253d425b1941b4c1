"""How sandlot shows progress of long work on a terminal: one way, built on `rich`.

On a terminal a spinner line shows what runs and for how long; anywhere else (a CI log, a pipe,
a file) the same facts are plain lines, so logs stay readable. `sandlot fanout` (its live
table), `sandlot exec --copy-in` and dogfood use this module's console rules.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console

#: Width used when output is not a terminal: do not wrap log lines at rich's default of 80.
LOG_WIDTH = 160


def console(*, stderr: bool = True) -> Console:
    """A console on stderr (by default) that does not wrap log lines or colour a pipe."""
    made = Console(stderr=stderr, highlight=False)
    if not made.is_terminal:
        made.width = LOG_WIDTH
    return made


def say(out: Console, text: str) -> None:
    """One plain line (no markup: user text may hold brackets)."""
    out.print(text, markup=False, highlight=False, soft_wrap=True)


@contextmanager
def activity(out: Console, text: str, *, quiet: bool = False) -> Iterator[None]:
    """Show `text` while the block runs (a spinner with elapsed seconds on a terminal), then
    one line saying how long it took, or that it failed."""
    started = time.monotonic()
    if quiet:
        yield
        return
    if out.is_terminal:
        with out.status(text, spinner="dots"):
            yield
    else:
        say(out, f"sandlot: {text} ...")
        try:
            yield
        except BaseException:
            say(out, f"sandlot: {text}: failed after {time.monotonic() - started:.1f}s")
            raise
    say(out, f"sandlot: {text}: done in {time.monotonic() - started:.1f}s")


def tree_size(path: str | os.PathLike[str]) -> tuple[int, int]:
    """(files, bytes) under `path`, not following symlinks; a file counts as one; a path that
    does not exist is (0, 0) (the copy that follows says so, with a typed error)."""
    root = Path(path)
    if not root.is_dir():
        try:
            return 1, root.lstat().st_size
        except OSError:
            return 0, 0
    files = size = 0
    for directory, subdirs, names in os.walk(root):
        # A link to a directory is listed with the directories; it is copied as one entry.
        links = [d for d in subdirs if os.path.islink(os.path.join(directory, d))]
        for name in [*names, *links]:
            files += 1
            try:
                size += os.lstat(os.path.join(directory, name)).st_size
            except OSError:
                continue
    return files, size


def describe_size(files: int, size: int) -> str:
    unit, value = "B", float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            break
        value /= 1024
    amount = f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
    return f"{files} file{'s' if files != 1 else ''}, {amount}"
