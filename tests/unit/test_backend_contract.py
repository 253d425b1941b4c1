"""Every backend class keeps to the contract written in sandlot/backends/contract.py.

The classes are found by introspection (every subclass of `Sandbox` and `RunningCommand` that
sandlot's own modules define), so a new backend, or a new override in an old one, is checked
without being registered here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import sandlot
from sandlot.backends import contract
from sandlot.sandbox import RunningCommand, Sandbox

#: Names every class has, or that `abc` adds to each subclass: not hooks.
_NOT_HOOKS = {"_abc_impl"}


def import_all() -> None:
    for module in pkgutil.walk_packages(sandlot.__path__, "sandlot."):
        if module.name.endswith("__main__") or ".testing" in module.name:
            continue  # __main__ runs the CLI; the fake Coder is a test double, not a backend
        importlib.import_module(module.name)


def subclasses(base: type) -> list[type]:
    found: list[type] = []
    direct: list[type] = base.__subclasses__()
    for cls in direct:
        if cls.__module__.startswith("sandlot."):
            found.append(cls)
        found.extend(subclasses(cls))
    return found


def overrides(cls: type, base: type) -> set[str]:
    """Names `cls` itself defines that some class of `base`'s MRO defines too (dunders aside)."""
    inherited = {name for klass in base.__mro__ for name in vars(klass)}
    return {name for name in vars(cls)
            if name in inherited and not name.startswith("__") and name not in _NOT_HOOKS}


@pytest.fixture(scope="module", autouse=True)
def _every_backend_imported() -> None:
    import_all()


def test_the_listed_hooks_exist_on_the_base_classes() -> None:
    for name in [*contract.ABSTRACT, *contract.HOOKS]:
        assert hasattr(Sandbox, name), name
    assert set(contract.ABSTRACT) == set(Sandbox.__abstractmethods__)
    for name in [*contract.COMMAND_ABSTRACT, *contract.COMMAND_HOOKS]:
        assert hasattr(RunningCommand, name), name
    assert set(contract.COMMAND_ABSTRACT) == set(RunningCommand.__abstractmethods__)


def test_every_sandbox_override_is_a_listed_hook_and_recorded() -> None:
    allowed = set(contract.ABSTRACT) | set(contract.HOOKS)
    found = {cls.__qualname__: overrides(cls, Sandbox) for cls in subclasses(Sandbox)}
    assert found, "no backend class found"
    for name, names in found.items():
        # A backend that redefines another private member of Sandbox (say `_ensure_open` or
        # `_spawn_tracked`) changes the engine behind the contract's back.
        assert names <= allowed, f"{name} overrides {sorted(names - allowed)}, not hooks"
    assert found == {name: set(hooks) for name, hooks in contract.OVERRIDES.items()}


def test_every_command_override_is_listed_and_recorded() -> None:
    allowed = set(contract.COMMAND_ABSTRACT) | set(contract.COMMAND_HOOKS)
    found = {cls.__qualname__: overrides(cls, RunningCommand)
             for cls in subclasses(RunningCommand)}
    for name, names in found.items():
        assert names <= allowed, f"{name} overrides {sorted(names - allowed)}"
    assert found == {name: set(hooks) for name, hooks in contract.COMMAND_OVERRIDES.items()}


def test_no_backend_redefines_a_public_method() -> None:
    # The public methods (exec, start, copy_in, close, ...) are written once in Sandbox.
    public = {name for name, value in vars(Sandbox).items()
              if not name.startswith("_") and inspect.isfunction(value)}
    for cls in subclasses(Sandbox):
        assert not (set(vars(cls)) & public), cls.__qualname__
