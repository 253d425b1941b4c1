"""The fake Coder CLI's dispatcher finds a handler for every subcommand it lists.

Handlers are imported when their subcommand runs (cli/__init__.py), so a module or handler
named wrong would otherwise only show when that subcommand is first called.
"""

from __future__ import annotations

from pathlib import Path

from sandlot.testing.fakecoder import cli


def test_every_subcommand_has_its_module_and_handler() -> None:
    modules = {p.stem for p in Path(cli.__file__).parent.glob("*.py")} - {"__init__"}
    assert set(cli.COMMANDS) <= modules
    for name, command in cli.COMMANDS.items():
        assert command.name == name
        assert callable(command.handler), name
        assert command.handler.__module__.endswith(f".cli.{name}")
    # Beside the subcommands, only what coder's cli/root.go and cli/cliui share.
    assert modules - set(cli.COMMANDS) == {"root", "cliui"}
