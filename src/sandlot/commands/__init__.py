"""Subcommands of the `sandlot` CLI, one module each."""
