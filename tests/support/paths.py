"""Where the repository's files are, for tests at any depth of `tests/`."""

from pathlib import Path
from typing import Final

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
