"""The exit codes every command keeps: scripts branch on them (docs: README, "Exit codes")."""

from __future__ import annotations

from typing import Final

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1  # the command ran and found a problem (e.g. a check failed)
EXIT_USAGE: Final = 2  # bad arguments or configuration: nothing was done
