"""Stored text made inert for a page: what a reader must see, never what it asks to do.

Jinja's autoescape stops markup; this module stops the rest. Bidi overrides (U+202E) would
reorder what follows them on screen, ANSI escapes and other control characters would be
invisible, and tag characters hide whole sentences: each is written as a visible token
instead, so a reader sees that it is there.
"""

from __future__ import annotations

import re
from typing import Final

# Bidirectional controls (embeddings, overrides, isolates, marks) and zero-width joiners
# that can hide or reorder text.
_BIDI: Final = (
    "\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    "\u2066\u2067\u2068\u2069\ufeff"
)
# Invisible formatting (word joiner, invisible operators) and the tag block U+E0000-E007F,
# which renders as nothing and can smuggle a hidden instruction past a reader.
_HIDDEN: Final = "\u2060-\u2064\U000e0000-\U000e007f"
_INVISIBLE: Final = re.compile(f"[{_BIDI}{_HIDDEN}\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f]")


def _token(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code == 0x1B:
        return "\u27e6ESC\u27e7"  # "⟦ESC⟧[31m" reads as the escape sequence it was
    return f"\u27e6U+{code:04X}\u27e7"  # e.g. ⟦U+202E⟧, ⟦U+0007⟧


def inert(text: str) -> str:
    """`text` with every bidi control, ANSI escape and control character (newlines and tabs
    excepted) replaced by a visible token; HTML escaping is left to autoescape."""
    return _INVISIBLE.sub(_token, text)
