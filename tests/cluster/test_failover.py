"""A primary failover under load, on a real pg_auto_failover cluster (a monitor, a primary
and a synchronous standby): writers on both multi-host URL forms keep appending through
`pg_autoctl perform failover`; every acknowledged append is stored exactly once, with no seq
gaps. With no writable primary listed, the store says so (its own reason, outcome known)."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from sessionstore import SessionStore, StoreUnavailableError
from sessionstore._errors import UnavailableReason
from tests.support.ha_cluster import HaCluster, UrlForm, ha_cluster

pytestmark = pytest.mark.cluster

FORMS: tuple[UrlForm, ...] = ("repeated", "comma")
WRITERS_PER_FORM = 3
FAILOVER_RETRY_S = 45.0


@pytest.fixture
def cluster() -> Iterator[HaCluster]:
    with ha_cluster() as running:
        yield running


def _item(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


class Writers:
    """Appenders, one session each, recording every acknowledged append and when."""

    def __init__(self) -> None:
        self.acked: dict[str, list[tuple[int, str]]] = defaultdict(list)
        self.times: list[float] = []
        self.stop = asyncio.Event()

    async def write(self, store: SessionStore, session_id: str) -> None:
        n = 0
        while not self.stop.is_set():
            text = f"{session_id}:{n}"
            [seq] = await store.append(session_id, [_item(text)], token=f"{session_id}-{n}")
            self.acked[session_id].append((seq, text))
            self.times.append(time.monotonic())
            n += 1

    async def until_each_appended(self, sessions: list[str], since: dict[str, int]) -> None:
        """Until every session has more acknowledged appends than `since` says (a loaded
        machine may take a while to open the first connections)."""
        deadline = time.monotonic() + 60
        while any(len(self.acked[sid]) <= since.get(sid, 0) for sid in sessions):
            assert time.monotonic() < deadline, "a writer acknowledged nothing for 60 s"
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # and a few more

    def longest_gap(self, start: float, end: float) -> float:
        """The longest time no append was acknowledged, between `start` and `end`."""
        inside = sorted(t for t in self.times if start <= t <= end)
        marks = [start, *inside, end]
        return max(later - earlier for earlier, later in itertools.pairwise(marks))


async def test_writers_survive_a_controlled_failover_and_standbys_say_no_writable_primary(
    cluster: HaCluster,
) -> None:
    primary = cluster.primary_port()
    standby = next(port for port in cluster.node_ports if port != primary)
    # The standby first: target_session_attrs=read-write must skip it (and, after the
    # failover, pick it).
    urls = {form: cluster.url(form, ports=[standby, primary]) for form in FORMS}
    async with SessionStore(urls["repeated"], create_tables=True):
        pass
    writers = Writers()
    stores = {form: SessionStore(urls[form], failover_retry_s=FAILOVER_RETRY_S) for form in FORMS}
    try:
        tasks = [
            asyncio.create_task(writers.write(stores[form], f"{form}-{n}"))
            for form in FORMS
            for n in range(WRITERS_PER_FORM)
        ]
        sessions = [f"{form}-{n}" for form in FORMS for n in range(WRITERS_PER_FORM)]
        await writers.until_each_appended(sessions, {})
        before = {sid: len(done) for sid, done in writers.acked.items()}
        started = time.monotonic()
        new_primary = await asyncio.to_thread(cluster.failover)
        ended = time.monotonic()
        await writers.until_each_appended(sessions, before)  # on the new primary
        writers.stop.set()
        await asyncio.gather(*tasks)  # an append that failed for good fails the test here
    finally:
        for store in stores.values():
            await store.close()
    assert new_primary == standby

    assert all(before[sid] > 0 for sid in sessions)
    assert all(len(writers.acked[sid]) > before[sid] for sid in sessions)
    assert [t for t in writers.times if t > ended], "nothing was acknowledged after the failover"
    async with SessionStore(cluster.url("comma")) as reader:
        for sid in sessions:
            acked = writers.acked[sid]
            stored = [row for row in await reader.history(sid) if row.kind == "item"]
            # Each acknowledged append exactly once, at the seq it was acknowledged with,
            # and nothing else: no seq gaps, no duplicates, no append lost.
            assert [row.seq for row in stored] == list(range(1, len(acked) + 1))
            assert [(row.seq, (row.item or {}).get("content")) for row in stored] == acked
            assert (await reader.verify_history(sid)).ok
    outage = writers.longest_gap(started, ended)
    total = sum(len(done) for done in writers.acked.values())
    print(
        f"\nfailover: {ended - started:.1f} s for pg_autoctl, longest write outage "
        f"{outage:.2f} s, {total} appends acknowledged, 0 lost, 0 duplicated"
    )
    assert outage < FAILOVER_RETRY_S
    # On the same cluster (one per run: pytest-xdist may send two tests of a module to two
    # workers, and each cluster costs three servers and half a minute).
    await _no_writable_primary_is_its_own_reason(cluster)


async def _no_writable_primary_is_its_own_reason(cluster: HaCluster) -> None:
    primary = cluster.primary_port()
    standbys = [port for port in cluster.node_ports if port != primary]
    async with SessionStore(cluster.url("comma", ports=[primary]), create_tables=True) as store:
        await store.append("kept", [_item("on the primary")])
    # Only standbys, target_session_attrs=read-write: no host qualifies at connect.
    with pytest.raises(StoreUnavailableError) as refused:
        async with SessionStore(cluster.url("repeated", ports=standbys)) as store:
            await store.append("kept", [_item("nowhere")])
    assert refused.value.reason == UnavailableReason.NO_WRITABLE_PRIMARY
    assert refused.value.outcome_known is True
    # A standby named without target_session_attrs: reads work there, the write is refused.
    async with SessionStore(cluster.url("comma", ports=standbys, attrs=False)) as store:
        await _until_replicated(store, "kept")
        with pytest.raises(StoreUnavailableError) as read_only:
            await store.append("kept", [_item("on a standby")], token="t-standby")
    assert read_only.value.reason == UnavailableReason.NO_WRITABLE_PRIMARY
    assert read_only.value.outcome_known is True and read_only.value.token == "t-standby"
    assert "no writable primary" in str(read_only.value)


async def _until_replicated(store: SessionStore, session_id: str) -> None:
    deadline = time.monotonic() + 10
    while await store.load_context(session_id) != [_item("on the primary")]:
        assert time.monotonic() < deadline, "the standby never replayed the append"
        await asyncio.sleep(0.1)
