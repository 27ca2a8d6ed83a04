"""The database schema: SQLAlchemy Core tables, the single source of truth.

Alembic migrations must produce exactly these tables (a test runs autogenerate
against a migrated database and expects no difference). The layout is plain on
purpose so analysts can query history with SQL: a JSON payload per row plus
typed columns (role, item type, tool name, call id, tokens).
"""

from __future__ import annotations

import re
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Dialect

metadata: Final = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
    }
)


class JSONText(sa.TypeDecorator[Any]):
    """A JSON column whose values travel as already-serialized text.

    The store serializes each item once (it has to, to validate it); letting
    SQLAlchemy serialize again would double the cost of every append. Reads
    return text on SQLite and the driver-decoded value on PostgreSQL, which the
    store normalizes.
    """

    impl = sa.JSON
    cache_ok = True

    def bind_processor(self, dialect: Dialect) -> None:
        return None

    def result_processor(self, dialect: Dialect, coltype: object) -> None:
        return None


def _created_at() -> sa.Column[Any]:
    return sa.Column(
        "created_at",
        sa.DateTime(timezone=True),
        nullable=False,
        server_default=sa.func.current_timestamp(),
    )


# Row kinds in `messages`. Only these are visible in the active context.
KIND_ITEM: Final = "item"  # an item as the application appended it
KIND_CARRY: Final = "carry"  # a copy of an earlier item carried past a compaction
KIND_SUMMARY: Final = "summary"  # the compaction summary, the <COMPACT-SUMMARY vN> marker
KIND_TOMBSTONE: Final = "tombstone"  # pop_item: hides the row named by ref_seq
KIND_CLEAR: Final = "clear"  # clear_session: the active context restarts after it
VISIBLE_KINDS: Final = frozenset({KIND_ITEM, KIND_CARRY, KIND_SUMMARY})
ROW_KINDS: Final = (KIND_ITEM, KIND_CARRY, KIND_SUMMARY, KIND_TOMBSTONE, KIND_CLEAR)

# The one spelling of the summary marker: `<COMPACT-SUMMARY vN>` opens every summary row's
# text. Models and people recognise a summary by it, the extractive summarizer strips it from
# the prior summary, the CLI and demo name it. Change it here and nowhere else.
SUMMARY_PREFIX: Final = "<COMPACT-SUMMARY v{version}>"
SUMMARY_START: Final = SUMMARY_PREFIX.split("{", 1)[0]  # "<COMPACT-SUMMARY v"
SUMMARY_LINE: Final = re.compile(r"^\s*" + re.escape(SUMMARY_START) + r"(\d+)>\s*")


def marker_line(version: int) -> str:
    """`<COMPACT-SUMMARY v{version}>`."""
    return SUMMARY_PREFIX.format(version=version)


def summary_marker(version: int, text: str) -> str:
    """The text of a summary row: the marker line, then the summary."""
    return f"{marker_line(version)}\n{text}"


sessions: Final = sa.Table(
    "sessions",
    metadata,
    sa.Column("session_id", sa.Text, primary_key=True),
    _created_at(),
    sa.Column(
        "updated_at",
        sa.DateTime(timezone=True),
        nullable=False,
        server_default=sa.func.current_timestamp(),
    ),
    # Highest seq written; the next append takes last_seq + 1 (gapless).
    sa.Column("last_seq", sa.BigInteger, nullable=False, server_default="0"),
    # First seq of the active context: rows before it are history only.
    sa.Column("context_start_seq", sa.BigInteger, nullable=False, server_default="1"),
    # Running token total of the active context, so pre-flight checks are O(1).
    sa.Column("context_tokens", sa.BigInteger, nullable=False, server_default="0"),
    # Visible items in the active context (what load_context returns).
    sa.Column("context_items", sa.Integer, nullable=False, server_default="0"),
    sa.Column("compaction_count", sa.Integer, nullable=False, server_default="0"),
    # Which estimator counted `tokens` on this session's rows (e.g. tiktoken/o200k_base).
    sa.Column("token_encoding", sa.Text, nullable=True),
    sa.Column("metadata", sa.JSON, nullable=True),
    # Payload encryption at rest (0003): the session's data key, wrapped by a keyring KEK.
    sa.Column("payload_kek_id", sa.Text, nullable=True),
    sa.Column("payload_wrapped_key", sa.LargeBinary, nullable=True),
    # The first seq sealed under that key (0009): a plain row from there on is refused.
    sa.Column("sealed_from_seq", sa.BigInteger, nullable=True),
    # The history's hash chain (0009): the newest row's digest, the first chained seq, and
    # the chain's HMAC key wrapped by a keyring KEK (NULL: unkeyed, no keyring at the start).
    sa.Column("chain_head", sa.LargeBinary, nullable=True),
    sa.Column("chain_start_seq", sa.BigInteger, nullable=True),
    sa.Column("chain_kek_id", sa.Text, nullable=True),
    sa.Column("chain_wrapped_key", sa.LargeBinary, nullable=True),
    # A branch (0013) names the session it was forked from and the parent's seq it forked
    # at; its own rows continue the parent's numbering from fork_seq + 1, and until its
    # first clear, compaction or rewind its context starts with the parent's as of fork_seq.
    sa.Column("parent_session_id", sa.Text, nullable=True, index=True),
    sa.Column("fork_seq", sa.BigInteger, nullable=True),
    # Where the parent's context started at fork_seq: the shared rows are parent seqs
    # parent_context_start_seq..fork_seq (a range scan, no history walk on each load).
    sa.Column("parent_context_start_seq", sa.BigInteger, nullable=True),
    sa.CheckConstraint("last_seq >= 0", name="last_seq_nonnegative"),
    sa.CheckConstraint("context_tokens >= 0", name="context_tokens_nonnegative"),
)

messages: Final = sa.Table(
    "messages",
    metadata,
    sa.Column(
        "session_id",
        sa.Text,
        sa.ForeignKey("sessions.session_id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("role", sa.String(32), nullable=True),
    sa.Column("item_type", sa.String(64), nullable=True),
    sa.Column("tool_name", sa.Text, nullable=True),
    sa.Column("call_id", sa.Text, nullable=True),
    sa.Column("tokens", sa.Integer, nullable=False, server_default="0"),
    sa.Column("protected", sa.Boolean, nullable=False, server_default=sa.false()),
    # carry: the original row; tombstone: the row it hides.
    sa.Column("ref_seq", sa.BigInteger, nullable=True),
    sa.Column("compaction_id", sa.BigInteger, nullable=True),
    # Set when the stored payload is a truncated copy; the archive holds the original.
    sa.Column("archive_id", sa.BigInteger, nullable=True),
    # NULL for tombstones/clear markers, and after retention purges compacted plaintext.
    sa.Column("payload", JSONText, nullable=True),
    # With payload encryption (0002): nonce + AES-GCM ciphertext of the JSON; payload is NULL.
    sa.Column("payload_sealed", sa.LargeBinary, nullable=True),
    _created_at(),
    # The append batch's idempotency token (0005), on its first row only: a retry of a batch
    # whose outcome was unknown finds it here and stores nothing twice.
    sa.Column("append_token", sa.Text, nullable=True),
    # The hash chain (0009): SHA-256 of the payload as stored (kept when it is purged), and
    # the row's HMAC over the previous digest and its columns. NULL on rows that predate it.
    sa.Column("payload_digest", sa.LargeBinary, nullable=True),
    sa.Column("digest", sa.LargeBinary, nullable=True),
    # The agent that produced the item in a multi-agent run (0015); NULL when not known.
    sa.Column("agent", sa.Text, nullable=True),
    # Equalities, not IN: SQLite evaluated the IN list at a quarter of an insert's cost (0019).
    sa.CheckConstraint(" OR ".join(f"kind = '{kind}'" for kind in ROW_KINDS), name="kind_known"),
    sa.CheckConstraint("seq > 0", name="seq_positive"),
    sqlite_with_rowid=False,
)

compactions: Final = sa.Table(
    "compactions",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
    sa.Column(
        "session_id",
        sa.Text,
        sa.ForeignKey("sessions.session_id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("version", sa.Integer, nullable=False),  # the N of <COMPACT-SUMMARY vN>
    sa.Column("trigger", sa.String(32), nullable=False),  # threshold|manual|preflight|overflow
    sa.Column("strategy", sa.String(64), nullable=True),
    sa.Column("status", sa.String(32), nullable=False),  # summarized|pruned_only
    sa.Column("fallback", sa.String(64), nullable=True),
    sa.Column("note", sa.Text, nullable=True),
    sa.Column("model", sa.Text, nullable=True),
    sa.Column("summarizer", sa.Text, nullable=True),
    sa.Column("covered_from_seq", sa.BigInteger, nullable=False),
    sa.Column("covered_to_seq", sa.BigInteger, nullable=False),
    sa.Column("context_start_seq", sa.BigInteger, nullable=False),
    sa.Column("summary_seq", sa.BigInteger, nullable=True),
    sa.Column("kept", sa.JSON, nullable=False),  # original seqs kept, by layer
    sa.Column("tokens_before", sa.Integer, nullable=False),
    sa.Column("tokens_after", sa.Integer, nullable=False),
    sa.Column("summary_tokens", sa.Integer, nullable=True),
    sa.Column("duration_ms", sa.Float, nullable=True),
    _created_at(),
    # A provider's opaque compaction item (0016): the provider that made it, bound to `model`.
    sa.Column("provider", sa.Text, nullable=True),
    sa.UniqueConstraint("session_id", "version"),
)

archives: Final = sa.Table(
    "archives",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
    # No foreign key: an archive may outlive its session (retention can keep it).
    sa.Column("session_id", sa.Text, nullable=False),
    sa.Column(
        "compaction_id",
        sa.BigInteger,
        sa.ForeignKey("compactions.id", ondelete="SET NULL"),
        nullable=True,
    ),
    # The compaction the ciphertext is bound to ("none" or its id), as sealed (0006). Unlike
    # compaction_id it never changes: deleting the compaction (retention) must not orphan it.
    sa.Column("bound_compaction", sa.Text, nullable=True),
    sa.Column("reason", sa.String(32), nullable=False),  # compaction|truncation
    sa.Column("from_seq", sa.BigInteger, nullable=False),
    sa.Column("to_seq", sa.BigInteger, nullable=False),
    sa.Column("item_count", sa.Integer, nullable=False),
    # 0 = plain (compressed JSON lines); 1+ = envelope-encrypted formats.
    sa.Column("format_version", sa.Integer, nullable=False),
    sa.Column("compression", sa.String(16), nullable=False),
    sa.Column("kek_id", sa.Text, nullable=True),
    sa.Column("wrapped_key", sa.LargeBinary, nullable=True),
    sa.Column("nonce", sa.LargeBinary, nullable=True),
    sa.Column("body", sa.LargeBinary, nullable=False),
    sa.Column("content_sha256", sa.String(64), nullable=False),
    _created_at(),
    # Stamped by a trigger when the session row is deleted (0008): a reused id never
    # inherits the archives of the session that had it before.
    sa.Column("session_deleted_at", sa.DateTime(timezone=True), nullable=True),
    sa.Index(None, "session_id", "from_seq"),
    sa.Index(None, "kek_id"),
    sa.Index(None, "created_at"),
)

events: Final = sa.Table(
    "events",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
    sa.Column(
        "ts",
        sa.DateTime(timezone=True),
        nullable=False,
        server_default=sa.func.current_timestamp(),
    ),
    # No foreign key: the audit trail outlives the session it describes.
    sa.Column("session_id", sa.Text, nullable=True),
    sa.Column("event", sa.String(64), nullable=False),
    sa.Column("severity", sa.String(16), nullable=False, server_default="info"),
    sa.Column("compaction_id", sa.BigInteger, nullable=True),
    sa.Column("model", sa.Text, nullable=True),
    sa.Column("t_est", sa.Integer, nullable=True),
    sa.Column("max_tokens", sa.Integer, nullable=True),
    sa.Column("triggered", sa.Boolean, nullable=True),
    sa.Column("pruned_count", sa.Integer, nullable=True),
    sa.Column("summary_tokens", sa.Integer, nullable=True),
    sa.Column("compression_ratio", sa.Float, nullable=True),
    sa.Column("error_type", sa.String(64), nullable=True),
    sa.Column("fallback", sa.String(64), nullable=True),
    sa.Column("payload", sa.JSON, nullable=False),  # every field of the event
    sa.Index(None, "session_id", "id"),
    sa.Index(None, "event", "ts"),
    sa.Index(None, "ts"),
)

# One row per model call an adapter saw (0012): what was sent (the stored rows' seq range, how
# many unsaved items followed, a token estimate and a SHA-256 of the input) and, once the
# response came back, its usage and cost. `call` numbers a session's calls 1, 2, 3...
model_calls: Final = sa.Table(
    "model_calls",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
    # No foreign key: usage and cost outlive the session, like events.
    sa.Column("session_id", sa.Text, nullable=False),
    sa.Column("call", sa.Integer, nullable=False),
    _created_at(),
    sa.Column("model", sa.Text, nullable=True),
    sa.Column("context_from_seq", sa.BigInteger, nullable=True),
    sa.Column("context_to_seq", sa.BigInteger, nullable=True),
    sa.Column("unsaved_items", sa.Integer, nullable=True),
    sa.Column("input_items", sa.Integer, nullable=True),
    sa.Column("input_tokens_est", sa.Integer, nullable=True),
    sa.Column("input_sha256", sa.String(64), nullable=True),
    sa.Column("input_tokens", sa.Integer, nullable=True),
    sa.Column("cached_tokens", sa.Integer, nullable=True),
    sa.Column("output_tokens", sa.Integer, nullable=True),
    sa.Column("reasoning_tokens", sa.Integer, nullable=True),
    sa.Column("cost_usd", sa.Float, nullable=True),
    sa.UniqueConstraint("session_id", "call"),
    sa.Index(None, "created_at"),
)

# ------------------------------------------------------------ retention (0002)

# Exactly which rows an archive holds, as runs of consecutive seqs (0018; one row per archived
# row before it), so retention can purge a row's plaintext only once a copy of it is archived
# (an archive's seq range may span kept rows). A run goes with its session: a deleted
# session's id can be reused without its stale runs blocking (or, worse, purging) the new
# session's rows. Runs, not rows: a 10,000-row compaction writes one or a few rows here, where
# 10,000 member rows, each checked against `messages` and `archives`, took 90 ms on
# PostgreSQL.
archive_ranges: Final = sa.Table(
    "archive_ranges",
    metadata,
    sa.Column(
        "session_id",
        sa.Text,
        sa.ForeignKey("sessions.session_id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("first_seq", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("last_seq", sa.BigInteger, nullable=False),
    sa.Column(
        "archive_id",
        sa.BigInteger,
        sa.ForeignKey("archives.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.CheckConstraint("first_seq <= last_seq", name="first_before_last"),
    sa.Index(None, "archive_id"),
)


def archived_to(session_id: Any, up_to: Any = None) -> sa.ScalarSelect[Any]:
    """Where a session's archived seqs end (NULL: none archived), or, with `up_to`, the end
    of the one run that can hold seq `up_to`: runs never overlap, so it is the run starting
    last (at or before `up_to`), one index seek on the primary key."""
    found = sa.select(archive_ranges.c.last_seq).where(archive_ranges.c.session_id == session_id)
    if up_to is not None:
        found = found.where(archive_ranges.c.first_seq <= up_to)
    return found.order_by(archive_ranges.c.first_seq.desc()).limit(1).scalar_subquery()


# Background compaction (0017): one row per session while a summarizer prepares its next
# compaction off the request path, then holding the prepared result until a compaction at
# the trigger commits or discards it. The row is the lease: a second process (or store) never
# prepares the same session while it is held and unexpired; an expired one is taken over.
compaction_leases: Final = sa.Table(
    "compaction_leases",
    metadata,
    sa.Column("session_id", sa.Text, primary_key=True),
    sa.Column("holder", sa.Text, nullable=False),  # who prepares: host, process, random
    sa.Column("acquired_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    # The session's context start when the lease was taken: a compaction, clear or rewind
    # since then moves it, and a result prepared for the old context is discarded.
    sa.Column("context_start_seq", sa.BigInteger, nullable=False),
    # NULL while preparing. Then: SHA-256 of the rows summarized (the prefix that must still
    # be there, unchanged, at the trigger) and the prepared compaction itself (JSON).
    sa.Column("prefix_sha256", sa.String(64), nullable=True),
    sa.Column("prepared", sa.JSON(none_as_null=True), nullable=True),
    sa.Column("prepared_at", sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(["session_id"], ["sessions.session_id"], ondelete="CASCADE"),
)

RETENTION_ACTIONS: Final = (
    "purge_compacted_plaintext",
    "delete_idle_sessions",
    "delete_archives",
    "delete_events",
)

retention_policies: Final = sa.Table(
    "retention_policies",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("action", sa.String(32), nullable=False),
    sa.Column("older_than_days", sa.Integer, nullable=False),
    # delete_idle_sessions only: keep the sessions' archives (they outlive the session).
    sa.Column("keep_archives", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.true()),
    _created_at(),
    sa.CheckConstraint(f"action IN {RETENTION_ACTIONS!r}", name="action_known"),
    sa.CheckConstraint("older_than_days > 0", name="days_positive"),
)

# PostgreSQL: the roles, besides members of the schema's owner, that may enter maintenance
# (the append-only trigger reads it; migration 0020). Readable by all, written by the owner.
# SQLite has no roles: the table is there, so both backends keep one schema, and unused.
maintenance_roles: Final = sa.Table(
    "maintenance_roles",
    metadata,
    sa.Column("role_name", sa.Text, primary_key=True),
)

# Retention finds old rows by age. Idle sessions are found by scanning `sessions`: an index
# on updated_at, which every append moves, would tax every append (migration 0004).
sa.Index("ix_messages_created_at", messages.c.created_at)
sa.Index(
    "ux_messages_append_token",
    messages.c.session_id,
    messages.c.append_token,
    unique=True,
    sqlite_where=messages.c.append_token.is_not(None),
    postgresql_where=messages.c.append_token.is_not(None),
)

# Clear and rewind markers by session (0013): where a context started at any point of a long
# history is found without walking it (time travel, forks). Only marker rows are indexed.
sa.Index(
    "ix_messages_clears",
    messages.c.session_id,
    messages.c.seq,
    sqlite_where=messages.c.kind == KIND_CLEAR,
    postgresql_where=messages.c.kind == KIND_CLEAR,
)

# Views over the tables (migrations 0011 and 0013), documented and queryable like them.
VIEWS: Final = ("turns", "session_usage")


def is_search_index(name: str | None) -> bool:
    """Whether a database object belongs to the full-text index of migration 0010 (FTS5
    tables and their shadow tables on SQLite, a GIN index on PostgreSQL): derived data the
    migration maintains, not part of the documented tables above."""
    return name is not None and name.startswith(("message_search", "ix_messages_search"))
