"""The viewer's guard: read-only methods, the access token and strict response headers.

One ASGI middleware in front of every route and asset, so no route can forget a check.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from http.cookies import SimpleCookie
from typing import Final
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_COOKIE: Final = "sessionstore_viewer_token"
TOKEN_PARAM: Final = "token"
READ_METHODS: Final = frozenset({"GET", "HEAD"})

# No inline script or style, nothing from elsewhere: stored text that slipped past escaping
# still could not run, and the viewer works offline.
CSP: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS: Final[tuple[tuple[bytes, bytes], ...]] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
)


def _same(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def _cookie_token(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name == b"cookie":
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(value.decode("latin-1"))
            except Exception:  # a malformed cookie header is no token
                continue
            if TOKEN_COOKIE in jar:
                return jar[TOKEN_COOKIE].value
    return None


class Guard:
    """Refuses every method but GET and HEAD (405), every request without the token when
    one is set (401), and requests for another host name (a DNS-rebinding page that
    resolves its own name to 127.0.0.1); adds the security headers to every response."""

    def __init__(self, app: ASGIApp, *, token: str | None, hosts: frozenset[str] | None) -> None:
        self.app = app
        self.token = token
        self.hosts = hosts  # None: any Host header (a token guards the server then)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers", ()))
        set_cookie = False
        if scope["method"] not in READ_METHODS:
            await _plain(
                send, 405, "read-only viewer: only GET and HEAD", [(b"allow", b"GET, HEAD")]
            )
            return
        if self.hosts is not None:
            host = next((v.decode("latin-1") for k, v in headers if k == b"host"), "")
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            if name.lower() not in self.hosts:
                await _plain(send, 400, "unexpected Host header")
                return
        if self.token is not None:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get(TOKEN_PARAM) or [None])[0]
            if _same(given, self.token):
                set_cookie = True
            elif not _same(_cookie_token(headers), self.token):
                await _plain(send, 401, "a token is required: open the URL `serve` printed")
                return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = list(SECURITY_HEADERS)
                if set_cookie and self.token is not None:
                    cookie = f"{TOKEN_COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
                    extra.append((b"set-cookie", cookie.encode()))
                message = {**message, "headers": [*message.get("headers", ()), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _plain(
    send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = (text + "\n").encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        *SECURITY_HEADERS,
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
