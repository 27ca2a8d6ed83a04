"""The Starlette application: routes, templates and assets, all read-only.

Every response goes through `Guard` (methods, token, headers); every template value
through `finalize` (redacted, then made inert; autoescape escapes it).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from importlib.resources import files
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode

import jinja2
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from sessionstore import Redactor, SessionStore, SessionStoreError

from . import _pages as pages
from ._refs import BACK_CURSOR, CURSOR, SEALED_NAME, SessionRefs
from ._security import Guard
from ._text import inert

_HERE: Final = Path(str(files("sessionstore.web")))
_log: Final = logging.getLogger("sessionstore.web")
LOOPBACK_NAMES: Final = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})


def _environment(redactor: Redactor, refs: SessionRefs) -> jinja2.Environment:
    def finalize(value: Any) -> Any:
        if isinstance(value, Markup):  # the templates' own HTML (macros), never stored text
            return value
        if isinstance(value, str):
            return inert(redactor.text(value))
        if value is None:
            return ""
        return value

    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,  # every template, whatever its name
        finalize=finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,  # a line's end stays a space between inline facts
        lstrip_blocks=True,
    )

    def when(moment: datetime | None) -> str:
        return "" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S")

    def usd(value: float | None) -> str:
        return "" if value is None else f"${value:,.4f}"

    def qs(**params: Any) -> Markup:
        """A query string; a session id the page shows changed travels sealed (_refs)."""
        pairs = [
            (key, refs.seal(key, value))
            if key in (CURSOR, BACK_CURSOR)
            else refs.param(key, value)
            if isinstance(value, str)
            else (key, value)
            for key, value in params.items()
            if value is not None and value != ""
        ]
        return Markup(escape(urlencode(pairs)))

    def session_field(name: str, session_id: str, visible: bool = False) -> Markup:
        """A form's field naming a session: hidden, or a text box; sealed as `qs` seals."""
        key, value = refs.param(name, session_id)
        if visible and key == name:
            box = '<input name="{}" value="{}" placeholder="in session (optional)" aria-label="{}">'
            return Markup(box).format(key, value, name)
        field = Markup('<input type="hidden" name="{}" value="{}">').format(key, value)
        if visible:  # the sealed id, shown as the page shows any text
            field += Markup('<input value="{}" disabled aria-label="session">').format(
                finalize(session_id)
            )
        return field

    def pretty(value: Any) -> str:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)

    environment.filters["when"] = when
    environment.filters["pretty"] = pretty
    environment.filters["usd"] = usd
    environment.globals["qs"] = qs
    environment.globals["session_field"] = session_field
    return environment


class Viewer:
    """What every handler needs: the store, the redactor and the templates."""

    def __init__(self, store: SessionStore, redact: bool) -> None:
        self.store = store
        self.redact = redact
        self.redactor = store.redactor if redact else Redactor(enabled=False)
        self.refs = SessionRefs(lambda text: inert(self.redactor.text(text)))
        self.templates = _environment(self.redactor, self.refs)

    def session_param(self, request: Request, name: str) -> str:
        """The session a request names by `name`, or by its sealed form (see _refs)."""
        sealed = request.query_params.get(SEALED_NAME[name])
        if not sealed:
            return request.query_params.get(name, "")
        session_id = self.refs.open(SEALED_NAME[name], sealed)
        if session_id is None:
            raise pages.bad_request(
                "the link is damaged or from an earlier run of the viewer: "
                "open the session from the list again"
            )
        return session_id

    def render(self, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        template = self.templates.get_template(name)
        html = template.render(redacted=self.redact, **context)
        return HTMLResponse(html, status_code=status)


Handler = Callable[[Request, Viewer], Awaitable[Response]]


def _route(path: str, handler: Handler, viewer: Viewer) -> Route:
    async def endpoint(request: Request) -> Response:
        try:
            if any("\x00" in value for value in request.query_params.values()):
                raise pages.bad_request("a parameter holds a NUL character, which no id has")
            return await handler(request, viewer)
        except HTTPException as error:  # a 404 or 400 the page raised, said on the page
            title = "not found" if error.status_code == 404 else "bad request"
            return viewer.render("error.html", error.status_code, title=title, message=error.detail)
        except OverflowError:  # a number past what the database stores, e.g. v99999999999...
            message = "a number in the address is larger than any the store holds"
            return viewer.render("error.html", 400, title="bad request", message=message)
        except SessionStoreError as error:  # the database, a key: said on the page, redacted
            message = f"{type(error).__name__}: {error}"
            return viewer.render("error.html", 503, title="cannot read the store", message=message)
        except Exception as error:  # a page's own fault: still a page, with the guard's headers
            _log.exception("viewer: %s failed", request.url.path)
            message = f"{type(error).__name__} (the server's log has the details)"
            return viewer.render("error.html", 500, title="the viewer failed", message=message)

    return Route(path, endpoint, methods=["GET", "HEAD"])


def _session_id(request: Request, viewer: Viewer) -> str:
    session_id = viewer.session_param(request, "id")
    if not session_id:
        raise pages.bad_request("which session? (?id=...)")
    return session_id


async def sessions(request: Request, viewer: Viewer) -> Response:
    p = request.query_params
    sealed = {name: p.get(name) for name in (CURSOR, BACK_CURSOR)}
    opened = {name: viewer.refs.open(name, text) if text else None for name, text in sealed.items()}
    if any(text and opened[name] is None for name, text in sealed.items()):
        raise pages.bad_request("the page link is damaged: start from the first page")
    page = await pages.session_list(
        viewer.store,
        p.get("q", ""),
        p.get("sort", "updated"),
        p.get("dir", "desc"),
        opened[CURSOR],
        opened[BACK_CURSOR],
    )
    return viewer.render("sessions.html", page=page, title="sessions")


async def session(request: Request, viewer: Viewer) -> Response:
    p = request.query_params
    session_id = _session_id(request, viewer)
    page = await pages.timeline(
        viewer.store,
        session_id,
        viewer.redactor,
        before=pages._int(p.get("before"), "before"),
        around=pages._int(p.get("around"), "around"),
    )
    return viewer.render(
        "session.html", page=page, title=session_id, highlight=pages._int(p.get("around"), "around")
    )


async def tokens(request: Request, viewer: Viewer) -> Response:
    session_id = _session_id(request, viewer)
    data = await pages.tokens_page(viewer.store, session_id)
    return viewer.render("tokens.html", title=f"tokens of {session_id}", **data)


async def compaction(request: Request, viewer: Viewer) -> Response:
    session_id = _session_id(request, viewer)
    number = pages._int(request.query_params.get("c"), "c")
    if number is None:
        raise pages.bad_request("which compaction? (&c=ID)")
    start = pages._int(request.query_params.get("from"), "from")
    data = await pages.compaction_page(viewer.store, session_id, number, viewer.redactor, start)
    return viewer.render("compaction.html", title=f"compaction {number}", **data)


async def call(request: Request, viewer: Viewer) -> Response:
    session_id = _session_id(request, viewer)
    number = pages._int(request.query_params.get("n"), "n")
    if number is None:
        raise pages.bad_request("which call? (&n=N)")
    data = await pages.call_page(viewer.store, session_id, number, viewer.redactor)
    return viewer.render("call.html", title=f"call {number}", **data)


async def as_of(request: Request, viewer: Viewer) -> Response:
    session_id = _session_id(request, viewer)
    point = request.query_params.get("point", "")
    if not point:
        raise pages.bad_request("as of when? (&point=120, v3, turn:5 or a time)")
    data = await pages.as_of_page(viewer.store, session_id, point, viewer.redactor)
    return viewer.render("as_of.html", title=f"{session_id} as of {point}", **data)


async def search(request: Request, viewer: Viewer) -> Response:
    query = request.query_params.get("q", "")
    scope = viewer.session_param(request, "session")
    hits = await pages.search_page(viewer.store, query, scope or None, viewer.redact)
    return viewer.render("search.html", title="search", query=query, scope=scope, hits=hits)


def create_app(
    store: SessionStore,
    *,
    redact: bool = True,
    token: str | None = None,
    allowed_hosts: frozenset[str] | None = LOOPBACK_NAMES,
) -> Starlette:
    """The viewer over `store` (opened read-only by `sessionstore serve`). `token`, when
    set, is required on every request (query `?token=`, then a cookie); `allowed_hosts`
    are the Host names answered (None: any, for a server bound beyond loopback)."""
    viewer = Viewer(store, redact)
    routes = [
        _route("/", sessions, viewer),
        _route("/session", session, viewer),
        _route("/tokens", tokens, viewer),
        _route("/compaction", compaction, viewer),
        _route("/call", call, viewer),
        _route("/as-of", as_of, viewer),
        _route("/search", search, viewer),
        Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        await store.ensure_ready()  # the schema check and first connection: not on a page's time
        for name in viewer.templates.list_templates():  # compiled once, before the first page
            viewer.templates.get_template(name)
        yield
        await store.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.add_middleware(Guard, token=token, hosts=allowed_hosts)
    return app
