"""Archive builders shared by the archive tests: a compacted session, its raw archive row,
a client of the moto server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import boto3
import sqlalchemy as sa
from botocore.config import Config

from sessionstore import SessionStore
from sessionstore._schema import archives
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from tests.support.histories import coding_session

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

# Dummy credentials for the local moto server only; real code injects a configured client.
CLIENT_OPTIONS: dict[str, Any] = {
    "region_name": "us-east-1",
    "aws_access_key_id": "testing-access-key",
    "aws_secret_access_key": "testing-secret-key",
    "config": Config(retries={"max_attempts": 1}, connect_timeout=2, read_timeout=5),
}


def s3_client(endpoint: str) -> S3Client:
    """A real boto3 S3 client of the moto server at `endpoint`."""
    return boto3.client("s3", endpoint_url=endpoint, **CLIENT_OPTIONS)


async def compacted(store: SessionStore, session_id: str, seed: int = 0) -> list[dict[str, Any]]:
    """Compact a session; return the replaced items (what the archive must hold)."""
    manager = CompactionManager(
        CompactionConfig(
            max_context_tokens=100_000, store=store, policy=CompactionPolicy(keep_recent_turns=2)
        )
    )
    await manager.append(session_id, coding_session(10, seed=seed))
    outcome = await manager.compact(session_id)
    assert outcome.plan is not None
    return [row.item for row in outcome.plan.replaced_rows if row.item is not None]


async def update_archive(store: SessionStore, archive_id: int, **values: Any) -> None:
    async with store.engine.begin() as conn:
        await conn.execute(archives.update().where(archives.c.id == archive_id).values(**values))


async def raw_archive(store: SessionStore, session_id: str) -> dict[str, Any]:
    async with store.engine.connect() as conn:
        row = (
            await conn.execute(sa.select(archives).where(archives.c.session_id == session_id))
        ).one()
    return dict(row._mapping)
