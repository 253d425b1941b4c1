"""The environment a local sandbox's commands get: an explicit allowlist, never the whole host's.

The local backend used to hand every command this process's whole environment, so whatever
secret the calling program held (the `sandlot serve` bearer token, a Coder session token, a
cloud credential) was one `env` away from the code in the sandbox. Commands now get only what a
toolchain needs to work on this host: the basics of a login environment, locale, proxy and CA
settings (registries are often reached through them), and the configuration variables of the
toolchains sandlot drives. Anything whose name says it is a secret is dropped even when an
allowed prefix matches it; `inherit_env` names more variables to pass on purpose.

Names are not enough: `PIP_INDEX_URL=https://user:password@registry/simple` or
`HTTPS_PROXY=http://user:pass@proxy:3128` carry a credential under an innocent name. A value
that holds a URL with userinfo or an Authorization-like value (`Bearer ...`, `Basic ...`) is
dropped too, and the names dropped are logged at DEBUG (never the values). Variables named in
`inherit_env` and the caller's `env=` are passed as given: they are asked for on purpose.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping

from ..errors import ConfigurationError

#: Passed through by exact name when the host has them.
INHERITED_NAMES = frozenset(
    {
        # A login environment.
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "NO_COLOR", "TZ",
        "TMPDIR", "LANG", "LANGUAGE",
        # Proxies: package registries are often only reachable through them.
        "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
        "http_proxy", "https_proxy", "no_proxy", "all_proxy",
        # CA bundles for TLS-intercepting proxies.
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "PIP_CERT",
        # Go's toolchain settings (never a blanket GO* prefix: GOOGLE_* credentials share it).
        "GOPATH", "GOROOT", "GOBIN", "GOCACHE", "GOMODCACHE", "GOENV", "GOFLAGS", "GOPROXY",
        "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOTOOLCHAIN", "GOTELEMETRY",
        "JAVA_HOME",
    }
)  # fmt: skip

#: Passed through by prefix: locale categories and toolchain configuration.
INHERITED_PREFIXES = (
    "LC_", "XDG_", "PIP_", "UV_", "PYTHON", "PYENV_", "CARGO_", "RUSTUP_", "RUST_",
    "NPM_CONFIG_", "npm_config_", "NODE_",
)  # fmt: skip

#: Names that look like secrets are never passed by a prefix match.
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW(OR)?D|CREDENTIAL|AUTH|_KEY$|^KEY", re.IGNORECASE)

#: A value carrying a credential: a URL with userinfo (`scheme://user[:password]@host`), an
#: HTTP Authorization header or scheme, or a key=value pair whose key names a secret.
_SECRET_VALUE = re.compile(
    r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#\s@]+@"
    r"|\bauthorization\s*[:=]"
    r"|^\s*(bearer|basic|token|digest|negotiate|aws4-hmac-sha256)\s+\S"
    r"|\b(password|passwd|secret|token|api[_-]?key)=[^&\s]",
    re.IGNORECASE,
)

log = logging.getLogger("sandlot.local")

#: sandlot's own secrets: not even `inherit_env` may hand these to a sandbox.
FORBIDDEN_NAMES = frozenset({"SANDLOT_TOKEN", "CODER_SESSION_TOKEN"})


def check_inherit_env(names: Iterable[str]) -> list[str]:
    """Validate `inherit_env`: plain variable names, none of sandlot's own secrets."""
    checked: list[str] = []
    for name in names:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ConfigurationError(
                "local: inherit_env entries must be environment variable names "
                "(letters, digits and _, not starting with a digit)"
            )
        if name in FORBIDDEN_NAMES:
            raise ConfigurationError(
                f"local: inherit_env may not pass {name} to a sandbox: it is a sandlot secret; "
                "give the sandbox its own credential through env= if it really needs one"
            )
        checked.append(name)
    return checked


def _inherited(name: str) -> bool:
    if name in INHERITED_NAMES:
        return True
    return name.startswith(INHERITED_PREFIXES) and not _SECRET_NAME.search(name)


def sandbox_environment(
    extra: Mapping[str, str],
    inherit: Iterable[str] = (),
    host: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for a local sandbox's commands.

    `host` (default: this process's environment) is filtered through the allowlist, then the
    names in `inherit` are added from it (never sandlot's own secrets), then `extra` (the
    caller's explicit `env=`) wins.
    """
    source = os.environ if host is None else host
    env: dict[str, str] = {}
    dropped: list[str] = []
    for name, value in source.items():
        if not _inherited(name):
            continue
        if _SECRET_VALUE.search(value):
            dropped.append(name)
            continue
        env[name] = value
    if dropped:
        log.debug("local: not passing %s to the sandbox: the value carries a credential (a "
                  "URL with user:password@, an Authorization value); pass it with env= or "
                  "inherit_env if the sandbox needs it", ", ".join(sorted(dropped)))
    for name in inherit:
        if name in source and name not in FORBIDDEN_NAMES:
            env[name] = source[name]
    # The caller's explicit env= is theirs to set: it is not filtered.
    env.update(extra)
    return env
