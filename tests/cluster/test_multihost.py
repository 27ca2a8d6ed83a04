"""Multi-host URLs: `?host=h1:p1&host=h2:p2` and `?host=h1,h2&port=p1,p2` name the same
hosts, in the same order, to every connection the store makes (SQLAlchemy's engine and the
hot path's plain asyncpg pool), and a store on either form works against a real server."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from sessionstore import SessionStore, UnsupportedURLError
from sessionstore._storage._postgres._url import (
    asyncpg_dsn,
    asyncpg_hosts,
    pooler_mode,
    sqlalchemy_hosts,
    without_pooler,
)
from tests.conftest import PG_ADMIN_URL
from tests.support.servers import free_port

REPEATED = "postgresql+asyncpg://app@/db?host=h1:5001&host=h2:5002&target_session_attrs=read-write"
COMMA = "postgresql+asyncpg://app@/db?host=h1,h2&port=5001,5002&target_session_attrs=read-write"
EXPECTED = [("h1", 5001), ("h2", 5002)]


@pytest.mark.parametrize("url", [REPEATED, COMMA])
def test_both_forms_give_every_driver_the_same_host_list(url: str) -> None:
    parsed = make_url(url)
    assert sqlalchemy_hosts(parsed) == EXPECTED
    assert asyncpg_hosts(parsed) == EXPECTED
    assert "read-write" in asyncpg_dsn(parsed)


def test_the_repeated_form_is_rewritten_into_asyncpgs_own() -> None:
    dsn = asyncpg_dsn(make_url(REPEATED))
    assert dsn.startswith("postgresql://app@/db?")
    assert "host=h1%3A5001%2Ch2%3A5002" in dsn or "host=h1:5001,h2:5002" in dsn


def test_hosts_without_a_port_take_the_urls_or_the_default() -> None:
    url = make_url("postgresql+asyncpg://app@/db?host=h1&host=[::1]:5003")
    assert asyncpg_hosts(url) == [("h1", 5432), ("::1", 5003)]


def test_a_port_that_is_not_a_number_is_refused() -> None:
    with pytest.raises(UnsupportedURLError, match="not a number"):
        asyncpg_dsn(make_url("postgresql+asyncpg://app@/db?host=h1:x&host=h2:5002"))


def test_the_pooler_option_is_ours_and_no_driver_sees_it() -> None:
    url = make_url("postgresql+asyncpg://app@h:6432/db?pgbouncer=transaction")
    assert pooler_mode(url) == "transaction"
    assert "pgbouncer" not in asyncpg_dsn(url)
    assert "pgbouncer" not in without_pooler(url).render_as_string()
    assert pooler_mode(make_url("postgresql+asyncpg://app@h/db")) is None
    with pytest.raises(UnsupportedURLError, match="pool mode"):
        pooler_mode(make_url("postgresql+asyncpg://app@h/db?pgbouncer=statement"))


def _multi_host(form: str, database: str, live_first: bool) -> str:
    """A URL listing a host that refuses connections and the test server."""
    real = make_url(PG_ADMIN_URL)
    hosts = [("127.0.0.1", free_port()), (real.host or "127.0.0.1", real.port or 5432)]
    if live_first:
        hosts.reverse()
    query = (
        "&".join(f"host={host}:{port}" for host, port in hosts)
        if form == "repeated"
        else f"host={hosts[0][0]},{hosts[1][0]}&port={hosts[0][1]},{hosts[1][1]}"
    )
    return f"postgresql+asyncpg://{real.username}@/{database}?{query}"


@pytest.mark.parametrize("live_first", [True, False], ids=["live-first", "live-last"])
@pytest.mark.parametrize("form", ["repeated", "comma"])
async def test_a_store_on_either_form_reaches_the_live_host(
    form: str, live_first: bool, pg_url: str
) -> None:
    url = _multi_host(form, make_url(pg_url).database or "postgres", live_first)
    async with SessionStore(url) as store:
        sid = f"multi-{form}-{live_first}"
        await store.clear(sid)
        seqs = await store.append(sid, [{"role": "user", "content": form}])  # the asyncpg pool
        assert await store.load_context(sid) == [{"role": "user", "content": form}]
        assert seqs == [1]
        assert [row.seq for row in await store.history(sid)] == [1]  # SQLAlchemy's engine
