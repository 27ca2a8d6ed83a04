"""The one way the CLI turns stored or user-supplied text into terminal output.

Stored text is data: `[bold red]` and `[/]` are printed as written (never read as Rich
markup), and control characters (ANSI escapes, carriage returns, backspaces, bidi
overrides) are shown as `\\x1b`/`\\u202e` escapes so a session cannot recolour, rewrite
or reorder terminal output.
Newlines and tabs are kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final

from rich.text import Text

# C0 controls except tab and newline, DEL, the C1 controls (8-bit CSI is \x9b), and the
# bidirectional overrides that make a terminal show text in another order than stored, and
# the invisible characters (tags, joiners) that hide text from a reader.
_CONTROL: Final = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 (not \t, \n), DEL, C1
    r"\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi marks, embeddings, overrides, isolates
    r"\u2060-\u2064\U000e0000-\U000e007f]"  # invisible joiners, tag characters (hidden text)
)


def visible(text: str) -> str:
    """`text` with every control character but newline and tab written as an escape."""
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code > 0xFFFF:
        return f"\\U{code:08x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


# What json.dumps(ensure_ascii=False) leaves raw but a terminal acts on (DEL, C1, bidi) or
# a line splitter breaks a JSON line at (NEL is C1; the line and paragraph separators).
_JSON_UNSAFE: Final = re.compile(r"[\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def json_text(
    data: object,
    *,
    indent: int | None = None,
    compact: bool = False,
    default: Callable[[Any], Any] = str,
) -> str:
    """JSON that reads the same on a terminal: unicode as is, terminal controls as \\u
    escapes (still valid JSON, still the same data); `default` for other types."""
    separators = (",", ":") if compact else None
    text = json.dumps(
        data,
        ensure_ascii=False,
        indent=indent,
        separators=separators,
        default=default,
        allow_nan=False,
    )
    return _JSON_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def shown(value: object, style: str = "") -> Text:
    """A value as Rich Text: verbatim, control characters visible, never markup."""
    return Text(visible(value if isinstance(value, str) else str(value)), style=style)
