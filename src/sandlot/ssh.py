"""The SSH transport lives with the only backend that uses it: `sandlot.backends.coder.ssh`.
This name stays so that code written against the old import path keeps working."""

from .backends.coder.ssh import *  # noqa: F403
from .backends.coder.ssh import SSHConnectError as SSHConnectError
