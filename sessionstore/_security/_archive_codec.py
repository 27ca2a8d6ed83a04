"""Archive bodies: JSON lines of the archived rows, compressed, with a content hash.

Format 0 is plain (compressed, not encrypted). The hash covers the uncompressed
JSON lines, so a reader can prove it got back exactly what was archived.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any, Final

from .._items import SLICE_CHARS

PLAIN_FORMAT: Final = 0
COMPRESSION: Final = "zlib"
# One encoder for every line: json.dumps with options builds a new encoder per call, which
# was a third of encoding a 10,000-row archive.
encode_line: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
# How that encoder writes a string (the same C function it calls).
encode_string: Final = encode_basestring


@dataclass(frozen=True, slots=True)
class ArchiveBody:
    """An encoded archive, ready for the `archives` table."""

    body: bytes
    content_sha256: str
    item_count: int
    from_seq: int
    to_seq: int


def encode_large(value: Any) -> str:
    """`encode_line(value)`, the same text, built from `encode_pieces`."""
    return "".join(encode_pieces(value))


def encode_pieces(value: Any, out: list[str] | None = None) -> list[str]:
    """`encode_line(value)` as pieces that join to the same text, without one long C call
    for a huge string: a container holding a string over SLICE_CHARS is written here, each
    such string escaped a slice at a time (escaping is per character, so the slices join
    to the same text), and nothing joins the pieces into one huge string."""
    out = [] if out is None else out
    if not _holds_large(value):
        out.append(encode_line(value))
    elif isinstance(value, str):
        out.append('"')
        for start in range(0, len(value), SLICE_CHARS):
            out.append(encode_string(value[start : start + SLICE_CHARS])[1:-1])
        out.append('"')
    elif isinstance(value, Mapping) and all(isinstance(key, str) for key in value):
        out.append("{")
        for index, (key, item) in enumerate(value.items()):
            out.append(f"{',' if index else ''}{encode_string(key)}:")
            encode_pieces(item, out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            encode_pieces(item, out)
        out.append("]")
    else:  # keys json.dumps converts (int, None): as it writes them
        out.append(encode_line(value))
    return out


def _holds_large(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) > SLICE_CHARS
    if isinstance(value, Mapping):
        return any(_holds_large(item) for item in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_large(item) for item in value)
    return False


def encode_archive(records: Iterable[Mapping[str, Any]]) -> ArchiveBody:
    """Compress JSON lines of `records` (each holds at least `seq` and `item`).

    A generator works and is best for large archives: each record can be dropped once
    its line is written, instead of all of them living as dicts at once.
    """
    seqs: list[int] = []
    lines: list[list[str]] = []
    for record in records:
        seqs.append(int(record["seq"]))
        lines.append(encode_pieces(record))
    return _archive(seqs, lines)


def archive_of(seqs: list[int], texts: list[str]) -> ArchiveBody:
    """The archive of lines already encoded as `encode_line` writes them (a compaction
    formats its lines from the stored payload texts), `seqs` their records' seqs."""
    return _archive(seqs, ([text] for text in texts))


def _archive(seqs: list[int], lines: Iterable[list[str]]) -> ArchiveBody:
    """Lines (each as pieces) encoded, hashed and compressed a slice at a time, never joined
    into one string, so no single call holds the GIL long; the bytes are those of one pass."""
    digest = hashlib.sha256()
    compressor = zlib.compressobj(6)
    chunks: list[bytes] = []
    pending: list[str] = []
    size = 0

    def flush() -> None:
        nonlocal size
        data = "".join(pending).encode("utf-8", "surrogatepass")
        pending.clear()
        size = 0
        digest.update(data)
        chunks.append(compressor.compress(data))

    for line in lines:
        for text in line:
            for start in range(0, len(text), SLICE_CHARS):
                piece = text if len(text) <= SLICE_CHARS else text[start : start + SLICE_CHARS]
                pending.append(piece)
                size += len(piece)
                if size >= SLICE_CHARS:
                    flush()
        pending.append("\n")
        size += 1
    flush()
    chunks.append(compressor.flush())
    return ArchiveBody(
        body=b"".join(chunks),
        content_sha256=digest.hexdigest(),
        item_count=len(seqs),
        from_seq=min(seqs),
        to_seq=max(seqs),
    )


def decode_archive(body: bytes, content_sha256: str) -> list[dict[str, Any]]:
    """The archived records; raises ValueError if the content does not match its hash."""
    lines = zlib.decompress(body)
    if hashlib.sha256(lines).hexdigest() != content_sha256:
        raise ValueError("archive content does not match its recorded SHA-256")
    # Split on "\n" alone: splitlines() would also cut at U+0085, U+2028 or \x1c-\x1e, which
    # JSON leaves unescaped inside strings, and the archive would no longer open.
    text = lines.decode("utf-8", "surrogatepass")
    return [json.loads(line) for line in text.split("\n") if line]
