"""Which revisions this code knows: the newest, and every one its migration scripts hold.

Apart from the migrations themselves (SQLAlchemy, Alembic) because the newest revision is
all a command needs to trust a database it reads with the standard library alone
(`_sqlite/_quick_list.py`): read from the packaged head schema file, Alembic is loaded only
when that file does not match the scripts.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ._head_file import head_schema

if TYPE_CHECKING:  # Alembic loads only when a migration or revision lookup needs it
    from alembic.config import Config

_PACKAGE_DIR: Final = Path(__file__).resolve().parent.parent  # sessionstore/


def script_location() -> Path:
    """The migrations folder: packaged in the wheel, or the repository's own."""
    for candidate in (_PACKAGE_DIR / "_migrations", _PACKAGE_DIR.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError(
        "sessionstore migrations are missing from this installation; reinstall the package"
    )


def alembic_config(url: str | None = None) -> Config:
    """An Alembic Config pointing at sessionstore's migrations (and `url`, if given)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(script_location()))
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


@cache
def head_revision() -> str:
    """The newest revision this code knows: the head schema's, while it was generated from
    these very migration scripts (no need to load Alembic and every script for it), else
    read from the scripts."""
    fresh = head_schema("sqlite", script_location() / "versions")
    return fresh.revision if fresh is not None else chain_head_revision()


@cache
def chain_head_revision() -> str:
    """The newest revision of the migration scripts, as Alembic reads them."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "sessionstore ships at least one migration"
    return head


@cache
def known_revisions() -> frozenset[str]:
    """Every revision this code ships (a database at another one is from a newer release)."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    return frozenset(rev.revision for rev in script.walk_revisions())
