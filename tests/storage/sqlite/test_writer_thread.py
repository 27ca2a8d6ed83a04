"""The writer thread lends its connection only while it idles, and its jobs wait for a
borrower to give it back: the connection is never used by two threads at once."""

from __future__ import annotations

import threading

from sessionstore._storage._sqlite._writer_thread import WriterThread


def test_the_connection_is_lent_only_while_no_job_runs() -> None:
    writer = WriterThread("test-writer")
    started, release = threading.Event(), threading.Event()
    try:

        def job() -> str:
            started.set()
            release.wait(10)
            return threading.current_thread().name

        running = writer.submit(job)
        assert started.wait(10)
        with writer.borrowed() as free:
            assert not free
        release.set()
        assert running.result(10) == "test-writer_0"
        with writer.borrowed() as free:
            assert free
    finally:
        release.set()
        writer.shutdown()


def test_a_job_waits_for_the_borrower_to_give_the_connection_back() -> None:
    writer = WriterThread("test-writer")
    order: list[str] = []
    try:
        with writer.borrowed() as free:
            assert free
            queued = writer.submit(order.append, "job")
            assert not queued.done() and not writer._connection.acquire(timeout=0.2)
            order.append("borrower")
        queued.result(10)
        assert order == ["borrower", "job"]
        with writer.borrowed() as free:  # given back: free again
            assert free
    finally:
        writer.shutdown()
