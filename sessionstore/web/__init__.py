"""`sessionstore serve`: a read-only local web viewer over a store (the `[web]` extra).

An application over the store's public API and documented schema, like the CLI: it
never writes, binds 127.0.0.1 unless given a token, redacts every page as the CLI
does, and serves its templates and assets from this package (no CDN, works offline).
"""

from __future__ import annotations

from ._app import LOOPBACK_NAMES, create_app

__all__ = ["LOOPBACK_NAMES", "create_app"]
