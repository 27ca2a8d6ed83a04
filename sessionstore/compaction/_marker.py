"""The one spelling of the summary marker: `<COMPACT-SUMMARY vN>` opens every summary row.

Models and people recognise a summary by it, the extractive summarizer strips it from
the prior summary, the CLI and demo name it. Change it here and nowhere else.
"""

from __future__ import annotations

import re
from typing import Final

SUMMARY_PREFIX: Final = "<COMPACT-SUMMARY v{version}>"
SUMMARY_START: Final = SUMMARY_PREFIX.split("{", 1)[0]  # "<COMPACT-SUMMARY v"
SUMMARY_LINE: Final = re.compile(r"^\s*" + re.escape(SUMMARY_START) + r"(\d+)>\s*")


def marker_line(version: int) -> str:
    """`<COMPACT-SUMMARY v{version}>`."""
    return SUMMARY_PREFIX.format(version=version)


def summary_marker(version: int, text: str) -> str:
    """The text of a summary row: the marker line, then the summary."""
    return f"{marker_line(version)}\n{text}"
