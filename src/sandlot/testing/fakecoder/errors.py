"""Errors of the fake CLI, printed the way coder's cli/root.go prints them.

coder wraps every handler error in serpent's RunCommandError, and `cliHumanFormatError`
(cli/root.go) renders it as::

    Encountered an error running "coder <cmd>", see "coder <cmd> --help" for more information
    error: <message>

An API error (codersdk.Error) found down the wrap chain is rendered specially: a
``Trace=[<wrapping prefixes>]`` line when it was wrapped, the server message, validation lines
(``N validation error(s) found`` then ``\\t <field> : <detail>``), then ``Suggestion: <helper>``;
the detail is only shown when there is no helper. Golden files:
cli/testdata/coder_exp_example-error_api.golden, coder_exp_example-error_cmd.golden,
coder_exp_example-error_arg-required.golden. The process exits 1 (RunWithSubcommands), except
for `ExitError` (e.g. `coder ssh` passing on the remote exit status) and cancelled prompts, which
exit silently.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

# coderd/httpmw/apikey.go: every 401 from a missing, malformed or unknown token says this.
SIGNED_OUT_MESSAGE = (
    "You are signed out or your session has expired. Please sign in again to continue."
)
# codersdk/client.go (ReadBodyAsError / newResponseError): helper added to any 401.
LOGIN_HELPER = "Try logging in using 'coder login'."
# coderd/httpapi/httpapi.go ResourceNotFound: identical for every 404 so existence never leaks.
NOT_FOUND_MESSAGE = "Resource not found or you do not have access to this resource"
# cli/root.go: `notLoggedInMessage`, formatted with os.Executable() in current releases.
NOT_LOGGED_IN_FORMAT = "You are not logged in. Try logging in using '{binary} login <url>'."


class CLIError(Exception):
    """A failed command: message text plus how root.go would render and exit."""

    def __init__(
        self,
        message: str,
        *,
        api: bool = False,
        trace: str = "",
        validations: Sequence[tuple[str, str]] = (),
        helper: str = "",
        detail: str = "",
        exit_code: int = 1,
        silent: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.api = api
        self.trace = trace
        self.validations = list(validations)
        self.helper = helper
        self.detail = detail
        self.exit_code = exit_code
        self.silent = silent

    def wrap(self, prefix: str) -> CLIError:
        """Mimic `xerrors.Errorf("<prefix>: %w", err)`: API errors gain a Trace, others a prefix."""
        if self.api:
            self.trace = f"{prefix}: {self.trace}"
        else:
            self.message = f"{prefix}: {self.message}"
        return self

    def body(self) -> str:
        """The text after ``error: `` (cliHumanFormatError)."""
        if not self.api:
            return self.message
        lines: list[str] = []
        if self.trace:
            lines.append(f"Trace=[{self.trace}]")
        lines.append(self.message)
        if self.validations:
            lines.append(f"{len(self.validations)} validation error(s) found")
            lines.extend(f"\t {field} : {text}" for field, text in self.validations)
        if self.helper:
            lines.append(f"Suggestion: {self.helper}")
        elif self.detail:
            lines.append(self.detail)
        return "\n".join(lines)

    def render(self, command: str) -> str:
        """The full stderr text for a failure of `coder <command>` (without trailing newline)."""
        full = f"coder {command}"
        head = f'Encountered an error running "{full}", see "{full} --help" for more information'
        return f"{head}\nerror: {self.body()}"


def api_error(
    message: str,
    *,
    helper: str = "",
    detail: str = "",
    validations: Sequence[tuple[str, str]] = (),
) -> CLIError:
    """An error that came back from the coderd API (codersdk.Error)."""
    return CLIError(message, api=True, helper=helper, detail=detail, validations=validations)


def unauthorized(detail: str) -> CLIError:
    return api_error(SIGNED_OUT_MESSAGE, helper=LOGIN_HELPER, detail=detail)


def not_found() -> CLIError:
    return api_error(NOT_FOUND_MESSAGE)


class ExitCode(Exception):
    """Leave with this status and print nothing (serpent ExitError with a nil error)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code
