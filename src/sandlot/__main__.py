"""`python -m sandlot`: the same as the `sandlot` command."""

import sys

from .cli import main

sys.exit(main())
