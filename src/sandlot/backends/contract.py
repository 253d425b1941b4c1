"""The backend contract: what a `Sandbox` subclass owes, what it may override, and who does.

A backend is a subclass of `sandlot.sandbox.Sandbox` (with a `RunningCommand` for the commands
it starts) plus a provider that makes it. The public methods (`exec`, `start`, `copy_in`, ...)
are written once in the base class and are not overridden; the base calls the private hooks
below, and those are the only private names of the base a backend may redefine.
tests/unit/test_backend_contract.py holds every backend class in the package to these tables:
a backend that overrides a private name not listed here, or whose overrides differ from
`OVERRIDES`, fails it, so this file stays the true list.

`ABSTRACT`: what every backend must implement (no default). `HOOKS`: what a backend may
override, with the default it gets otherwise. `OVERRIDES`: which backend overrides which hook,
and why. The same for `RunningCommand` in the `COMMAND_*` tables.

This module is documentation that a test checks; nothing imports it at run time.
"""

from __future__ import annotations

#: Sandbox hooks with no default.
ABSTRACT: dict[str, str] = {
    "_spawn": "start a SpawnSpec (stdin streamed then closed; stdout/stderr bytes to the "
              "sinks) and return its RunningCommand",
    "_interactive": "run argv wired to the caller's streams, with a PTY when tty; return the "
                    "exit code",
    "_close": "release the backend's resources, applying its on_close policy (called once, "
              "after every command was ended)",
}

#: Sandbox hooks with a default, and that default.
HOOKS: dict[str, str] = {
    "_sweep_before_kill": "False: killing a command signals its process group first, then "
                          "sweeps its marked processes (True: sweep first, for a backend whose "
                          "group kill waits for the output pipes to drain)",
    "_session_helper": "True: sandlot's file tools may run in the sandbox's session helper "
                       "(adr/0042); each backend sets it from its options' session_helper",
    "_can_sweep": "True: a sweep can run now (False: it would need a reconnect first)",
    "_before_spawn": "nothing: what a start waits for before anything runs (a reconnect), "
                     "awaited where a cancel may still cut it short",
    "_sweep": "run the sweep (`_run_marks.sweep_argv`) as a command, killing every "
              "process whose environment holds the mark",
    "_spawn_detached": "start argv from `setsid` in a command that returns at once (durable "
                       "processes outlive it)",
    "_close_ends_durable": "False: close() leaves durable processes running",
    "_forward_preflight": "probe the sandbox for a relay program (python3, socat, nc or "
                          "busybox); ForwardRelayMissingError when none",
    "_forward_handover": "False: the accepted socket is left to _forward_connection",
    "_forward_connection": "carry one forwarded connection through a relay command "
                           "(forward.relay_through_command)",
    "_copy_in": "the staged tar stream over exec (transfer.copy_in)",
    "_copy_out": "the staged tar stream over exec (transfer.copy_out)",
    "_pause": "NotSupportedError: the backend cannot freeze a sandbox",
    "_resume": "NotSupportedError",
    "_resume_before_close": "False: close() of a paused sandbox does not resume it first",
}

#: Backend class (qualified name) -> the hooks it overrides (abstract ones included), and why.
OVERRIDES: dict[str, dict[str, str]] = {
    "HostSandbox": {  # local_host.py: the base both local backends share
        "_spawn": "a host subprocess in a session of its own (the argv from `_wrap`)",
        "_interactive": "a host subprocess on the caller's streams, or on a PTY",
        "_close": "removes the worktree with on_close='delete'",
        "_sweep_before_kill": "True: the local group kill waits for the pipes to drain",
        "_sweep": "_run_marks.host_sweep: this host's /proc sees every process (under "
                  "bubblewrap too), so no command is needed",
        "_close_ends_durable": "True with on_close='delete': host processes would outlive the "
                               "worktree",
    },
    "LocalSandbox": {  # local.py: commands as they are on this host
        "_forward_preflight": "nothing: the sandbox's ports are the host's",
        "_forward_connection": "a host TCP connection",
        "_copy_in": "one regular file is copied on the host (staged, then renamed); a "
                    "directory takes the default",
        "_copy_out": "one regular file is copied on the host; anything else the default",
    },
    "BwrapSandbox": {  # local_bwrap.py: every command under bubblewrap
        "_close": "stops the shared network namespace, then HostSandbox's",
        "_spawn_detached": "a bubblewrap of its own started with setsid -f (each command's "
                           "PID namespace ends with it)",
        "_forward_preflight": "PortForwardUnsupportedError without a shared network "
                              "namespace, else the default",
    },
    "DockerSandbox": {
        "_spawn": "an exec request on the session helper when it runs (adr/0043), else (and "
                  "for the helper's own start) docker exec",
        "_interactive": "docker exec -i (-t with a local PTY)",
        "_sweep": "as root (docker exec -u 0), so processes started through sudo are found",
        "_copy_in": "docker cp for large payloads when commands run as root",
        "_copy_out": "docker cp streamed into a host tar (the root itself: the default)",
        "_pause": "docker pause (the cgroup freezer: processes keep their memory)",
        "_resume": "docker unpause",
        "_resume_before_close": "True: a frozen container's processes cannot be swept",
        "_forward_connection": "a connect request on the session helper when it runs "
                               "(adr/0043), else the default relay command",
        "_forward_handover": "the client socket itself, passed to the session helper over a "
                             "Unix socket in a read-only bind mount, where the engine shares "
                             "this host's kernel (adr/0055); else False",
        "_close": "stops or removes the container per on_close, and its handover directory "
                  "with it when removed",
    },
    "CoderSandbox": {
        "_spawn": "a channel on the sandbox's one SSH connection",
        "_interactive": "an SSH session on the caller's streams",
        "_close": "stops, deletes or leaves the workspace per on_close",
        "_can_sweep": "only while the SSH connection is up",
        "_before_spawn": "reconnects a dropped SSH connection before the start",
        "_close_ends_durable": "True unless on_close='leave': an agent on a shared host would "
                               "leave them running",
        "_forward_preflight": "only ensures the connection (direct-tcpip needs no program)",
        "_forward_connection": "a direct-tcpip channel on the SSH connection",
        "_pause": "drops the SSH connection and stops the workspace (its disk is kept)",
        "_resume": "starts the workspace, waits for its agent, reconnects",
    },
}

#: RunningCommand methods with no default.
COMMAND_ABSTRACT: dict[str, str] = {
    "wait": "the exit code once the process ended and its output was delivered; safe to call "
            "again after a cancelled call; returns within seconds after kill()",
    "kill": "end the command's whole process tree; idempotent",
}

#: RunningCommand methods with a default.
COMMAND_HOOKS: dict[str, str] = {
    "signal_group": "kill(): a backend whose kill() waits for the output sends the group "
                    "signal here, so the sandbox can end escaped holders first",
}

#: RunningCommand class (qualified name) -> the methods it overrides, and why.
COMMAND_OVERRIDES: dict[str, dict[str, str]] = {
    "_MarkedCommand": {  # sandbox.py's wrapper of every backend's command (not a backend)
        "wait": "the inner command's",
        "kill": "the marked processes and the group, in the order _can_sweep and "
                "_sweep_before_kill say, then the inner kill()",
    },
    "_LocalCommand": {
        "wait": "the host process's exit once its output pumps end",
        "kill": "SIGKILL to the process group, then the pipes drained within a bound",
    },
    "DockerCommand": {
        "wait": "the docker exec client's exit once its output was delivered",
        "kill": "the group inside the container, then the output within a bound",
        "signal_group": "the group kill only, without waiting for the output",
    },
    "HelperCommand": {  # backends/docker/helper.py: a command over the session helper
        "wait": "the helper's RESULT once the output was delivered; a helper lost meanwhile "
                "is ConnectionLostError (137 when the command was being ended anyway)",
        "kill": "the group kill, then the output within a bound; a helper that does not "
                "answer: the group killed as root through docker exec",
        "signal_group": "a kill on the request's stream (as root through docker exec when "
                        "the group is another user's)",
    },
    "SSHCommand": {
        "wait": "the channel's exit status once its output was delivered",
        "kill": "the group through the agent, then the channel",
        "signal_group": "the group kill only, without waiting for the output",
    },
}
