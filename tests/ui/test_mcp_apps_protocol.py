"""The MCP Apps pieces that need no window: which tools have a view, reading a view's page, the
CSP a resource declares (and what it may never smuggle into the policy), and the bridge's
messages — pure functions, pinned here on the shapes the extension's SDK sends."""

from __future__ import annotations

import base64
import json

import pytest

from app.tools.mcp import apps_protocol as wire
from app.tools.mcp.apps import (
    APP_MIME,
    MAX_PAGE_BYTES,
    AppPage,
    NoPage,
    app_page,
    view_uri,
    visibility,
)
from app.tools.mcp.apps_csp import Csp, allowed, parse_csp, parse_origin, policy, with_policy


def test_a_tool_has_a_view_only_at_a_ui_address() -> None:
    assert (
        view_uri({"_meta": {"ui": {"resourceUri": "ui://clock/view.html"}}})
        == "ui://clock/view.html"
    )
    assert view_uri({"_meta": {"ui/resourceUri": "ui://old/flat.html"}}) == "ui://old/flat.html"
    for meta in (
        {"ui": {"resourceUri": "https://x/y.html"}},
        {"ui": {"resourceUri": 3}},
        {"ui": "x"},
        {},
    ):
        assert view_uri({"_meta": meta}) is None
    assert visibility({"_meta": {"ui": {"visibility": ["app"]}}}) == {"app"}
    assert visibility({"_meta": {"ui": {"visibility": ["nobody"]}}}) == {"model", "app"}


def test_a_page_is_the_first_mcp_app_content_with_its_own_csp() -> None:
    csp = {"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://*.cdn.net"]}
    read = {
        "contents": [
            {"uri": "ui://a", "mimeType": "text/plain", "text": "not this"},
            {
                "uri": "ui://a",
                "mimeType": APP_MIME,
                "text": "<p>hi</p>",
                "_meta": {"ui": {"csp": csp, "prefersBorder": False}},
            },
        ]
    }
    page = app_page("ui://a", read)
    assert isinstance(page, AppPage) and page.html == "<p>hi</p>" and page.prefers_border is False
    assert [o.text() for o in page.csp.connect] == ["https://api.example.com"]
    blob = {"contents": [{"mimeType": APP_MIME, "blob": base64.b64encode(b"<b>x</b>").decode()}]}
    assert app_page("ui://b", blob) == AppPage("ui://b", "<b>x</b>", Csp())
    too_big = {"contents": [{"mimeType": APP_MIME, "text": "x" * (MAX_PAGE_BYTES + 1)}]}
    for bad in (too_big, {"contents": [{"mimeType": APP_MIME, "blob": "%%%"}]}, {"contents": []}):
        assert isinstance(app_page("ui://c", bad), NoPage)


@pytest.mark.parametrize(
    "entry",
    [
        "*",
        "https://*",
        "https://a.com/path",
        "https://a.com; script-src *",
        "'unsafe-eval'",
        "https://a.com 'unsafe-eval'",
        "javascript:alert(1)",
        "file:///etc",
        "data:",
        "https://a.com:99999",
        'https://a.com" onload="x',
        "https://*.*.com",
        "ftp://a.com",
    ],
)
def test_a_declared_entry_that_is_not_an_origin_never_reaches_the_policy(entry: str) -> None:
    csp = parse_csp({"connectDomains": [entry], "resourceDomains": [entry]})
    assert csp.origins == () and csp.dropped == (entry, entry)
    assert policy(csp) == policy(Csp())


def test_the_policy_allows_what_is_declared_and_nothing_else() -> None:
    assert "connect-src 'none'" in policy(Csp()) and "default-src 'none'" in policy(Csp())
    csp = parse_csp(
        {
            "connectDomains": ["https://api.example.com", "http://127.0.0.1:8080"],
            "resourceDomains": ["https://*.cdn.net"],
        }
    )
    assert "connect-src https://api.example.com http://127.0.0.1:8080" in policy(csp)
    assert allowed(csp, "https://api.example.com/v1?q=1") and allowed(
        csp, "https://api.example.com:443/"
    )
    assert allowed(csp, "https://img.cdn.net/a.png") and not allowed(csp, "https://cdn.net/a.png")
    assert allowed(csp, "http://127.0.0.1:8080/x") and not allowed(csp, "http://127.0.0.1:8081/x")
    for url in (
        "http://api.example.com/",
        "https://api.example.com.evil.org/",
        "file:///etc/passwd",
        "https://evilcdn.net/",
        "qrc:/x",
        "https://api.example.com@evil.org/",
    ):
        assert not allowed(csp, url), url
    assert parse_origin("https://[::1]:8443") is not None


def test_the_policy_comes_before_any_markup_of_the_page() -> None:
    page = "<!DOCTYPE html>\n<html><head><script>alert(1)</script></head></html>"
    shown = with_policy(page, Csp())
    assert shown.startswith('<!DOCTYPE html><meta http-equiv="Content-Security-Policy"')
    assert shown.index("Content-Security-Policy") < shown.index("<script>")
    assert with_policy("<script>x</script>", Csp()).startswith("<meta http-equiv")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "nope",
        "[]",
        '{"jsonrpc": "1.0", "id": 1, "method": "x"}',
        '{"jsonrpc": "2.0", "method": 5}',
        '{"jsonrpc": "2.0", "id": 2, "method": "x", "params": [1]}',
        '{"jsonrpc": "2.0"}',
        "x" * (wire.MAX_MESSAGE_CHARS + 1),
    ],
)
def test_anything_a_page_sends_is_a_message_or_a_reason(text: str) -> None:
    assert isinstance(wire.parse(text), wire.Malformed)


def test_the_bridge_speaks_the_extensions_messages() -> None:
    asked = wire.parse(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "ui/initialize",
                "params": {"protocolVersion": "2026-01-26"},
            }
        )
    )
    assert asked == wire.Message("ui/initialize", {"protocolVersion": "2026-01-26"}, 0)
    context = wire.host_context("dark", {"--color-text-primary": "#fff"}, 600, 720)
    answer = json.loads(
        wire.result(
            0, wire.initialize_result(context, parse_csp({"connectDomains": ["https://a.io"]}))
        )
    )
    assert answer["result"]["protocolVersion"] == wire.PROTOCOL_VERSION == "2026-01-26"
    assert answer["result"]["hostContext"]["theme"] == "dark"
    assert answer["result"]["hostCapabilities"]["sandbox"]["csp"]["connectDomains"] == [
        "https://a.io"
    ]
    assert "message" not in answer["result"]["hostCapabilities"]
    assert wire.card_result("ok", '{"time": "noon"}')["structuredContent"] == {"time": "noon"}
    assert wire.card_result("error", "E-TOOL: no")["isError"] is True
    assert wire.call_params({"name": "add", "arguments": {"a": 1}}) == ("add", {"a": 1})
    assert isinstance(wire.call_params({"name": "add", "arguments": [1]}), str)
    assert wire.link_allowed("https://modelcontextprotocol.io/")
    for url in ("javascript:alert(1)", "file:///etc/passwd", "https://", None, "data:text/html,x"):
        assert not wire.link_allowed(url)
    assert wire.bounded(5000, 48, 720) == 720 and wire.bounded(True, 48, 720) is None
    assert wire.bounded(float("nan"), 48, 720) is None
