"""`sessionstore doctor`'s look at background compaction's leases (compaction_leases, 0017).

A lease whose holder died keeps its session from being prepared in the background until it
expires; nothing is lost (the trigger compacts in the foreground meanwhile), but a user
should see it. Holders are named `host:pid:random`: on this host a dead pid is certain.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._schema import compaction_leases
from .._times import as_utc


def lease_rows(conn: Connection) -> list[tuple[str, str, datetime]]:
    """(session_id, holder, expires_at) of every lease row."""
    table = compaction_leases
    rows = conn.execute(sa.select(table.c.session_id, table.c.holder, table.c.expires_at))
    return [(str(sid), str(holder), as_utc(expires)) for sid, holder, expires in rows]


def describe_leases(
    rows: Sequence[tuple[str, str, datetime]], now: datetime | None = None
) -> tuple[bool, str]:
    """(ok, detail): ok unless a live lease is held by a process of this host that is gone."""
    now = now or datetime.now(UTC)
    if not rows:
        return True, "none held"
    orphaned = [
        (sid, holder) for sid, holder, expires in rows if expires > now and _dead_here(holder)
    ]
    expired = sum(1 for _, _, expires in rows if expires <= now)
    detail = f"{len(rows)} held, {expired} expired (the next compaction takes those over)"
    if not orphaned:
        return True, detail
    named = ", ".join(repr(sid) for sid, _ in orphaned[:3]) + (" ..." if len(orphaned) > 3 else "")
    return False, (
        f"{detail}; {len(orphaned)} held by a process of this host that is gone ({named}): "
        "their sessions are compacted in the foreground until the lease expires; "
        "`sessionstore compact SESSION` releases one now"
    )


def _dead_here(holder: str) -> bool:
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False  # another host's process: its clock and lease say enough
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, someone else's
        return False
    return False
