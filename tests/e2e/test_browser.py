"""A user's visit in a real browser: upload a PDF, ask, open a citation, tune, compare.

The steps share one server and one tab and run in file order, like one person using the app.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from tests import fixtures
from tests.conftest import SHARED_DATA
from tests.e2e.conftest import screenshot

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REAL_PDF = SHARED_DATA / "pdfs" / "en" / "arxiv_2202.00535v1_novelty-controlled-paraphrase.pdf"


@dataclass(frozen=True)
class Visit:
    """The document a user uploads and the three questions they ask about it."""

    pdf: Path
    pages: int
    questions: tuple[str, str, str]  # chat, chat after the settings change, compare


@pytest.fixture(scope="module")
def visit(tmp_path_factory: pytest.TempPathFactory) -> Visit:
    """The real paper from ../shared/data; in a clone without it, the suite's own generated report,
    so the browser flow is still tested end to end."""
    if REAL_PDF.exists():
        return Visit(REAL_PDF, 12, ("What does RAPT stand for, and what is it used for?",
                                    "How is novelty controlled in NC-RAPT?",
                                    "What datasets were used in the experiments?"))
    pdf = fixtures.make_english_pdf(tmp_path_factory.mktemp("e2e-pdf"))
    return Visit(pdf, 3, ("What is the maximum daily dose of ibuprofen for adults?",
                          "How quickly did headache pain decrease?",
                          "What did each participant keep a diary of?"))


INGEST_TIMEOUT_MS = 600_000
ANSWER_TIMEOUT_MS = 600_000


def _open(page, app_url: str, path: str) -> None:
    page.goto(f"{app_url}/{path}")
    page.wait_for_selector('[data-testid="stApp"]')
    _settle(page)


def _settle(page, timeout_ms: int = 60_000) -> None:
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


def test_upload_a_real_pdf_and_wait_until_it_is_indexed(page, app_url: str, visit: Visit) -> None:
    pdf = visit.pdf
    _open(page, app_url, "documents")
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(pdf))
    page.get_by_role("button", name="Upload and index").click()
    done = page.get_by_text(re.compile(rf"{re.escape(pdf.name)}: {visit.pages} pages, \d+ chunks \(en\)"))
    done.wait_for(timeout=INGEST_TIMEOUT_MS)
    page.get_by_text("Library (1 ready)").wait_for()
    expect(page.get_by_role("combobox", name="Inspect a document")).to_have_value(f"{pdf.name} (completed)", timeout=30_000)
    page.locator('[data-testid="stImage"] img').first.wait_for()  # the page preview
    screenshot(page, "documents")


def _nav(page, title: str) -> None:
    """Go to a page the way a user does: its link in the sidebar navigation."""
    link = page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title)
    heading = page.get_by_role("heading", name=title, level=1)
    for attempt in range(3):  # a click that lands while a rerun redraws the sidebar can be dropped
        _settle(page)
        link.click()
        try:
            heading.wait_for(timeout=20_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    _settle(page)


def _choose(scope, label: str, option: str | int) -> None:
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
            _settle(box.page)
    _settle(box.page)


def _ask(page, question: str) -> None:
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
    _settle(page)


def test_ask_and_open_a_citation_on_its_highlighted_page(page, app_url: str, visit: Visit) -> None:
    _nav(page, "Chat")
    _ask(page, visit.questions[0])
    answer = page.locator('[data-testid="stChatMessage"]').last
    # every cited sentence carries its [n] marker in the answer text
    expect(answer.locator('[data-testid="stMarkdownContainer"]').first).to_contain_text(re.compile(r"\[\d\]"))
    _choose(answer, "Citation", 0)
    _settle(page)
    image = page.locator('[data-testid="stChatMessage"]').last.locator('[data-testid="stImage"] img').first
    expect(image).to_be_visible()
    assert image.evaluate("img => img.naturalWidth") > 300  # a rendered page, not a broken image
    expect(page.locator('[data-testid="stChatMessage"]').last.get_by_text(re.compile(r"page \d+"))).not_to_have_count(0)
    screenshot(page, "chat")


def test_a_settings_slider_change_shows_in_the_next_answers_trace(page, app_url: str, visit: Visit) -> None:
    _nav(page, "Settings")
    slider = page.get_by_role("slider", name="Top-k")
    slider.focus()
    slider.press("Home")  # 1
    slider.press("ArrowRight")  # 2
    expect(slider).to_have_value("2")
    page.get_by_role("button", name="Apply settings").click()
    page.get_by_text("Applied 1 change(s).").wait_for()  # drawn by the rerun that follows the apply
    _settle(page)
    screenshot(page, "settings")

    _nav(page, "Chat")
    _ask(page, visit.questions[1])
    page.get_by_text("Retrieval trace").last.click()
    trace = page.locator('[data-testid="stExpander"]').filter(has_text="Candidates per stage").last
    expect(trace.get_by_text(re.compile(r"^Settings: top_k 2 · "))).to_be_visible()
    # top_k 2 cut the candidates to two (or fewer, when fewer were found) before the context budget had its say
    counts = trace.get_by_text(re.compile(r"^Candidates per stage: ")).inner_text()
    found = int(re.search(r"(\d+) · final \d+$", counts).group(1))  # what the stage before "final" passed on
    top = min(2, found)
    expect(trace.get_by_text(re.compile(rf"^final: [1-{top}] of the top {top} fit the \d+-token context budget$"))
           ).to_be_visible()


def test_compare_answers_one_question_under_two_settings_side_by_side(page, app_url: str, visit: Visit) -> None:
    _nav(page, "Compare")
    for label, preset in (("Settings A", "Default"), ("Settings B", "Vector only")):
        _choose(page, label, preset)
    page.get_by_label("Question").fill(visit.questions[2])
    page.get_by_role("button", name="Compare").click()
    side_by_side = page.get_by_role("heading", name="Side by side")
    side_by_side.wait_for(timeout=ANSWER_TIMEOUT_MS)
    _settle(page, timeout_ms=ANSWER_TIMEOUT_MS)
    expect(page.get_by_text("Retrieval trace")).to_have_count(2)
    screenshot(page, "compare")


def test_evaluation_and_every_page_render_without_errors(page, app_url: str) -> None:
    for title in ("Evaluation", "Documents", "Settings"):
        _nav(page, title)
        expect(page.locator('[data-testid="stException"]')).to_have_count(0)
    _nav(page, "Evaluation")
    screenshot(page, "evaluation")
