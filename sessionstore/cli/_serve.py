"""`sessionstore serve`: the read-only web viewer (`pip install 'sessionstore[web]'`).

Safe by default: it binds 127.0.0.1; any other address needs a token (`--token`, or
`--generate-token` to print a new one), checked on every request. Pages are redacted as
the CLI's output is; `--no-redact` is recorded as an audit event, as the CLI records it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import secrets
import socket
from typing import Annotated, Final

import typer

from .._redaction import redaction_disabled_event
from ._common import (
    ConfigOption,
    RedactOption,
    UrlOption,
    console,
    err_console,
    open_store,
    record_audit,
)
from ._exit_codes import EXIT_USAGE
from ._text import shown

_TOKEN_SHAPE: Final = re.compile(r"[A-Za-z0-9_\-.~]{16,256}")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(
    url: UrlOption = None,
    config: ConfigOption = None,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind; beyond loopback a token is required.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to bind.")] = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="SESSIONSTORE_VIEWER_TOKEN",
            help="Require this token (16+ URL-safe characters) on every request.",
        ),
    ] = None,
    generate_token: Annotated[
        bool, typer.Option("--generate-token", help="Require a new random token, printed once.")
    ] = False,
    redact: RedactOption = True,
) -> None:
    """Browse sessions in a local, read-only web viewer: timelines, compactions, token
    charts, model inputs, search and time travel."""
    try:
        import uvicorn

        from ..web import LOOPBACK_NAMES, create_app
    except ImportError as error:
        err_console.print(
            shown(
                "error: the viewer needs the [web] extra: "
                f"pip install 'sessionstore[web]' ({error})"
            )
        )
        raise typer.Exit(EXIT_USAGE) from None
    if generate_token and token is None:
        token = secrets.token_urlsafe(24)
    if token is not None and not _TOKEN_SHAPE.fullmatch(token):
        err_console.print(shown("error: --token must be 16 to 256 URL-safe characters"))
        raise typer.Exit(EXIT_USAGE)
    if not _loopback(host) and token is None:
        err_console.print(
            shown(
                f"error: --host {host} is reachable beyond this machine: "
                "pass --token TOKEN or --generate-token (or bind 127.0.0.1)"
            )
        )
        raise typer.Exit(EXIT_USAGE)

    async def check() -> None:  # a missing database or old schema: one error, before binding
        async with open_store(url, config, read_only=True):
            pass

    asyncio.run(check())
    store = open_store(url, config, read_only=True)
    if not redact:
        asyncio.run(record_audit(url, config, [redaction_disabled_event()]))
    hosts = LOOPBACK_NAMES | {host} if _loopback(host) else None
    app = create_app(store, redact=redact, token=token, allowed_hosts=hosts)
    listening = _listen(host, port)  # bound before the address is printed: it is ours
    port = listening.getsockname()[1]  # --port 0: the port the system chose
    shown_host = f"[{host}]" if ":" in host else host
    link = f"http://{shown_host}:{port}/"
    console.print(shown(f"sessionstore viewer (read-only) on {link}  (Ctrl-C stops it)"))
    if token is not None:
        console.print(shown(f"open {link}?token={token}"))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", server_header=False))
    server.run(sockets=[listening])


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to `host`:`port`, or one line saying why not (exit 2)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM
        )[0]
        listening = socket.socket(family, kind, proto)
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(address)
    except OSError as error:
        reason = error.strerror or str(error)
        err_console.print(
            shown(f"error: cannot listen on {host}:{port}: {reason} (pick another --port)")
        )
        raise typer.Exit(EXIT_USAGE) from None
    return listening
