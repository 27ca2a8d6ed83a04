"""What a store remembers of each session's token total: only what a record read, moved by
its own appends, and a bounded number of sessions."""

from __future__ import annotations

from sessionstore import CallUsage, SessionStore
from sessionstore._security._crypto import Keyring, LocalKey
from sessionstore._storage import _known_totals
from sessionstore._storage._known_totals import KnownTotals, keeps_totals
from tests.support.histories import assistant, user


def test_appends_move_only_a_total_a_record_read() -> None:
    totals = KnownTotals()
    totals.appended("s", 10)
    assert totals.get("s") is None  # never read: nothing to move
    totals.saw("s", 100)
    totals.appended("s", 10)
    assert totals.get("s") == 110
    totals.saw("s", 7)  # a record read it again: that wins
    assert totals.get("s") == 7


def test_past_the_limit_every_session_is_forgotten() -> None:
    totals = KnownTotals()
    limit = _known_totals.KNOWN_SESSIONS
    for n in range(limit):
        totals.saw(f"s{n}", n)
    totals.saw("s0", 5)  # a known session: nothing forgotten
    assert totals.get(f"s{limit - 1}") == limit - 1
    totals.saw("new", 1)
    assert totals.get("s0") is None and totals.get("new") == 1


def test_a_write_that_may_move_a_total_forgets_it() -> None:
    totals = KnownTotals()
    for session in ("a", "b"):
        totals.saw(session, 100)

    @keeps_totals
    def usage() -> None: ...

    def truncated_append() -> None: ...

    totals.wrote(usage, "a")
    totals.wrote(usage, None)
    assert (totals.get("a"), totals.get("b")) == (100, 100)  # usage never moves a total
    totals.wrote(truncated_append, "a")
    assert (totals.get("a"), totals.get("b")) == (None, 100)
    totals.wrote(truncated_append, None)  # names no session: every total may have moved
    assert totals.get("b") is None


async def test_the_store_forgets_a_total_its_other_writes_moved(db_url: str) -> None:
    """What the pre-flight decides from without a read: a record's total moved by the hot
    path's appends and by those of the general path (here: an original archived beside a
    truncated item), kept by usage, forgotten by a rewrite such as a clear."""
    async with SessionStore(db_url, create_tables=True) as store:
        await store.append("s", [user("hello")])
        assert store.known_context_tokens("s") is None
        call = await store.record_model_call("s", [user("hello")])
        total = await store.context_tokens("s")
        assert call is not None and store.known_context_tokens("s") == total
        await store.append("s", [assistant("hi")])
        assert store.known_context_tokens("s") == await store.context_tokens("s")
        await store.record_usage("s", [CallUsage(100, 0, 10, 0)], calls=[(call, "m")])
        assert store.known_context_tokens("s") == await store.context_tokens("s")
        await store.append("s", [user("short")], originals={0: user("the long original")})
        assert store.known_context_tokens("s") == await store.context_tokens("s")
        await store.clear("s")
        assert store.known_context_tokens("s") is None


async def test_an_encrypted_store_keeps_its_totals_across_appends(db_url: str) -> None:
    """Sealed appends take the general path: the total a record read moves with them, so the
    pre-flight of an encrypted store need not wait for its record either."""
    keyring = Keyring([LocalKey("k1", bytes(range(32)))])
    async with SessionStore(
        db_url, create_tables=True, keyring=keyring, encrypt_payloads=True
    ) as store:
        await store.append("s", [user("hello")])
        await store.record_model_call("s", [user("hello")])
        for turn in range(3):
            await store.append("s", [assistant(f"reply {turn} " * 20), user("next")])
            assert store.known_context_tokens("s") == await store.context_tokens("s")
