"""PostgreSQL: only the schema's owner, or a role it names, may enter maintenance.

Migration 0007's trigger let any transaction that set `sessionstore.maintenance` rewrite or
delete message rows, and any role can set a custom setting: a role with only UPDATE and
DELETE on `messages` ran `SET LOCAL sessionstore.maintenance = 'on'` and edited history.
The trigger now also asks whether the role in effect (`current_user`, so `SET ROLE` counts
and a session cannot pose as another) is a member of the role that owns `messages`, or of a
role listed in `maintenance_roles`, a table everyone may read and only its owner may write.
The function names every object with its schema and fixes its search_path, so a caller can
shadow neither the list nor a function it calls.

The retention function stays SECURITY INVOKER: run by a role that may not enter
maintenance, it is refused like any other statement. SQLite has no roles: whoever can write
the file can do anything (docs/SECURITY.md).

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27 16:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_REFUSAL = (
    "messages are append-only: {op} refused (only retention, deleting a session and "
    "migrations change rows; see docs/SECURITY.md)"
)
_OWNERS_ONLY = (
    "messages are append-only: maintenance refused for role %, which neither owns the "
    "schema nor is listed in maintenance_roles (see docs/SECURITY.md)"
)


def _function(check_role: bool) -> str:
    refusal = _REFUSAL.format(op="%")
    # Every name qualified and the search_path fixed: the function runs as the caller, who
    # could otherwise shadow a function or the list with objects of their own.
    allowed = (
        f"""
                EXECUTE pg_catalog.format(
                    'SELECT EXISTS (SELECT 1 FROM %I.maintenance_roles AS m '
                    'JOIN pg_catalog.pg_roles AS r ON r.rolname = m.role_name '
                    'WHERE pg_catalog.pg_has_role(current_user, r.oid, ''MEMBER''))',
                    TG_TABLE_SCHEMA) INTO listed;
                IF NOT (listed OR pg_catalog.pg_has_role(current_user,
                        (SELECT c.relowner FROM pg_catalog.pg_class AS c WHERE c.oid = TG_RELID),
                        'MEMBER')) THEN
                    RAISE EXCEPTION '{_OWNERS_ONLY}', current_user
                        USING ERRCODE = 'insufficient_privilege';
                END IF;"""
        if check_role
        else ""
    )
    declare = "DECLARE listed boolean;" if check_role else ""
    settings = "SET search_path = pg_catalog, pg_temp" if check_role else ""
    return f"""
        CREATE OR REPLACE FUNCTION sessionstore_messages_append_only() RETURNS trigger
        LANGUAGE plpgsql {settings} AS $$
        {declare}
        BEGIN
            IF coalesce(pg_catalog.current_setting('sessionstore.maintenance', true), '') = 'on'
            THEN{allowed}
                RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
            END IF;
            RAISE EXCEPTION '{refusal}', TG_OP USING ERRCODE = 'insufficient_privilege';
        END $$
        """


def upgrade() -> None:
    # On SQLite too, unused there: one schema for both backends.
    op.create_table("maintenance_roles", sa.Column("role_name", sa.Text, primary_key=True))
    if op.get_bind().dialect.name == "sqlite":
        return
    # Readable by all (the trigger runs as the caller), written by its owner only.
    op.execute("REVOKE ALL ON maintenance_roles FROM PUBLIC")
    op.execute("GRANT SELECT ON maintenance_roles TO PUBLIC")
    op.execute(_function(check_role=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.drop_table("maintenance_roles")
        return
    op.execute("DROP FUNCTION sessionstore_messages_append_only() CASCADE")
    op.execute(_function(check_role=False))
    op.execute(
        "CREATE TRIGGER messages_append_only BEFORE UPDATE OR DELETE ON messages "
        "FOR EACH ROW EXECUTE FUNCTION sessionstore_messages_append_only()"
    )
    op.execute(
        "CREATE TRIGGER messages_no_truncate BEFORE TRUNCATE ON messages "
        "FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_messages_append_only()"
    )
    op.execute("DROP TABLE maintenance_roles")
