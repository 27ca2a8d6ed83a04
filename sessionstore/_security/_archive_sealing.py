"""Archive rows, sealed: compress, then envelope-encrypt, bound to where the row belongs.

The associated data binds each archive's ciphertext to its table, session, seq range and
the compaction it was sealed for. That compaction is read from `bound_compaction`, a column
written once with the row, never from `compaction_id`, which retention sets to NULL when it
deletes the compaction: an archive kept after its session is gone still opens. A row copied
to another session, given other seqs or pointed at another compaction fails to open instead
of returning someone else's data. Without a keyring the body is stored compressed but plain
(format 0); the store warns about that once.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import SealedDataError
from ._archive_codec import COMPRESSION, PLAIN_FORMAT, ArchiveBody, decode_archive
from ._crypto import ENVELOPE_V1, Keyring, Sealed, open_sealed, seal


def bound_compaction_of(compaction_id: int | None) -> str:
    """How an archive names the compaction it is sealed for ("none" for a truncation)."""
    return "none" if compaction_id is None else str(compaction_id)


def archive_context(
    session_id: str, bound_compaction: str, from_seq: int, to_seq: int
) -> dict[str, str]:
    """What an archive's ciphertext is bound to."""
    return {
        "table": "archives",
        "session_id": session_id,
        "compaction_id": bound_compaction,
        "from_seq": str(from_seq),
        "to_seq": str(to_seq),
    }


def row_context(row: Mapping[str, Any]) -> dict[str, str]:
    """The binding of a stored archive row; a clear error when it cannot be known or was moved."""
    bound = row["bound_compaction"]
    if bound is None:
        raise SealedDataError(
            label_of(row),
            "it was sealed for a compaction that a retention run deleted before migration 0006, "
            "and no event records which one, so its binding cannot be rebuilt",
        )
    if row["compaction_id"] is not None and str(row["compaction_id"]) != bound:
        raise SealedDataError(
            label_of(row),
            f"its compaction_id was changed to {row['compaction_id']} (it was sealed for "
            f"compaction {bound}): the row was moved or edited",
        )
    return archive_context(row["session_id"], bound, row["from_seq"], row["to_seq"])


def sealed_columns(row: Mapping[str, Any], keyring: Keyring) -> dict[str, Any]:
    """A plain archive row's new columns once sealed under the active key (its compressed
    body encrypted as it is; nothing is decompressed or decoded)."""
    bound = row["bound_compaction"] or bound_compaction_of(row["compaction_id"])
    context = archive_context(row["session_id"], bound, row["from_seq"], row["to_seq"])
    sealed = seal(bytes(row["body"]), keyring, context)
    return {
        "bound_compaction": bound,
        "format_version": sealed.format_version,
        "kek_id": sealed.kek_id,
        "wrapped_key": sealed.wrapped_key,
        "nonce": sealed.nonce,
        "body": sealed.ciphertext,
    }


def archive_columns(
    body: ArchiveBody,
    *,
    session_id: str,
    compaction_id: int | None,
    keyring: Keyring | None,
) -> dict[str, Any]:
    """Column values for an `archives` insert: sealed when a keyring is configured."""
    bound = bound_compaction_of(compaction_id)
    columns: dict[str, Any] = {
        "session_id": session_id,
        "compaction_id": compaction_id,
        "bound_compaction": bound,
        "from_seq": body.from_seq,
        "to_seq": body.to_seq,
        "item_count": body.item_count,
        "compression": COMPRESSION,
        "content_sha256": body.content_sha256,
    }
    if keyring is None:
        return {**columns, "format_version": PLAIN_FORMAT, "body": body.body}
    context = archive_context(session_id, bound, body.from_seq, body.to_seq)
    sealed = seal(body.body, keyring, context)
    return {
        **columns,
        "format_version": sealed.format_version,
        "kek_id": sealed.kek_id,
        "wrapped_key": sealed.wrapped_key,
        "nonce": sealed.nonce,
        "body": sealed.ciphertext,
    }


@dataclass(frozen=True, slots=True)
class OpenedArchive:
    """An archive row with its records decrypted and verified."""

    archive_id: int
    session_id: str
    compaction_id: int | None
    reason: str
    from_seq: int
    to_seq: int
    kek_id: str | None
    records: list[dict[str, Any]]
    # Its session was deleted (retention kept the archive); the id may be in use again.
    of_deleted_session: bool = False


def sealed_of(row: Mapping[str, Any]) -> Sealed:
    """The envelope fields of a sealed archive row."""
    return Sealed(
        format_version=row["format_version"],
        kek_id=row["kek_id"] or "",
        wrapped_key=bytes(row["wrapped_key"] or b""),
        nonce=bytes(row["nonce"] or b""),
        ciphertext=bytes(row["body"]),
    )


def label_of(row: Mapping[str, Any]) -> str:
    """How errors name an archive row."""
    return f"archive {row['id']} of session {row['session_id']!r}"


def open_archive(row: Mapping[str, Any], keyring: Keyring | None) -> OpenedArchive:
    """Decrypt (if sealed), decompress and verify one archive row; never wrong data."""
    label = label_of(row)
    if row["format_version"] == PLAIN_FORMAT:
        if keyring is not None:  # a downgrade would look exactly like this
            raise SealedDataError(
                label,
                "it is stored plain but a keyring is configured: if it was written before "
                "encryption was enabled, run `sessionstore keys rotate` once to seal it; "
                "otherwise it was forged",
            )
        compressed = bytes(row["body"])
    elif row["format_version"] == ENVELOPE_V1:
        if keyring is None:
            raise SealedDataError(
                label,
                f"it is encrypted under key {row['kek_id']!r} but no keyring is configured "
                "(set SESSIONSTORE_KEYS or SESSIONSTORE_KEY_FILE)",
            )
        compressed = open_sealed(sealed_of(row), keyring, row_context(row), label=label)
    else:
        raise SealedDataError(label, f"unknown archive format version {row['format_version']}")
    try:
        records = decode_archive(compressed, row["content_sha256"])
    except (zlib.error, ValueError) as exc:
        raise SealedDataError(label, f"its content is corrupt ({exc})") from None
    return OpenedArchive(
        archive_id=row["id"],
        session_id=row["session_id"],
        compaction_id=row["compaction_id"],
        reason=row["reason"],
        from_seq=row["from_seq"],
        to_seq=row["to_seq"],
        kek_id=row["kek_id"],
        records=records,
        of_deleted_session=row.get("session_deleted_at") is not None,
    )
