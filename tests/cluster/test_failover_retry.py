"""`failover_retry_s`: an append whose connection broke is retried with the same batch and
token, so a batch that did commit (its reply lost) is stored exactly once and the caller
gets its seqs; the retry is bounded; the reasons a StoreUnavailableError carries."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from sessionstore import SessionStore, StoreUnavailableError
from sessionstore._errors import UnavailableReason
from tests.support.pg_proxy import pg_proxy
from tests.support.servers import free_port


def _texts(rows: list[Any]) -> list[str]:
    return [row.item["content"] for row in rows if row.item is not None]


async def test_a_lost_commit_reply_is_retried_to_its_seqs_and_stored_once(pg_url: str) -> None:
    target = make_url(pg_url)
    sid = f"retry-{uuid.uuid4().hex[:8]}"
    batch = [{"role": "user", "content": "pay invoice 9"}, {"role": "assistant", "content": "ok"}]
    async with pg_proxy(target.host or "127.0.0.1", target.port or 5432) as proxy:
        through = target.set(host="127.0.0.1", port=proxy.port).render_as_string(False)
        async with SessionStore(through, timeout_s=10, failover_retry_s=10) as store:
            await store.append(sid, [{"role": "user", "content": "before"}])
            proxy.arm(b"pay invoice 9")
            seqs = await store.append(sid, batch, token="turn-9")  # no error reaches us
            assert proxy.dropped == 1  # the first attempt's reply was lost after its commit
    assert seqs == [2, 3]
    async with SessionStore(pg_url) as direct:
        assert _texts(await direct.history(sid)) == ["before", "pay invoice 9", "ok"]


async def test_without_the_option_the_same_loss_reaches_the_caller(pg_url: str) -> None:
    target = make_url(pg_url)
    sid = f"no-retry-{uuid.uuid4().hex[:8]}"
    async with pg_proxy(target.host or "127.0.0.1", target.port or 5432) as proxy:
        through = target.set(host="127.0.0.1", port=proxy.port).render_as_string(False)
        async with SessionStore(through, timeout_s=10) as store:
            await store.append(sid, [{"role": "user", "content": "before"}])
            proxy.arm(b"lost once")
            with pytest.raises(StoreUnavailableError) as caught:
                await store.append(sid, [{"role": "user", "content": "lost once"}], token="t")
    assert caught.value.outcome_known is False
    assert caught.value.reason == UnavailableReason.CONNECTION_LOST


async def test_the_retry_is_bounded_and_a_refused_host_is_unreachable(pg_url: str) -> None:
    target = make_url(pg_url)
    sid = f"bounded-{uuid.uuid4().hex[:8]}"
    async with pg_proxy(target.host or "127.0.0.1", target.port or 5432) as proxy:
        through = target.set(host="127.0.0.1", port=proxy.port).render_as_string(False)
        store = SessionStore(through, timeout_s=5, failover_retry_s=0.6)
        try:
            await store.append(sid, [{"role": "user", "content": "first"}])
            await proxy.close()  # the server behind the URL is gone for good
            await store.database.dispose()  # and no pooled connection outlives it
            started = time.monotonic()
            with pytest.raises(StoreUnavailableError) as caught:
                await store.append(sid, [{"role": "user", "content": "never"}], token="t-never")
            waited = time.monotonic() - started
        finally:
            await store.close()
    assert 0.3 <= waited < 5, waited  # it retried, within the bound
    assert caught.value.outcome_known is True and caught.value.token == "t-never"
    assert caught.value.reason == UnavailableReason.UNREACHABLE


async def test_an_unreachable_url_says_unreachable() -> None:
    store = SessionStore(f"postgresql+asyncpg://nobody@127.0.0.1:{free_port()}/x", timeout_s=5)
    with pytest.raises(StoreUnavailableError) as caught:
        await store.append("s", [{"role": "user", "content": "x"}])
    await store.close()
    assert caught.value.reason == UnavailableReason.UNREACHABLE and caught.value.outcome_known


def test_failover_retry_s_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="failover_retry_s"):
        SessionStore("postgresql+asyncpg://u@127.0.0.1/x", failover_retry_s=-1)
