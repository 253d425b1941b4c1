"""The one signal policy (sandlot._interrupts), held to with real signals sent to a process.

The child runs `Interrupts` the way the commands do: the first signal starts a graceful stop
whose clean-up takes `CLEANUP` seconds (shielded, as a bring-back is); a later one gives that
clean-up up; the exit status is `interrupts.exit_code`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sandlot._interrupts import Interrupts

SRC = str(Path(__file__).resolve().parents[2] / "src")

CHILD = """
import asyncio, sys
import anyio
from sandlot._interrupts import Interrupts, name

CLEANUP = float(sys.argv[1])

async def main() -> int:
    work = anyio.CancelScope()
    # Shielded like a bring-back: the first signal's stop does not end it, `again` does.
    cleanup = anyio.CancelScope(shield=True)

    def graceful(signum):
        print(f"graceful {name(signum)}", flush=True)
        work.cancel()

    def again(signum, count):
        print(f"again {name(signum)} {count}", flush=True)
        cleanup.cancel()

    interrupts = Interrupts(graceful, again)
    with interrupts:
        with work:
            print("ready", flush=True)
            await anyio.sleep(600)
        with cleanup:
            print("cleaning", flush=True)
            await anyio.sleep(CLEANUP)
            print("cleaned", flush=True)
        if cleanup.cancel_called:
            print("gave up", flush=True)
    return interrupts.exit_code or 0

sys.exit(asyncio.run(main()))
"""


def _start(cleanup: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(cleanup)], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": SRC},
    )  # fmt: skip
    _wait_line(proc, "ready")
    return proc


def _wait_line(proc: subprocess.Popen[str], wanted: str) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() == wanted:
            return
    raise AssertionError(f"the child ended before {wanted!r}: {proc.stderr and proc.stderr.read()}")


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    # 60 s: a generous bound for "did not hang"; the clean-ups given up below take 600 s.
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out + err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_the_first_signal_stops_gracefully_and_the_status_is_128_plus_it(sig: int) -> None:
    proc = _start(cleanup=0.5)
    proc.send_signal(sig)
    code, out = _finish(proc)
    assert code == 128 + sig, out
    assert f"graceful {signal.Signals(sig).name}" in out
    assert "cleaned" in out and "gave up" not in out  # the graceful part ran to its end


@pytest.mark.parametrize("first, second", [(signal.SIGINT, signal.SIGINT),
                                           (signal.SIGTERM, signal.SIGINT),
                                           (signal.SIGINT, signal.SIGTERM)],
                         ids=["INT-INT", "TERM-INT", "INT-TERM"])
def test_a_second_signal_gives_the_graceful_part_up(first: int, second: int) -> None:
    proc = _start(cleanup=600)
    proc.send_signal(first)
    _wait_line(proc, "cleaning")
    proc.send_signal(second)
    code, out = _finish(proc)  # the clean-up alone would take 600 s
    assert code == 128 + first, out  # the first signal says why the command ended
    assert f"again {signal.Signals(second).name} 2" in out
    assert "gave up" in out and "cleaned" not in out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out


def test_without_an_again_action_a_later_signal_repeats_the_graceful_one() -> None:
    seen: list[int] = []
    interrupts = Interrupts(seen.append)
    assert interrupts.exit_code is None
    interrupts.handle(signal.SIGTERM)
    interrupts.handle(signal.SIGINT)
    assert seen == [signal.SIGTERM, signal.SIGINT]
    assert interrupts.count == 2 and interrupts.exit_code == 128 + signal.SIGTERM


def test_the_handlers_before_it_come_back_after_it() -> None:
    async def main() -> None:
        before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        with Interrupts(lambda _signum: None):
            assert signal.getsignal(signal.SIGINT) != before[signal.SIGINT]
        assert {s: signal.getsignal(s) for s in before} == before

    asyncio.run(main())


def test_outside_the_main_thread_nothing_is_installed() -> None:
    import threading

    found: list[object] = []

    def worker() -> None:
        async def main() -> None:
            before = signal.getsignal(signal.SIGTERM)
            with Interrupts(lambda _signum: None):  # no ValueError from signal.signal
                found.append(signal.getsignal(signal.SIGTERM) == before)

        asyncio.run(main())

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(30)
    assert found == [True]
