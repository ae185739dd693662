"""Real-browser end-to-end tests: Debian chromium driven by Playwright against ``streamlit run``.

One Streamlit server per test module, on a free 127.0.0.1 port, with its own data folder: the real
bundled embedders and the embedded LLM (``app_url``), or a scripted LLM and hash embeddings when a
test needs to know exactly what the model writes (``scripted_app_url``). The fast bundled model
(Qwen2.5 0.5B) and a short answer budget keep each answer under a minute on 2 cores; the default
1.5B model is exercised by tests/integration. Screenshots go to ``artifacts/screenshots/`` (git-ignored) for CI to keep.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync"]
SERVER_START_TIMEOUT_S = 120

logger = logging.getLogger(__name__)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(url: str, process: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with {process.returncode}:\n{log_path.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"streamlit did not become healthy in {SERVER_START_TIMEOUT_S} s:\n{log_path.read_text()[-4000:]}")


@contextmanager
def serve(home: Path, command: list[str], env: dict[str, str], log_name: str) -> Iterator[str]:
    """Run a Streamlit server ``command`` (its options get a free loopback port) until the block ends;
    yields its URL. The server log is copied next to the screenshots for CI to keep."""
    port = _free_port()
    log_path = home / "streamlit.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [*command, "--server.address", "127.0.0.1", "--server.port", str(port), "--server.headless", "true",
             "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process, log_path)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        server_log = ARTIFACTS.parent / log_name
        server_log.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(log_path, server_log)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failed browser step leaves a screenshot of what the page showed (``failed-<test>.png``)."""
    outcome = yield
    report = outcome.get_result()
    args = getattr(item, "funcargs", {})
    tab = args.get("page") or getattr(args.get("visit"), "page", None)  # the hostile visit holds its own tab
    if report.when == "call" and report.failed and tab is not None:
        try:
            logger.warning("page at failure: %s", screenshot(tab, f"failed-{item.name}"))
        except Exception as exc:  # noqa: BLE001 - a closed tab must not hide the test's own failure
            logger.warning("no screenshot of the failure: %s", exc)


def _require_chromium() -> None:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: scripts/setup.sh --test installs Debian chromium")


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``streamlit run app.py`` on a free loopback port with a fresh data folder."""
    _require_chromium()
    home = tmp_path_factory.mktemp("e2e")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RAG_DATA_DIR": str(home / "data"),
           "RAG_LLM__EMBEDDED_MODEL": "qwen2.5-0.5b-instruct", "RAG_GENERATION__MAX_ANSWER_TOKENS": "96"}
    env.pop("RAG_CONFIG", None)
    with serve(home, [sys.executable, "-m", "streamlit", "run", "app.py"], env, "streamlit-e2e.log") as url:
        yield url


@pytest.fixture(scope="module")
def scripted_app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app with a scripted LLM and hash embeddings (``tests/e2e/scripted_server.py``), so that what
    the model writes is known exactly; a fresh data folder."""
    _require_chromium()
    home = tmp_path_factory.mktemp("e2e-scripted")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RAG_DATA_DIR": str(home / "data")}
    env.pop("RAG_CONFIG", None)
    with serve(home, [sys.executable, "-m", "tests.e2e.scripted_server"], env, "streamlit-e2e-scripted.log") as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture(scope="module")
def page(browser, app_url: str) -> Iterator[object]:
    """One tab for the module: the tests are steps of one user's visit, run in file order.

    Module scope on purpose: Playwright's sync API keeps an asyncio loop running on the main thread
    while it is open, which would break later tests that call ``asyncio.run``.
    """
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    context.set_default_timeout(30_000)
    tab = context.new_page()
    tab.goto(app_url)
    yield tab
    context.close()


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
