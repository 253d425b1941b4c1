"""Bounded retries of the deployment's transient failures while a sandbox is being made.

A fan-out creates many workspaces at once, and a busy deployment answers some of those calls
with a rate limit (429), a proxy's 502/503/504 page, or `connection refused` while coderd
restarts. Those are retried with exponential backoff and jitter (tenacity), within
`transient_retry_timeout` seconds, and each retry is logged. Everything else fails at once:
a template that does not exist, a quota, a bad token.

`connection refused` is only transient for a deployment this process has already reached:
at first contact it far more likely means a wrong URL, and the user should hear so at once.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential_jitter,
)

from ...errors import (
    CoderCLIError,
    CoderNotLoggedInError,
    CoderUnreachableError,
    CoderWorkspaceNotFoundError,
)

log = logging.getLogger("sandlot.coder")

T = TypeVar("T")

#: At most this many attempts, whatever the time bound allows.
MAX_ATTEMPTS = 8

# coderd/httpmw/ratelimit.go (429); codersdk.ReadBodyAsError for a non-JSON answer, which is
# what a proxy's error page is; the reason phrases a proxy or load balancer puts in it.
_TRANSIENT_TEXT = re.compile(
    r"rate limited for sending too many requests|unexpected non-JSON response|"
    r"502 Bad Gateway|503 Service Unavailable|504 Gateway Time-?out|"
    r"connection reset by peer",
    re.I,
)

#: Deployments (by URL, "" for the CLI's own login) that answered this process at least once.
_reached: set[str] = set()


def mark_reached(url: str | None) -> None:
    _reached.add(url or "")


def is_transient(exc: BaseException, url: str | None) -> bool:
    """Whether retrying `exc` later can succeed."""
    if isinstance(exc, (CoderNotLoggedInError, CoderWorkspaceNotFoundError)):
        return False
    if isinstance(exc, CoderUnreachableError):
        return (url or "") in _reached and bool(
            re.search(r"connection refused|connection reset", str(exc), re.I)
        )
    if isinstance(exc, CoderCLIError):
        return bool(_TRANSIENT_TEXT.search(exc.stderr or str(exc)))
    return False


async def retrying(
    what: str, call: Callable[[], Awaitable[T]], *, url: str | None, timeout: float
) -> T:
    """`await call()`, retried while it fails transiently and `timeout` seconds allow."""
    if timeout <= 0:
        return await call()

    def note(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        log.warning(
            "%s failed transiently (attempt %d): %s; retrying in %.1fs",
            what, state.attempt_number, error, wait,
        )

    async for attempt in AsyncRetrying(
        retry=retry_if_exception(lambda exc: is_transient(exc, url)),
        stop=stop_after_delay(timeout) | stop_after_attempt(MAX_ATTEMPTS),
        # `initial` (not 9.2's `multiplier`): deepagents' google-genai caps tenacity below 9.2.
        wait=wait_exponential_jitter(initial=0.5, max=10.0, jitter=1.0),
        before_sleep=note,
        reraise=True,
    ):
        with attempt:
            return await call()
    raise AssertionError("unreachable: tenacity either returns or re-raises")  # pragma: no cover
