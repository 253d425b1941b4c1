"""The session helper: one long-lived, standard-library python3 process per sandbox (and
environment), serving operations over a framed protocol on its stdin/stdout (adr/0042).

client.py is the host side (`session_for`, `Session`, `Call`); helper/ holds the program that
runs in the sandbox; bundle.py turns helper/ into what is sent there and starts it. A transport
detail below the toolbox (and the Docker backend): callers never see it, and every operation
falls back to its one-command path when the session is off or lost.
"""
