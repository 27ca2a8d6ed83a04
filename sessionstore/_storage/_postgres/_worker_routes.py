"""Citus: a session's appends sent straight to the worker that holds its shard.

Through the coordinator an append crosses two servers: the coordinator plans the call of
`sessionstore_append()` and forwards it to the session's worker. Citus 11+ syncs its
metadata to the workers, and a worker runs the same call for a session whose shard it holds
locally, so the store asks the coordinator once per session which worker that is and sends
the session's appends there (1.7-1.8x a single node's append through the coordinator,
about 1.1-1.3x sent to the worker; docs/DEPLOYMENT.md).

The coordinator stays the answer whenever the worker is not a sure thing: a worker without
synced metadata, a multi-host or PgBouncer URL, or a worker this process could not connect
to (for a minute, then it tries again). A shard the rebalancer moved still works (the worker
forwards the call, as the coordinator would) until the session's route is looked up again
(a new process, or after KNOWN_SESSIONS sessions).
"""

from __future__ import annotations

import time
from typing import Final

from sqlalchemy.engine import URL

from .._known_totals import KNOWN_SESSIONS
from ._url import asyncpg_dsn

Node = tuple[str, int]  # a worker's host and port, as Citus registered it

# The primary placement of the session's shard, on a worker that can run the call itself.
PLACEMENT_SQL: Final = """
SELECT n.nodename, n.nodeport
FROM pg_dist_placement p JOIN pg_dist_node n ON n.groupid = p.groupid
WHERE p.shardid = get_shard_id_for_distribution_column('sessions', $1::text)
  AND n.isactive AND n.noderole = 'primary' AND n.hasmetadata AND n.metadatasynced
  AND n.groupid <> 0
LIMIT 1
"""
RETRY_UNREACHABLE_S: Final = 60.0


class WorkerRoutes:
    """Where this process sends each session's appends: a worker, or None (the coordinator)."""

    def __init__(self, url: URL) -> None:
        self._url = url
        self._nodes: dict[str, Node | None] = {}
        self._unreachable_until: dict[Node, float] = {}
        self._dsns: dict[Node, str] = {}

    @staticmethod
    def possible(url: URL, pooled: bool) -> bool:
        """A single-host URL reached directly: a worker is then reached the same way."""
        return not pooled and "host" not in url.query

    def known(self, session_id: str) -> bool:
        return session_id in self._nodes

    def remember(self, session_id: str, node: Node | None) -> None:
        if len(self._nodes) >= KNOWN_SESSIONS:
            self._nodes.clear()
        self._nodes[session_id] = node

    def node(self, session_id: str) -> Node | None:
        """The session's worker, unless it is unknown or could not be reached lately."""
        node = self._nodes.get(session_id)
        if node is None or self._unreachable_until.get(node, 0.0) > time.monotonic():
            return None
        return node

    def unreachable(self, node: Node) -> None:
        """No connection to `node` could be opened: use the coordinator for a while."""
        self._unreachable_until[node] = time.monotonic() + RETRY_UNREACHABLE_S

    def dsn(self, node: Node) -> str:
        """The store's DSN (user, password, database, TLS) with the worker's host and port,
        made once per worker: every routed append asks for it."""
        made = self._dsns.get(node)
        if made is None:
            host, port = node
            made = self._dsns[node] = asyncpg_dsn(self._url.set(host=host, port=port))
        return made
