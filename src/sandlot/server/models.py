"""The wire format of the sandbox server, shared by the server and its client (pydantic only).

The response shapes are a contract: identical in every mode and on every backend.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

#: Hard caps that hold whatever the server's settings say (the settings may only be lower).
MAX_REQUIREMENTS = 64
MAX_REQUIREMENT_LENGTH = 512
#: A sanity cap on the timeout field; the server's own maximum is usually far lower.
TIMEOUT_CAP = 86400.0


def _unicode(value: str) -> str:
    # JSON allows lone surrogates ("\ud800"), which no file or process can take.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (no lone surrogates)") from None
    return value


Text = Annotated[str, AfterValidator(_unicode)]
#: A package specifier: never an installer option (leading '-'), never more than one line.
REQUIREMENT_PATTERN = r"^[^\s\x00-][^\x00\n\r]*$"
Requirement = Annotated[
    str,
    Field(min_length=1, max_length=MAX_REQUIREMENT_LENGTH, pattern=REQUIREMENT_PATTERN),
    AfterValidator(_unicode),
]


class ExecuteRequest(BaseModel):
    """Code to run in the server's mode."""

    model_config = ConfigDict(extra="forbid")

    code: Text = Field(description="The program text, in the server's mode's language.")
    requirements: list[Requirement] = Field(
        default_factory=list,
        max_length=MAX_REQUIREMENTS,
        description="Packages to install first (python: PyPI specifiers, node: npm specs); "
        "ignored in golang and shell modes.",
    )
    timeout: float | None = Field(
        default=None,
        strict=True,  # JSON numbers only: true or "5" is no timeout (adr/0032)
        gt=0,
        le=TIMEOUT_CAP,
        allow_inf_nan=False,
        description="Seconds for the whole run, install included; at most the server's "
        "maximum. Default: the server's default timeout.",
    )


class ExecuteResponse(BaseModel):
    """What a run produced. A failing program is still a 200: see exit_code and stderr."""

    stdout: str
    stderr: str
    exit_code: int
    duration_ms: int
    timed_out: bool
    truncated: bool


class HealthResponse(BaseModel):
    """The server's mode and runtime, and whether its sandbox answers."""

    status: Literal["ok", "unavailable"]
    mode: str
    runtime_version: str
    provider: str


class ForwardRequest(BaseModel):
    """A port inside the sandbox to reach from the server's host."""

    model_config = ConfigDict(extra="forbid")

    port: int = Field(ge=1, le=65535, strict=True,  # true is no port 1 (adr/0032)
                      description="The port a program in the sandbox listens on (127.0.0.1 "
                      "inside the sandbox).")


class ForwardResponse(BaseModel):
    """An open forward: connections to `url` on the server's host reach `port` inside."""

    port: int
    host: str
    host_port: int
    url: str


class ErrorResponse(BaseModel):
    """Every non-2xx answer of the server (except uvicorn's own 503 when overloaded)."""

    error: str = Field(description="A stable machine-readable code, e.g. 'too_many_requests'.")
    detail: str = Field(description="What went wrong and what to do about it.")
    installer: str | None = None
    exit_code: int | None = None
    stderr: str | None = None


class ProcessRequest(BaseModel):
    """Start a durable process: a shell command run detached in the sandbox."""

    model_config = ConfigDict(extra="forbid")

    command: Text = Field(min_length=1, description="A shell command line (run with sh -c).")
    cwd: Text | None = Field(default=None, description="Absolute working directory inside "
                             "the sandbox; default: the sandbox's worktree.")
    timeout: float | None = Field(default=None, gt=0, le=TIMEOUT_CAP, strict=True,
                                  description="End it after this many seconds.")
    idle_timeout: float | None = Field(default=None, gt=0, le=TIMEOUT_CAP, strict=True,
                                       description="End it after this long without output.")


class ProcessResponse(BaseModel):
    """A durable process as its files in the sandbox describe it."""

    id: str
    command: str
    cwd: str
    started_at: int = Field(description="Epoch seconds (the sandbox's clock).")
    state: Literal["running", "exited", "lost"]
    exit_code: int | None
    ended_by: Literal["timeout", "idle_timeout"] | None
    output_bytes: int = Field(description="Bytes printed so far (stdout and stderr together).")


class ProcessOutputResponse(BaseModel):
    """Output from a byte cursor. `text` never ends inside a UTF-8 character: such bytes stay
    for the next read (`next` is after the last byte `text` holds)."""

    text: str = Field(description="The bytes as UTF-8 (an invalid byte shows as U+FFFD).")
    start: int
    next: int = Field(description="Pass as `since` to read on.")
    dropped: int = Field(description="Bytes skipped: the bounded output files no longer held "
                         "them.")
    complete: bool = Field(description="The process ended and this read reached its end.")
    process: ProcessResponse


class SignalRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    signal: str = Field(default="TERM", max_length=12,
                        description="TERM, KILL, INT, HUP, USR1, ... (with or without SIG).")


class SignalResponse(BaseModel):
    sent: bool = Field(description="False when the process had already ended.")
