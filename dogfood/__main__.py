"""`python -m dogfood`: see dogfood/__init__.py."""

from .cli import main

raise SystemExit(main())
