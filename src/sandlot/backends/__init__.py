"""Sandbox backends: local, docker, coder. Each is imported only when used."""
