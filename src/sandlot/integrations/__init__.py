"""Adapters that plug sandlot sandboxes into agent frameworks' own sandbox contracts.

Each lives in its own module behind an optional extra (`sandlot[deepagents]`, ...): importing
sandlot never imports a framework.
"""
