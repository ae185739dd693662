"""A tab opened at a page's own URL on a server that has just started (a bookmark, or a tab that reconnects
after a restart) gets the app's layout and navigation, not Streamlit's folder-of-pages mode."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot
from tests.e2e.steps import settle

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_a_page_opened_first_on_a_fresh_server_has_the_apps_navigation_and_layout(browser, scripted_app_url: str) -> None:
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    try:
        page.goto(f"{scripted_app_url}/documents")  # the server's first session: no app.py run before it
        page.get_by_role("heading", name="Documents", level=1).wait_for(timeout=60_000)
        settle(page)
        navigation = page.locator('[data-testid="stSidebarNav"]')
        expect(navigation.get_by_role("link", name="Documents", exact=True)).to_be_visible()
        expect(navigation.get_by_role("link", name="app", exact=True)).to_have_count(0)
        # the app's wide layout: the main block spans most of the window, not Streamlit's centred column
        width = page.locator('[data-testid="stMainBlockContainer"]').evaluate("e => e.getBoundingClientRect().width")
        screenshot(page, "first-visit-documents")
        assert width > 900, width
    finally:
        context.close()
