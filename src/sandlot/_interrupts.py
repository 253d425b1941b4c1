"""How every `sandlot` command answers SIGINT and SIGTERM: one policy, written once.

The policy (each command says what its graceful stop and its giving-up are):

- The first SIGINT or SIGTERM asks for a graceful stop: the command's `graceful` action runs
  (cancel the work, ask a server to exit), and what a graceful stop owes still happens: the
  sandboxes are closed with their on_close, commits are brought back within their bound,
  running requests get their grace.
- A later one gives the graceful part up promptly: the command's `again` action runs
  (cancel the bring-back, force the server down, abandon the cleanup). Without one, the
  graceful action runs again, which cancels whatever the stop is still waiting for. fanout,
  whose graceful part closes many sandboxes at once, spends the second on listing those still
  open and gives up at the third (its module docstring).
- The exit status is 128 + the first signal's number (130 for Ctrl-C, 143 for SIGTERM), the
  shell's convention for "ended by this signal" (`Interrupts.exit_code`). `sandlot serve`,
  whose ordinary end is a service manager's SIGTERM, exits 0 once it stopped cleanly after
  serving (128 + signal when start-up was interrupted).

Both signals are handled in the event loop (`loop.add_signal_handler`): never by Python's
default (a KeyboardInterrupt raised wherever the code happens to be, which can skip a
sandbox's close) nor by uvicorn's (which would take them away while it serves). Outside the
main thread, or without a running loop, nothing is installed: the program that embeds the
command owns its signals.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable
from types import TracebackType

#: The signals the policy covers.
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """Counts SIGINT/SIGTERM while installed (`with Interrupts(...):` inside the event loop)
    and runs the command's action for each: `graceful(signum)` for the first,
    `again(signum, count)` for each later one (count 2, 3, ...)."""

    def __init__(
        self,
        graceful: Callable[[int], None],
        again: Callable[[int, int], None] | None = None,
    ) -> None:
        self._graceful = graceful
        self._again = again
        #: How many signals arrived.
        self.count = 0
        #: The first signal's number, or None.
        self.signal: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._previous: dict[int, signal._HANDLER] = {}

    @property
    def exit_code(self) -> int | None:
        """128 + the first signal's number, or None when none arrived."""
        return None if self.signal is None else 128 + self.signal

    def handle(self, signum: int) -> None:
        """What a signal does (also callable directly, e.g. by a test or a `stop()`)."""
        self.count += 1
        if self.count == 1:
            self.signal = signum
            self._graceful(signum)
        elif self._again is not None:
            self._again(signum, self.count)
        else:
            self._graceful(signum)

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is not threading.main_thread():
            return self
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self
        self._previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
        try:
            for sig in SIGNALS:
                loop.add_signal_handler(sig, self.handle, sig)
        except NotImplementedError:  # an event loop without signal support (Windows)
            return self
        self._loop = loop
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        loop, self._loop = self._loop, None
        if loop is not None and not loop.is_closed():
            for sig in SIGNALS:
                loop.remove_signal_handler(sig)
                # What was there before (asyncio.run's own SIGINT handler, say) comes back.
                previous = self._previous.get(sig)
                if previous is not None:
                    signal.signal(sig, previous)


def name(signum: int) -> str:
    """SIGINT, SIGTERM, ... for messages."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
