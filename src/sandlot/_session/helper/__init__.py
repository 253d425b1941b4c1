"""The session helper's program: modules that run INSIDE the sandbox (standard library only,
Python 3.8+), sent there as one bundle (sandlot/_session/bundle.py). Nothing here imports
sandlot outside this package and `sandlot.tools.safe_helper`."""
