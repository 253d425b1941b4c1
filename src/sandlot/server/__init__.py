"""The HTTP sandbox server (`sandlot serve`) and its client.

    POST /execute  {"code", "requirements", "timeout"}
                -> {"stdout", "stderr", "exit_code", "duration_ms", "timed_out", "truncated"}
    GET  /health   -> {"status", "mode", "runtime_version", "provider"}

The server needs the `server` extra (`pip install 'sandlot[server]'`). Importing this package
imports nothing heavy: `sandlot.server.client` needs only httpx, `sandlot.server.app` FastAPI.
"""
