"""MCP Apps in the window, for real: the npm example server's app (`mcp-server-basic-vanillajs`)
rendered in its sandboxed view and talking over the bridge, and a server built here with the
SDK whose pages probe their sandbox — the network (a loopback server this test runs counts what
reaches it), the user's files (a file this test writes), another server's storage — and call a
tool through the host, which waits for the person's approval.

Qt WebEngine's Chromium is started by the first view: `chromium_flags` sets
QTWEBENGINE_CHROMIUM_FLAGS for it here (`--disable-gpu`: the offscreen platform has none; and
`--no-sandbox` only when the tests run as root, where Chromium's own sandbox cannot start),
never for the app. Its warnings that there is no OpenGL offscreen are ignored. The example's
screenshots (light and dark) go to $HARMONY_DESK_SHOTS when it is set.
"""

from __future__ import annotations

import base64
import concurrent.futures as cf
import http.server
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.controllers.approvals import WindowApprovals
from app.controllers.mcp_apps import AppPage, NoPage, PoolHost
from app.secrets import Secrets
from app.tools.mcp.apps_protocol import card_result
from app.tools.mcp.config import McpServer
from app.tools.mcp.tools import McpPool
from app.ui import mcp_apps, theme
from tests.npm_servers import command

pytestmark = [
    pytest.mark.qt_log_ignore(
        "QRhiGles2", "Failed to create RHI", "GPUInfo not initialized", "Unable to detect GPU"
    ),
]
SERVER = str(Path(__file__).resolve().parents[1] / "fixtures" / "mcp_apps_server.py")
SHOTS_ENV = "HARMONY_DESK_SHOTS"  # a folder for the rendered app's screenshots (else tmp_path)
WAIT_MS = 20_000
GIF = base64.b64decode("R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==")


@pytest.fixture(scope="module")
def chromium_flags() -> Iterator[None]:
    if not mcp_apps.available():
        pytest.skip("Qt WebEngine is not installed (pip install harmony-desk[apps])")
    flags = ["--disable-gpu"] + (["--no-sandbox"] if os.geteuid() == 0 else [])
    before = os.environ.get("QTWEBENGINE_CHROMIUM_FLAGS")
    os.environ["QTWEBENGINE_CHROMIUM_FLAGS"] = " ".join(flags)
    yield
    if before is None:
        os.environ.pop("QTWEBENGINE_CHROMIUM_FLAGS", None)
    else:
        os.environ["QTWEBENGINE_CHROMIUM_FLAGS"] = before


class Loopback(http.server.ThreadingHTTPServer):
    """A loopback HTTP server that keeps the path of every request it sees."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                outer.seen.append(self.path)
                image = self.path.endswith("/img")
                body = GIF if image else b"reached"
                self.send_response(200)
                self.send_header("Content-Type", "image/gif" if image else "text/plain")
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *_args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture(scope="module")
def loopback() -> Iterator[Loopback]:
    server = Loopback()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def secret_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("private") / "diary.txt"
    path.write_text("the-words-no-app-may-read")
    return path


@pytest.fixture(scope="module")
def pool(loopback: Loopback, secret_file: Path) -> Iterator[McpPool]:
    def probe(name: str) -> McpServer:
        args = (SERVER, "--name", name, "--loopback", loopback.url, "--secret", str(secret_file))
        return McpServer(command=sys.executable, args=args)

    servers = {"probe-a": probe("a"), "probe-b": probe("b")}
    made = McpPool(lambda: dict(servers), Secrets())
    yield made
    made.close()


def _host(pool: McpPool, server: str, approvals: WindowApprovals | None = None) -> PoolHost:
    return PoolHost(pool, server, approvals or WindowApprovals(), lambda: "conversation-1")


def _off_gui(qtbot: Any, work: Callable[[], Any]) -> Any:
    """`work` on a thread of its own while the GUI thread runs, as the window does it."""
    done: cf.Future[Any] = cf.Future()
    threading.Thread(target=lambda: done.set_result(work()), daemon=True).start()
    qtbot.waitUntil(done.done, timeout=WAIT_MS * 3)
    return done.result()


def _page(qtbot: Any, host: PoolHost, tool: str) -> tuple[AppPage, dict[str, Any]]:
    view = _off_gui(qtbot, lambda: host.view(tool))
    assert view is not None, f"{tool} declares no view"
    page = _off_gui(qtbot, lambda: host.page(view[0]))
    assert isinstance(page, AppPage), page
    return page, view[1]


@pytest.fixture
def views(qtbot: Any) -> Iterator[list[Any]]:
    """The test's views, kept alive by it and deleted on the GUI thread after it (a view left to
    Python's collector could be destroyed on another thread, which Chromium does not allow)."""
    made: list[Any] = []
    yield made
    gone: list[bool] = []
    for view in made:
        view.close_view()
        view.destroyed.connect(lambda: gone.append(True))
        view.deleteLater()
    qtbot.waitUntil(lambda: len(gone) == len(made), timeout=WAIT_MS)
    made.clear()


def _show(qtbot: Any, views: list[Any], host: PoolHost, tool: str) -> Any:
    from app.ui.mcp_apps.view import McpAppView

    page, listed = _page(qtbot, host, tool)
    view = McpAppView(host, page, listed)
    views.append(view)
    view.resize(640, 480)
    view.show()
    return view


def _report(qtbot: Any, view: Any, probe: str) -> dict[str, Any]:
    """The probe's report (its log message), waited for."""
    heard: list[dict[str, Any]] = []

    def said(params: dict[str, Any]) -> None:
        data = params.get("data")
        if isinstance(data, dict) and data.get("probe") in (probe, "failed"):
            heard.append(data)

    view.session.logged.connect(said)
    qtbot.waitUntil(lambda: bool(heard), timeout=WAIT_MS)
    assert heard[0]["probe"] == probe, heard[0]
    return heard[0]


def test_the_example_app_renders_and_shows_the_tool_result(
    qtbot: Any, views: list[Any], chromium_flags: None, tmp_path: Path
) -> None:
    basic = McpServer(command=command("mcp-server-basic-vanillajs")[0], args=("--stdio",))
    pool = McpPool(lambda: {"basic": basic}, Secrets())
    try:
        host = _host(pool, "basic")
        assert host.tool_of("basic__get_time") == "get-time"
        page, listed = _page(qtbot, host, "get-time")
        assert page.uri == "ui://get-time/mcp-app.html" and page.csp.origins == ()
        from app.ui.mcp_apps.view import McpAppView

        view = McpAppView(host, page, listed)
        views.append(view)
        view.resize(640, 480)
        view.show()
        with qtbot.waitSignals(
            [view.sandbox.loadFinished, view.session.initialized], timeout=WAIT_MS
        ):
            pass
        time = "2026-01-26T12:00:00.000Z"
        view.tell_input({})
        view.tell_result(card_result("ok", json.dumps({"time": time})))
        shown: list[str] = []
        qtbot.waitUntil(lambda: _text(qtbot, view, shown, "server-time") == time, timeout=WAIT_MS)
        qtbot.waitUntil(lambda: view.web.height() > 300, timeout=WAIT_MS)  # the height it asked
        shots = Path(os.environ.get(SHOTS_ENV) or tmp_path)
        shots.mkdir(parents=True, exist_ok=True)
        assert _text_shown(qtbot, view, "server-time", dark=False)
        _shoot(qtbot, view, shots / "mcp-app-light.png", dark=False)
        _dark(qtbot, view)
        assert _text_shown(qtbot, view, "server-time", dark=True)  # light on dark, as painted
        _shoot(qtbot, view, shots / "mcp-app-dark.png", dark=True)
    finally:
        theme.set_current(theme.LIGHT)
        pool.close()


def _text(qtbot: Any, view: Any, box: list[str], element: str) -> str:
    script = f"(document.getElementById({json.dumps(element)}) || {{}}).textContent || ''"
    view.sandbox.runJavaScript(script, 0, lambda value: box.append(str(value)))
    qtbot.waitUntil(lambda: bool(box), timeout=WAIT_MS)
    return box.pop()


def _dark(qtbot: Any, view: Any) -> None:
    """The window turns dark: the app is told, and its page turns dark."""
    theme.set_current(theme.DARK)
    view.theme_changed()
    box: list[str] = []
    script = "document.documentElement.dataset.theme || document.documentElement.style.colorScheme"
    qtbot.waitUntil(lambda: _js(qtbot, view, box, script) == "dark", timeout=WAIT_MS)


def _js(qtbot: Any, view: Any, box: list[str], script: str) -> str:
    view.sandbox.runJavaScript(script, 0, lambda value: box.append(str(value)))
    qtbot.waitUntil(lambda: bool(box), timeout=WAIT_MS)
    return box.pop()


def _text_shown(qtbot: Any, view: Any, element: str, dark: bool) -> bool:
    """Whether the grab shows element `element`'s text in the theme (light text on a dark
    ground, or dark on light) once the page has painted it (a frame grabbed before the page
    repainted keeps the old colour)."""
    box: list[str] = []
    script = (f"JSON.stringify(document.getElementById({json.dumps(element)})"
              ".getBoundingClientRect())")
    rect = json.loads(_js(qtbot, view, box, script))
    ratio = view.web.devicePixelRatioF()

    def inked() -> bool:
        shot = view.web.grab().toImage()
        xs = range(int(rect["left"] * ratio), int(rect["right"] * ratio))
        ys = range(int(rect["top"] * ratio), int(rect["bottom"] * ratio))
        light = sorted(shot.pixelColor(x, y).lightness() for x in xs for y in ys)
        if not light:
            return False
        ground = light[len(light) // 2]  # most of a line of text is its background
        return ground < 100 and light[-1] > 180 if dark else ground > 155 and light[0] < 80

    qtbot.waitUntil(inked, timeout=WAIT_MS)
    return True


def _shoot(qtbot: Any, view: Any, path: Path, dark: bool) -> None:
    """A grab of the view once its page is painted in the theme (its corner's lightness) down to
    its bottom (the page is as tall as its content: a frame painted before it grew is blank
    there)."""

    def painted() -> bool:
        shot = view.web.grab().toImage()
        corner = shot.pixelColor(shot.width() - 30, shot.height() - 4).lightness()
        row = [shot.pixelColor(x, shot.height() - 30).lightness() for x in range(shot.width())]
        content = any(abs(value - corner) > 60 for value in row)
        return content and (corner < 100 if dark else corner > 155)

    try:
        qtbot.waitUntil(painted, timeout=WAIT_MS)
    finally:
        assert view.web.grab().save(str(path)), path


def test_a_page_reaches_no_address_its_csp_does_not_declare(
    qtbot: Any, views: list[Any], chromium_flags: None, pool: McpPool, loopback: Loopback
) -> None:
    closed = _report(qtbot, _show(qtbot, views, _host(pool, "probe-a"), "net_closed"), "net")
    assert closed["fetch"] != "reached" and closed["xhr"] != "reached", closed
    assert closed["img"] == closed["script"] == closed["style"] == "error", closed
    assert closed["ws"] == "error", closed  # a beacon says only that it was queued: see below
    assert loopback.seen == [], f"the loopback server was reached: {loopback.seen}"
    # the same page, with the loopback origin declared: it reaches it (the check can see)
    opened = _report(qtbot, _show(qtbot, views, _host(pool, "probe-a"), "net_open"), "net")
    assert opened["fetch"] == "reached" and opened["img"] == "loaded", opened
    assert {"/fetch", "/img"} <= set(loopback.seen), loopback.seen
    assert not {"/frame", "/popup", "/navigate"} & set(loopback.seen), loopback.seen


def test_a_page_cannot_read_the_users_files(
    qtbot: Any, views: list[Any], chromium_flags: None, pool: McpPool, secret_file: Path
) -> None:
    view = _show(qtbot, views, _host(pool, "probe-a"), "files")
    report = _report(qtbot, view, "files")
    assert "the-words-no-app-may-read" not in json.dumps(report), report
    assert report["img"] == "error" and report["fetch"] != report["xhr"] != "", report


def test_a_servers_view_never_sees_another_servers_storage(
    qtbot: Any, views: list[Any], chromium_flags: None, pool: McpPool
) -> None:
    first = _report(qtbot, _show(qtbot, views, _host(pool, "probe-a"), "storage"), "storage")
    assert first["local"] is None and first["cookie"] == "", first
    again = _report(qtbot, _show(qtbot, views, _host(pool, "probe-a"), "storage"), "storage")
    assert again["local"] == "a", again  # the same server's views share its storage
    other = _report(qtbot, _show(qtbot, views, _host(pool, "probe-b"), "storage"), "storage")
    assert other["local"] is None and other["session"] is None and other["cookie"] == "", other


@pytest.mark.parametrize(("button", "answer"), [("Run", "5"), ("Deny", None)])
def test_a_call_from_the_app_waits_for_the_persons_approval(
    qtbot: Any,
    views: list[Any],
    chromium_flags: None,
    pool: McpPool,
    button: str,
    answer: str | None,
) -> None:
    approvals = WindowApprovals()
    before = len(pool.logs["probe-a"])

    def calls() -> list[str]:
        return [line for line in list(pool.logs["probe-a"])[before:] if "add: called" in line]

    view = _show(qtbot, views, _host(pool, "probe-a", approvals), "caller")
    early: list[Any] = []
    view.session.logged.connect(early.append)
    qtbot.waitUntil(view.asks.isVisible, timeout=WAIT_MS)
    assert "add · probe-a" in view.asks.words.text() and '"a": 2' in view.asks.words.text()
    assert calls() == [] and early == []  # nothing ran, the page has no answer: it waits
    view.asks.press(button)
    result = _report(qtbot, view, "caller")["result"]
    if answer is None:
        assert result["isError"] is True, result
        assert "did not allow" in result["content"][0]["text"]
        assert len(calls()) == 1 and "asked: denied" in calls()[0], calls()
    else:
        assert result.get("isError") is not True and result["content"][0]["text"] == answer
        assert len(calls()) == 1 and "(asked: allowed), ok" in calls()[0], calls()
    assert view.asks.isHidden()


def test_a_view_reads_its_own_servers_resource_through_the_host(
    qtbot: Any, views: list[Any], chromium_flags: None, pool: McpPool
) -> None:
    report = _report(qtbot, _show(qtbot, views, _host(pool, "probe-a"), "reader"), "reader")
    contents = report["result"]["contents"]
    assert contents[0]["uri"] == "notes://hello" and contents[0]["text"] == "hello from the server"


def test_no_page_is_a_sentence(chromium_flags: None, pool: McpPool) -> None:
    host = _host(pool, "probe-a")
    assert host.view("add") is None  # a tool without a view
    missing = host.page("ui://probe/none.html")
    assert isinstance(missing, NoPage) and missing.reason
