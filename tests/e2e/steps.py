"""Steps a user takes in the browser, shared by the e2e tests: open a page, navigate, choose an option,
upload files, ask a question, and wait for Streamlit to finish the script run each one starts."""

from __future__ import annotations

import logging
from typing import Any

from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

logger = logging.getLogger(__name__)

ANSWER_TIMEOUT_MS = 600_000


def open_page(page, app_url: str, path: str) -> None:
    """Load ``app_url/path`` and wait for its first script run to finish."""
    page.goto(f"{app_url}/{path}")
    page.wait_for_selector('[data-testid="stApp"]')
    settle(page)


def settle(page, timeout_ms: int = 60_000) -> None:
    """Wait until Streamlit has finished the current script run.

    The app root's ``data-test-script-state`` (what Streamlit's own browser tests wait on) reads
    "running" or "rerunRequested" while a run is under way. The short pause first lets a rerun that
    a click has just asked for reach that attribute, so a finished *previous* run is not mistaken
    for the new one.
    """
    page.wait_for_timeout(300)
    page.wait_for_function(
        "() => ['notRunning', 'compilationError'].includes("
        "document.querySelector('[data-testid=\"stApp\"]')?.getAttribute('data-test-script-state'))",
        timeout=timeout_ms)


def nav(page, title: str) -> None:
    """Go to a page the way a user does: its link in the sidebar navigation."""
    link = page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title)
    heading = page.get_by_role("heading", name=title, level=1)
    for attempt in range(3):  # a click that lands while a rerun redraws the sidebar can be dropped
        settle(page)
        link.click()
        try:
            heading.wait_for(timeout=20_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    settle(page)


def choose(scope, label: str, option: str | int) -> None:
    """Pick an option of a Streamlit selectbox through its drop-down, as a user does."""
    box = scope.get_by_role("combobox", name=label)
    listbox = box.page.get_by_role("listbox", name=f"{label} Open")
    choice = (listbox.get_by_role("option").nth(option) if isinstance(option, int)
              else listbox.get_by_role("option", name=option, exact=True))
    for attempt in range(3):  # a script rerun can redraw the widget and close the list under the click
        try:
            box.scroll_into_view_if_needed()
            box.click()
            listbox.wait_for(timeout=5_000)
            choice.click(timeout=5_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
            settle(box.page)
    settle(box.page)


def upload(page, files: Any) -> None:
    """Put ``files`` (``set_input_files``'s argument) in the Documents page's uploader and submit them.

    Returns once the submission took: the page lists the upload under "Indexing". A submit click that
    lands while a rerun redraws the form can be dropped (one full-suite run waited 600 s for an upload
    that never showed); the files are then still in the uploader, so the click is repeated, and a
    submission that never takes fails here, not in the wait for indexing.
    """
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(files)
    uploaded = page.locator('[data-testid="stFileChip"]').first
    uploaded.wait_for(timeout=30_000)
    expect(page.locator('[data-testid="stFileChipIconSpinner"]')).to_have_count(0, timeout=60_000)  # files sent
    indexing = page.get_by_role("heading", name="Indexing")
    for attempt in range(3):
        settle(page)
        page.get_by_role("button", name="Upload and index").click()
        try:
            indexing.wait_for(timeout=30_000)
            return
        except PlaywrightTimeout:
            if attempt == 2 or not uploaded.is_visible():
                raise
            logger.warning("the upload did not show as submitted 30 s after the click; clicking again")


def ask(page, question: str) -> None:
    """Ask in the chat box and wait for the finished reply to *this* question.

    A finished answer is redrawn from the history with its trace expander, so the reply is done when
    the last message holds "Retrieval trace" and the one before it is the question.
    """
    box = page.get_by_placeholder("Ask about your documents")
    box.fill(question)
    box.press("Enter")
    page.wait_for_function(
        """question => {
            const messages = [...document.querySelectorAll('[data-testid="stChatMessage"]')];
            return messages.length >= 2 && messages.at(-2).innerText.includes(question)
                && messages.at(-1).innerText.includes('Retrieval trace');
        }""", arg=question, timeout=ANSWER_TIMEOUT_MS)
    settle(page)
