"""Elicitation defaults (SEP-1034), run for real: an MCP server built with the SDK (`MCPServer`,
served over Streamable HTTP on loopback by uvicorn in a thread of the test) whose tool calls
`ctx.elicit(...)` with a pydantic model carrying defaults, and records the raw content the host
sent before its model fills anything in. Through the terminal's MCP asks path (and a whole
`harmony-desk chat` whose model calls the tool) each prompt
shows its default (`[Ada]`, `[Y/n]`, the default choice marked) and Enter sends it; a required
field without one is asked again; a decline stays a decline. Pure tests pin `settle` (defaults
filled, every value checked) and the host's loop: an answer that does not fit is never sent,
the form is asked again with which field and why."""

from __future__ import annotations

import asyncio
import io
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import pytest
import uvicorn
from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field, model_validator

from app.cli.mcp_asks import TerminalAsks
from app.domain.elicit_form import Form, Reply, UrlAsk, settle
from app.tools.audit import AuditLog
from app.tools.mcp.config import McpServer, save_servers
from app.tools.mcp.elicit import ROUNDS, Elicitor, read_form
from app.tools.mcp.tools import McpPool
from tests.keys.test_endpoints import cli

DEFAULTS = {"name": "Ada", "email": "ada@example.com", "count": 2, "size": 0.3, "gift": True,
            "colour": "green", "extras": ["lid", "spoon"], "when": "2026-03-01"}  # fmt: skip


def mugs_server(received: list[dict[str, Any]]) -> MCPServer:
    """The server: `order` elicits `Mugs` (every field but `reason` and `note` has a default);
    each raw answer it gets is appended to `received`, before pydantic fills anything in."""

    class Mugs(BaseModel):
        reason: str = Field(title="Reason", description="What the mugs are for.")
        name: str = Field("Ada", title="Name on the mug", max_length=20)
        email: str = Field("ada@example.com", title="Email", json_schema_extra={"format": "email"})
        count: int = Field(2, ge=1, le=5, title="How many")
        size: float = Field(0.3, ge=0.1, le=1.0, title="Size in litres")
        gift: bool = Field(True, title="Gift wrapped")
        colour: Literal["red", "green", "blue"] = Field("green", title="Colour")
        extras: list[Literal["lid", "saucer", "spoon"]] = Field(["lid", "spoon"], title="Extras")
        when: str = Field("2026-03-01", title="Deliver on", json_schema_extra={"format": "date"})
        note: str | None = Field(None, title="Note")

        @model_validator(mode="before")
        @classmethod
        def _keep(cls, data: Any) -> Any:
            received.append(dict(data))
            return data

    server = MCPServer("mugs")

    @server.tool()
    async def order(ctx: Context) -> str:
        """Ask the user which mugs to order."""
        result = await ctx.elicit("Which mugs shall I order?", Mugs)
        if result.action == "accept":
            return f"ordered: {result.data.model_dump_json()}"
        return f"no order: {result.action}"

    return server


@dataclass
class Served:
    url: str
    received: list[dict[str, Any]]


@pytest.fixture()
def mugs() -> Iterator[Served]:
    """The server on loopback, for one test."""
    received: list[dict[str, Any]] = []
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    app = mugs_server(received).streamable_http_app()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the loopback server did not start"
    yield Served(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", received)
    server.should_exit = True
    thread.join(10)


@pytest.fixture()
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {"HARMONY_DESK_CONFIG": str(tmp_path / "config"), "HARMONY_DESK_DATA": str(tmp_path / "data"),
           "HARMONY_DESK_CACHE": str(tmp_path / "cache")}  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return {**os.environ, **env}


def order_at_terminal(url: str, typed: str) -> tuple[dict[str, Any], str]:
    """One call of `order` answered at the terminal's prompts from `typed`: (the call's
    envelope, what the terminal printed)."""
    out = io.StringIO()
    asks = TerminalAsks(False, stdin=io.StringIO(typed), out=out)
    asks.conversation_id = "cli-defaults"
    made: list[McpPool] = []
    pool = McpPool(lambda: {"mugs": McpServer(url=url)}, hooks=asks.hooks(lambda: made[0]))
    made.append(pool)
    try:
        return pool.call("mugs", "order", {}, None), out.getvalue()
    finally:
        pool.close()


def _ordered(envelope: dict[str, Any]) -> dict[str, Any]:
    said = envelope["content"]["result"]
    assert said.startswith("ordered: "), said
    data: dict[str, Any] = json.loads(said.removeprefix("ordered: "))
    return data


def test_the_terminal_shows_each_default_and_enter_sends_it(mugs: Served, folders: dict[str, str]) -> None:
    # yes, answer it; Enter on the required reason (no default) is asked again; then Enter on every field
    envelope, said = order_at_terminal(mugs.url, "y\n\nFor the office.\n" + "\n" * 9)
    assert "  Reason * (text): " in said and "  “Reason” is required.\n" in said
    assert "  Name on the mug (text) [Ada]: " in said and "  Email (an email address) [ada@example.com]: " in said
    assert "  How many (a whole number from 1 to 5) [2]: " in said
    assert "  Size in litres (a number from 0.1 to 1) [0.3]: " in said
    assert "  Gift wrapped [Y/n]: " in said
    assert "  Colour (one of: red, [green], blue): " in said  # the default choice marked
    assert "  Extras (any of: [lid], saucer, [spoon]): " in said
    assert "  Deliver on (a date (YYYY-MM-DD)) [2026-03-01]: " in said and "  Note (text): " in said
    # the server's tool received the defaults themselves, sent by the host, not filled by pydantic
    assert mugs.received == [{"reason": "For the office.", **DEFAULTS}]
    assert _ordered(envelope) == {"reason": "For the office.", **DEFAULTS, "note": None}
    entry = AuditLog().read("cli-defaults").entries[0]
    assert entry["decision"] == "accept" and entry["result"]["answered"] == ["reason", *DEFAULTS]


def test_what_is_typed_overrides_a_default_and_a_wrong_value_is_asked_again(
    mugs: Served, folders: dict[str, str]
) -> None:
    typed = ["y", "Tea.", "Grace", "not an address", "grace@example.com", "7", "4", "", "n", "1",
             "saucer", "31/12/2026", "2026-12-31", "Fragile."]  # fmt: skip
    envelope, said = order_at_terminal(mugs.url, "\n".join(typed) + "\n")
    assert "  “Email” takes an email address.\n" in said and "  “How many” takes a whole number from 1 to 5.\n" in said
    assert "  “Deliver on” takes a date (YYYY-MM-DD).\n" in said
    chosen = {"reason": "Tea.", "name": "Grace", "email": "grace@example.com", "count": 4, "size": 0.3,
              "gift": False, "colour": "red", "extras": ["saucer"], "when": "2026-12-31", "note": "Fragile."}  # fmt: skip
    assert mugs.received == [chosen] and _ordered(envelope) == chosen


@pytest.mark.slow
def test_harmony_desk_chat_sends_the_defaults_taken_with_enter(mugs: Served, folders: dict[str, str]) -> None:
    save_servers({"mugs": McpServer(url=mugs.url)})
    done = cli(["chat", "--model", "default", "--mcp", "mugs", "--tool-choice", "mugs__order",
                "--max-tool-calls", "1", "--max-tokens", "40", "--temperature", "0", "--prompt", "Order mugs."],
               folders, stdin="y\ny\nFor the office.\n" + "\n" * 9)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "  Name on the mug (text) [Ada]: " in done.stderr and "  Gift wrapped [Y/n]: " in done.stderr
    assert "  Colour (one of: red, [green], blue): " in done.stderr
    assert mugs.received == [{"reason": "For the office.", **DEFAULTS}]


@pytest.mark.parametrize(("answer", "action"), [("d", "decline"), ("c", "cancel")])
def test_a_declined_or_cancelled_form_stays_so_and_nothing_is_filled_in(
    mugs: Served, folders: dict[str, str], answer: str, action: str
) -> None:
    envelope, said = order_at_terminal(mugs.url, f"{answer}\n")
    assert envelope["content"] == {"result": f"no order: {action}"}
    assert mugs.received == [] and "[Ada]" not in said  # no field asked, no content sent
    entry = AuditLog().read("cli-defaults").entries[0]
    assert entry["decision"] == action and "answered" not in entry["result"]


# --- pure: reading defaults, settling an answer ------------------------------------------------

SCHEMA = {"type": "object", "required": ["reason", "size"], "properties": {
    "reason": {"type": "string", "minLength": 3},
    "size": {"type": "string", "enum": ["s", "m"], "default": "m"},
    "count": {"type": "integer", "minimum": 1, "maximum": 5, "default": 2.0},
    "rate": {"type": "number", "maximum": 1, "default": 7},
    "gift": {"type": "boolean", "default": False},
    "site": {"type": "string", "format": "uri", "default": "https://example.com/a"},
    "at": {"type": "string", "format": "date-time", "default": "tomorrow"},
    "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "default": ["b"], "maxItems": 1},
}}  # fmt: skip


def _form() -> Form:
    form = read_form("srv", "Tell me.", SCHEMA)
    assert isinstance(form, Form)
    return form


def test_a_default_is_kept_only_where_the_field_takes_it() -> None:
    defaults = {f.name: f.default for f in _form().fields}
    # an integer's 2.0 is 2; a rate above its maximum, a date-time that is none: dropped
    assert defaults == {"reason": None, "size": "m", "count": 2, "rate": None, "gift": False,
                        "site": "https://example.com/a", "at": None, "tags": ["b"]}  # fmt: skip
    assert isinstance(defaults["count"], int)


def test_settling_fills_omitted_optional_fields_from_their_defaults_and_checks_every_value() -> None:
    form = _form()
    settled = settle(form, {"reason": "Tea", "size": "s", "count": None, "rate": "", "extra": 1})
    # the form's own fields, in its order; the required `size` as given; no default for `rate`
    assert settled.content == {"reason": "Tea", "size": "s", "count": 2, "gift": False,
                               "site": "https://example.com/a", "tags": ["b"]}  # fmt: skip
    assert settled.wrong == {}
    assert settle(form, {"reason": "Tea"}).wrong == {"size": "“size” is required."}  # required: never filled
    assert settle(form, {"reason": "Tea", "size": "m", "tags": []}).content["tags"] == []  # none chosen is an answer
    wrong = settle(form, {"reason": "Te", "size": "xl", "count": 9, "rate": 1.5, "gift": "yes",
                          "site": "not a uri", "at": "2026-03-01", "tags": ["a", "b"]}).wrong  # fmt: skip
    assert wrong == {
        "reason": "“reason” takes at least 3 characters.",
        "size": "“size” takes one of: s, m.",
        "count": "“count” takes a whole number from 1 to 5.",
        "rate": "“rate” takes a number of at most 1.",
        "gift": "“gift” takes yes or no.",
        "site": "“site” takes a web address.",
        "at": "“at” takes a date and time (YYYY-MM-DDTHH:MM).",  # a date alone is no date-time
        "tags": "“tags” takes at most 1 choices.",
    }
    assert settle(form, {"reason": "Tea", "size": "m", "at": "2026-03-01T09:30:00Z"}).wrong == {}


class Scripted:
    """A host whose person gives these replies in turn, keeping each form it was shown."""

    def __init__(self, *replies: Reply) -> None:
        self.replies, self.shown = list(replies), list[Form]()

    def conversation(self) -> str:
        return "pure"

    def fill(self, form: Form, cancel: threading.Event) -> Reply:
        self.shown.append(form)
        return self.replies.pop(0)

    def visit(self, ask: UrlAsk, cancel: threading.Event) -> Reply:
        raise AssertionError("no address is asked here")


def _elicit(host: Scripted) -> Any:
    params = types.ElicitRequestFormParams(message="Tell me.", requested_schema=SCHEMA)
    return asyncio.run(Elicitor(host)("srv", params))


def test_an_answer_that_does_not_fit_is_never_sent_the_form_is_asked_again(folders: dict[str, str]) -> None:
    host = Scripted(Reply("accept", {"reason": "Tea", "size": "m", "count": 9}),
                    Reply("accept", {"reason": "Tea", "size": "m", "count": 3}))  # fmt: skip
    result = _elicit(host)
    assert host.shown[0].wrong == () and host.shown[0].given is None
    again = host.shown[1]
    assert again.wrong == (("count", "“count” takes a whole number from 1 to 5."),)
    assert again.given is not None and again.given["count"] == 9 and again.given["gift"] is False
    assert isinstance(result, types.ElicitResult) and result.action == "accept"
    assert result.content == {"reason": "Tea", "size": "m", "count": 3, "gift": False,
                              "site": "https://example.com/a", "tags": ["b"]}  # fmt: skip
    stubborn = Scripted(*[Reply("accept", {"reason": "x"})] * ROUNDS)
    result = _elicit(stubborn)
    assert len(stubborn.shown) == ROUNDS and result.action == "cancel" and result.content is None
    declined = _elicit(Scripted(Reply("decline", {"reason": "Tea", "size": "m"})))
    assert declined.action == "decline" and declined.content is None  # stays declined, nothing sent


def test_the_terminal_asked_again_says_what_was_wrong_and_asks_only_those_fields() -> None:
    form = _form()
    again = replace(form, given={"reason": "Tea", "size": "m", "count": 9},
                    wrong=(("count", "“count” takes a whole number from 1 to 5."),))  # fmt: skip
    out = io.StringIO()
    reply = TerminalAsks(False, stdin=io.StringIO("\n"), out=out).fill(again, threading.Event())
    said = out.getvalue()
    assert "does not fit its form yet:\n  “count” takes a whole number from 1 to 5.\n" in said
    assert "  count (a whole number from 1 to 5) [2]: " in said and "reason" not in said
    assert reply == Reply("accept", {"reason": "Tea", "size": "m", "count": 2})
