"""A real PgBouncer (Debian's `pgbouncer`) in transaction pooling mode on a free 127.0.0.1
port, in front of a PostgreSQL server: what docs/DEPLOYMENT.md tells operators to run."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url

from tests.support.servers import free_port
from tests.support.system_services import (
    as_service_user,
    ensure_installed,
    service_dir,
    stop,
    wait_for_port,
)

# The settings docs/DEPLOYMENT.md recommends: transaction pooling; every server connection
# forgets the named statements a client prepared (SQLAlchemy's, uniquely named behind a
# pooler) when it goes back to the pool, so none pile up on a long-lived server connection.
CONFIG = """\
[databases]
* = host={host} port={port} user={user}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {listen}
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = {pool_size}
max_client_conn = 1000
server_reset_query = DEALLOCATE ALL
server_reset_query_always = 1
ignore_startup_parameters = extra_float_digits
logfile = {folder}/pgbouncer.log
pidfile = {folder}/pgbouncer.pid
"""


@dataclass
class Bouncer:
    port: int
    folder: Path

    def url_for(self, pg_url: str, mode: str | None = "transaction") -> str:
        """`pg_url` (a database on the server behind us) through this PgBouncer, with
        sessionstore's `?pgbouncer=` option (None: without it)."""
        url = make_url(pg_url).set(host="127.0.0.1", port=self.port)
        if mode is not None:
            url = url.update_query_dict({"pgbouncer": mode})
        return url.render_as_string(hide_password=False)

    def log(self) -> str:
        path = self.folder / "pgbouncer.log"
        return path.read_text(errors="replace") if path.exists() else ""


@contextmanager
def pgbouncer(pg_url: str, *, pool_size: int = 20) -> Iterator[Bouncer]:
    """PgBouncer with pool_mode=transaction in front of `pg_url`'s server, stopped after."""
    binary = ensure_installed("pgbouncer", ["pgbouncer"])
    target = make_url(pg_url)
    folder = service_dir("sessionstore-pgbouncer-")
    listen = free_port()
    config = folder / "pgbouncer.ini"
    config.write_text(
        CONFIG.format(
            host=target.host or "127.0.0.1",
            port=target.port or 5432,
            user=target.username or "postgres",
            listen=listen,
            pool_size=pool_size,
            folder=folder,
        )
    )
    process = subprocess.Popen(
        [binary, str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        **as_service_user(),
    )
    try:
        wait_for_port(listen, 15, process)
        yield Bouncer(listen, folder)
    finally:
        stop(process)
        shutil.rmtree(folder, ignore_errors=True)
