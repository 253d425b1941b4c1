"""A fake Coder deployment for tests: a `coder` executable, real SSH, fault knobs.

Put the fake `coder` on PATH and drive it exactly like the real CLI; every workspace agent is a
real SSH server (asyncssh) that runs commands with ``sh -c`` in the agent's own directory, reached
through ``coder ssh --stdio``. JSON shapes, messages, error text and exit codes follow coder's
source (each module of ``sandlot.testing.fakecoder`` names the coder file it mirrors).

Quick start (pytest)::

    import os
    import subprocess

    import sandlot
    from sandlot.testing import AgentSpec, FakeCoderDeployment, ParameterSpec

    def test_something(tmp_path):
        with FakeCoderDeployment(tmp_path / "coder") as coder:      # shutdown() on exit
            coder.add_template("docker", agents=[AgentSpec("main", directory="project")])
            exe = coder.install(tmp_path / "bin")                   # writes bin/coder
            env = {**os.environ, **coder.env()}                     # CODER_URL, token, ...
            subprocess.run([exe, "create", "ws1", "-t", "docker", "--yes"], env=env, check=True)
            ws = coder.workspace("ws1")                             # codersdk.Workspace JSON
            provider = sandlot.coder(template="docker", on_close="delete", **coder.access())

``env()`` is for running the fake `coder` yourself; `sandlot.coder` takes ``access()`` (the
binary, URL and token), never ``env=`` (that is the workspace's commands' environment). With
pytest, the plugin `sandlot.testing.pytest_plugin` (loaded automatically once sandlot is
installed) gives the fixtures ``sandlot_fake_coder``, ``sandlot_coder_provider`` and
``sandlot_local_provider``.

SSH into an agent with any client whose ProxyCommand is ``<exe> ssh --stdio ws1[.agent]``
(accept any host key: the fake's host key is generated per deployment; no auth is required).

The Python API (`FakeCoderDeployment`):

- ``FakeCoderDeployment(root, url=..., username="testuser")``: create the deployment in `root`
  (or attach to the one already there). One user, one organization ("coder"), a session token.
- ``install(bin_dir) -> Path``: write the `coder` launcher; ``coder`` property: its path.
- ``access()``: ``coder_binary``, ``coder_url`` and ``session_token`` for `sandlot.coder`.
- ``env(logged_in=True)``: ``SANDLOT_FAKE_CODER_HOME``, ``CODER_URL``, ``CODER_SESSION_TOKEN``,
  ``CODER_CONFIG_DIR`` (a private config dir, so ~/.config/coderv2 is never read) and PATH with
  the launcher first; ``logged_in=False`` gives an environment where every command fails with
  "You are not logged in". ``write_config(dir)``: write `url`/`session` like `coder login`.
- ``url``, ``username``, ``token`` (a secret), ``config_dir``.
- ``add_template(name, agents=[AgentSpec(...)|"name"], parameters=[ParameterSpec(...)],
  presets={preset: {param: value}}, versions=("v1",), build_seconds=0.0)``.
- ``add_user(username) -> token`` for `owner/name` workspaces.
- ``workspaces()``, ``workspace(name)``: state as `coder list -o json` shows it;
  ``agent_home(workspace, agent=None)``: the agent's $HOME on the host; ``agent_pids()``.
- Fault knobs (``workspace=None`` applies to every workspace):
  ``set_agent_connects_late(lists=N, seconds=S)``, ``set_lifecycle("starting" | "start_error" |
  "start_timeout" | "shutting_down" | ... | None)``, ``set_agent_status(...)``,
  ``fail_ssh_with_shutting_down(attempts)`` (prebuild race),
  ``fail_create_after_workspace_exists()``,
  ``fail_next_build(error, transition="start")``, ``drop_connection_on(marker, times=None)``,
  ``revoke_sessions()`` / ``restore_sessions()`` (401: signed out), ``kill_agent(workspace)``,
  ``clear_faults()``.
- Which release it follows: **coder v2.30.0**, the newest sandlot is tested on (its CLI recorded
  in tests/fixtures/coder-cli/ by scripts/record-coder-cli.py); ``set_release("v2.27.0")``
  emulates the oldest supported release (recorded in tests/fixtures/coder-cli/older/v2.27.0/:
  no ``create --use-parameter-defaults``, "No preset applied." without a newline).
  Single settings: ``set_empty_list_json(False)`` (empty stdout instead of `[]` when there is
  no workspace, as releases before v2.26), ``set_use_parameter_defaults(False)``,
  ``set_accept_workspace_ids(True)`` (UUIDs for lifecycle commands).
- ``shutdown()``: kill every agent process (also on ``with`` exit). Always call it in teardown.

CLI surface: ``whoami -o json``; ``list -o json [-a] [--search q]``; ``create [owner/]name -t T
[--template-version V] [--parameter k=v]... [--rich-parameter-file F] [--parameter-default k=v]
[--preset P|none] [-O org] [--use-parameter-defaults (setting)] [-y] [--no-wait]``;
``start|stop|delete <ws> [-y]``;
``ssh --stdio <ws>[.<agent>]`` (also ``owner/ws``, ``owner--ws--agent``); global ``--url``,
``--token``, ``--global-config``. Details and deliberate differences: adr/ (fake Coder ADR).
"""

from .deployment import DEFAULT_URL, AgentSpec, FakeCoderDeployment, ParameterSpec

__all__ = ["DEFAULT_URL", "AgentSpec", "FakeCoderDeployment", "ParameterSpec"]
