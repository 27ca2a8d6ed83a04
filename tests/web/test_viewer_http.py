"""The viewer's routes over HTTP (httpx against the Starlette app), on SQLite and PostgreSQL:
every page answers, stored text is escaped, neutralized and redacted, nothing writes."""

from __future__ import annotations

import base64
import contextlib
import json
import re
import sqlite3
from collections.abc import AsyncIterator
from html import unescape
from importlib.resources import files
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from starlette.exceptions import HTTPException

from sessionstore import Keyring, LocalKey, SessionStore
from sessionstore.web import create_app
from sessionstore.web._pages import PAGE_ROWS, _uncursor, tokens_page
from sessionstore.web._text import inert
from tests.support.histories import assistant, user
from tests.support.managers import small_window_manager
from tests.support.viewer import HOSTILE_ID, SECRET, seed

BASE = "http://127.0.0.1"


@pytest.fixture
async def viewer(db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    await seed(db_url)
    store = SessionStore(db_url, read_only=True)
    app = create_app(store)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as client:
        yield client
    await store.close()


def q(text: str) -> str:
    return quote(text, safe="")


def _cursor(value: list[object]) -> str:
    """A page link's keyset, as a hand would make one."""
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def _hrefs(html: str) -> list[str]:
    return [unescape(href) for href in re.findall(r'href="([^"]+)"', html)]


async def _compaction_id(client: httpx.AsyncClient) -> str:
    page = (await client.get("/session?id=work")).text
    found = re.search(r'href="/compaction\?id=work&amp;c=(\d+)"', page)
    assert found, page
    return found[1]


async def test_the_list_shows_every_column_and_links_each_session(
    viewer: httpx.AsyncClient,
) -> None:
    response = await viewer.get("/")
    assert response.status_code == 200
    html = response.text
    for header in ("updated", "items", "context tokens", "cost", "agents", "branch of"):
        assert header in html
    assert 'href="/session?id=work-alt"' in html and 'href="/session?id=work"' in html
    assert "billing, triage" in html  # the agents of 'work'
    assert "$0." in html  # its priced calls
    filtered = (await viewer.get("/?q=alt")).text
    assert "work-alt" in filtered and 'class="sid" href="/session?id=work"' not in filtered
    for sort in ("updated", "items", "tokens", "cost", "id", "branch"):
        for order in ("asc", "desc"):
            assert (await viewer.get(f"/?sort={sort}&dir={order}")).status_code == 200


async def test_keyset_paging_walks_every_session_once(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        for n in range(120):
            await store.append(f"s{n:03d}", [{"role": "user", "content": "x " * (n % 7 + 1)}])
        for n in range(12):  # branches of three parents, for the branch-of sort
            await store.fork(f"s{n % 3:03d}", f"b{n:02d}")
    store = SessionStore(db_url, read_only=True)
    transport = httpx.ASGITransport(app=create_app(store))
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        for sort, order in (
            ("updated", "desc"),
            ("tokens", "asc"),
            ("id", "desc"),
            ("cost", "desc"),
            ("branch", "desc"),
        ):
            seen: list[str] = []
            link: str | None = f"/?sort={sort}&dir={order}"
            while link:
                html = (await client.get(link)).text
                body = html.split("<tbody>")[1]
                last = re.findall(r'class="sid" href="/session\?id=([^"]+)"', body)
                seen += last
                prev = re.search(r'id="previous" href="([^"]+)"', html)
                nxt = re.search(r'id="next" href="([^"]+)"', html)
                link = nxt[1].replace("&amp;", "&") if nxt else None
            assert len(seen) == 132 and len(set(seen)) == 132, (sort, order)
            # And back: from the last page, the previous-page links walk the same list.
            back: list[str] = []
            while link := (prev[1].replace("&amp;", "&") if prev else None):
                html = (await client.get(link)).text
                back = re.findall(r'class="sid" href="/session\?id=([^"]+)"', html) + back
                prev = re.search(r'id="previous" href="([^"]+)"', html)
            assert back + last == seen, (sort, order)
            if sort == "branch":  # the branches first (descending), one parent's together
                assert sorted(seen[:12]) == [f"b{n:02d}" for n in range(12)]
                assert seen[:4] == sorted(f"b{n:02d}" for n in range(2, 12, 3))
    await store.close()


async def test_a_timeline_shows_turns_tools_agents_and_the_compaction(
    viewer: httpx.AsyncClient,
) -> None:
    html = (await viewer.get("/session?id=work")).text
    assert "tool call run_tool" in html and "tool output run_tool" in html
    assert "compaction summary" in html and "kept verbatim" in html
    assert 'class="agent"' in html and "billing" in html
    assert re.search(r'id="turn-\d+"', html)
    assert "the walrus is fine" in html
    older = (await viewer.get("/session?id=work&before=5")).text
    assert 'id="seq-4"' in older and 'id="seq-5"' not in older
    around = (await viewer.get("/session?id=work&around=3")).text
    assert 'class="row user hit"' in around or "hit" in around


async def test_a_branch_shows_its_tree_and_the_rows_it_shares(viewer: httpx.AsyncClient) -> None:
    html = (await viewer.get("/session?id=work-alt")).text
    assert 'id="branches"' in html and 'href="/session?id=work"' in html
    assert "<strong>work-alt</strong>" in html
    assert "pelicans answer" in html and "from work" in html  # shared parent rows marked
    assert "branch of" in html
    parent = (await viewer.get("/session?id=work")).text
    assert 'href="/session?id=work-alt"' in parent


async def test_tokens_page_draws_the_chart_with_drops_and_usage(
    viewer: httpx.AsyncClient,
) -> None:
    html = (await viewer.get("/tokens?id=work")).text
    assert '<svg id="token-chart"' in html and 'class="series" d="M' in html
    assert 'class="drop"' in html  # the compaction's drop
    assert 'id="per-turn"' in html and 'id="per-model"' in html and "house-model" in html
    assert 'href="/call?id=work&amp;n=1"' in html


async def test_a_compaction_shows_before_after_and_events_but_no_archive_without_key(
    viewer: httpx.AsyncClient,
) -> None:
    cid = await _compaction_id(viewer)
    html = (await viewer.get(f"/compaction?id=work&c={cid}")).text
    assert 'id="before"' in html and 'id="after"' in html
    assert "what was replaced" in html and "the summary" in html and "kept verbatim" in html
    assert "no key is configured" in html  # archived originals never shown without a key
    assert 'id="events"' in html or "no events recorded" in html


async def test_a_model_call_shows_its_exact_input(viewer: httpx.AsyncClient) -> None:
    html = (await viewer.get("/call?id=work&n=2")).text
    assert "what the model saw: call 2" in html and "house-model" in html
    assert html.count('class="row ') >= 4


async def test_time_travel_by_turn_version_and_seq(viewer: httpx.AsyncClient) -> None:
    for point in ("turn:2", "v1", "3", "2020-01-01T00:00:00"):
        response = await viewer.get(f"/as-of?id=work&point={q(point)}")
        assert response.status_code == 200, (point, response.text[:500])
        assert "the context as of" in response.text
    assert "compaction summary" in (await viewer.get("/as-of?id=work&point=v1")).text


async def test_search_links_into_the_timeline(viewer: httpx.AsyncClient) -> None:
    html = (await viewer.get("/search?q=walrus")).text
    assert 'href="/session?id=work&amp;around=' in html
    scoped = (await viewer.get("/search?q=pelicans&session=work-alt")).text
    assert "work-alt" in scoped
    assert (await viewer.get("/search")).status_code == 200


async def test_hostile_content_is_escaped_neutralized_and_redacted(
    viewer: httpx.AsyncClient,
) -> None:
    pages = [
        await viewer.get("/"),
        await viewer.get(f"/session?id={q(HOSTILE_ID)}"),
        await viewer.get(f"/as-of?id={q(HOSTILE_ID)}&point=4"),
        await viewer.get("/search?q=alert"),
    ]
    for response in pages:
        html = response.text
        assert response.status_code == 200, html[:300]
        assert "<script" not in html and "<img" not in html and "<svg onload" not in html
        assert SECRET not in html and "Zz9Yy8Xx7Ww6" not in html
        assert "\u202e" not in html and "\x1b" not in html
    timeline = pages[1].text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in timeline
    assert "&lt;img src=x onerror=alert(2)&gt;" in timeline
    assert "[bold]not bold[/bold]" in timeline
    assert "\u27e6ESC\u27e7[31mred" in timeline and "\u27e6U+202E\u27e7" in timeline


async def test_no_redact_shows_secrets_and_says_so(db_url: str) -> None:
    await seed(db_url)
    store = SessionStore(db_url, read_only=True)
    transport = httpx.ASGITransport(app=create_app(store, redact=False))
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        html = (await client.get(f"/session?id={q(HOSTILE_ID)}")).text
        assert SECRET in html and "redaction OFF" in html
        assert "<script" not in html  # still escaped
    await store.close()


async def test_every_response_carries_the_security_headers(viewer: httpx.AsyncClient) -> None:
    for path in ("/", "/session?id=work", "/static/viewer.css", "/nowhere", "/session"):
        response = await viewer.get(path)
        csp = response.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
        assert response.headers["x-content-type-options"] == "nosniff"
    assert (await viewer.get("/static/viewer.css")).headers["content-type"].startswith("text/css")
    assert (await viewer.head("/")).status_code == 200


async def test_writes_are_refused(viewer: httpx.AsyncClient) -> None:
    for method in ("POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
        for path in ("/", "/session?id=work", "/static/viewer.css", "/nowhere"):
            response = await viewer.request(method, path, content=b"x=1")
            assert response.status_code == 405, (method, path)
            assert response.headers["allow"] == "GET, HEAD"


async def test_bad_requests_are_answered_plainly(viewer: httpx.AsyncClient) -> None:
    expected = {
        "/session": 400,
        "/session?id=nobody": 404,
        "/session?id=work&before=x": 400,
        "/compaction?id=work&c=999999": 404,
        "/compaction?id=work": 400,
        "/call?id=work&n=99": 404,
        "/call?id=work": 400,
        "/as-of?id=work&point=yesterday": 400,
        "/as-of?id=work": 400,
        "/?sort=bogus": 400,
        "/?after=%%%": 400,
        "/?prev=%%%": 400,
        "/nowhere": 404,
        # Numbers past a 64-bit column, cursors of another sort or made by hand, a NUL: a
        # plain 400 page, never a bare 500 or a 503 blaming the store.
        "/as-of?id=work&point=v99999999999999999999": 400,
        "/as-of?id=work&point=turn:99999999999999999999": 400,
        "/session?id=work&before=99999999999999999999": 400,
        f"/?sort=cost&after={_cursor([None, 'y'])}": 400,
        f"/?sort=tokens&after={_cursor(['x', 'y'])}": 400,
        f"/?sort=items&after={_cursor([True, 'y'])}": 400,
        f"/?sort=items&after={_cursor([10**30, 'y'])}": 400,
        "/?q=%00": 400,
        "/session?id=%00": 400,
    }
    for path, status in expected.items():
        assert (await viewer.get(path)).status_code == status, path


async def test_a_token_is_required_on_every_request_when_set(db_url: str) -> None:
    store = SessionStore(db_url, read_only=True)
    token = "t0ken-abcdefghijklmnop"
    transport = httpx.ASGITransport(app=create_app(store, token=token, allowed_hosts=None))
    async with httpx.AsyncClient(transport=transport, base_url="http://viewer.example") as client:
        assert (await client.get("/")).status_code == 401
        assert (await client.get("/static/viewer.css")).status_code == 401
        assert (await client.get("/?token=wrong-token-abcdefgh")).status_code == 401
        opened = await client.get(f"/?token={token}")
        assert opened.status_code == 200
        assert "HttpOnly" in opened.headers["set-cookie"]
        assert (await client.get("/search")).status_code == 200  # the cookie carries it
        client.cookies.clear()
        assert (await client.get("/search")).status_code == 401
    await store.close()


async def test_other_host_names_are_refused_on_loopback(viewer: httpx.AsyncClient) -> None:
    response = await viewer.get("/", headers={"host": "attacker.example"})
    assert response.status_code == 400
    assert (await viewer.get("/", headers={"host": "localhost:8765"})).status_code == 200


@pytest.mark.parametrize(
    ("sort", "value"),
    [("cost", None), ("tokens", "x"), ("items", True), ("items", 10**30), ("id", 5)],
)
def test_a_cursor_of_another_sort_or_out_of_range_is_refused(sort: str, value: object) -> None:
    """Cursors travel sealed; one that opens must still hold what its sort compares."""
    with pytest.raises(HTTPException) as caught:
        _uncursor(_cursor([value, "y"]), sort)
    assert caught.value.status_code == 400


def test_inert_makes_invisible_characters_visible() -> None:
    assert inert("a\u202eb") == "a\u27e6U+202E\u27e7b"
    assert inert("x\U000e0069\U000e0067y") == "x\u27e6U+E0069\u27e7\u27e6U+E0067\u27e7y"  # tags
    assert inert("a\u2060b") == "a\u27e6U+2060\u27e7b"
    assert inert("\x1b[31mx") == "\u27e6ESC\u27e7[31mx"
    assert inert("tab\tand\nnewline") == "tab\tand\nnewline"
    assert inert("\x07") == "\u27e6U+0007\u27e7"


async def test_with_a_key_the_archived_originals_and_sealed_rows_are_shown(db_url: str) -> None:
    keyring = Keyring([LocalKey.generate("k1")])
    async with SessionStore(db_url, keyring=keyring, encrypt_payloads=True) as store:
        for n in range(6):
            await store.append("sealed", [user(f"step {n} about the heron"), assistant("ok")])
        assert (await small_window_manager(store).compact("sealed", trigger="manual")).compacted
    store = SessionStore(db_url, read_only=True, keyring=keyring)
    transport = httpx.ASGITransport(app=create_app(store))
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        timeline = (await client.get("/session?id=sealed")).text
        assert "step 0 about the heron" in timeline and "[sealed" not in timeline
        cid = re.search(r'href="/compaction\?id=sealed&amp;c=(\d+)"', timeline)
        assert cid
        page = (await client.get(f"/compaction?id=sealed&c={cid[1]}")).text
        assert "no key is configured" not in page
        assert re.search(r"archive \d+: #\d+\u2013#\d+, \d+ records", page)
        assert "&#34;item&#34;" in page.split("archived originals")[1]  # the records, opened
    await store.close()
    keyless = SessionStore(db_url, read_only=True, keyring=None)
    transport = httpx.ASGITransport(app=create_app(keyless))
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        page = (await client.get(f"/compaction?id=sealed&c={cid[1]}")).text
        assert "no key is configured" in page and 'class="archive"' not in page
        assert "[sealed: no key to open it]" in (await client.get("/session?id=sealed")).text
    await keyless.close()


async def test_a_large_compaction_is_shown_a_page_of_rows_and_originals_at_a_time(
    db_url: str,
) -> None:
    """A compaction of 260 rows: each page shows at most PAGE_ROWS replaced rows and the
    archived originals of those rows only; the next-rows links walk every row once."""
    keyring = Keyring([LocalKey.generate("k1")])
    async with SessionStore(db_url, keyring=keyring, create_tables=True) as store:
        for n in range(130):
            await store.append("big", [user(f"step {n}"), assistant(f"done {n}")])
        outcome = await small_window_manager(store).compact("big", trigger="manual")
        assert outcome.compacted
    store = SessionStore(db_url, read_only=True, keyring=keyring)
    transport = httpx.ASGITransport(app=create_app(store))
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        timeline = (await client.get("/session?id=big")).text
        cid = re.search(r'href="/compaction\?id=big&amp;c=(\d+)"', timeline)
        assert cid
        link: str | None = f"/compaction?id=big&c={cid[1]}"
        shown: list[int] = []
        pages_seen = 0
        while link:
            page = (await client.get(link)).text
            pages_seen += 1
            before = page.split('id="before"')[1].split('id="after"')[0]
            seqs = [int(seq) for seq in re.findall(r'id="seq-(\d+)"', before)]
            assert 0 < len(seqs) <= PAGE_ROWS
            originals = page.split("archived originals")[1].split("<h3>events")[0]
            archived = [int(seq) for seq in re.findall(r"&#34;seq&#34;: (\d+)", originals)]
            assert set(archived) <= set(seqs) and archived, (seqs[:3], archived[:3])
            shown += seqs
            nxt = re.search(r'id="next-rows" href="([^"]+)"', page)
            link = unescape(nxt[1]) if nxt else None
        assert pages_seen >= 3 and len(shown) == len(set(shown)) and shown == sorted(shown)
        assert len(shown) >= 250
    await store.close()


async def test_a_rewind_is_marked_where_it_happened(viewer: httpx.AsyncClient) -> None:
    html = (await viewer.get("/session?id=rewound")).text
    assert "rewound to #2" in html and "copy of #2 (rewind)" in html and "a second try" in html


def test_templates_and_assets_ship_in_the_package() -> None:
    root = files("sessionstore.web")
    for name in ("base.html", "session.html", "tokens.html", "compaction.html"):
        assert (root / "templates" / name).is_file()
    assert (root / "static" / "viewer.css").is_file()


async def test_a_store_that_cannot_be_read_is_a_plain_503(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")  # a SQLite file, not a store
    store = SessionStore(f"sqlite:///{path}", read_only=True)
    transport = httpx.ASGITransport(app=create_app(store))
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        response = await client.get("/")
        assert response.status_code == 503 and "cannot read the store" in response.text
        assert "Schema" in response.text
    await store.close()


async def test_a_session_whose_id_the_page_shows_changed_is_reached_through_sealed_links(
    viewer: httpx.AsyncClient, db_url: str
) -> None:
    secret_id = f"note {SECRET}"
    async with SessionStore(db_url) as store:
        await store.append(secret_id, [user("what the note says"), assistant("it says hi")])
    listed = (await viewer.get("/")).text
    assert SECRET not in listed and "Zz9Yy8Xx7Ww6" not in listed
    for shown_id in (secret_id, HOSTILE_ID):
        links = [h for h in _hrefs(listed) if h.startswith("/session?ref=")]
        opened = [(await viewer.get(link)).text for link in links]
        page = next(
            html for html in opened if ("what the note says" in html) == (shown_id == secret_id)
        )
        assert SECRET not in page and "\u202e" not in page
        for link in _hrefs(page):  # every link of the session's page works: tokens, search...
            if link.startswith(("/tokens?", "/search?", "/session?")):
                assert (await viewer.get(link)).status_code == 200, link
        form = re.search(r'<input type="hidden" name="ref" value="([^"]+)">', page)
        assert form, "the time-travel form names the session sealed"
        travelled = await viewer.get(f"/as-of?ref={q(unescape(form[1]))}&point=1")
        assert travelled.status_code == 200 and SECRET not in travelled.text
    assert (
        await viewer.get("/session?ref=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
    ).status_code == 400
    plain = (await viewer.get("/session?id=work")).text
    assert 'href="/tokens?id=work"' in plain  # an id shown as it is stays readable


async def test_a_branch_forked_after_a_compaction_charts_its_parents_drop(db_url: str) -> None:
    await seed(db_url)
    async with SessionStore(db_url) as store:
        await store.fork("work", "work-late")  # after work's compaction, at its newest row
        await store.append("work-late", [user("one more on the late branch")])
        late = await tokens_page(store, "work-late")
        work = await tokens_page(store, "work")
    assert [d.label for d in late["chart"].drops] == [d.label for d in work["chart"].drops]
    assert len(late["chart"].drops) == 1
    assert late["compactions"] == []  # the table lists the branch's own compactions only


async def test_the_usage_table_links_each_turn_to_where_it_starts(
    viewer: httpx.AsyncClient,
) -> None:
    html = (await viewer.get("/tokens?id=work")).text
    links = [h for h in _hrefs(html) if h.startswith("/session?id=work&around=")]
    assert links, "each turn with usage links into the timeline"
    for link in links:
        seq = link.split("around=")[1].split("#")[0]
        page = (await viewer.get(link)).text
        assert f'id="seq-{seq}"' in page, link
