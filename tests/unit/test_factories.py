"""One way from options to a provider: the three factories are thin and alike (issue 27).

Each factory spells out its backend model's fields as keyword parameters (for type checkers and
completion) and hands them unchanged to `sandlot._options.options_from`; the model is the only
source of defaults and rules. These tests hold the two together so they cannot drift.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

import sandlot
from sandlot import ConfigurationError
from sandlot.backends.coder.options import CoderAttachOptions, CoderCreateOptions
from sandlot.backends.docker.options import DockerOptions
from sandlot.backends.local import LocalOptions

FACTORIES: list[tuple[Callable[..., Any], list[type[BaseModel]]]] = [
    (sandlot.local, [LocalOptions]),
    (sandlot.docker, [DockerOptions]),
    (sandlot.coder, [CoderCreateOptions, CoderAttachOptions]),
]
IDS = ["local", "docker", "coder"]


def model_defaults(models: list[type[BaseModel]]) -> dict[str, Any]:
    """Field -> default (PydanticUndefined when required, `list`/`dict` for factories)."""
    fields: dict[str, Any] = {}
    for model in models:
        for name, info in model.model_fields.items():
            if name == "type":
                continue
            default = info.default_factory if info.default_factory is not None else info.default
            fields.setdefault(name, default)
    return fields


@pytest.mark.parametrize(("factory", "models"), FACTORIES, ids=IDS)
def test_factory_parameters_are_the_model_fields(
    factory: Callable[..., Any], models: list[type[BaseModel]]
) -> None:
    params = inspect.signature(factory).parameters
    fields = model_defaults(models)
    assert set(params) == set(fields), "factory keywords and model fields differ"
    for name, param in params.items():
        assert param.kind is not inspect.Parameter.VAR_KEYWORD
        default = fields[name]
        if default is PydanticUndefined:
            # Required in the model: required in the factory, or None when the model's own
            # rule decides (image XOR attach, template XOR workspace).
            assert param.default in (inspect.Parameter.empty, None), name
        elif callable(default):
            assert param.default is None, f"{name}: a mutable default is None in the factory"
        else:
            assert param.default in (default, None), (
                f"{name}: factory default {param.default!r}, model default {default!r}"
            )


@pytest.mark.parametrize(("factory", "models"), FACTORIES, ids=IDS)
def test_factory_is_one_call_through_the_shared_path(
    factory: Callable[..., Any], models: list[type[BaseModel]]
) -> None:
    # Thin: no local variable but its parameters (its arguments go to the model as given).
    code = factory.__code__
    assert code.co_varnames == tuple(inspect.signature(factory).parameters)
    assert "options_from" in code.co_names


@pytest.mark.parametrize(
    ("factory", "kw"),
    [
        (sandlot.local, {"isolation": "docker"}),
        (sandlot.local, {"on_close": "stop"}),
        (sandlot.docker, {"image": "img", "on_close": "delete", "cpus": "lots"}),
        (sandlot.coder, {"template": "t", "on_close": "delete", "build_timeout": -1}),
    ],
    ids=["local-isolation", "local-on_close", "docker-cpus", "coder-timeout"],
)
def test_bad_keywords_are_configuration_errors_never_pydantics(
    factory: Callable[..., Any], kw: dict[str, Any]
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        factory(**kw)
    assert type(caught.value) is ConfigurationError
    assert "errors.pydantic.dev" not in str(caught.value)


def test_none_means_the_models_default() -> None:
    assert sandlot.local(env=None).options.env == {}
    options = sandlot.coder(workspace="dev", on_close="leave", build_timeout=None).options
    assert options.build_timeout == CoderAttachOptions.model_fields["build_timeout"].default
    assert sandlot.docker("img", on_close="delete", mounts=None).options.mounts == []
