"""SessionStore: append-only session rows in SQL, read from the last marker forward.

Invariants this module enforces (see docs/ARCHITECTURE.md):
- `messages` is append-only; `seq` is per session, gapless and strictly increasing.
  pop and clear are new rows (a tombstone, a clear marker), never deletes.
- Writes to one session are serialized: on PostgreSQL by the session row lock
  (taken by the append upsert or SELECT ... FOR UPDATE), on SQLite by BEGIN
  IMMEDIATE plus an in-process queue so our own writers never spin on the lock.
- Each row's token count is computed once, at append; the session row keeps the
  active context's running total, so a pre-flight estimate is one key lookup.
- The active context is one indexed range scan: rows with seq >= context_start_seq.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Final, Literal, Protocol, TypeVar, overload

import sqlalchemy as sa
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

from .._arguments import (
    check_agent_name,
    check_count,
    check_flag,
    check_non_negative,
    check_positive,
    check_session_id,
    item_list,
)
from .._errors import DuplicateAppendError, StoreUnavailableError
from .._events import Event
from .._history._agents import items_of
from .._history._prices import DEFAULT_PRICES, Price
from .._history._time_travel import (
    HistoryPoint,
)
from .._history._verify import tx_checked_active
from .._items import (
    ItemInfo,
    check_json_object,
    input_sha256,
    is_tool_output,
    rough_chars,
)
from .._loops import BIG_ROWS, LoopSafeLock, off_loop_if
from .._redaction import Redactor, redaction_disabled_event
from .._rows import (
    Batch,
    SessionInfo,
    visible_rows,
)
from .._schema import (
    sessions,
)
from .._security._crypto import Keyring
from .._security._payload_sealing import SessionKeys
from .._storage._call_record import CallRecord
from .._storage._database import open_database
from .._storage._migrations import ensure_schema
from .._storage._outcomes import DEFAULT_TIMEOUT_S
from .._storage._row_sql import (
    SESSION_ROW,
)
from .._storage._urls import resolve_url
from .._tokens import TokenEstimator, estimator_for_model
from ._history_reads import SessionHistory
from ._preparation import PREPARE_INLINE_MAX_CHARS, Truncation, prepare_items
from ._reads import (
    CONTEXT_TOKENS,
    METADATA,
    decoded_visible,
    read_active,
    read_all,
    read_first,
    read_tail,
    session_info_of,
)
from ._writes import (
    append_token,
    read_call_names,
    read_token_seq,
    tx_append_general,
    tx_clear,
    tx_delete,
    tx_events,
    tx_merge_metadata,
    tx_pop,
)

_T = TypeVar("_T")
_RowT = TypeVar("_RowT", bound=Sequence[Any])  # a SQLAlchemy Row or an asyncpg Record
DEFAULT_MODEL: Final = "gpt-4o"
DEFAULT_MAX_ITEM_BYTES: Final = 64 * 1024 * 1024  # a row, and a transaction, stay bounded
PUBLISHER_FLUSH_TIMEOUT_S: Final = 2.0  # the Ariadne timeout: a dead collector costs at most this


class Publisher(Protocol):
    """Where stored events go next (the exporters' EventBus); must not block."""

    def publish(self, events: Sequence[Event]) -> None:
        """Queue events for export."""
        ...

    def flush(self, timeout: float) -> bool:
        """Wait (at most `timeout` s) until queued events were exported; False on timeout."""
        ...


def _source_url(url: str | URL | None, engine: AsyncEngine | None, timeout_s: float) -> URL:
    """The database a store opens: the URL given, or the one of the engine given."""
    if engine is not None and url is not None:
        raise TypeError("pass a url or an engine, not both")
    if engine is not None and not isinstance(engine, AsyncEngine):
        raise TypeError(
            f"engine must be a SQLAlchemy AsyncEngine (create_async_engine(...)), "
            f"got {type(engine).__name__}"
        )
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    return resolve_url(engine.url if engine is not None else url)


def _creates_tables(create_tables: bool | None, read_only: bool, dialect: str) -> bool:
    """Whether the first call migrates: by default on SQLite only, never when read-only."""
    if read_only and create_tables:
        raise TypeError("a read-only store cannot create tables: drop create_tables=True")
    return not read_only and dialect == "sqlite" if create_tables is None else create_tables


class SessionStore(SessionHistory):
    """Sessions as append-only rows in SQLite (default) or PostgreSQL.

    Open one store per database and share it: it owns the connection pool.
    """

    def __init__(
        self,
        url: str | URL | None = None,
        *,
        engine: AsyncEngine | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_item_bytes: int = DEFAULT_MAX_ITEM_BYTES,
        model: str = DEFAULT_MODEL,
        estimator: TokenEstimator | None = None,
        create_tables: bool | None = None,
        sqlite_busy_timeout_ms: int = 5000,
        sqlite_synchronous: str = "FULL",
        engine_kwargs: Mapping[str, Any] | None = None,
        keyring: Keyring | Literal["env"] | None = "env",
        redactor: Redactor | None = None,
        redact_archives: bool = False,
        encrypt_payloads: bool = False,
        publisher: Publisher | None = None,
        read_only: bool = False,
        verify_on_load: bool = False,
        prices: Mapping[str, Price] | None = None,
        failover_retry_s: float = 0.0,
    ) -> None:
        """Open a store; nothing touches the database until the first call.

        `create_tables` migrates the database to the newest schema when needed;
        it defaults to True for SQLite (the embedded default) and False for
        PostgreSQL, where `sessionstore migrate` is the deliberate path.
        `keyring` seals archives; "env" loads it from $SESSIONSTORE_KEYS or
        $SESSIONSTORE_KEY_FILE (None when neither is set: archives stay plain).
        `redactor` scrubs secrets from events before they are stored or exported
        (on by default; the live session is never changed); `redact_archives`
        also scrubs archived copies. `encrypt_payloads` seals every new message
        payload under a per-session key (needs a keyring); typed columns stay plain.
        `publisher` (an EventBus) receives every stored event, for exporters.
        `engine` is an AsyncEngine of yours (instead of `url`, as the SDK's
        SQLAlchemySession takes it): `store.engine` returns it, the store's own
        work runs on connections it opens to the same database, one pool per
        event loop. `timeout_s` bounds every wait inside the store.
        `max_item_bytes` refuses larger items (InvalidItemError) before any work on them.
        `read_only` opens the database for reading only: a missing SQLite file is an
        error (DatabaseNotFoundError) instead of a new database, the schema is checked
        but never migrated, SQLite opens the file `mode=ro`, PostgreSQL runs every
        transaction READ ONLY, and writes raise ReadOnlyStoreError.
        `verify_on_load` proves every `load_context` against the session's hash chain
        (HistoryTamperedError instead of edited, injected or removed rows; see
        `verify_history` for the whole history).
        `prices` (model name -> Price, USD per 1M tokens) add to or replace the default
        price table that prices recorded model calls.
        `failover_retry_s` (PostgreSQL; off by default) retries an append that found no
        writable primary or lost its connection, with the same idempotency token (stored
        exactly once), for up to that many seconds: a primary failover's write outage.
        """
        self.url = _source_url(url, engine, timeout_s)
        self.timeout_s = float(timeout_s)
        self.max_item_bytes = check_positive("max_item_bytes", max_item_bytes)
        self.database = open_database(
            self.url,
            engine=engine,
            timeout_s=self.timeout_s,
            sqlite_busy_timeout_ms=sqlite_busy_timeout_ms,
            sqlite_synchronous=sqlite_synchronous,
            read_only=read_only,
            failover_retry_s=failover_retry_s,
            **dict(engine_kwargs or {}),
        )
        self.dialect = self.database.dialect
        self.model = model
        self._estimator = estimator
        self.keyring: Keyring | None = Keyring.load() if keyring == "env" else keyring
        self.redactor = redactor or Redactor()
        self.redact_archives = redact_archives
        self.session_keys = SessionKeys(self.keyring, encrypt_new=encrypt_payloads)
        self.publisher = publisher
        self.verify_on_load = check_flag("verify_on_load", verify_on_load)
        self.prices: dict[str, Price] = {**DEFAULT_PRICES, **(prices or {})}
        self.read_only = read_only
        self._create_tables = _creates_tables(create_tables, read_only, self.dialect)
        self._ready = False
        self._ready_lock = LoopSafeLock("the store's schema check")

    @property
    def estimator(self) -> TokenEstimator:
        """Counts tokens (exact when a verified vocabulary loads); loaded on first use, so a
        store that only reads never pays for the vocabulary."""
        if self._estimator is None:
            self._estimator = estimator_for_model(self.model)
        return self._estimator

    @property
    def safe_url(self) -> str:
        """The URL with any password masked, for messages and logs."""
        return self.url.render_as_string(hide_password=True)

    @property
    def engine(self) -> AsyncEngine:
        """An AsyncEngine on the same database, for your own SQL over the documented schema."""
        return self.database.async_engine()

    async def __aenter__(self) -> SessionStore:
        await self.ensure_ready()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Release every pooled connection and worker thread; give exporters a bounded flush."""
        if self.publisher is not None:  # events of a short-lived process must still leave it
            await asyncio.to_thread(self.publisher.flush, PUBLISHER_FLUSH_TIMEOUT_S)
        await self.database.dispose()

    async def ensure_ready(self) -> None:
        """Check (or, with create_tables, migrate) the schema once per store."""
        if self._ready:
            return
        async with self._ready_lock.hold(self.timeout_s):
            if self._ready:
                return
            migrated = await ensure_schema(
                self.database,
                create=self._create_tables,
                url_hint=self.safe_url,
                timeout_s=self.timeout_s,
            )
            self._ready = True
            if self.read_only:
                return  # nothing may be written, not even these notes
            warnings: list[Event] = []
            if not self.redactor.enabled:
                warnings.append(redaction_disabled_event())  # before anything is exported
            if migrated is not None:
                warnings.append(Event("schema.migrated", fields=migrated))
            reason = getattr(self.estimator, "fallback_reason", None)
            if reason:
                fields = {"estimator": self.estimator.name, "reason": reason}
                warnings.append(
                    Event("tokens.estimator_fallback", severity="warning", fields=fields)
                )
            await self.record_events(warnings)

    # ------------------------------------------------------------- the seam

    async def write_transaction(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        """Run `fn(connection, *args)` as one write transaction on this store's database.

        The one way in for kernel jobs that write beyond appends (a compaction's commit,
        retention, key rotation): the schema is checked first, the per-backend write
        rules (SQLite's writer thread, bounded waits, uncancellable outcome) apply.
        """
        await self.ensure_ready()
        return await self.database.write(fn, *args, **kwargs)

    async def read_snapshot(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        """Run `fn(connection, *args)` for reading (archives, policies, key usage)."""
        await self.ensure_ready()
        return await self.database.read(fn, *args, **kwargs)

    # ------------------------------------------------------------------ writes

    async def append(
        self,
        session_id: str,
        items: Sequence[Mapping[str, Any]],
        *,
        protected: bool = False,
        originals: Mapping[int, Mapping[str, Any]] | None = None,
        token: str | None = None,
        agent: str | None = None,
        truncation: Truncation | None = None,
    ) -> list[int]:
        """Append items in order and return their seqs. All or nothing.

        Every item is validated (and counted) before the database is touched, so
        a bad item leaves the session exactly as it was. `originals` maps the
        index of a truncated item to its full original, archived alongside.
        `token` identifies the batch (one is generated when omitted): appending
        again with the token of a stored batch stores nothing and returns its seqs,
        so a retry after `StoreUnavailableError(outcome_known=False)` is safe.
        `agent` names the agent that produced the items (`messages.agent`; None for user
        input or when not known). `truncation` (a `CompactionManager`) cuts long tool outputs
        as the batch is prepared, their originals archived in the same transaction.
        """
        seqs, _ = await self.append_counted(
            session_id,
            items,
            protected=protected,
            originals=originals,
            token=token,
            agent=agent,
            truncation=truncation,
        )
        return seqs

    async def append_counted(
        self,
        session_id: str,
        items: Sequence[Mapping[str, Any]],
        *,
        protected: bool = False,
        originals: Mapping[int, Mapping[str, Any]] | None = None,
        token: str | None = None,
        agent: str | None = None,
        truncation: Truncation | None = None,
    ) -> tuple[list[int], int]:
        """`append`, also returning the tokens the items were counted at (what an importer
        reports, without counting every item a second time)."""
        check_session_id(session_id)
        items = item_list(items)
        protected = check_flag("protected", protected)
        token = append_token(token)
        agent = check_agent_name(agent)
        if not items:
            return [], 0
        if truncation is not None and originals:
            raise ValueError("pass originals or truncation, not both")
        batch, cut = await self.prepare_batch(
            session_id, items, token=token, protected=protected, agent=agent, truncation=truncation
        )
        counts = batch.counts
        try:
            seqs = await self._write_batch(batch, cut or originals or {})
        except DuplicateAppendError:  # a retry of a stored batch: what it stored then
            first = await self.database.read(read_token_seq, session_id, token)
            return list(range(first, first + len(items))), sum(counts)
        except StoreUnavailableError as error:
            error.token = token
            raise
        if cut and truncation is not None:
            truncation.items_truncated(session_id)
        return seqs, sum(counts)

    async def prepare_batch(
        self,
        session_id: str,
        items: Sequence[Mapping[str, Any]],
        *,
        token: str,
        protected: bool = False,
        agent: str | None = None,
        truncation: Truncation | None = None,
    ) -> tuple[Batch, dict[int, Mapping[str, Any]]]:
        """A checked batch ready to write, and the originals `truncation` cut (by index).

        The one preparation every writer shares (`append`, the first-access import): items
        validated, encoded, described and counted, off the event loop when they are large.
        """
        limit, estimator = self.max_item_bytes, self.estimator
        if rough_chars(items) > PREPARE_INLINE_MAX_CHARS:  # never stall the event loop
            prepared = await asyncio.to_thread(prepare_items, items, truncation, limit, estimator)
        else:  # a thread hop costs more than preparing a turn
            prepared = prepare_items(items, truncation, limit, estimator)
        payloads, infos, counts, cut = prepared
        await self.ensure_ready()
        batch = Batch(
            session_id=session_id,
            payloads=payloads,
            infos=await self._name_late_outputs(session_id, infos),
            counts=counts,
            protected=protected,
            encoding=self.estimator.name,
            token=token,
            agent=agent,
        )
        return batch, cut

    async def _write_batch(
        self, batch: Batch, originals: Mapping[int, Mapping[str, Any]]
    ) -> list[int]:
        if originals or self.session_keys.encrypt_new:
            seqs = await self.database.write(tx_append_general, batch, originals, self.session_keys)
            self.database.appended(batch.session_id, sum(batch.counts))  # as the hot path does
            return seqs
        return await self.database.append_batch(batch, self.session_keys)

    async def _name_late_outputs(self, session_id: str, infos: list[ItemInfo]) -> list[ItemInfo]:
        """Name the tool on outputs whose call was appended in an earlier batch.

        Names of earlier calls never change, so this read need not share the
        append's transaction; it only happens when such an output arrives.
        """
        missing = sorted(
            {
                info.call_id
                for info in infos
                if info.tool_name is None and info.call_id and is_tool_output(info)
            }
        )
        if not missing:
            return infos
        known = await self.database.read(read_call_names, session_id, missing)
        return [
            replace(info, tool_name=known[info.call_id])
            if info.tool_name is None and info.call_id in known
            else info
            for info in infos
        ]

    async def pop(self, session_id: str) -> dict[str, Any] | None:
        """Hide and return the newest item of the active context (a tombstone row)."""
        check_session_id(session_id)
        await self.ensure_ready()
        return await self.database.write(tx_pop, session_id, self.session_keys)

    async def clear(self, session_id: str) -> None:
        """Start an empty active context with a clear marker; history stays for audit."""
        check_session_id(session_id)
        await self.ensure_ready()
        await self.database.write(tx_clear, session_id, self.session_keys)

    async def delete_session(self, session_id: str) -> bool:
        """Physically delete a session, its rows and events (admin/retention only).

        Its archives stay (retention's delete_archives removes them); the record of which
        rows each one holds (`archive_ranges`) goes with the session, so the id can be reused.
        """
        check_session_id(session_id)
        await self.ensure_ready()
        return await self.database.write(tx_delete, session_id)

    async def record_events(self, batch: Sequence[Event]) -> None:
        """Store events (redacted) as rows of `events`, the source of truth for exporters."""
        if batch:
            await self.ensure_ready()
            redacted = self.redacted(batch)
            await self.database.write(tx_events, [event.row() for event in redacted])
            self.publish(redacted)

    def publish(self, batch: Sequence[Event]) -> None:
        """Hand stored (already redacted) events to the exporters; never blocks or raises."""
        if self.publisher is not None and batch:
            self.publisher.publish(batch)

    def redacted(self, batch: Sequence[Event]) -> list[Event]:
        """Events with secrets scrubbed (copies; the originals are untouched)."""
        return [self.redactor.event(event) for event in batch]

    # ------------------------------------------------------------------- reads

    async def load_context(
        self,
        session_id: str,
        limit: int | None = None,
        *,
        as_of: HistoryPoint | int | datetime | None = None,
        agent: str | None = None,
    ) -> list[dict[str, Any]]:
        """The active context in order: everything visible from the last marker forward.

        `limit` follows the Agents SDK: the newest `limit` items in chronological
        order; 0 returns nothing and a negative limit returns everything. `as_of` reads
        the context as a load returned it at an earlier point: a seq, a datetime, or a
        HistoryPoint (after a compaction version, before a turn). `agent` keeps only the
        items that agent produced (`messages.agent`), a per-agent view of the same context.
        """
        check_session_id(session_id)
        check_count("limit", limit)
        point = None if as_of is None else HistoryPoint.of(as_of)
        named = check_agent_name(agent)
        if named is not None:
            rows = (
                await self.context_rows(session_id)
                if point is None
                else (await self.rows_as_of(session_id, point))[1]
            )
            return items_of(rows, named, limit)
        await self.ensure_ready()
        if limit == 0:
            return []
        if point is not None:
            _, rows = await self.rows_as_of(session_id, point)
            items = [row.item for row in visible_rows(rows) if row.item is not None]
            return items[-limit:] if limit is not None and limit > 0 else items
        if self.verify_on_load:
            items = await self.database.read(tx_checked_active, session_id, self.session_keys)
            return items[-limit:] if limit is not None and limit > 0 else items
        if limit is not None and limit > 0:
            return await self.database.read(read_tail, session_id, limit, self.session_keys)
        return await self._active_items(session_id)

    async def _active_items(self, session_id: str) -> list[dict[str, Any]]:
        """The whole active context's items: one driver-level read while the session's rows
        are plain, the general read (which opens sealed payloads) otherwise."""
        if not self.session_keys.encrypt_new:  # new rows are plain: try the driver-level read
            records = await self.database.active_rows(session_id)
            if all(record["payload_sealed"] is None for record in records):  # none sealed
                return await off_loop_if(len(records) > BIG_ROWS, decoded_visible, records)
        return await self.database.read(read_active, session_id, self.session_keys)

    @overload
    async def record_model_call(
        self,
        session_id: str,
        items: Sequence[Mapping[str, Any]],
        *,
        model: str | None = None,
        unsaved_items: int = 0,
        unsaved_tokens: int = 0,
        events: Sequence[Event] = (),
        digest: str | None = None,
        masked_tokens: int = 0,
    ) -> int: ...

    @overload
    async def record_model_call(
        self,
        session_id: str,
        items: Sequence[Mapping[str, Any]],
        *,
        model: str | None = None,
        unsaved_items: int = 0,
        unsaved_tokens: int = 0,
        decide: Callable[[int], Sequence[Event] | None],
        digest: str | None = None,
        masked_tokens: int = 0,
    ) -> int | None: ...

    async def record_model_call(
        self,
        session_id: str,
        items: Sequence[Mapping[str, Any]],
        *,
        model: str | None = None,
        unsaved_items: int = 0,
        unsaved_tokens: int = 0,
        events: Sequence[Event] = (),
        decide: Callable[[int], Sequence[Event] | None] | None = None,
        digest: str | None = None,
        masked_tokens: int = 0,
    ) -> int | None:
        """Record a model call about to be sent `items` (the last `unsaved_items` of them not
        stored yet); returns the id to attach its usage to (`record_usage`). `events` (the
        pre-flight's decision) are stored, redacted, in the same transaction; or `decide`
        makes that decision there from the stored token total it reads, and None from it
        records nothing and returns None. `digest` is the items' `input_sha256` when the
        caller kept it as its input grew (the SDK adapter does). `masked_tokens` is what
        masking took out of the stored context in `items` (the estimate leaves it out)."""
        check_session_id(session_id)
        # allow_none=False: never None (`or 0` only tells the type checker)
        unsaved_items = check_non_negative("unsaved_items", unsaved_items, allow_none=False) or 0
        unsaved_tokens = check_non_negative("unsaved_tokens", unsaved_tokens, allow_none=False) or 0
        masked_tokens = check_non_negative("masked_tokens", masked_tokens, allow_none=False) or 0
        items = item_list(items)
        if digest is None and rough_chars(items) > PREPARE_INLINE_MAX_CHARS:
            digest = await asyncio.to_thread(input_sha256, items)  # never stall the event loop
        elif digest is None:
            digest = input_sha256(items)
        await self.ensure_ready()
        published: list[Event] = []

        def decided(stored_tokens: int) -> list[dict[str, Any]] | None:
            chosen = events if decide is None else decide(stored_tokens)
            # A record tried again decides again: only its last decision is published.
            published[:] = [] if chosen is None else self.redacted(chosen)
            return None if chosen is None else [event.row() for event in published]

        row_id = await self.database.record_call(
            CallRecord(
                session_id,
                model=model,
                input_items=len(items),
                unsaved_items=unsaved_items,
                unsaved_tokens=unsaved_tokens,
                digest=digest,
                decide=decided,
                masked_tokens=masked_tokens,
            )
        )
        self.publish(published)
        return row_id

    def known_context_tokens(self, session_id: str) -> int | None:
        """`context_tokens` as this store last saw it, without a read: None until a model
        call's record of the session read it, and again after any write of this store that
        may have moved it other than a plain append. Another process may have moved the total
        since; what is decided from it can go out before it is confirmed (`record_model_call`
        decides again from the stored total)."""
        return self.database.known_total(session_id)

    async def context_tokens(self, session_id: str) -> int:
        """Token total of the active context, from the running counter (no re-tokenizing)."""
        check_session_id(session_id)
        await self.ensure_ready()
        row = await self.database.read(read_first, CONTEXT_TOKENS, {"sid": session_id})
        return 0 if row is None else int(row[0])

    async def session_info(self, session_id: str) -> SessionInfo | None:
        """The session's bookkeeping row, or None if it was never written."""
        check_session_id(session_id)
        await self.ensure_ready()
        row = await self.database.read(read_first, SESSION_ROW, {"sid": session_id})
        return None if row is None else session_info_of(row)

    async def session_metadata(self, session_id: str) -> dict[str, Any] | None:
        """The session's free-form `metadata` object ({} when unset), or None if never written."""
        check_session_id(session_id)
        await self.ensure_ready()
        row = await self.database.read(read_first, METADATA, {"sid": session_id})
        return None if row is None else dict(row[0] or {})

    async def merge_session_metadata(self, session_id: str, values: Mapping[str, Any]) -> bool:
        """Set top-level metadata keys, keeping the others; False if the session does not exist.

        Under the session lock, so concurrent merges never lose each other's keys.
        Metadata is bookkeeping, not a conversation write: `updated_at` does not move.
        """
        check_session_id(session_id)
        if not isinstance(values, Mapping):
            raise TypeError(f"values must be a mapping, got a {type(values).__name__}")
        check_json_object(values, "metadata")
        await self.ensure_ready()
        return await self.database.write(tx_merge_metadata, session_id, dict(values))

    async def list_sessions(
        self, *, limit: int | None = None, offset: int = 0
    ) -> list[SessionInfo]:
        """Sessions, most recently updated first."""
        check_non_negative("limit", limit)
        check_non_negative("offset", offset, allow_none=False)
        await self.ensure_ready()
        stmt = (
            sa.select(*sessions.c)
            .order_by(sessions.c.updated_at.desc(), sessions.c.session_id)
            .offset(offset)
            .limit(limit)
        )
        return [session_info_of(row) for row in await self.database.read(read_all, stmt)]
