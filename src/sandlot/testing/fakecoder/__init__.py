"""Runtime of the fake Coder deployment: the `coder` CLI, its state and the agent daemons.

Standard library only (except agent.py, which runs asyncssh in its own process), and imported
by the launcher under a private alias (see bootstrap.py) so that every CLI call stays fast.
"""
