"""Docker options: validation and configuration, no engine needed."""

from __future__ import annotations

import pytest

import sandlot
from sandlot import ConfigurationError, DockerOptions, parse_config
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


def test_host_and_context_are_exclusive() -> None:
    with pytest.raises(ConfigurationError, match="not both"):
        sandlot.docker("img", on_close="delete", docker_host="unix:///x", context="c")


def test_attach_rejects_creation_options() -> None:
    with pytest.raises(ConfigurationError, match="memory, mounts only apply when creating"):
        sandlot.docker(attach="box", on_close="leave", memory="1g", mounts=["/a:/b"])


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
