"""A browser tab without a browser, for the load suite: a Streamlit client over the app's websocket.

It speaks the frontend's protocol: ``BackMsg`` protobufs ask for a script run (widget values, the page,
a fragment), ``ForwardMsg`` protobufs come back with every element as it is drawn, at its path in the
page's tree, and ``script_finished`` ends a run. Uploads go over HTTP with the session's XSRF token,
like the browser's. The server cannot tell it from a browser tab: same session, same script runs, same
upload route; only nothing is painted. (It lives with the tests, not in ``rag/lab``, because it needs
Streamlit's protocol definitions and nothing under ``rag/`` imports Streamlit.)
"""

from __future__ import annotations

import http.cookiejar
import json
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

FINISHED = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR,
            ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY}
ERROR_ALERT = 1  # Alert.Format.ERROR


@dataclass
class Drawn:
    """One element or block the server drew: its path in the page, what it is, and when (s after asking)."""

    path: tuple[int, ...]
    kind: str  # the element type ("markdown", "alert", ...) or "block:<type>" ("block:chat_message", ...)
    proto: Any
    at: float

    @property
    def text(self) -> str:
        """The text a reader would see (markdown body, alert body, expander label, text), else ""."""
        if self.kind == "block:expandable":
            return self.proto.expandable.label
        value = getattr(self.proto, self.kind, None)
        for name in ("body", "label", "message"):
            if value is not None and hasattr(value, name):
                return str(getattr(value, name))
        return ""


@dataclass
class Run:
    """What one request drew: ``segments`` holds one list per script run it caused (``st.rerun`` adds one)."""

    segments: list[list[Drawn]] = field(default_factory=list)
    seconds: float = 0.0
    auto_reruns: list[str] = field(default_factory=list)  # fragment ids the server asked to rerun

    @property
    def last(self) -> list[Drawn]:
        return self.segments[-1] if self.segments else []

    def errors(self, segment: Iterable[Drawn] | None = None) -> list[str]:
        """Exceptions and ``st.error`` alerts drawn (in ``segment``, or anywhere in the run)."""
        drawn = segment if segment is not None else [d for s in self.segments for d in s]
        return [f"{d.kind}: {d.text or d.proto}" for d in drawn
                if d.kind == "exception" or (d.kind == "alert" and d.proto.alert.format == ERROR_ALERT)]


def inside(drawn: Sequence[Drawn], block: Drawn) -> list[Drawn]:
    """The elements drawn inside ``block`` (at paths below its own)."""
    depth = len(block.path)
    return [d for d in drawn if len(d.path) > depth and d.path[:depth] == block.path]


class BrowserSession:
    """One browser tab of a Streamlit server at ``url``: runs pages, sets widgets, uploads files.

    Args:
        url: The server's root, e.g. ``http://127.0.0.1:8501``.
        timeout_s: Longest wait for any one message from the server. Defaults to 600.
    """

    def __init__(self, url: str, *, timeout_s: float = 600.0) -> None:
        import websocket  # websocket-client

        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self._cookies = http.cookiejar.CookieJar()
        self._http = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self._cookies))
        self._http.open(f"{self.url}/", timeout=timeout_s).read()
        self._http.open(f"{self.url}/_stcore/health", timeout=timeout_s).read()  # sets the XSRF cookie, as for the frontend
        self.xsrf = next((c.value for c in self._cookies if c.name == "_streamlit_xsrf"), "")
        cookie = "; ".join(f"{c.name}={c.value}" for c in self._cookies)
        self._ws = websocket.create_connection(
            self.url.replace("http", "ws", 1) + "/_stcore/stream", timeout=timeout_s,
            subprotocols=["streamlit", self.xsrf] if self.xsrf else ["streamlit"], cookie=cookie or None)
        self.pages: dict[str, str] = {}  # page title -> page_script_hash
        self.page = ""
        self.session_id = ""
        self.widgets: dict[str, list[Drawn]] = {}  # widget type -> widgets drawn by the last full run
        self._file_urls: dict[str, Any] = {}

    def close(self) -> None:
        self._ws.close()

    def run(self, widgets: Sequence[WidgetState] = (), *, page: str | None = None, fragment_id: str = "") -> Run:
        """Ask for a script run with these widget values (on ``page``, a title, or the current page)."""
        if page is not None:
            self.page = self.pages[page]
        message = BackMsg()
        state = message.rerun_script
        state.page_script_hash = self.page
        state.fragment_id = fragment_id
        state.is_auto_rerun = bool(fragment_id)
        state.widget_states.widgets.extend(widgets)
        return self._send_and_read(message, fragment=bool(fragment_id))

    def widget(self, kind: str, label: str | None = None) -> Drawn:
        """A widget the last full run drew, by type and (for most widgets) label."""
        for drawn in self.widgets.get(kind, []):
            element = getattr(drawn.proto, kind)
            if label is None or getattr(element, "label", None) == label:
                return drawn
        raise LookupError(f"no {kind} {label or ''} on the page")

    def ask(self, question: str) -> Run:
        """Type ``question`` into the chat box and press Enter."""
        state = WidgetState(id=self.widget("chat_input").proto.chat_input.id)
        state.chat_input_value.data = question
        return self.run([state])

    def upload(self, files: Sequence[tuple[str, bytes]], *, uploader: str, submit: str) -> Run:
        """Put ``(name, data)`` files in the file uploader labelled ``uploader`` and press the form's ``submit``."""
        request_id = uuid.uuid4().hex
        message = BackMsg()
        message.file_urls_request.request_id = request_id
        message.file_urls_request.file_names.extend(name for name, _ in files)
        message.file_urls_request.session_id = self.session_id
        self._ws.send_binary(message.SerializeToString())
        while request_id not in self._file_urls:
            self._receive(Run(), [])
        response = self._file_urls.pop(request_id)
        if response.error_msg:
            raise RuntimeError(f"the server refused the upload: {response.error_msg}")
        state = WidgetState(id=self.widget("file_uploader", uploader).proto.file_uploader.id)
        for (name, data), urls in zip(files, response.file_urls):
            self._put(urls.upload_url, name, data)
            info = state.file_uploader_state_value.uploaded_file_info.add()
            info.name, info.size, info.file_id = name, len(data), urls.file_id
            info.file_urls.CopyFrom(urls)
        pressed = WidgetState(id=self.widget("button", submit).proto.button.id, trigger_value=True)
        return self.run([state, pressed])

    # -- protocol -----------------------------------------------------------------------------------

    def _put(self, url: str, name: str, data: bytes) -> None:
        boundary = uuid.uuid4().hex
        body = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename={json.dumps(name)}\r\n'
                f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
        request = urllib.request.Request(url if url.startswith("http") else self.url + url, data=body, method="PUT",
                                         headers={"Content-Type": f"multipart/form-data; boundary={boundary}",
                                                  "X-Xsrftoken": self.xsrf})
        with self._http.open(request, timeout=self.timeout_s) as reply:
            if reply.status >= 300:
                raise RuntimeError(f"upload of {name} failed with HTTP {reply.status}")

    def _send_and_read(self, message: BackMsg, *, fragment: bool) -> Run:
        run = Run()
        started = time.monotonic()
        self._ws.send_binary(message.SerializeToString())
        current: list[Drawn] = []
        while True:
            status = self._receive(run, current, started)
            if status is None:
                continue
            run.segments.append(current)
            if status in FINISHED:
                break
            current = []  # the script asked for a rerun: another run follows on its own
        run.seconds = time.monotonic() - started
        if not fragment:
            self.widgets = {}
            for drawn in run.last:
                if not drawn.kind.startswith("block:") and hasattr(getattr(drawn.proto, drawn.kind, None), "id"):
                    self.widgets.setdefault(drawn.kind, []).append(drawn)
        return run

    def _receive(self, run: Run, current: list[Drawn], started: float | None = None) -> int | None:
        """Read one message; returns the script's finish status when it is ``script_finished``."""
        message = ForwardMsg()
        message.ParseFromString(self._ws.recv())
        kind = message.WhichOneof("type")
        at = time.monotonic() - (started or time.monotonic())
        if kind == "new_session":
            self.session_id = message.new_session.initialize.session_id or self.session_id
            self.page = message.new_session.page_script_hash or self.page
            self.pages.update({p.page_name: p.page_script_hash for p in message.new_session.app_pages})
        elif kind == "navigation":
            self.pages.update({p.page_name: p.page_script_hash for p in message.navigation.app_pages})
            self.page = message.navigation.page_script_hash or self.page
        elif kind == "delta":
            path = tuple(message.metadata.delta_path)
            delta = message.delta
            if delta.WhichOneof("type") == "new_element":
                current.append(Drawn(path, delta.new_element.WhichOneof("type") or "", delta.new_element, at))
            elif delta.WhichOneof("type") == "add_block":
                current.append(Drawn(path, f"block:{delta.add_block.WhichOneof('type')}", delta.add_block, at))
        elif kind == "auto_rerun":
            run.auto_reruns.append(message.auto_rerun.fragment_id)
        elif kind == "file_urls_response":
            self._file_urls[message.file_urls_response.response_id] = message.file_urls_response
        elif kind == "script_finished":
            return message.script_finished
        return None


def poll(session: BrowserSession, fragment_id: str, done: Callable[[Run], bool], *, every_s: float = 1.0,
         timeout_s: float = 600.0) -> Run:
    """Rerun a fragment every ``every_s`` (as the browser does for ``st.fragment(run_every=...)``) until ``done``."""
    deadline = time.monotonic() + timeout_s
    while True:
        run = session.run(fragment_id=fragment_id)
        if done(run) or time.monotonic() > deadline:
            return run
        time.sleep(every_s)
