"""PostgreSQL URLs as each driver reads them: multi-host lists and the PgBouncer option.

A store makes two kinds of connection from one URL: SQLAlchemy's (the asyncpg dialect,
which reads `?host=h1:p1&host=h2:p2` as a host list) and plain asyncpg ones (the append
hot path's pool), which parse a DSN and keep only the last of repeated `host` parameters.
`asyncpg_dsn` rewrites the repeated form into asyncpg's own (`?host=h1:p1,h2:p2`) so both
kinds reach the same hosts in the same order; `?host=h1,h2&port=p1,p2` already means the
same to both. `target_session_attrs=read-write` makes either of them skip standbys.

`?pgbouncer=transaction` (sessionstore's own option, removed before a driver sees it) says
the URL points at a PgBouncer in transaction pooling mode: see `PostgresDatabase`.
"""

from __future__ import annotations

import inspect
import uuid
from typing import Final

import asyncpg
from asyncpg import connect_utils
from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg
from sqlalchemy.engine import URL

from ..._errors import UnsupportedURLError

POOLER_OPTION: Final = "pgbouncer"
POOLER_MODES: Final = ("transaction", "session")
_DEFAULT_PORT: Final = 5432


def pooler_mode(url: URL) -> str | None:
    """The PgBouncer pool mode the URL declares (`?pgbouncer=transaction`), or None."""
    value = url.query.get(POOLER_OPTION)
    if value is None:
        return None
    mode = value[-1] if isinstance(value, tuple) else value
    if mode not in POOLER_MODES:
        raise UnsupportedURLError(
            f"?{POOLER_OPTION}={mode!r} is not a pool mode sessionstore knows: use "
            f"?{POOLER_OPTION}=transaction (PgBouncer's pool_mode=transaction) or "
            f"?{POOLER_OPTION}=session"
        )
    return mode


# libpq's sslmode values; asyncpg takes them as `ssl=` (SQLAlchemy passes every other
# option to asyncpg.connect as it is, so `?sslmode=require` would be a TypeError there).
SSL_MODES: Final = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
# What SQLAlchemy's asyncpg dialect reads itself, besides asyncpg.connect's keywords.
_DIALECT_OPTIONS: Final = {"prepared_statement_cache_size", "prepared_statement_name_func"}


def checked_url(url: URL) -> URL:
    """`url` as both drivers take it, or an UnsupportedURLError naming the option that is
    wrong (options asyncpg knows; libpq's `sslmode` becomes asyncpg's `ssl`), instead of a
    driver's traceback at the first connection."""
    if "sslmode" in url.query:
        mode = url.query["sslmode"]
        mode = mode[-1] if isinstance(mode, tuple) else mode
        if mode not in SSL_MODES:
            raise UnsupportedURLError(
                f"?sslmode={mode!r} is not an SSL mode: use one of {', '.join(SSL_MODES)}"
            )
        url = url.difference_update_query(["sslmode"]).update_query_dict({"ssl": mode})
    known = set(inspect.signature(asyncpg.connect).parameters) | _DIALECT_OPTIONS
    unknown = sorted(set(url.query) - known - {POOLER_OPTION})
    if unknown:
        raise UnsupportedURLError(
            f"the database URL has options PostgreSQL's driver (asyncpg) does not take: "
            f"{', '.join(unknown)} (it takes sslmode/ssl, target_session_attrs, host, port, "
            f"{POOLER_OPTION}, server_settings, timeout and the other asyncpg.connect keywords)"
        )
    return url


def without_pooler(url: URL) -> URL:
    """The URL a driver may see: sessionstore's own `pgbouncer` option removed."""
    return url.difference_update_query([POOLER_OPTION])


def _split_host(entry: str, default_port: int) -> tuple[str, int]:
    """`h`, `h:p`, `[v6]` or `[v6]:p` as (host, port)."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port = rest.removeprefix(":")
    elif entry.count(":") == 1:
        host, port = entry.split(":")
    else:
        host, port = entry, ""
    try:
        return host, int(port) if port else default_port
    except ValueError:
        raise UnsupportedURLError(
            f"the host {entry!r} in the database URL has a port that is not a number"
        ) from None


def _joined(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def asyncpg_dsn(url: URL) -> str:
    """The DSN for `asyncpg.connect`/`create_pool` that reaches the hosts SQLAlchemy's
    asyncpg dialect reaches for the same URL (password included: never log it)."""
    url = without_pooler(url).set(drivername="postgresql")
    mode = url.query.get("ssl")
    if isinstance(mode, str) and mode in SSL_MODES:  # a DSN names it as libpq does
        url = url.difference_update_query(["ssl"]).update_query_dict({"sslmode": mode})
    hosts = url.query.get("host")
    if isinstance(hosts, tuple):  # ?host=h1:p1&host=h2:p2: asyncpg would keep only h2
        default = url.port or _DEFAULT_PORT
        pairs = [_split_host(entry, default) for entry in hosts]
        joined = ",".join(_joined(host, port) for host, port in pairs)
        url = url.difference_update_query(["host", "port"]).update_query_dict({"host": joined})
    return url.render_as_string(hide_password=False)


def asyncpg_hosts(url: URL) -> list[tuple[str, int]]:
    """The (host, port) list a plain asyncpg connection made from `url` tries, in order."""
    parsed = connect_utils._parse_connect_dsn_and_args(
        dsn=asyncpg_dsn(url),
        host=None,
        port=None,
        user=None,
        password=None,
        passfile=None,
        database=None,
        ssl=None,
        service=None,
        servicefile=None,
        direct_tls=None,
        server_settings=None,
        target_session_attrs=None,
        krbsrvname=None,
        gsslib=None,
    )
    return [(str(host), int(port)) for host, port in parsed[0]]


def sqlalchemy_hosts(url: URL) -> list[tuple[str, int]]:
    """The (host, port) list SQLAlchemy's asyncpg dialect connects to for `url`, in order."""
    dialect = PGDialect_asyncpg()  # type: ignore[no-untyped-call]
    _, options = dialect.create_connect_args(without_pooler(url))  # type: ignore[no-untyped-call]
    hosts, ports = options.get("host"), options.get("port", _DEFAULT_PORT)
    if isinstance(hosts, list):
        return [(str(host), int(port)) for host, port in zip(hosts, ports, strict=True)]
    if isinstance(hosts, str) and "," in hosts:  # ?host=h1,h2&port=p1,p2: asyncpg splits it
        names = hosts.split(",")
        numbers = str(ports).split(",")
        if len(numbers) == 1:
            numbers *= len(names)
        return [(name, int(number)) for name, number in zip(names, numbers, strict=True)]
    return [(str(hosts or "localhost"), int(ports))]


def unique_statement_name() -> str:
    """A prepared statement's name no other client of a PgBouncer server connection uses."""
    return f"__sessionstore_{uuid.uuid4().hex}__"
