"""A user's visit in a real browser: upload a real PDF, ask, open a citation, tune, compare.

The steps share one server and one tab and run in file order, like one person using the app.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.conftest import SHARED_DATA
from tests.e2e.conftest import screenshot

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PDF = SHARED_DATA / "pdfs" / "en" / "arxiv_2202.00535v1_novelty-controlled-paraphrase.pdf"
INGEST_TIMEOUT_MS = 600_000
ANSWER_TIMEOUT_MS = 600_000


def _open(page, app_url: str, path: str) -> None:
    page.goto(f"{app_url}/{path}")
    page.wait_for_selector('[data-testid="stApp"]')
    _settle(page)


def _settle(page, timeout_ms: int = 60_000) -> None:
    """Wait until Streamlit has finished the current script run (no running indicator)."""
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " || !document.querySelector('[data-testid=\"stStatusWidget\"]').innerText.includes('Running')",
        timeout=timeout_ms)


def test_upload_a_real_pdf_and_wait_until_it_is_indexed(page, app_url: str) -> None:
    if not PDF.exists():
        pytest.skip(f"{PDF} is missing: the browser test uploads a real PDF from ../shared/data")
    _open(page, app_url, "documents")
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(PDF))
    page.get_by_role("button", name="Upload and index").click()
    done = page.get_by_text(re.compile(rf"{re.escape(PDF.name)}: 12 pages, \d+ chunks \(en\)"))
    done.wait_for(timeout=INGEST_TIMEOUT_MS)
    page.get_by_text("Library (1 ready)").wait_for()
    expect(page.get_by_role("combobox", name="Inspect a document")).to_have_value(f"{PDF.name} (completed)")
    page.locator('[data-testid="stImage"] img').first.wait_for()  # the page preview
    screenshot(page, "documents")
