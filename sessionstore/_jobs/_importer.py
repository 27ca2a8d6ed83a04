"""Import the Agents SDK's own session tables (SQLiteSession, SQLAlchemySession).

The migration path for existing SDK users: every SDK session becomes a
sessionstore session with the same id and the same items in the same order,
appended through `SessionStore.append`, so tokens are counted and every store
invariant holds. The source is opened read-only and never written.

What was taken from which source is recorded in the target session's metadata
(under IMPORT_KEY), so a re-run imports only the messages the source gained
since. A target session that holds rows the record does not account for is
refused rather than mixed, unless those rows are exactly the source's next
items (an interrupted run appended them but could not record it): those are
recognised and kept, never appended twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Any, Literal, TypeAlias

from .._schema import KIND_ITEM
from .._store import SessionStore
from ._sdk_source import (
    DEFAULT_MESSAGES_TABLE,
    DEFAULT_SESSIONS_TABLE,
    IMPORT_KEY,
    ImportMarker,
    Page,
    RowProblem,
    SdkSource,
    SourceOrder,
    Status,
    open_source,
)


@dataclass(slots=True)
class SessionImport:
    """What one run did with one SDK session."""

    session_id: str
    status: Status = "up_to_date"
    imported: int = 0  # items appended by this run (a dry run: would append)
    skipped: int = 0  # source messages this run could not import (see problems)
    already_present: int = 0  # source messages earlier runs imported
    # Source messages an earlier run skipped: not in the target, and never appended later
    # (that would put them out of order); fixing them takes a fresh import of the session.
    skipped_before: tuple[int, ...] = ()
    recovered: int = 0  # items an interrupted run appended, recognised and recorded now
    tokens: int = 0  # tokens of the items this run imported, as the store counts them
    reason: str | None = None  # why the session was refused or not found
    problems: list[RowProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing was refused and no message was skipped, now or before."""
        return (
            self.status not in ("refused", "not_found")
            and not self.problems
            and not self.skipped_before
        )


@dataclass(slots=True)
class ImportReport:
    """The outcome of one `import_sdk_sessions` run, one entry per session."""

    source: str
    target: str
    dry_run: bool
    sessions: list[SessionImport] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every session imported cleanly (or had nothing new)."""
        return all(session.ok for session in self.sessions)

    def total(self, name: Literal["imported", "skipped", "already_present", "tokens"]) -> int:
        """One counter summed over the sessions."""
        return sum(getattr(session, name) for session in self.sessions)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (for `--json`)."""
        return {
            "source": self.source,
            "target": self.target,
            "dry_run": self.dry_run,
            "ok": self.ok,
            "totals": {
                name: self.total(name)
                for name in ("imported", "skipped", "already_present", "tokens")
            },
            "sessions": [asdict(session) | {"ok": session.ok} for session in self.sessions],
        }


@dataclass(frozen=True, slots=True)
class ImportProgress:
    """Source messages handled so far in this run, out of all in the selected sessions."""

    session_id: str
    done: int
    total: int


ProgressCallback: TypeAlias = Callable[[ImportProgress], None]


def _source_changed(present: int, recorded: int) -> str:
    if present < recorded:
        return (
            f"the source no longer has {recorded - present} of the messages imported before "
            "(pop_item, clear_session or the SDK's compaction removed them); the imported "
            "copies are kept. To mirror the source as it is now, delete the target session "
            "(SessionStore.delete_session) and import again."
        )
    return (
        f"the source has {present - recorded} message(s) older than the last imported one "
        "that the last import did not see (a writer committed them late); appending them now "
        "would put them out of order. Delete the target session and import again."
    )


def _foreign_rows(last_seq: int, recorded_seq: int, source: str) -> str:
    if recorded_seq == 0:
        found = f"the target session already has {last_seq} row(s) that did not come from {source}"
    else:
        found = (
            f"the target session changed since the last import from {source} (rows up to seq "
            f"{recorded_seq} came from it, it now ends at seq {last_seq})"
        )
    return (
        f"{found}; importing would mix two histories. Import into an empty session, or pass "
        "--append-to-existing (append_to_existing=True) to add the source's items after them."
    )


@dataclass(slots=True)
class _SessionRun:
    """One session's import: the record it advances and the counts it reports."""

    source: SdkSource
    store: SessionStore
    result: SessionImport
    marker: ImportMarker
    dry_run: bool

    @property
    def session_id(self) -> str:
        return self.result.session_id

    def count(self, page: Page) -> list[dict[str, Any]]:
        """Add a page's problems to the report; its importable items."""
        self.result.problems.extend(
            RowProblem(row.message_id, row.problem or "") for row in page.rows if row.item is None
        )
        self.result.skipped += sum(1 for row in page.rows if row.item is None)
        return page.items

    async def record(self) -> None:
        """Store the record; a session never written yet (only bad rows so far) has none."""
        if not self.dry_run:
            await self.store.merge_session_metadata(
                self.session_id, {IMPORT_KEY: self.marker.as_json()}
            )

    async def recover(self, ids: list[int], extra: int) -> list[int] | None:
        """Recognise `extra` unrecorded target rows as the source's next items.

        Returns the ids still to import, or None when the rows are something else.
        """
        if not 0 < extra <= len(ids):
            return None
        history = await self.store.history(self.session_id)
        expected = [row.item for row in history if row.seq > self.marker.target_seq]
        if len(expected) != extra or any(
            row.kind != KIND_ITEM for row in history if row.seq > self.marker.target_seq
        ):
            return None
        pending = iter(expected)
        want = next(pending)
        async for page in self.source.pages(self.session_id, ids, self.store.max_item_bytes):
            for index, row in enumerate(page.rows):
                if row.item is None:
                    continue
                if row.item != want:
                    return None
                want = next(pending, None)
                if want is None:
                    done = Page(page.rows[: index + 1], ids[ids.index(row.message_id) + 1 :])
                    self.count(done)
                    self.result.recovered = extra
                    self.marker = self.marker.advanced(done, history[-1].seq)
                    await self.record()
                    return list(done.remaining)
        return None

    async def run(self, ids: list[int], tick: Callable[[int], None]) -> None:
        """Append the messages `ids` page by page, recording progress after each page."""
        async for page in self.source.pages(self.session_id, ids, self.store.max_item_bytes):
            items = self.count(page)
            target_seq = self.marker.target_seq
            if items and not self.dry_run:
                seqs, tokens = await self.store.append_counted(self.session_id, items)
                target_seq = seqs[-1]
            else:
                tokens = sum(self.store.estimator.count_item(item) for item in items)
            self.marker = self.marker.advanced(page, target_seq)
            await self.record()
            self.result.imported += len(items)
            self.result.tokens += tokens
            tick(len(page.rows))


@dataclass(slots=True)
class _Ticker:
    """Counts handled source messages across sessions for the progress callback."""

    total: int
    callback: ProgressCallback | None
    done: int = 0

    def advance(self, session_id: str, rows: int) -> None:
        self.done += rows
        if self.callback is not None and rows:
            self.callback(ImportProgress(session_id, self.done, self.total))


async def _import_session(
    source: SdkSource,
    store: SessionStore,
    session_id: str,
    *,
    dry_run: bool,
    append_to_existing: bool,
    tick: Callable[[int], None],
) -> SessionImport:
    result = SessionImport(session_id)
    metadata = await store.session_metadata(session_id)
    marker = ImportMarker.recorded(metadata, source.identity) or ImportMarker(source.identity)
    present = await source.processed_count(session_id, marker)
    if present != marker.source_rows:
        result.status = "refused"
        result.reason = _source_changed(present, marker.source_rows)
        return result
    result.skipped_before = marker.skipped
    result.already_present = present - len(marker.skipped)
    tick(present)
    ids = await source.new_ids(session_id, marker)
    if not ids:
        result.status = "up_to_date" if present else "empty"
        return result
    info = await store.session_info(session_id)
    last_seq = 0 if info is None else info.last_seq
    session = _SessionRun(source, store, result, marker, dry_run)
    if last_seq != marker.target_seq:
        recovered = await session.recover(ids, last_seq - marker.target_seq)
        if recovered is not None:
            ids = recovered
        elif append_to_existing:
            session.marker = replace(marker, target_seq=last_seq)
        else:
            result.status = "refused"
            result.reason = _foreign_rows(last_seq, marker.target_seq, source.location)
            return result
    await session.run(ids, tick)
    result.status = "would_import" if dry_run else "imported"
    return result


async def import_sdk_sessions(
    source: str,
    store: SessionStore,
    *,
    sessions_table: str = DEFAULT_SESSIONS_TABLE,
    messages_table: str = DEFAULT_MESSAGES_TABLE,
    session_ids: Iterable[str] | None = None,
    order: SourceOrder | None = None,
    append_to_existing: bool = False,
    dry_run: bool = False,
    progress: ProgressCallback | None = None,
) -> ImportReport:
    """Import every SDK session (or `session_ids`) from `source` into `store`.

    `source` is a SQLiteSession file path or any SQLAlchemy URL (SQLite or
    PostgreSQL) holding SQLAlchemySession's tables. Safe to re-run: only what the
    source gained since the last run is imported. Raises ImportSourceError when
    the source cannot be read as an SDK database; per-session trouble (bad rows,
    refused sessions) is in the report instead.
    """
    sdk = await open_source(
        source, sessions_table=sessions_table, messages_table=messages_table, order=order
    )
    report = ImportReport(source=sdk.location, target=store.safe_url, dry_run=dry_run)
    try:
        available = await sdk.session_ids()
        wanted = available if session_ids is None else list(dict.fromkeys(session_ids))
        counts = await sdk.message_counts()
        ticker = _Ticker(sum(counts.get(session_id, 0) for session_id in set(wanted)), progress)
        for session_id in wanted:
            if session_id not in available:
                reason = f"no session {session_id!r} in {sdk.location}"
                report.sessions.append(SessionImport(session_id, "not_found", reason=reason))
                continue
            end = ticker.done + counts.get(session_id, 0)
            tick = partial(ticker.advance, session_id)
            report.sessions.append(
                await _import_session(
                    sdk,
                    store,
                    session_id,
                    dry_run=dry_run,
                    append_to_existing=append_to_existing,
                    tick=tick,
                )
            )
            tick(max(end - ticker.done, 0))  # refused sessions and recovered rows: catch up
    finally:
        await sdk.engine.dispose()
    return report
