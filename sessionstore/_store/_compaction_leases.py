"""The `compaction_leases` row: who prepares a session's next compaction, and its result.

Each function is one transaction under the session's lock (a row lock on PostgreSQL, the
write lock on SQLite), so two processes deciding about one lease see each other's decision.
Lease times are the holders' UTC clocks: processes sharing a database are expected to
keep their clocks in sync (NTP), as any lease in a distributed system does. A session whose
payloads are encrypted gets its prepared result sealed with the same data key (bound to this
table and the session), so the summary is never at rest in plain text when its rows are not.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Final, Literal

import sqlalchemy as sa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy.engine import Connection

from .._errors import SealedDataError
from .._events import Event
from .._schema import compaction_leases as leases
from .._schema import events
from .._security._payload_sealing import SessionKeys, open_text, seal_text
from .._storage._row_sql import SESSION_ROW, lock_session
from .._times import as_utc
from ._context_replacement import CompactionResult, CompactionWrite, CountItem, tx_commit_compaction

Outcome = Literal["granted", "held", "ready", "no_session"]
_BY_SESSION: Final = sa.select(leases).where(leases.c.session_id == sa.bindparam("sid"))


@dataclass(frozen=True, slots=True)
class Grant:
    """What asking for the lease found: granted (maybe taking over an earlier holder's
    row, and why it could), held by another live holder, or a prepared result waiting."""

    outcome: Outcome
    previous_holder: str | None = None
    took_over: Literal["expired", "context_restarted"] | None = None


@dataclass(frozen=True, slots=True)
class Lease:
    """One lease row as read."""

    session_id: str
    holder: str
    expires_at: datetime
    context_start_seq: int
    prefix_sha256: str | None
    prepared: Mapping[str, Any] | None
    prepared_at: datetime | None


def _lease(row: Any, prepared: Mapping[str, Any] | None) -> Lease:
    prepared_at = row.prepared_at
    return Lease(
        session_id=row.session_id,
        holder=row.holder,
        expires_at=as_utc(row.expires_at),
        context_start_seq=int(row.context_start_seq),
        prefix_sha256=row.prefix_sha256,
        prepared=prepared,
        prepared_at=None if prepared_at is None else as_utc(prepared_at),
    )


def read_lease(conn: Connection, session_id: str, keys: SessionKeys | None = None) -> Lease | None:
    """The session's lease row, if any; with `keys`, its prepared result opened (a sealed
    one that does not open raises SealedDataError), without, left as stored."""
    row = conn.execute(_BY_SESSION, {"sid": session_id}).first()
    if row is None:
        return None
    prepared = row.prepared
    if keys is not None and isinstance(prepared, Mapping) and "sealed" in prepared:
        session = conn.execute(SESSION_ROW, {"sid": session_id}).first()
        if session is None or session.payload_wrapped_key is None:
            raise SealedDataError(f"prepared compaction of {session_id!r}", "no session key")
        prepared = _open(keys.cipher(dict(session._mapping)), session_id, prepared["sealed"])
    return _lease(row, prepared)


def _context(session_id: str) -> bytes:
    """Associated data of a sealed prepared result: this table and the session."""
    sid = session_id.encode("utf-8", "surrogatepass")
    return b"compaction_leases|%d:%s" % (len(sid), sid)


def _seal(cipher: AESGCM, session_id: str, prepared: Mapping[str, Any]) -> dict[str, str]:
    text = json.dumps(prepared, ensure_ascii=False)
    sealed = seal_text(cipher, text, _context(session_id))
    return {"sealed": base64.b64encode(sealed).decode("ascii")}


def _open(cipher: AESGCM, session_id: str, sealed: str) -> Mapping[str, Any]:
    text = open_text(
        cipher,
        base64.b64decode(sealed),
        _context(session_id),
        f"prepared compaction of {session_id!r}",
        "it was altered, or sealed for another session",
    )
    opened: Mapping[str, Any] = json.loads(text)
    return opened


def tx_take_lease(
    conn: Connection, session_id: str, holder: str, now: datetime, lease_s: float
) -> Grant:
    """Take the session's lease for `holder` unless a live holder has it or a result
    prepared for the current context waits; an expired lease or one for a context that
    has since restarted (a clear, a rewind) is taken over."""
    session = lock_session(conn, session_id)
    if session is None:
        return Grant("no_session")
    start = int(session.context_start_seq)
    values = {
        "holder": holder,
        "acquired_at": now,
        "expires_at": now + timedelta(seconds=lease_s),
        "context_start_seq": start,
        "prefix_sha256": None,
        "prepared": None,
        "prepared_at": None,
    }
    found = read_lease(conn, session_id)
    if found is None:
        conn.execute(leases.insert().values(session_id=session_id, **values))
        return Grant("granted")
    if found.context_start_seq == start:
        if found.prepared is not None:
            return Grant("ready", found.holder)
        if found.expires_at > now:
            return Grant("held", found.holder)
    reason: Literal["expired", "context_restarted"] = (
        "context_restarted" if found.context_start_seq != start else "expired"
    )
    conn.execute(leases.update().where(leases.c.session_id == session_id).values(**values))
    return Grant("granted", found.holder, reason)


def tx_save_prepared(
    conn: Connection,
    session_id: str,
    holder: str,
    prefix_sha256: str,
    prepared: Mapping[str, Any],
    now: datetime,
    keys: SessionKeys,
) -> str | None:
    """Store a prepared compaction in the holder's lease row (sealed if the session's
    payloads are); None when stored, otherwise why not (the lease was lost or the context
    restarted meanwhile: it would be stale)."""
    session = lock_session(conn, session_id)
    if session is None:
        return "session_deleted"
    found = read_lease(conn, session_id)
    if found is None or found.holder != holder:
        return "lease_lost"
    if int(session.context_start_seq) != found.context_start_seq:
        conn.execute(leases.delete().where(leases.c.session_id == session_id))
        return "context_restarted"
    stored = dict(prepared)
    if session.payload_wrapped_key is not None:
        stored = _seal(keys.cipher(dict(session._mapping)), session_id, prepared)
    conn.execute(
        leases.update()
        .where(leases.c.session_id == session_id)
        .values(prefix_sha256=prefix_sha256, prepared=stored, prepared_at=now)
    )
    return None


def tx_release(conn: Connection, session_id: str, holder: str) -> None:
    """Give up the holder's lease (its preparation ended without a result)."""
    conn.execute(
        leases.delete().where(
            leases.c.session_id == session_id,
            leases.c.holder == holder,
            leases.c.prepared.is_(None),
        )
    )


def tx_drop(conn: Connection, session_id: str, holder: str) -> None:
    """Discard the prepared result `holder` left (a newer one is never touched)."""
    conn.execute(
        leases.delete().where(leases.c.session_id == session_id, leases.c.holder == holder)
    )


def tx_commit_releasing(
    conn: Connection,
    write: CompactionWrite,
    count_item: CountItem,
    keys: SessionKeys,
    prepared_by: str | None,
) -> CompactionResult | None:
    """Commit a compaction and, in the same transaction, remove the session's lease row:
    whatever it held was prepared for the context this compaction just replaced. A result
    it did not use (`prepared_by`: the holder whose result it committed) is recorded as
    discarded; a holder still preparing finds its lease gone and discards its own."""
    result = tx_commit_compaction(conn, write, count_item, keys)
    if result is None:
        return None
    found = read_lease(conn, write.session_id)
    if found is None:
        return result
    conn.execute(leases.delete().where(leases.c.session_id == write.session_id))
    if found.prepared is not None and found.holder != prepared_by:
        superseded = Event(
            "compact.prepared_discarded",
            write.session_id,
            fields={
                "reason": "superseded",
                "holder": found.holder,
                "compaction_id": result.compaction_id,
            },
        )
        conn.execute(events.insert(), [superseded.row()])
        return replace(result, events=(*result.events, superseded))  # exported with the rest
    return result
