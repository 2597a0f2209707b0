"""The browser tool against a real HTTP server on loopback: search, open, find, limits, offline."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from app.tools.api import ToolError
from app.tools.browser.fetch import Fetcher, FetchLimits
from app.tools.browser.search import DuckDuckGoSearch, SearxngSearch
from app.tools.browser.tool import Browser, browser_tools
from app.tools.session import ConversationTools, ToolOptions

ARTICLE = """<!doctype html><html><head><title>Harmony &amp; Tea</title>
<style>body { color: red }</style><script>var secret = "script text";</script></head>
<body><nav><a href="/">Home</a></nav>
<h1>Green tea</h1>
<p>Green tea is made from <a href="/leaves">unoxidised leaves</a> of Camellia sinensis.</p>
<ul><li>Sencha</li><li>Matcha is <b>powdered</b>.</li></ul>
<p>See also <a href="https://example.org/oolong">oolong</a> and <a href="javascript:alert(1)">nothing</a>.</p>
<noscript>enable scripts</noscript>
</body></html>"""

SEARXNG = {"results": [
    {"title": "Green tea - Wikipedia", "url": "{base}/article", "content": "Green tea is a type of tea."},
    {"title": "Not a web link", "url": "ftp://example.org/file"},
    {"title": "Tea leaves", "url": "{base}/leaves", "content": "About leaves."},
]}

DDG = """<html><body><div class="result"><h2><a class="result__a"
href="//duckduckgo.com/l/?uddg={target}&amp;rut=x">Green <b>tea</b> facts</a></h2>
<a class="result__snippet" href="#">Everything about green tea.</a></div></body></html>"""


class Site(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, body: bytes, content_type: str = "text/html; charset=utf-8", status: int = 200,
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        Site.hits.append(self.path)
        base = f"http://127.0.0.1:{self.server.server_address[1]}"
        path = urllib.parse.urlsplit(self.path).path
        if path == "/article":
            self._send(ARTICLE.encode())
        elif path == "/leaves":
            self._send(b"Leaves\n    indented line\nlast", "text/plain; charset=utf-8")
        elif path == "/search":
            self._send(json.dumps(SEARXNG).replace("{base}", base).encode(), "application/json")
        elif path == "/ddg/":
            target = urllib.parse.quote(f"{base}/article", safe="")
            self._send(DDG.replace("{target}", target).encode())
        elif path == "/big":
            self._send(b"<p>" + b"word " * 100_000 + b"</p>")
        elif path == "/slow":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            for _ in range(40):
                self.wfile.write(b"tick\n")
                self.wfile.flush()
                time.sleep(0.1)
        elif path == "/trickle-headers":  # a status line, then one header byte at a time
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            for _ in range(600):
                self.wfile.write(b"X")
                self.wfile.flush()
                time.sleep(0.05)
        elif path == "/trickle-body":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            for _ in range(600):
                self.wfile.write(b".")
                self.wfile.flush()
                time.sleep(0.05)
        elif path == "/klingon":
            self._send(b"<p>qaStaH nuq?</p>", "text/html; charset=x-klingon")
        elif path == "/one-long-line":
            self._send(b"<p>" + b"x" * 300_000 + b"</p>")
        elif path == "/loop":
            self._send(b"", status=302, headers={"Location": "/loop"})
        elif path == "/moved":
            self._send(b"", status=301, headers={"Location": "/article"})
        elif path == "/image":
            self._send(b"\x89PNG....", "image/png")
        else:
            self._send(b"not here", "text/plain", status=404)


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def browser(site: str, **fetch: Any) -> Browser:
    fetcher = Fetcher(allow_private=True, **fetch)
    return Browser(fetcher, SearxngSearch(site, fetcher))


def test_search_open_a_result_follow_a_link_and_find(site: str) -> None:
    b = browser(site)
    results = b.search("green tea", topn=5)
    assert results.startswith("[0] Search results for “green tea” (searxng)")
    assert "* 【0†Green tea - Wikipedia†127.0.0.1】" in results and "Not a web link" not in results
    page = b.open(id=0, cursor=0)
    assert page.startswith(f"[1] Harmony & Tea ({site}/article)\n**viewing lines [0 - ")
    assert "L1: # Green tea" in page and "* Sencha" in page and "* Matcha is powdered." in page
    assert "script text" not in page and "color: red" not in page and "enable scripts" not in page
    assert "【1†unoxidised leaves†127.0.0.1】" in page and "【2†oolong†example.org】" in page
    assert "nothing" in page and "javascript" not in page  # a non-web link is text, not a link
    leaves = b.open(id=1, cursor=1)
    assert leaves.startswith(f"[2] {site}/leaves") and "L1:     indented line" in leaves
    found = b.find("matcha", cursor=1)
    assert found.startswith("[3] Find results for text: `matcha` in `Harmony & Tea`")
    assert "【0†match at L" in found and "Matcha is powdered." in found
    assert "No `find` results" in b.find("coffee", cursor=1)
    scrolled = b.open(cursor=1, loc=2, num_lines=1)
    assert "**viewing lines [2 - 2] of" in scrolled and scrolled.count("\nL") == 1


def test_duckduckgo_results_unwrap_their_redirect_links(site: str) -> None:
    fetcher = Fetcher(allow_private=True)
    results = DuckDuckGoSearch(fetcher, base_url=f"{site}/ddg/").search("green tea", 3)
    assert [(r.title, r.url, r.snippet) for r in results] == [
        ("Green tea facts", f"{site}/article", "Everything about green tea.")
    ]


def test_limits_and_failures_are_clear_tool_errors(site: str) -> None:
    b = browser(site, limits=FetchLimits(max_bytes=20_000, timeout_s=1.0, max_redirects=3))
    big = b.open(f"{site}/big")
    assert "the rest was cut" in big
    with pytest.raises(ToolError, match="did not finish within 1 s") as slow:
        b.open(f"{site}/slow")
    assert slow.value.code == "E-NETWORK"
    with pytest.raises(ToolError, match="more than 3 redirects"):
        b.open(f"{site}/loop")
    assert b.open(f"{site}/moved").startswith(f"[1] Harmony & Tea ({site}/article)")
    with pytest.raises(ToolError, match="image/png"):
        b.open(f"{site}/image")
    with pytest.raises(ToolError, match="answered 404"):
        b.open(f"{site}/missing")
    with pytest.raises(ToolError, match="http and https addresses only"):
        b.open("file:///etc/passwd")
    with pytest.raises(ToolError, match="no link 99"):
        b.open(id=99, cursor=0)
    with pytest.raises(ToolError, match="no page with cursor 7"):
        b.find("x", cursor=7)
    with pytest.raises(ToolError, match="cannot open"):
        b.open("http://127.0.0.1:9/")  # nothing listens on the discard port


def test_loopback_is_refused_unless_allowed(site: str) -> None:
    hits = len(Site.hits)
    b = Browser(Fetcher(), None)
    with pytest.raises(ToolError, match="on this machine or the local network"):
        b.open(f"{site}/article")
    with pytest.raises(ToolError, match="no search provider"):
        b.search("tea")
    assert len(Site.hits) == hits


def test_an_offline_conversation_never_reaches_the_network(site: str) -> None:
    hits = len(Site.hits)
    options = ToolOptions(enabled=("browser",), offline=True, search="searxng", searxng_url=site,
                          allow_private_addresses=True)
    with ConversationTools(options) as tools:
        search = tools.registry.get("browser.search")
        open_ = tools.registry.get("browser.open")
        assert search is not None and open_ is not None
        for run in (lambda: search.function(query="tea"), lambda: open_.function(id=f"{site}/article")):
            with pytest.raises(ToolError, match="offline") as refused:
                run()
            assert refused.value.code == "E-OFFLINE"
    assert len(Site.hits) == hits


def test_the_tools_validate_their_arguments_and_reply_as_text(site: str) -> None:
    tools = {t.qualified_name: t for t in browser_tools(browser(site))}
    assert set(tools) == {"browser.search", "browser.open", "browser.find"}
    assert all(t.text_reply and t.channel == "analysis" for t in tools.values())
    assert tools["browser.search"].risk.value == "network" and tools["browser.find"].risk.value == "read-only"
    args = tools["browser.open"].parse_arguments({"id": f"{site}/article", "loc": 0}).model_dump()
    assert tools["browser.open"].function(**args).startswith("[0] Harmony & Tea")
    as_text_id = tools["browser.open"].parse_arguments({"id": "1", "cursor": 0}).model_dump()
    assert tools["browser.open"].function(**as_text_id).startswith(f"[1] {site}/leaves")


def _stub(answers: dict[str, list[str]], calls: list[str]) -> Any:
    def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        return answers[host] if len(calls) == 1 else ["127.0.0.1"]  # rebinds after the check
    return resolve


def test_dns_rebinding_connects_to_the_checked_address(site: str) -> None:
    port = urllib.parse.urlsplit(site).port
    hits, calls = len(Site.hits), []
    fetcher = Fetcher(resolve=_stub({"rebind.test": ["192.0.2.1"]}, calls))
    with pytest.raises(ToolError, match="not public"):  # a documentation address: refused
        fetcher.fetch(f"http://rebind.test:{port}/article")
    calls.clear()
    public = Fetcher(resolve=_stub({"rebind.test": ["93.184.216.34"]}, calls), limits=FetchLimits(timeout_s=2))
    with pytest.raises(ToolError):  # the checked public address is unreachable here
        public.fetch(f"http://rebind.test:{port}/article")
    assert calls == ["rebind.test"] and len(Site.hits) == hits  # resolved once; loopback never hit
    pinned = Fetcher(allow_private=True, resolve=lambda h, p: ["127.0.0.1"])
    assert "Green tea" in pinned.fetch(f"http://rebind.test:{port}/article").text


@pytest.mark.parametrize("address", ["100.64.0.1", "100.127.255.254", "::ffff:127.0.0.1", "::1",
                                     "64:ff9b::7f00:1", "2002:7f00:1::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2",
                                     "0.0.0.0", "169.254.169.254", "fd00::1", "224.0.0.1", "10.1.2.3"])
def test_every_non_global_address_is_refused(address: str) -> None:
    fetcher = Fetcher(resolve=lambda h, p: ["93.184.216.34", address])
    with pytest.raises(ToolError, match="not public"):
        fetcher.fetch("http://mixed.test/")


@pytest.mark.parametrize("path", ["/trickle-headers", "/trickle-body"])
def test_a_trickling_server_is_cut_at_the_deadline(site: str, path: str) -> None:
    fetcher = Fetcher(allow_private=True, limits=FetchLimits(timeout_s=1.5))
    with pytest.raises(ToolError, match=r"within 1\.5 s"):  # the server would trickle for 30 s
        fetcher.fetch(f"{site}{path}")


def test_unknown_charsets_and_page_views_are_bounded(site: str) -> None:
    b = Browser(Fetcher(allow_private=True), None)
    with pytest.raises(ToolError, match="charset 'x-klingon'"):
        b.open(f"{site}/klingon")
    from app.tools.browser.page import MAX_VIEW_CHARS

    view = b.open(f"{site}/one-long-line")
    assert len(view) < MAX_VIEW_CHARS + 1_000 and f"stops at {MAX_VIEW_CHARS} characters" in view
    big = b.open(f"{site}/big", num_lines=500)
    assert len(big) < MAX_VIEW_CHARS + 1_000


def test_the_process_exits_while_a_fetch_is_pending(site: str) -> None:
    import subprocess
    import sys

    script = (
        "import threading, time\n"
        "from app.tools.browser.fetch import Fetcher, FetchLimits\n"
        "f = Fetcher(allow_private=True, limits=FetchLimits(timeout_s=3600))\n"
        "import concurrent.futures as cf\n"
        "pool = cf.ThreadPoolExecutor(1)\n"
        f"pool.submit(f.fetch, {site + '/trickle-body'!r})\n"
        "time.sleep(1)\n"
        "print('leaving', flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=25)
    assert done.returncode == 0 and "leaving" in done.stdout
