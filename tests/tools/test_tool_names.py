"""Readable tool names: the name a person reads agrees with the function name the app gives an
MCP server's tool (`function_name`), whatever characters the server's name holds, and leaves
every other tool's name as it is."""

from __future__ import annotations

import pytest

from app.domain.tool_names import readable
from app.tools.mcp.tools import function_name, plugin_label


@pytest.mark.parametrize("server", ["time", "my-files", "a.b", "git hub", "x__y", "t"])
def test_an_mcp_tool_is_named_tool_then_server(server: str) -> None:
    called = f"functions.{function_name(server, 'get_current_time')}"
    said = f"get_current_time · {server}"
    assert readable(called, plugin_label(server)) == said  # the card knows its source
    assert readable(called, servers=[server, "ti"]) == said  # the audit: configured servers


def test_the_longest_configured_server_wins_and_the_bare_shape_is_read_without_one() -> None:
    called = f"functions.{function_name('time_zone', 'now')}"
    assert readable(called, servers=["time", "time_zone"]) == "now · time_zone"
    assert readable("functions.time__get_current_time") == "get_current_time · time"


@pytest.mark.parametrize(
    "tool, source, said",
    [
        ("python", "", "python"),
        ("browser.search", "", "browser.search"),
        ("functions.calculate", "", "calculate"),
        ("functions.weather__today", "weather plugin", "weather__today"),  # not MCP's shape
        ("functions.", "", "functions."),
        ("", "", "?"),
    ],
)
def test_other_tools_keep_their_names(tool: str, source: str, said: str) -> None:
    assert readable(tool, source) == said
