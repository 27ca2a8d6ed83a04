"""The viewer in a real browser: headless Chromium (Debian's /usr/bin/chromium, driven by
Playwright) against a real uvicorn server on a free loopback port, on SQLite and
PostgreSQL. Screenshots go to $SESSIONSTORE_ARTIFACTS/viewer (default: artifacts/viewer)."""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final
from urllib.parse import quote

import pytest
from playwright.async_api import Browser, Dialog, Page, async_playwright, expect

from tests.support.viewer import HOSTILE_ID, SECRET, running_viewer, seed

pytestmark = pytest.mark.browser

CHROMIUM: Final = Path("/usr/bin/chromium")
ARTIFACTS: Final = Path(os.environ.get("SESSIONSTORE_ARTIFACTS", "artifacts")) / "viewer"


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("CI needs Chromium: apt-get install -y chromium (.ci/run does)")
        pytest.skip("no /usr/bin/chromium (apt-get install -y chromium)")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"]
        )
        yield launched
        await launched.close()


async def _shot(page: Page, backend: str, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"{backend}-{name}.png"), full_page=False)


def _dialogs(page: Page) -> list[str]:
    """The messages of every dialog the page opens (an injected alert() would be one)."""
    seen: list[str] = []

    async def dismiss(dialog: Dialog) -> None:
        seen.append(dialog.message)
        await dialog.dismiss()

    page.on("dialog", dismiss)
    return seen


def _backend(url: str) -> str:
    return "sqlite" if url.startswith("sqlite") else "postgresql"


async def test_browsing_the_list_a_session_a_compaction_a_chart_search_and_branches(
    db_url: str, browser: Browser
) -> None:
    backend = _backend(db_url)
    await seed(db_url)
    with running_viewer(db_url) as base:
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        dialogs = _dialogs(page)
        await page.goto(base + "/")
        await expect(page.locator("table#sessions tbody tr")).to_have_count(4)
        await _shot(page, backend, "list")
        await page.fill("input[name=q]", "alt")
        await page.click("form.filter button")
        await expect(page.locator("table#sessions tbody tr")).to_have_count(1)
        await page.goto(base + "/")

        await page.click("a.sid >> text='work'")
        await expect(page.locator("h1")).to_have_text("work")
        await expect(page.locator("li.row.summary").first).to_be_visible()
        details = page.locator("li.row details").first
        await details.locator("summary").click()
        await expect(details.locator("pre")).to_be_visible()
        await _shot(page, backend, "timeline")

        await page.click("#compactions a")
        await expect(page.locator("#before")).to_be_visible()
        await expect(page.locator("#after li.row.summary")).to_have_count(1)
        await _shot(page, backend, "compaction")

        await page.click("nav.tabs >> text='tokens & usage'")
        chart = page.locator("svg#token-chart")
        await expect(chart).to_be_visible()
        await expect(chart.locator("path.series")).to_have_count(1)
        assert await chart.locator("line.drop").count() >= 1
        await _shot(page, backend, "tokens")
        await page.click("#calls a >> nth=0")
        await expect(page.locator("h2")).to_contain_text("what the model saw: call 1")

        await page.goto(base + "/search")
        await page.fill("input[name=q]", "walrus")
        await page.click("form.filter button")
        await page.click("#hits a >> nth=0")
        await expect(page.locator("li.row.hit")).to_have_count(1)
        await _shot(page, backend, "search-hit")

        await page.goto(base + "/session?id=work")
        await page.click("#branches a >> text='work-alt'")
        await expect(page.locator("h1")).to_have_text("work-alt")
        await expect(page.locator("li.row.shared").first).to_be_visible()
        await _shot(page, backend, "branch")
        await page.click("#branches a >> text='work'")
        await expect(page.locator("h1")).to_have_text("work")

        await page.fill("form.asof input[name=point]", "turn:2")
        await page.click("form.asof button")
        await expect(page.locator("#as-of-title")).to_contain_text("the context as of turn:2")
        assert dialogs == []
        await page.close()


async def test_hostile_content_renders_inert_and_redacted(db_url: str, browser: Browser) -> None:
    backend = _backend(db_url)
    await seed(db_url)
    with running_viewer(db_url) as base:
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        dialogs = _dialogs(page)
        hostile = f"/session?id={quote(HOSTILE_ID, safe='')}"
        await page.goto(base + hostile)
        # Every page the hostile session links to (its tokens, search, time travel, calls,
        # the list), a missing session named with markup and a secret (the error page).
        linked = await page.eval_on_selector_all(
            "a", "links => links.map(link => link.getAttribute('href'))"
        )
        own = {href for href in linked if href.startswith("/") and not href.startswith("/static")}
        paths = ["/", hostile, "/search?q=alert", *sorted(own)]
        missing = quote(f"<script>alert(9)</script> {SECRET}", safe="")
        paths += [f"/session?id={missing}", f"/tokens?id={missing}"]
        assert len(paths) >= 8, paths
        for path in paths:
            await page.goto(base + path)
            await page.wait_for_load_state("load")
            await page.wait_for_timeout(150)  # an injected handler would have fired by now
            injected = await page.evaluate(
                "() => document.querySelectorAll('script, img, iframe, object, embed, "
                "[onerror], [onload], svg[onload], b').length"
            )
            assert injected == 0, path
            html = await page.content()
            assert SECRET not in html and "Zz9Yy8Xx7Ww6" not in html
        text = await page.locator("main").inner_text()
        await page.goto(base + f"/session?id={quote(HOSTILE_ID, safe='')}")
        text = await page.locator("main").inner_text()
        assert "<script>alert(1)</script>" in text and "<img src=x onerror=alert(2)>" in text
        assert "[bold]not bold[/bold]" in text
        assert "\u27e6ESC\u27e7[31mred" in text and "\u27e6U+202E\u27e7" in text
        assert "\u202e" not in text
        assert re.search(r"sk-proj-\S*REDACTED|\[REDACTED|\*\*\*", text) or SECRET not in text
        await _shot(page, backend, "hostile")
        assert dialogs == []
        await page.close()
