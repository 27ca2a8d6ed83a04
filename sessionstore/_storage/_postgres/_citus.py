"""Citus: every session's rows on one worker, sharded by `session_id`.

On a Citus coordinator (the `citus` extension installed in the database) the schema the
migrations build is distributed in the same transaction that creates it (`sessionstore
migrate`, or a store with `create_tables=True` on a new database); an existing single-node
database is distributed by `sessionstore migrate --distribute`. Plain PostgreSQL and SQLite
keep their schema: what Citus needs differently is done here, once, when the tables are
distributed:

* the keys of the per-session tables gain `session_id` (`compactions`, `archives`,
  `model_calls` become `(session_id, id)`; `archive_ranges` references `archives` by
  `(session_id, archive_id)`), and `archives` no longer references `compactions` by a foreign
  key (Citus refuses its ON DELETE SET NULL): the trigger that stamps a deleted session's
  archives clears their `compaction_id` instead;
* `sessions`, `messages`, `compactions`, `archives`, `archive_ranges`, `compaction_leases`
  and `model_calls` are distributed by `session_id`, colocated with `sessions`: one session's
  rows share one shard group, so every per-session statement is routed to one worker;
* `retention_policies` and `maintenance_roles` become reference tables (a copy on every
  node, read by the retention function and the append-only trigger on the workers);
* `events` stays on the coordinator: a store-level event (a retention run) names no session;
* appends go through `sessionstore_append()`, a function distributed by its session id, so
  the whole append (advance the session row, insert the batch) runs on the session's worker
  in one round trip (the one-statement append of plain PostgreSQL is an INSERT ... SELECT
  that Citus pulls through the coordinator: 8x slower);
* `sessionstore_apply_retention()` reads the branch parents first (the check joined
  `sessions` to itself across shards) and sets its maintenance flag with SET LOCAL, which
  Citus forwards to the workers (`citus.propagate_set_commands = 'local'`), where the
  append-only trigger reads it.

The append-only and stamping triggers fire on the workers, per row and within one session's
shard group: safe, so they are allowed with `citus.enable_unsafe_triggers`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

from sqlalchemy.engine import Connection

from ..._schema import KIND_ITEM
from .._append_rows import HOT_COLUMNS

# Distributed by session_id, colocated with `sessions`, in the order their foreign keys need.
DISTRIBUTED: Final = (
    "sessions",
    "messages",
    "compactions",
    "archives",
    "archive_ranges",
    "compaction_leases",
    "model_calls",
)
REFERENCE: Final = ("retention_policies", "maintenance_roles")
# Stays a plain table on the coordinator (see the module's docstring).
COORDINATOR_ONLY: Final = ("events",)

_HAS_CITUS: Final = "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus')"
_DISTRIBUTED_SQL: Final = (
    "SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'messages'::regclass)"
)

_KEYS: Final = (
    "ALTER TABLE archive_ranges DROP CONSTRAINT fk_archive_ranges_archive_id_archives",
    "ALTER TABLE archives DROP CONSTRAINT fk_archives_compaction_id_compactions",
    "ALTER TABLE compactions DROP CONSTRAINT pk_compactions, "
    "ADD CONSTRAINT pk_compactions PRIMARY KEY (session_id, id)",
    "ALTER TABLE archives DROP CONSTRAINT pk_archives, "
    "ADD CONSTRAINT pk_archives PRIMARY KEY (session_id, id)",
    "ALTER TABLE model_calls DROP CONSTRAINT pk_model_calls, "
    "ADD CONSTRAINT pk_model_calls PRIMARY KEY (session_id, id)",
    "ALTER TABLE archive_ranges ADD CONSTRAINT fk_archive_ranges_archive_id_archives "
    "FOREIGN KEY (session_id, archive_id) REFERENCES archives (session_id, id) ON DELETE CASCADE",
)

# A deleted session's archives outlive it (migration 0008): stamped, and (what ON DELETE SET
# NULL did on one node) no longer naming a compaction, which went with the session.
_STAMP_ARCHIVES: Final = """
CREATE OR REPLACE FUNCTION sessionstore_stamp_archives() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE archives SET session_deleted_at = CURRENT_TIMESTAMP, compaction_id = NULL
            WHERE session_id = OLD.session_id AND session_deleted_at IS NULL;
            RETURN OLD;
        END $$
"""

# The append-only trigger of migration 0020, asking `maintenance_roles` (a reference table on
# Citus) alone: joined to pg_roles, Citus plans the view's own pg_authid, which a role that
# is neither superuser nor owner may not read, so a listed role was refused on the workers.
_APPEND_ONLY_FUNCTION: Final = """
CREATE OR REPLACE FUNCTION sessionstore_messages_append_only() RETURNS trigger
        LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
        DECLARE listed boolean;
        BEGIN
            IF coalesce(pg_catalog.current_setting('sessionstore.maintenance', true), '') = 'on'
            THEN
                EXECUTE pg_catalog.format(
                    'SELECT EXISTS (SELECT 1 FROM %I.maintenance_roles AS m WHERE CASE '
                    'WHEN pg_catalog.to_regrole(pg_catalog.quote_ident(m.role_name)) IS NULL '
                    'THEN false ELSE pg_catalog.pg_has_role(current_user, '
                    'pg_catalog.to_regrole(pg_catalog.quote_ident(m.role_name)), ''MEMBER'') '
                    'END)',
                    TG_TABLE_SCHEMA) INTO listed;
                IF NOT (listed OR pg_catalog.pg_has_role(current_user,
                        (SELECT c.relowner FROM pg_catalog.pg_class AS c WHERE c.oid = TG_RELID),
                        'MEMBER')) THEN
                    RAISE EXCEPTION 'messages are append-only: maintenance refused for role %, which neither owns the schema nor is listed in maintenance_roles (see docs/SECURITY.md)', current_user
                        USING ERRCODE = 'insufficient_privilege';
                END IF;
                RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
            END IF;
            RAISE EXCEPTION 'messages are append-only: % refused (only retention, deleting a session and migrations change rows; see docs/SECURITY.md)', TG_OP USING ERRCODE = 'insufficient_privilege';
        END $$
"""  # noqa: E501 (the messages of migration 0020, word for word)

# The append of _append_rows.PG_APPEND_SQL (same arguments, same optimistic check), as a
# function Citus runs on the session's worker: one INSERT per row, each routed to the local
# shard (an INSERT ... SELECT from unnest() would be planned through the coordinator again).
APPEND_SIGNATURE: Final = (
    "sessionstore_append(text, bigint, bigint, text, text[], text[], text[], text[], integer[], "
    "boolean[], text[], text, bigint, bytea, bytea, bigint, text, bytea, bytea[], bytea[], "
    "bytea[], text)"
)
# Row i's value of each column an append writes, by name: the INSERT below is generated
# from HOT_COLUMNS, as the plain PostgreSQL statement's is (a KeyError names a new column).
_ROW_VALUES: Final = {
    "session_id": "p_sid",
    "seq": "advanced - p_count + i",
    "kind": f"'{KIND_ITEM}'",
    "role": "p_roles[i]",
    "item_type": "p_item_types[i]",
    "tool_name": "p_tool_names[i]",
    "call_id": "p_call_ids[i]",
    "tokens": "p_counts[i]",
    "protected": "p_protected[i]",
    "payload": "p_payloads[i]::json",
    "payload_sealed": "p_sealed[i]",
    "append_token": "CASE WHEN i = 1 THEN p_token END",
    "payload_digest": "p_bodies[i]",
    "digest": "p_digests[i]",
    "agent": "p_agent",
}
_APPEND_FUNCTION: Final = (
    """
CREATE OR REPLACE FUNCTION sessionstore_append(
    p_sid text, p_count bigint, p_tokens bigint, p_encoding text,
    p_roles text[], p_item_types text[], p_tool_names text[], p_call_ids text[],
    p_counts integer[], p_protected boolean[], p_payloads text[], p_token text,
    p_expected bigint, p_head bytea, p_new_head bytea, p_chain_start bigint,
    p_chain_kek text, p_chain_key bytea, p_sealed bytea[], p_bodies bytea[],
    p_digests bytea[], p_agent text
) RETURNS SETOF bigint LANGUAGE plpgsql AS $$
DECLARE
    advanced bigint;
BEGIN
    UPDATE sessions SET
        last_seq = last_seq + p_count,
        context_items = context_items + p_count::int,
        context_tokens = context_tokens + p_tokens,
        updated_at = CURRENT_TIMESTAMP,
        chain_head = p_new_head,
        chain_start_seq = coalesce(chain_start_seq, p_chain_start),
        chain_kek_id = coalesce(chain_kek_id, p_chain_kek),
        chain_wrapped_key = coalesce(chain_wrapped_key, p_chain_key)
    WHERE session_id = p_sid AND last_seq = p_expected
      AND chain_head IS NOT DISTINCT FROM p_head
    RETURNING last_seq INTO advanced;
    IF advanced IS NULL THEN
        IF p_expected <> 0 THEN
            RETURN;  -- the session moved: the caller reads it again
        END IF;
        INSERT INTO sessions (session_id, last_seq, context_items, context_tokens,
                              token_encoding, chain_head, chain_start_seq, chain_kek_id,
                              chain_wrapped_key)
        VALUES (p_sid, p_count, p_count::int, p_tokens, p_encoding, p_new_head, p_chain_start,
                p_chain_kek, p_chain_key)
        ON CONFLICT (session_id) DO NOTHING
        RETURNING last_seq INTO advanced;
        IF advanced IS NULL THEN
            RETURN;
        END IF;
    END IF;
    FOR i IN 1 .. p_count LOOP
        INSERT INTO messages ("""
    + ", ".join(HOT_COLUMNS)
    + """)
        VALUES ("""
    + ", ".join(_ROW_VALUES[name] for name in HOT_COLUMNS)
    + """);
        RETURN NEXT advanced - p_count + i;
    END LOOP;
END $$
"""
)
APPEND_SQL: Final = (
    "SELECT * FROM sessionstore_append(" + ", ".join(f"${n}" for n in range(1, 23)) + ")"
)

# sessionstore_apply_retention() of migration 0018, with the branch check read first (the
# parents and how far their branches share them, one aggregate) instead of joined per row,
# and maintenance set with SET LOCAL, which reaches the workers.
_RETENTION_FUNCTION: Final = """
CREATE OR REPLACE FUNCTION sessionstore_apply_retention(
    dry_run boolean DEFAULT false,
    at timestamptz DEFAULT now()
) RETURNS TABLE (policy text, action text, affected bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    p record;
    n bigint;
    cutoff timestamptz;
    counts jsonb := '{}'::jsonb;
    shared jsonb;
    parents text[];
BEGIN
    SET LOCAL citus.propagate_set_commands = 'local';
    SET LOCAL sessionstore.maintenance = 'on';
    SELECT coalesce(jsonb_object_agg(b.parent, b.upto), '{}'::jsonb),
           coalesce(array_agg(b.parent), '{}'::text[])
    INTO shared, parents
    FROM (SELECT parent_session_id AS parent, max(fork_seq) AS upto FROM sessions
          WHERE parent_session_id IS NOT NULL GROUP BY parent_session_id) AS b;
    FOR p IN SELECT * FROM retention_policies WHERE enabled ORDER BY name LOOP
        cutoff := at - make_interval(days => p.older_than_days);
        IF p.action = 'purge_compacted_plaintext' THEN
            IF dry_run THEN
                SELECT count(*) INTO n FROM messages m
                WHERE EXISTS (SELECT 1 FROM archive_ranges ar WHERE ar.session_id = m.session_id
                              AND m.seq BETWEEN ar.first_seq AND ar.last_seq)
                  AND (m.payload IS NOT NULL OR m.payload_sealed IS NOT NULL)
                  AND m.created_at < cutoff
                  AND m.seq > coalesce((shared ->> m.session_id)::bigint, 0);
            ELSE
                UPDATE messages m SET payload = NULL, payload_sealed = NULL
                WHERE EXISTS (SELECT 1 FROM archive_ranges ar WHERE ar.session_id = m.session_id
                              AND m.seq BETWEEN ar.first_seq AND ar.last_seq)
                  AND (m.payload IS NOT NULL OR m.payload_sealed IS NOT NULL)
                  AND m.created_at < cutoff
                  AND m.seq > coalesce((shared ->> m.session_id)::bigint, 0);
                GET DIAGNOSTICS n = ROW_COUNT;
            END IF;
        ELSIF p.action = 'delete_idle_sessions' THEN
            IF dry_run THEN
                SELECT count(*) INTO n FROM sessions s
                WHERE s.updated_at < cutoff AND NOT (s.session_id = ANY (parents));
            ELSE
                IF NOT p.keep_archives THEN
                    DELETE FROM archives a USING sessions s
                    WHERE a.session_id = s.session_id AND s.updated_at < cutoff
                      AND NOT (s.session_id = ANY (parents));
                END IF;
                DELETE FROM sessions s
                WHERE s.updated_at < cutoff AND NOT (s.session_id = ANY (parents));
                GET DIAGNOSTICS n = ROW_COUNT;
            END IF;
        ELSIF p.action = 'delete_archives' THEN
            IF dry_run THEN
                SELECT count(*) INTO n FROM archives a WHERE a.created_at < cutoff;
            ELSE
                DELETE FROM archives a WHERE a.created_at < cutoff;
                GET DIAGNOSTICS n = ROW_COUNT;
            END IF;
        ELSIF p.action = 'delete_events' THEN
            IF dry_run THEN
                SELECT count(*) INTO n FROM events e WHERE e.ts < cutoff;
            ELSE
                DELETE FROM events e WHERE e.ts < cutoff;
                GET DIAGNOSTICS n = ROW_COUNT;
            END IF;
        END IF;
        counts := counts || jsonb_build_object(p.name, n);
        policy := p.name;
        action := p.action;
        affected := n;
        RETURN NEXT;
    END LOOP;
    INSERT INTO events (ts, session_id, event, severity, payload)
    VALUES (now(), NULL, 'retention.run', 'info', jsonb_build_object(
        'ts', now(), 'session_id', NULL, 'event', 'retention.run', 'severity', 'info',
        'source', 'sessionstore_apply_retention', 'dry_run', dry_run, 'counts', counts
    )::json);
END
$$
"""


def has_citus(connection: Connection) -> bool:
    """The database has the Citus extension (it is a coordinator, or a worker)."""
    if connection.dialect.name != "postgresql":
        return False
    return bool(connection.exec_driver_sql(_HAS_CITUS).scalar())


def is_distributed(connection: Connection) -> bool:
    """The sessionstore tables are distributed by Citus."""
    return has_citus(connection) and bool(connection.exec_driver_sql(_DISTRIBUTED_SQL).scalar())


def distribute(connection: Connection) -> bool:
    """Inside the caller's transaction, on a Citus coordinator whose schema is at head:
    distribute the tables (see the module's docstring); False when they already were (then
    only the Citus versions of the functions are installed again, as after an upgrade)."""
    run = connection.exec_driver_sql
    already = is_distributed(connection)
    run("SET LOCAL citus.enable_unsafe_triggers = on")
    run("SET LOCAL citus.propagate_set_commands = 'local'")
    run("SET LOCAL sessionstore.maintenance = 'on'")  # moving rows out of the local tables
    if not already:
        # Sequential: the foreign keys between the new shards and to the reference tables
        # are checked on one connection per worker (Citus' rule inside a transaction).
        run("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
        for statement in _KEYS:
            run(statement)
        for table in REFERENCE:
            run(f"SELECT create_reference_table('{table}')")
        run("SELECT create_distributed_table('sessions', 'session_id')")
        for table in DISTRIBUTED[1:]:
            colocated = f"'{table}', 'session_id', colocate_with => 'sessions'"
            run(f"SELECT create_distributed_table({colocated})")
        for table in (*REFERENCE, *DISTRIBUTED):
            run(f"SELECT truncate_local_data_after_distributing_table('{table}')")
    run(_STAMP_ARCHIVES)
    run(_APPEND_ONLY_FUNCTION)
    run(_RETENTION_FUNCTION)
    run(
        "ALTER FUNCTION sessionstore_apply_retention(boolean, timestamp with time zone) "
        "SET sessionstore.maintenance = 'on'"
    )
    run(_APPEND_FUNCTION)
    run(
        f"SELECT create_distributed_function('{APPEND_SIGNATURE}', 'p_sid', "
        "colocate_with := 'sessions')"
    )
    return not already


# ------------------------------------------------------------------ reading a branch

# One session row's part of a lineage: its context start and last seq, its parent, and the
# parent's range it shares (the parent's context start at the fork, up to the fork).
LEVEL_SQL: Final = (
    "SELECT context_start_seq, last_seq, parent_session_id, parent_context_start_seq, fork_seq "
    "FROM sessions WHERE session_id = $1"
)
RANGE_SQL: Final = (
    "SELECT seq, kind, ref_seq, payload::text, payload_sealed FROM messages "
    "WHERE session_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq"
)
Fetch = Callable[..., Awaitable[Sequence[Any]]]


async def lineage_rows(fetch: Fetch, session_id: str) -> list[Any]:
    """What _append_rows.PG_LINEAGE_SQL reads (a branch's active rows, its ancestors' shared
    ones first), without its recursive join of `sessions` across shards: each level's session
    row is read on its own (routed to its worker), then each level's range of rows."""
    ranges: list[tuple[str, int, int]] = []
    sid: str | None = session_id
    first = last = 0
    level = 0
    while sid is not None:
        rows = await fetch(LEVEL_SQL, sid)
        if not rows:
            break
        start, end, parent, parent_start, fork = rows[0]
        if level == 0:
            first, last = int(start), int(end)
        ranges.append((sid, first, last))
        if parent is None or fork is None or first != int(fork) + 1:
            break
        sid, first, last = str(parent), int(parent_start), int(fork)
        level += 1
    found: list[Any] = []
    for owner, low, high in reversed(ranges):  # ancestors hold the lower seqs
        found.extend(await fetch(RANGE_SQL, owner, low, high))
    return found
