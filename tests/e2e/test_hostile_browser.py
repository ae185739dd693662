"""Hostile content in a real browser (issue #14): a PDF whose text is Markdown images, links, <img> and
<script>, uploaded under a name with a Markdown image, emphasis, an RTL override and a zero-width
space (plus one with HTML, which ingest refuses), and a scripted model that echoes all of it.

Every request the browser makes is logged (requests off the machine are also aborted, so a leak
cannot hang the test); at the end none may have left 127.0.0.1. After each step the DOM must hold no
<img>, <a>, <iframe> or <script> pointing at the hostile host, no alert may have fired, and the
hostile text must be visible literally. The steps share one tab and run in file order.
"""

from __future__ import annotations

import re
from typing import Iterator
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests import hostile
from tests.e2e.conftest import screenshot
from tests.e2e.steps import ask, choose, nav, open_page, settle, upload

pytestmark = [pytest.mark.integration, pytest.mark.slow]

INGEST_TIMEOUT_MS = 120_000
# anything that could fetch or navigate to the hostile host, or run script from the document
LEAKS_JS = """host => {
    const hits = [];
    for (const el of document.querySelectorAll('img, a, iframe, object, embed, source, video, audio, link, form')) {
        for (const attr of ['src', 'href', 'srcset', 'action', 'data', 'poster']) {
            const value = el.getAttribute(attr) || '';
            const live = value.includes(host) || /^(javascript|mailto|xmpp):/i.test(value);
            if (live) hits.push(el.outerHTML.slice(0, 200));
        }
    }
    for (const el of document.querySelectorAll('[style]')) {
        if (el.getAttribute('style').includes(host)) hits.push(el.outerHTML.slice(0, 200));
    }
    for (const el of document.querySelectorAll('script')) {
        if (/alert\\(/.test(el.textContent)) hits.push(el.outerHTML.slice(0, 200));
    }
    for (const el of document.querySelectorAll('img')) {
        if (el.getAttribute('onerror')) hits.push(el.outerHTML.slice(0, 200));
    }
    return hits;
}"""


class Visit:
    """One tab on the scripted app, with every request URL and dialog it saw."""

    def __init__(self, page, url: str) -> None:
        self.page, self.url = page, url
        self.requests: list[str] = []
        self.dialogs: list[str] = []

    def check_inert(self) -> None:
        """Nothing in the DOM points at the hostile host or runs the document's script."""
        assert self.page.evaluate(LEAKS_JS, hostile.HOST) == []
        assert self.dialogs == []

    def outside_requests(self) -> list[str]:
        return [url for url in self.requests if not _local(url)]


def _local(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("data", "blob", "about") or parts.hostname == "127.0.0.1"


@pytest.fixture(scope="module")
def visit(browser, scripted_app_url: str) -> Iterator[Visit]:
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    context.set_default_timeout(30_000)
    page = context.new_page()
    log = Visit(page, scripted_app_url)
    context.on("request", lambda request: log.requests.append(request.url))
    page.on("websocket", lambda socket: log.requests.append(socket.url.replace("ws://", "http://", 1)))
    page.on("dialog", lambda dialog: (log.dialogs.append(dialog.message), dialog.dismiss()))
    context.route(lambda url: not _local(url), lambda route: route.abort())
    page.goto(scripted_app_url)
    yield log
    context.close()


def test_hostile_names_and_chunk_text_show_as_text_on_the_documents_page(visit: Visit, tmp_path) -> None:
    page = visit.page
    pdf = hostile.make_hostile_pdf(tmp_path, "hostile.pdf").read_bytes()
    open_page(page, visit.url, "documents")
    upload(page, [
        {"name": hostile.HOSTILE_NAME, "mimeType": "application/pdf", "buffer": pdf},
        {"name": hostile.REJECTED_NAME, "mimeType": "application/pdf", "buffer": pdf},
    ])
    page.get_by_text(f"{hostile.SHOWN_NAME}: 1 pages", exact=False).wait_for(timeout=INGEST_TIMEOUT_MS)
    expect(page.get_by_text(f"file name “{hostile.SHOWN_REJECTED}” contains HTML", exact=False)).to_be_visible()
    page.get_by_text("Library (1 ready)").wait_for()
    settle(page)
    expect(page.get_by_role("combobox", name="Inspect a document")).to_have_value(
        f"{hostile.SHOWN_NAME} (completed)")
    # the chunk's label starts with the document's Markdown image, shown as text
    expect(page.locator('[data-testid="stExpander"] summary').filter(has_text=hostile.SECRET_IMAGE)).to_have_count(1)
    page.locator('[data-testid="stImage"] img').first.wait_for()  # the page preview (a local media URL)
    visit.check_inert()
    screenshot(page, "hostile-documents")


def test_a_hostile_answer_citation_and_trace_show_as_text(visit: Visit) -> None:
    page = visit.page
    nav(page, "Chat")
    ask(page, hostile.QUESTION)
    answer = page.locator('[data-testid="stChatMessage"]').last
    text = answer.locator('[data-testid="stMarkdownContainer"]').first.inner_text()
    for literal in hostile.ANSWER_LITERALS:
        assert literal in text, literal
    visit.check_inert()
    choose(answer, "Citation", 0)
    expect(page.get_by_role("combobox", name="Citation").last).to_have_value(
        re.compile(rf"^\[1\] {re.escape(hostile.SHOWN_NAME)} · p\. 1"))
    image = page.locator('[data-testid="stChatMessage"]').last.locator('[data-testid="stImage"] img').first
    expect(image).to_be_visible()
    expect(page.locator('[data-testid="stChatMessage"]').last.get_by_text(f"{hostile.SHOWN_NAME} · page 1")
           ).to_be_visible()
    page.get_by_text("Retrieval trace").last.click()
    settle(page)
    expect(page.locator('[data-testid="stExpander"]').filter(has_text="Candidates per stage").last).to_be_visible()
    page.get_by_text(re.compile(r"^Sources \(\d+\)$")).last.click()
    settle(page)
    expect(page.get_by_text(hostile.PDF_LINES[1], exact=False).last).to_be_visible()  # <img>, <script> as text
    visit.check_inert()
    screenshot(page, "hostile-chat")


def test_no_request_left_127_0_0_1(visit: Visit) -> None:
    assert visit.requests, "the request log is empty: the listener saw nothing"
    assert any(url.startswith(visit.url) for url in visit.requests)
    assert visit.outside_requests() == [], "\n".join(visit.outside_requests())
