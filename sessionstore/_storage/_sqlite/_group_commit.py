"""SQLite group commit: appends queued at the same moment share one transaction and one fsync.

SQLite has one writer, and with `synchronous=FULL` every COMMIT waits for the disk. When
many sessions append at once, their appends queue on the store's writer thread anyway;
this runs everything queued in one BEGIN IMMEDIATE ... COMMIT, each caller's batch in a
SAVEPOINT of its own when one fails (the transaction is replayed that way): a failing batch
rolls back alone and fails only its caller, the others commit together, and nobody hears of
success before the COMMIT is durable. A lone writer finds nobody queued and runs exactly as
before (no waiting).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar

from ..._errors import StoreTimeoutError

_T = TypeVar("_T")


@dataclass
class _Job(Generic[_T]):
    args: tuple[Any, ...]
    outcome: Future[_T]


class GroupCommit(Generic[_T]):
    """Runs `fn(connection, *args)` jobs on one writer thread, batched into transactions
    (or one job on a caller's thread that borrowed the idle writer's connection: `run_here`)."""

    def __init__(
        self,
        writer: Executor,
        connection: Callable[[], sqlite3.Connection],
        fn: Callable[..., _T],
        translated: Callable[[], contextlib.AbstractContextManager[None]],
        *,
        relaxed: tuple[str, str] | None = None,
    ) -> None:
        self._writer = writer
        self._connection = connection  # called on the writer thread only
        self._fn = fn
        self._translated = translated  # driver errors -> the store's own
        # (commit level, the connection's own): a kind of job whose commits need not wait
        # for the disk runs at the first and leaves the connection at the second.
        self._relaxed = relaxed
        self._pending: list[_Job[_T]] = []
        self._mutex = threading.Lock()
        self._scheduled = False
        self.transactions = 0  # how many transactions ran the jobs (observability, tests)

    def submit(self, *args: Any) -> Future[_T]:
        """Queue one job; its future settles after the transaction that ran it committed."""
        job: _Job[_T] = _Job(args, Future())
        with self._mutex:
            self._pending.append(job)
            if not self._scheduled:
                self._scheduled = True
                self._writer.submit(self._drain)
        return job.outcome

    def _drain(self) -> None:
        """On the writer thread: run everything queued so far as one transaction."""
        with self._mutex:
            jobs, self._pending = self._pending, []
            self._scheduled = False
        for job in jobs:
            job.outcome.set_running_or_notify_cancel()
        self._run(self._connection(), jobs, give_way=False)

    def run_here(self, raw: sqlite3.Connection, *args: Any) -> Future[_T] | None:
        """Run one job now, on the calling thread, in a transaction of its own: the caller
        holds the connection (borrowed from the idle writer thread) and has made the write
        lock not wait. None when another connection holds that lock: nothing was done (queue
        the job instead)."""
        job: _Job[_T] = _Job(args, Future())
        job.outcome.set_running_or_notify_cancel()
        return job.outcome if self._run(raw, [job], give_way=True) else None

    def _run(self, raw: sqlite3.Connection, jobs: list[_Job[_T]], *, give_way: bool) -> bool:
        """Run `jobs` in one transaction (at the relaxed level for a kind of job that has
        one) and settle each; False only when `give_way` and the write lock was busy."""
        if self._relaxed is None:
            return self._transaction(raw, jobs, give_way)
        relaxed, own = self._relaxed
        try:
            with self._translated():
                raw.execute(f"PRAGMA synchronous = {relaxed}")
        except BaseException as error:
            _fail(jobs, error)
            return True
        try:
            return self._transaction(raw, jobs, give_way)
        finally:
            raw.execute(f"PRAGMA synchronous = {own}")

    def _transaction(self, raw: sqlite3.Connection, jobs: list[_Job[_T]], give_way: bool) -> bool:
        """Run `jobs` in one transaction and settle each (see `_run`)."""
        try:
            with self._translated():
                raw.execute("BEGIN IMMEDIATE")
        except BaseException as error:
            if give_way and isinstance(error, StoreTimeoutError):  # another process writes
                return False
            _fail(jobs, error)
            return True
        self.transactions += 1
        if len(jobs) == 1:  # alone: exactly the plain transaction
            self._run_alone(raw, jobs[0])
            return True
        settles = self._run_together(raw, jobs)
        if settles is None:
            return True
        try:
            with self._translated():
                raw.execute("COMMIT")
        except BaseException as error:
            with contextlib.suppress(sqlite3.Error):
                raw.execute("ROLLBACK")
            _fail(jobs, error)
            return True
        for settle in settles:  # only now, with the COMMIT durable, does anyone hear back
            settle()
        return True

    def _run_alone(self, raw: sqlite3.Connection, job: _Job[_T]) -> None:
        try:
            with self._translated():
                value = self._fn(raw, *job.args)
                raw.execute("COMMIT")
        except BaseException as error:
            with contextlib.suppress(sqlite3.Error):
                raw.execute("ROLLBACK")
            job.outcome.set_exception(error)
            return
        job.outcome.set_result(value)

    def _run_together(
        self, raw: sqlite3.Connection, jobs: list[_Job[_T]]
    ) -> list[Callable[[], None]] | None:
        """Run the jobs in the open transaction; how to settle each once it commits (None:
        all failed, settled already). Optimistic: no savepoint per job (two statements each)
        unless one fails; then everything is rolled back and replayed, each job in a
        savepoint of its own, so only the failing one fails."""
        try:
            with self._translated():
                values = [self._fn(raw, *job.args) for job in jobs]
        except Exception:
            try:
                with self._translated():
                    raw.execute("ROLLBACK")
                    raw.execute("BEGIN IMMEDIATE")
            except BaseException as error:
                _fail(jobs, error)
                return None
            return [self._run_in_savepoint(raw, job) for job in jobs]
        except BaseException as error:  # interrupted: nobody's writes may commit
            with contextlib.suppress(sqlite3.Error):
                raw.execute("ROLLBACK")
            _fail(jobs, error)
            return None
        return [
            partial(job.outcome.set_result, value) for job, value in zip(jobs, values, strict=True)
        ]

    def _run_in_savepoint(self, raw: sqlite3.Connection, job: _Job[_T]) -> Callable[[], None]:
        """One job of a shared transaction: its failure rolls back only its own writes.

        Returns how to settle the job's outcome once the transaction's fate is known."""
        raw.execute("SAVEPOINT job")
        try:
            with self._translated():
                value = self._fn(raw, *job.args)
        except BaseException as error:
            raw.execute("ROLLBACK TO job")
            raw.execute("RELEASE job")
            return partial(job.outcome.set_exception, error)
        raw.execute("RELEASE job")
        return partial(job.outcome.set_result, value)


def _fail(jobs: list[_Job[Any]], error: BaseException) -> None:
    for job in jobs:
        job.outcome.set_exception(error)
