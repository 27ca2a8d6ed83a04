"""Archival sinks: copies of a compaction's transcript, summary and events outside SQL.

The SQL archive is the store's own record; sinks exist for operators who want the artifacts
on disk or in S3 (docs/CONFIGURATION.md, "storage"). Everything a sink writes passes
through a Redactor first, and a sink never mutates what it is handed: the session must
replay as stored.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from .._events import ARCHIVAL_EVENT, Event
from .._redaction import Redactor, redaction_disabled_event

__all__ = [
    "ArchiveDelivery",
    "ArchiveSink",
    "Artifact",
    "archival_event",
    "build_artifacts",
    "event_lines",
    "preamble",
    "safe_name",
    "session_id_of",
]

_SAFE: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
# Encoded names longer than this are cut and suffixed with a hash: file systems cap a name at
# 255 bytes, and an id of emoji encodes to 12 characters per character.
_MAX_NAME: Final = 120
_HASHED_PREFIX: Final = 64
# The name of the empty id: a `%` that no two hex digits follow, which encoding never emits.
_EMPTY: Final = "%"


@dataclass(frozen=True, slots=True)
class ArchiveDelivery:
    """What one compaction step hands to every sink."""

    session_id: str
    step: int
    transcript: Sequence[Mapping[str, Any]]  # pre-compaction records, each with seq and item
    summary: Mapping[str, Any] | None
    events: Sequence[Event]

    def __post_init__(self) -> None:
        # Any id the store accepts (even "") is deliverable: this check runs after the
        # compaction committed, so refusing an id here would lose the copy (issue #34).
        if not isinstance(self.session_id, str):
            raise TypeError(f"session_id must be a str, got {type(self.session_id).__name__}")
        if isinstance(self.step, bool) or not isinstance(self.step, int) or self.step < 0:
            raise ValueError(f"archive step must be a non-negative int, got {self.step!r}")


class ArchiveSink(Protocol):
    """Writes a delivery somewhere; blocking, so callers run it off the event loop."""

    name: str

    def deliver(self, delivery: ArchiveDelivery) -> list[Event]:
        """Write the artifacts and return the events produced (one archival event each)."""
        ...


@dataclass(frozen=True, slots=True)
class Artifact:
    """One redacted, serialized file a sink writes."""

    kind: str  # "transcript" or "summary"
    filename: str
    body: bytes
    item_count: int
    content_type: str


def safe_name(session_id: str) -> str:
    """A file name / key segment for a session id: injective, no separators, never `.`/`..`.

    Characters outside [A-Za-z0-9._-] (and a leading dot) are percent-encoded as UTF-8, and
    the empty id is `%`; `session_id_of` reverses it. Overlong results keep a readable head
    and gain a hash of the full id (after `~`, which encoding never emits, so hashed and
    plain names cannot collide); every event a sink logs beside them names the full id.
    """
    if not session_id:
        return _EMPTY
    encoded = "".join(
        char
        if char in _SAFE and not (index == 0 and char == ".")
        else "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
        for index, char in enumerate(session_id)
    )
    if len(encoded) <= _MAX_NAME:
        return encoded
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{encoded[:_HASHED_PREFIX]}~{digest}"


def session_id_of(name: str) -> str | None:
    """The session id `safe_name` made `name` from; None for a hashed (overlong) name, whose
    id is in the events logged beside it."""
    if name == _EMPTY:
        return ""
    if "~" in name:
        return None
    raw = bytearray()
    index = 0
    while index < len(name):
        if name[index] == "%":
            raw += bytes.fromhex(name[index + 1 : index + 3])
            index += 3
        else:
            raw += name[index].encode("ascii")
            index += 1
    return raw.decode("utf-8", "surrogatepass")


def _json(value: Any, *, indent: int | None = None) -> bytes:
    """UTF-8 JSON, readable where possible; escaped when a lone surrogate makes UTF-8 fail."""
    separators = None if indent else (",", ":")
    try:
        return json.dumps(value, ensure_ascii=False, indent=indent, separators=separators).encode(
            "utf-8"
        )
    except UnicodeEncodeError:
        return json.dumps(value, indent=indent, separators=separators).encode("ascii")


def build_artifacts(delivery: ArchiveDelivery, redactor: Redactor) -> list[Artifact]:
    """Redact and serialize everything before any write, so bad input writes nothing."""
    records = [redactor.value(record) for record in delivery.transcript]
    artifacts = [
        Artifact(
            kind="transcript",
            filename=f"transcript-pre-compact-{delivery.step:03d}.jsonl",
            body=b"".join(_json(record) + b"\n" for record in records),
            item_count=len(records),
            content_type="application/x-ndjson",
        )
    ]
    if delivery.summary is not None:
        artifacts.append(
            Artifact(
                kind="summary",
                filename=f"summary-{delivery.step:03d}.json",
                body=_json(redactor.value(delivery.summary), indent=2) + b"\n",
                item_count=1,
                content_type="application/json",
            )
        )
    return artifacts


def preamble(delivery: ArchiveDelivery, redactor: Redactor) -> list[Event]:
    """The spec's high-severity warning when this sink writes unredacted content."""
    return [] if redactor.enabled else [redaction_disabled_event(delivery.session_id)]


def archival_event(
    delivery: ArchiveDelivery, artifact: Artifact, adapter: str, location: Mapping[str, str]
) -> Event:
    """The `compact.archival` audit event for one written artifact."""
    return Event(
        ARCHIVAL_EVENT,
        delivery.session_id,
        fields={
            "step": delivery.step,
            "storage_adapter": adapter,
            "artifact": artifact.kind,
            **location,
            "item_count": artifact.item_count,
            "bytes": len(artifact.body),
        },
    )


def event_lines(events: Iterable[Event], redactor: Redactor) -> bytes:
    """JSON lines of redacted events (the whole row, so a secret in any field is caught)."""
    return b"".join(_json(redactor.value(event.as_dict())) + b"\n" for event in events)
