"""A tamper-evident history: per-row digests, a chain head per session, a sealed-from boundary.

`messages.payload_digest` and `messages.digest` hold each new row's link in its session's
hash chain (sessionstore/_chain.py); `sessions.chain_head`, `chain_start_seq` and the
wrapped chain key say where it stands. Rows written before this migration stay unchained
(they carry no digest; `sessionstore verify` reports them as such): their digests cannot be
made up now without vouching for content nobody checked. Existing sessions get their chain
start (last_seq + 1) now, so only these rows can ever pass as older than the chain.

`sessions.sealed_from_seq` is the first seq sealed under the session's payload key: from it
on, a plain row is a downgrade and is refused. Existing encrypted sessions get the seq of
their first sealed row.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 11:45:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SESSION_COLUMNS = (
    ("sealed_from_seq", sa.BigInteger),
    ("chain_head", sa.LargeBinary),
    ("chain_start_seq", sa.BigInteger),
    ("chain_kek_id", sa.Text),
    ("chain_wrapped_key", sa.LargeBinary),
)


def upgrade() -> None:
    for name, kind in _SESSION_COLUMNS:
        op.add_column("sessions", sa.Column(name, kind(), nullable=True))
    op.add_column("messages", sa.Column("payload_digest", sa.LargeBinary(), nullable=True))
    op.add_column("messages", sa.Column("digest", sa.LargeBinary(), nullable=True))
    # Where each existing session's chain will start: rows below it predate the chain. Every
    # session has one from now on, so a session with rows and none was stripped.
    op.execute("UPDATE sessions SET chain_start_seq = last_seq + 1")
    op.execute(
        "UPDATE sessions SET sealed_from_seq = COALESCE("
        "(SELECT min(m.seq) FROM messages m WHERE m.session_id = sessions.session_id "
        "AND m.payload_sealed IS NOT NULL), last_seq + 1) "
        "WHERE payload_wrapped_key IS NOT NULL"
    )


def downgrade() -> None:
    op.drop_column("messages", "digest")
    op.drop_column("messages", "payload_digest")
    for name, _kind in reversed(_SESSION_COLUMNS):
        op.drop_column("sessions", name)
