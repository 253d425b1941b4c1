"""Docker options: validation and configuration, no engine needed."""

from __future__ import annotations

import re

import pytest

import sandlot
from sandlot import ConfigurationError, DockerOptions, parse_config
from sandlot.backends.docker import DockerProvider
from sandlot.backends.docker.sandbox import split_env


def test_image_or_attach_exactly_one() -> None:
    with pytest.raises(ConfigurationError, match="exactly one of `image`"):
        sandlot.docker(on_close="delete")
    with pytest.raises(ConfigurationError, match="exactly one of `image`"):
        sandlot.docker("img", on_close="delete", attach="box")
    assert sandlot.docker(attach="box", on_close="leave").options.attach == "box"


def test_on_close_is_required_and_checked() -> None:
    with pytest.raises(TypeError):
        sandlot.docker("img")  # type: ignore[call-arg]
    with pytest.raises(ConfigurationError, match="on_close"):
        sandlot.docker("img", on_close="destroy")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="on_close"):
        parse_config({"type": "docker", "image": "img"})


def test_defaults() -> None:
    options = sandlot.docker("img", on_close="delete").options
    assert (options.workdir, options.network, options.pull, options.init) == (
        "/workspace", "none", "never", True
    )
    assert options.name is None and options.user is None and options.mounts == []
    assert options.security_opt == []


def test_mounts_from_strings_and_mappings() -> None:
    options = DockerOptions(
        image="img", on_close="delete",
        mounts=["/src:/dst", "/a:/b:rw", {"source": "/c", "target": "/d"}],  # type: ignore[list-item]
    )  # fmt: skip
    assert [(m.source, m.target, m.read_only) for m in options.mounts] == [
        ("/src", "/dst", True), ("/a", "/b", False), ("/c", "/d", True),
    ]  # fmt: skip
    for bad in ("/only", "rel:/x", "/x:rel", "/a:/b:rx", "/a,b:/c"):
        with pytest.raises(ConfigurationError, match="mount"):
            sandlot.docker("img", on_close="delete", mounts=[bad])


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("name", "-bad", "container name"),
        ("name", "a b", "container name"),
        ("workdir", "relative", "absolute"),
        ("memory", "lots", "512m"),
        ("cpus", 0, "greater than 0"),
        ("pids_limit", -1, "greater than 0"),
        ("env", {"A=B": "x"}, "invalid environment variable name"),
        ("network", 3, "string"),
    ],
)
def test_bad_values_are_configuration_errors(field: str, value: object, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        sandlot.docker("img", on_close="delete", **{field: value})


def _security_opts(provider: DockerProvider) -> list[str]:
    """The `--security-opt` values of the provider's `docker run`, in order (all before the
    image: after it they would be the container's command line)."""
    args, _env = provider._run_args("sandlot-test", "session", "img")
    image = args.index("img")
    return [args[i + 1] for i, arg in enumerate(args) if arg == "--security-opt" and i < image]


def test_security_opt_becomes_run_args_in_order() -> None:
    assert _security_opts(sandlot.docker("img", on_close="delete")) == []
    values = ["seccomp=unconfined", "no-new-privileges", "label=level:s0:c100,c200"]
    provider = sandlot.docker("img", on_close="delete", security_opt=values)
    assert _security_opts(provider) == values
    args = provider._run_args("sandlot-test", "session", "img")[0]
    assert args.count("--security-opt") == len(values)
    # Any sequence of strings; the same field in a provider configuration (--provider-config,
    # $SANDLOT_PROVIDER).
    as_tuple = sandlot.docker("img", on_close="delete", security_opt=tuple(values))
    assert _security_opts(as_tuple) == values
    configured = sandlot.provider_from_config(
        {"type": "docker", "image": "img", "on_close": "delete", "security_opt": values}
    )
    assert isinstance(configured, DockerProvider)
    assert _security_opts(configured) == values


BAD_SECURITY_OPTS = [
    ("", "must not be empty"),
    ("-", "must not start with '-'"),
    ("--privileged", "must not start with '-'"),
    ("-seccomp=unconfined", "must not start with '-'"),
    ("seccomp=unconfined\0", "control or invisible"),
    ("seccomp=unconfined\n--privileged", "control or invisible"),
    ("seccomp=unconfined\r", "control or invisible"),
    ("apparmor=\tunconfined", "control or invisible"),
    ("seccomp=unconfined\x1b[2J", "control or invisible"),
    ("seccomp=unconfined\x7f", "control or invisible"),
    ("seccomp=unconfined\x85", "control or invisible"),  # C1 next line
    ("seccomp=un\u200bconfined", "control or invisible"),  # zero-width space
    ("seccomp=unconfined\u2028", "control or invisible"),  # line separator
]


@pytest.mark.parametrize(("value", "match"), BAD_SECURITY_OPTS)
def test_bad_security_opt_is_a_configuration_error_before_any_container(
    value: str, match: str
) -> None:
    # The factory and the configuration refuse it: no provider exists, so nothing reaches the
    # engine. The message names the entry and the rule, never the value (adr/0035).
    rule = re.escape(match)
    with pytest.raises(ConfigurationError, match=rf"security_opt\.1: .*{rule}") as caught:
        sandlot.docker("img", on_close="delete", security_opt=["no-new-privileges", value])
    with pytest.raises(ConfigurationError, match=rf"docker: security_opt\.0: .*{rule}"):
        parse_config({"type": "docker", "image": "img", "on_close": "delete",
                      "security_opt": [value]})  # fmt: skip
    if len(value) > 1:  # (a lone "-" is in the rule's own words)
        assert value not in str(caught.value)


def test_security_opt_must_be_a_list_of_strings() -> None:
    # One string is not read as its characters, nor as one option.
    with pytest.raises(ConfigurationError, match="security_opt: Input should be a valid list"):
        sandlot.docker("img", on_close="delete", security_opt="seccomp=unconfined")
    with pytest.raises(ConfigurationError, match=r"security_opt\.0: .* valid string"):
        sandlot.docker("img", on_close="delete", security_opt=[1])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="security_opt: Input should be a valid array"):
        parse_config('{"type": "docker", "image": "img", "on_close": "delete", '
                     '"security_opt": "seccomp=unconfined"}')  # fmt: skip


def test_host_and_context_are_exclusive() -> None:
    with pytest.raises(ConfigurationError, match="not both"):
        sandlot.docker("img", on_close="delete", docker_host="unix:///x", context="c")


def test_attach_rejects_creation_options() -> None:
    with pytest.raises(ConfigurationError, match="memory, mounts only apply when creating"):
        sandlot.docker(attach="box", on_close="leave", memory="1g", mounts=["/a:/b"])
    with pytest.raises(ConfigurationError, match="security_opt only applies when creating"):
        sandlot.docker(attach="box", on_close="leave", security_opt=["seccomp=unconfined"])


def test_json_configuration_builds_a_docker_provider() -> None:
    provider = sandlot.provider_from_config(
        '{"type": "docker", "image": "img", "on_close": "stop", "cpus": 1.5, '
        '"mounts": ["/h:/c:ro"], "env": {"K": "v"}}'
    )
    assert isinstance(provider, sandlot.DockerProvider)
    assert provider.options.on_close == "stop" and provider.options.cpus == 1.5
    schema = sandlot.config.config_schema()
    assert "DockerOptions" in str(schema)


def test_env_names_the_client_reads_are_kept_off_its_environment() -> None:
    passed, exported = split_env(
        {"TOKEN": "s3cret", "HOME": "/h", "PATH": "/p", "DOCKER_HOST": "x", "https_proxy": "p"}
    )
    assert passed == {"TOKEN": "s3cret"}
    assert set(exported) == {"HOME", "PATH", "DOCKER_HOST", "https_proxy"}
