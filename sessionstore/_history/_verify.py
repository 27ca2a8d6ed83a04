"""Checking a session's history against its hash chain: all of it, or the active context.

`tx_verify` walks every row of a session (what `sessionstore verify` reports); `tx_checked_active`
reads the active context the way a load does and refuses it (HistoryTamperedError) unless the
rows from the context start to the newest chain onto the session's head, every payload matches
its digest and the context starts where the rows say it does. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._errors import HistoryTamperedError, SessionStoreError
from .._ranges import runs
from .._rows import StoredRow, decode_payloads, visible_in_order
from .._schema import KIND_CARRY, KIND_CLEAR, KIND_SUMMARY, compactions, messages, sessions
from .._security._chain import genesis, link, payload_digest
from .._security._payload_sealing import SessionKeys
from .._storage._off_loop import let_loop_run, off_loop_past
from .._storage._row_sql import seq_range
from ._time_travel import Lineage, inherited_rows, lineage

_MAX_PROBLEMS: Final = 20  # a report names the first problems, then counts the rest
_sid: Final = sa.bindparam("sid", type_=sa.Text)
_CHUNK: Final = 1_000  # rows walked between the loop's turns
# The payload exactly as stored: PostgreSQL's json type keeps the text it was given.
_ROW_COLUMNS: Final = (
    *(column for column in messages.c if column.name != "payload"),
    sa.cast(messages.c.payload, sa.Text).label("payload"),
)
_SESSION: Final = sa.select(*sessions.c).where(sessions.c.session_id == _sid)
_ROWS_FROM: Final = seq_range(*_ROW_COLUMNS, first="from_seq", last="to_seq")
_EMPTY_COMPACTION: Final = sa.select(sa.func.count()).where(
    compactions.c.session_id == _sid,
    compactions.c.context_start_seq == sa.bindparam("start"),
)


@dataclass(frozen=True, slots=True)
class ChainReport:
    """What `verify` found for one session. `problems` empty means the history is intact
    as far as its chain reaches; `warnings` say what the chain cannot vouch for."""

    session_id: str
    rows: int
    chain_start_seq: int | None
    unchained: int  # rows written before migration 0009: no digest to check
    purged: int  # rows whose payload retention removed (their digest still counts)
    keyed: bool
    head: str | None
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing was found altered, missing or injected."""
        return not self.problems


class _Findings:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.extra = 0

    def add(self, problem: str) -> None:
        if len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(problem)
        else:
            self.extra += 1

    def listed(self) -> list[str]:
        more = [f"... and {self.extra} more"] if self.extra else []
        return self.problems + more


def _chain_rows(
    key: bytes, previous: bytes, rows: Sequence[Mapping[str, Any]], findings: _Findings
) -> tuple[bytes, int]:
    """Recompute the chain over `rows`, noting every row whose digests do not hold; returns
    the last stored digest (the chain goes on from what is stored) and the purged count."""
    purged = 0
    for row in rows:
        seq = row["seq"]
        stored = row["payload_digest"]
        body = payload_digest(row["payload"], _bytes(row["payload_sealed"]))
        if body is None and stored is not None:
            purged += 1  # retention removed the payload; its digest stays in the chain
            body = bytes(stored)
        elif body != _bytes(stored):
            findings.add(f"row {seq}: its payload does not match its digest (edited)")
            body = _bytes(stored)  # the link below then checks the rest of the row alone
        digest = row["digest"]
        if digest is None:
            findings.add(f"row {seq}: it has no digest (inserted around the store)")
            continue
        if link(key, previous, row, body) != bytes(digest):
            findings.add(
                f"row {seq}: its columns or position do not match its digest "
                "(edited, moved or inserted)"
            )
        previous = bytes(digest)
    return previous, purged


def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


def _session(conn: Connection, session_id: str) -> dict[str, Any]:
    row = conn.execute(_SESSION, {"sid": session_id}).first()
    if row is None:
        raise SessionStoreError(f"no session {session_id!r} in this store")
    return dict(row._mapping)


def _rows(conn: Connection, session: Mapping[str, Any], from_seq: int) -> list[dict[str, Any]]:
    """Rows from `from_seq` up to the session row's last_seq, read after it: rows appended
    meanwhile are left out, so a check never races a writer (stored rows never change)."""
    params = {"sid": session["session_id"], "from_seq": from_seq, "to_seq": session["last_seq"]}
    result = conn.execute(_ROWS_FROM, params)
    names = tuple(result.keys())
    rows: list[dict[str, Any]] = []
    for chunk in result.partitions(_CHUNK):
        if rows:  # past the first chunk: PostgreSQL walks the driver's rows on the loop
            let_loop_run()
        rows.extend(dict(zip(names, row, strict=True)) for row in chunk)
    return rows


def _expected_start(rows: Sequence[Mapping[str, Any]], first: int) -> int:
    """Where the active context starts according to the rows themselves: after the last
    clear, at the first row the last compaction wrote, or at the first own row (`first`)."""
    start = first
    seen: set[int] = set()
    for row in rows:
        if row["kind"] == KIND_CLEAR:
            start = row["seq"] + 1
        elif row["kind"] in (KIND_CARRY, KIND_SUMMARY) and row["compaction_id"] not in seen:
            seen.add(row["compaction_id"])
            start = row["seq"]
    return start


def _check_start(
    conn: Connection,
    session: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    line: Lineage,
    findings: _Findings,
) -> None:
    start = int(session["context_start_seq"])
    expected = off_loop_past(len(rows), _expected_start, rows, line.fork_seq + 1)
    if start == expected:
        return
    last = int(session["last_seq"])
    if not (start == last + 1 and _emptied_by_compaction(conn, session["session_id"], start)):
        findings.add(
            f"the session's context_start_seq is {start}, but its rows start the context at "
            f"{expected} (the session row was edited)"
        )


def _check_counters(
    session: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    inherited: Sequence[StoredRow],
    findings: _Findings,
) -> None:
    start = int(session["context_start_seq"])
    window = [(row.seq, row.kind, row.ref_seq) for row in inherited] + [
        (row["seq"], row["kind"], row["ref_seq"]) for row in rows if row["seq"] >= start
    ]
    visible = visible_in_order(window)
    if int(session["context_items"]) != len(visible):
        findings.add(
            f"the session row counts {session['context_items']} items in the context, its "
            f"rows hold {len(visible)} (the session row or a row was edited)"
        )


def tx_verify(
    conn: Connection, session_id: str, keys: SessionKeys, upto: int | None = None
) -> ChainReport:
    """Walk a session's whole history (or its rows up to `upto`: the part a branch shares,
    whose links are checked but which has no head to end at) and report what does not hold."""
    session = _session(conn, session_id)
    line = lineage(conn, session_id)
    if upto is not None:
        session = {**session, "last_seq": min(upto, int(session["last_seq"]))}
    rows = _rows(conn, session, 1)
    findings = _Findings()
    if line.parent is not None:  # the rows a branch shares are proven by its parent's chain
        shared = line.fork_seq if upto is None else min(upto, line.fork_seq)
        for problem in tx_verify(conn, line.parent, keys, upto=shared).problems:
            findings.add(f"parent {line.parent!r}: {problem}")
    last = int(session["last_seq"])
    seqs = [row["seq"] for row in rows]
    if len(seqs) != last - line.fork_seq:
        missing = sorted(set(range(line.fork_seq + 1, last + 1)) - set(seqs))
        rows_are = "row {} is" if len(missing) == 1 else "rows {} are"
        findings.add(f"{rows_are.format(', '.join(runs(missing)))} missing (deleted)")
    start = session["chain_start_seq"]
    unchained = [row for row in rows if start is None or row["seq"] < start]
    chained = [row for row in rows if start is not None and row["seq"] >= start]
    for row in unchained:
        if row["digest"] is not None:
            findings.add(f"row {row['seq']}: it carries a digest but lies before the chain start")
    head, purged = None, 0
    chain_key = keys.chains.key_of(
        session_id, session["chain_kek_id"], session["chain_wrapped_key"]
    )
    if start is not None:
        first = genesis(chain_key, session_id, int(start))
        computed, purged = off_loop_past(
            len(chained), _chain_rows, chain_key, first, chained, findings
        )
        head = computed if chained else None  # a migrated session before its first new row
        stored_head = _bytes(session["chain_head"])
        if upto is None and head != stored_head:
            findings.add(
                "the session's chain head does not match its newest row (rows were removed "
                "from the end, or the session row was edited)"
            )
    elif session["chain_head"] is not None:
        findings.add("the session has a chain head but no chain start (the session row was edited)")
    elif rows:
        findings.add(
            "the session has rows but no chain start: its chain was stripped (every session "
            "has one since migration 0009), or its rows were written around the store"
        )
    _check_downgrade(session, rows, findings)
    if upto is None:  # the session row describes its newest state, not a prefix
        _check_start(conn, session, rows, line, findings)
        inherited = inherited_rows(conn, session_id, keys)
        off_loop_past(len(rows), _check_counters, session, rows, inherited, findings)
    warnings = []
    if unchained:
        warnings.append(
            f"{len(unchained)} row(s) were written before the history chain existed "
            "(migration 0009); they are not covered"
        )
    keyed = session["chain_wrapped_key"] is not None
    if keys.keyring is not None and unchained and start is not None:
        warnings.append(
            "a keyring is configured but rows before the chain start are not covered: only "
            "rows written before migration 0009 should be; compare `chain_start_seq` with an "
            "external record (docs/SECURITY.md)"
        )
    if keys.keyring is not None and chained and not keyed:
        warnings.append(
            "the chain is not keyed although a keyring is configured: it began before the "
            "keyring, or its key was stripped; only a keyed chain stops a forger"
        )
    return ChainReport(
        session_id=session_id,
        rows=len(rows),
        chain_start_seq=None if start is None else int(start),
        unchained=len(unchained),
        purged=purged,
        keyed=keyed,
        head=None if session["chain_head"] is None else bytes(session["chain_head"]).hex(),
        problems=findings.listed(),
        warnings=warnings,
    )


def _check_downgrade(
    session: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], findings: _Findings
) -> None:
    sealed_from = session["sealed_from_seq"]
    if session["payload_wrapped_key"] is None:
        return
    boundary = 1 if sealed_from is None else int(sealed_from)
    for row in rows:
        if row["seq"] >= boundary and row["payload"] is not None and row["payload_sealed"] is None:
            findings.add(
                f"row {row['seq']}: it is plain although the session is encrypted from seq "
                f"{boundary} on (downgraded)"
            )


def tx_checked_active(conn: Connection, session_id: str, keys: SessionKeys) -> list[dict[str, Any]]:
    """The active context, after proving it: the rows from the context start chain onto
    the session's head, and the context starts where the rows say. HistoryTamperedError
    otherwise."""
    session_row = conn.execute(_SESSION, {"sid": session_id}).first()
    if session_row is None:
        return []
    session = dict(session_row._mapping)
    line = lineage(conn, session_id)
    start = int(session["context_start_seq"])
    rows = _rows(conn, session, max(start - 1, 1))
    findings = _Findings()
    if line.inherits:  # the context begins with the parent's rows: prove what it shares
        assert line.parent is not None
        for problem in tx_verify(conn, line.parent, keys, upto=line.fork_seq).problems:
            findings.add(f"parent {line.parent!r}: {problem}")
    if session["chain_start_seq"] is not None:
        _check_chain_tail(session, rows, keys, findings)
    elif rows:
        findings.add("the session has rows but no chain start: its chain was stripped")
    window = [row for row in rows if row["seq"] >= start]
    _check_window_start(conn, session, rows, window, line, findings)
    _check_downgrade(session, window, findings)
    if findings.problems:
        raise HistoryTamperedError(session_id, findings.listed())
    plain = keys.opener(conn, session_id)
    inherited = inherited_rows(conn, session_id, keys) if line.inherits else []
    shaped: list[tuple[Any, ...]] = [(r.seq, r.kind, r.ref_seq, r.item, None) for r in inherited]
    shaped += [(r["seq"], r["kind"], r["ref_seq"], None, r) for r in window]
    return decode_payloads(
        [
            item if r is None else plain(r["seq"], r["payload"], r["payload_sealed"])
            for *_, item, r in visible_in_order(shaped)
        ]
    )


def _check_chain_tail(
    session: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    keys: SessionKeys,
    findings: _Findings,
) -> None:
    """The rows from the one before the context to the newest chain onto the head."""
    session_id = session["session_id"]
    chain_start = int(session["chain_start_seq"])
    key = keys.chains.key_of(session_id, session["chain_kek_id"], session["chain_wrapped_key"])
    chained = [row for row in rows if row["seq"] >= chain_start]
    started = bool(chained)  # False: a migrated session with no row since its chain start
    previous = genesis(key, session_id, chain_start)
    if chained and chained[0]["seq"] < int(session["context_start_seq"]):
        before = chained.pop(0)  # outside the context: only its stored link matters
        previous = previous if before["digest"] is None else bytes(before["digest"])
    elif chained and chained[0]["seq"] != chain_start:
        findings.add(f"row {chained[0]['seq']}: the rows before it are missing")
    computed, _purged = _chain_rows(key, previous, chained, findings)
    head = computed if started else None
    newest = rows[-1]["seq"] if rows else None
    if head != _bytes(session["chain_head"]) or newest != session["last_seq"]:
        findings.add(
            "the newest rows do not end at the session's chain head (rows were removed, "
            "or the session row was edited)"
        )


def _check_window_start(
    conn: Connection,
    session: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    window: Sequence[Mapping[str, Any]],
    line: Lineage,
    findings: _Findings,
) -> None:
    """The context starts at the session's first own row, right after a clear or at a
    compaction's first row, and no later clear or compaction lies inside it."""
    start = int(session["context_start_seq"])
    before = next((row for row in rows if row["seq"] == start - 1), None)
    first = window[0] if window and window[0]["seq"] == start else None
    opens = start == line.fork_seq + 1 or (before is not None and before["kind"] == KIND_CLEAR)
    if first is not None and first["kind"] in (KIND_CARRY, KIND_SUMMARY):
        opens = opens or before is None or before["compaction_id"] != first["compaction_id"]
    if not opens and first is None and start == int(session["last_seq"]) + 1:
        opens = _emptied_by_compaction(conn, session["session_id"], start)
    if not opens:
        findings.add(
            f"the context start {start} is not where a compaction or clear put it (the "
            "session row was edited)"
        )
    seen = {None if first is None else first["compaction_id"]}
    for row in window[1:]:
        if row["kind"] == KIND_CLEAR or (
            row["kind"] in (KIND_CARRY, KIND_SUMMARY) and row["compaction_id"] not in seen
        ):
            findings.add(
                f"row {row['seq']} starts a newer context inside the loaded one (the "
                "session's context start was moved back)"
            )
            break


def _emptied_by_compaction(conn: Connection, session_id: str, start: int) -> bool:
    """A compaction that kept nothing starts the context past the newest row."""
    return bool(conn.execute(_EMPTY_COMPACTION, {"sid": session_id, "start": start}).scalar_one())
