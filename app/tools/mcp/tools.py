"""MCP servers as one more tool source: their tools as Harmony function tools, and the
servers' lifecycle for the whole app.

Guarantees:
- Names: a server's tool `get-time` on server `my-clock` is the function `my_clock__get_time`
  (`functions.my_clock__get_time` for gpt-oss): the server's name, two underscores, the tool's,
  each reduced to letters, digits and `_`, at most 64 characters. Server names are unique, so
  two servers cannot collide; two tools of one server that reduce to the same name are both
  left out, with the reason in the server's log. A tool an MCP App keeps for its own view
  (`_meta.ui.visibility` without "model") is not offered to the model (`apps.visibility`).
- The model sees, and the call grammar holds, the server's schema with its local `$ref`s
  written in place (recursion kept) and objects closed to properties they do not list (as
  strict function calling does; `schemas.py`); a schema whose references cannot be resolved is
  shown as written, and the turn says its calls are not held to it — the tool is still offered.
- A call's arguments are checked against the server's schema as the call is read, before its
  approval is asked, and again as it runs (E-CALL-SCHEMA otherwise; a schema jsonschema cannot
  read leaves the judgement to the server); a call waits
  at most the server's `timeout` since the call or its last progress and never more than
  `HARD_CAP` times that in all (progress cannot extend it), is cancelled on the server when the
  user cancels, and comes back as the envelope (the server's error is the
  tool's error the model reads; a long result is cut with a marker).
- The pool: one session per server for the whole app, started on first use; after a server
  dies, the next use starts it again — at once the first time, then after 1, 2, 4 … 30 s
  (meanwhile an error that says when); `close` stops them all, and each local server's guard
  stops it if the app is killed. An offline conversation never gets a remote (`url`) server.
- Each server keeps a log of its last 200 events (started, stopped, died with its stderr,
  calls and their outcome, the log messages it sends, its notices that a list changed) for the
  window's MCP page; every line redacted and inert (`app.domain.inert`: no control, escape or
  bidi character acts on a terminal or a widget), a log message cut at `LOG_CHARS`.
- What a server may ask beside calls is counted against `hooks.caps` (`caps.py`): each call
  starts a new per-call count, and stopping a server starts a new session; each of the pool's
  tools carries those caps (its function's `caps`), so that a turn that offers it starts a new
  per-turn count, shared by all the pool's servers (`caps.begin_turns`, from `run_turn`).
- MCP's own notices: the pool answers a server's log messages and list changes itself (its
  own `logged` and `changed` hooks, which then call the hooks it was given); a list change is
  told to each `listen`er on a thread of its own (never the connection's: a listener may ask
  the server again), one at a time, the same change said again while it waits told once;
  `renewed` gives a registry with a server's tools as it lists them now. A call's progress
  (done, total, message) reaches the tool's context (`ToolContext.report`), at most every
  `PROGRESS_S`.
- A tool's function carries the server's identity (`server_identity`), so its approvals are
  keyed by what the server is, not by its name alone (`app.tools.approval.approval_key`).
"""

from __future__ import annotations

import collections
import dataclasses
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from app.domain.inert import inert
from app.domain.redact import redact
from app.errors import ErrorCode, HarmonyDeskError
from app.secrets import Secrets
from app.tools.api import Risk, Tool, ToolContext, ToolError
from app.tools.mcp.apps import visibility
from app.tools.mcp.caps import Caps
from app.tools.mcp.client import McpConnection, McpError
from app.tools.mcp.config import McpServer, load_servers, server_identity
from app.tools.mcp.hooks import NO_HOOKS, Changed, McpHooks
from app.tools.mcp.results import LOG_CHARS, envelope, log_line
from app.tools.registry import ToolRegistry

MCP_PREFIX = "mcp:"  # a conversation's tool choice names a server as "mcp:NAME"
SEPARATOR = "__"
MAX_NAME = 64
BACKOFF_MAX_S = 30.0
LOG_LINES = 200
HARD_CAP = 10  # a call's overall deadline, in the server's `timeout`s
PROGRESS_S = 0.1  # a call's progress is said at most this often
Progress = Callable[[float, float | None, str | None], None]  # done, total, message


def function_name(server: str, tool: str) -> str:
    """The function a server's tool is called by (see the module guarantees)."""
    clean = [re.sub(r"[^A-Za-z0-9_]", "_", part) for part in (server, tool)]
    return (clean[0] + SEPARATOR + clean[1])[:MAX_NAME]


def plugin_label(server: str) -> str:
    """What a tool's `plugin` says for an MCP server's tool (shown on its tool card)."""
    return f"MCP {server}"


class McpPool:
    """The app's MCP sessions (see the module guarantees)."""

    def __init__(
        self,
        config: Callable[[], dict[str, McpServer]] = load_servers,
        secrets: Secrets | None = None,
        hooks: McpHooks = NO_HOOKS,
    ) -> None:
        self._config, self._secrets, self._given = config, secrets, hooks
        self.hooks = dataclasses.replace(hooks, logged=self._log_message, changed=self._changed)
        self._listeners: list[Changed] = []
        self._telling = threading.Lock()  # listeners hear one change at a time
        self._untold: set[tuple[str, str]] = set()  # changes waiting to be told
        self._untold_lock = threading.Lock()
        self._live: dict[str, McpConnection] = {}
        self._deaths: dict[str, int] = {}
        self._next_start: dict[str, float] = {}
        self._locks: dict[str, threading.Lock] = collections.defaultdict(threading.Lock)
        self.logs: dict[str, collections.deque[str]] = collections.defaultdict(
            lambda: collections.deque(maxlen=LOG_LINES)
        )

    def note(self, name: str, line: str) -> None:
        line = inert(redact(line), 2 * LOG_CHARS)
        self.logs[name].append(f"{time.strftime('%H:%M:%S')} {line}")

    def _log_message(self, name: str, params: Any) -> None:
        """A server's log message (on its connection's loop): into its log."""
        self.note(name, log_line(params))
        if self._given.logged is not None:
            self._given.logged(name, params)

    def _changed(self, name: str, what: str) -> None:
        """A server says its tools, resources or prompts changed (on its connection's loop)."""
        self.note(name, f"its {what} changed (the server said so)")
        if self._given.changed is not None:
            self._given.changed(name, what)
        with self._untold_lock:
            if (name, what) in self._untold:
                return  # a change not yet told covers this one
            self._untold.add((name, what))
        threading.Thread(
            target=self._tell, args=(name, what), name=f"mcp-{name}-changed", daemon=True
        ).start()

    def _tell(self, name: str, what: str) -> None:
        with self._telling:
            with self._untold_lock:
                self._untold.discard((name, what))  # a change from now on is told again
            for heard in list(self._listeners):
                try:
                    heard(name, what)
                except HarmonyDeskError as exc:  # the server went meanwhile: said, not raised
                    self.note(name, f"its new {what} could not be listed: {exc.message}")

    def listen(self, heard: Changed) -> None:
        """`heard(server, what)` after a server says a list changed (see the module
        guarantees)."""
        self._listeners.append(heard)

    def renewed(self, registry: ToolRegistry, name: str, offline: bool = False) -> ToolRegistry:
        """`registry` with the server's tools as the server lists them now (its allow-list
        kept); the other tools stay as they are."""
        label = plugin_label(name)
        kept = [t for t in registry if t.plugin != label]
        return ToolRegistry([*kept, *self.tools(name, offline)])

    def server(self, name: str, offline: bool = False) -> McpServer:
        """The server's configuration; an error when there is none, or when it is remote and
        the conversation asking is offline."""
        server = self._config().get(name)
        if server is None:
            raise McpError(
                f"There is no MCP server named “{name}”.",
                details="`harmony-desk mcp list` (or File ▸ MCP servers…) shows the servers.",
            )
        if server.remote and offline:
            raise McpError(
                f"The MCP server “{name}” is a remote server ({server.url}): not used offline."
            )
        return server

    def connection(self, name: str) -> McpConnection:
        """The server's session, started (again) if need be."""
        return self._connection(name)

    def _connection(self, name: str) -> McpConnection:
        with self._locks[name]:
            live = self._live.get(name)
            if live is not None and live.alive:
                return live
            if live is not None:
                self._died(name, live)
            wait = self._next_start.get(name, 0.0) - time.monotonic()
            if wait > 0:
                raise McpError(
                    f"The MCP server “{name}” stopped; it is started again in {wait:.0f} s."
                )
            server = self.server(name)
            live = McpConnection(name, server, self._secrets, self.hooks)
            try:
                live.start()
            except McpError as exc:
                self.note(name, _logged(exc))
                self._back_off(name)
                raise
            self._live[name] = live
            self.note(name, "started")
            return live

    def _died(self, name: str, gone: McpConnection) -> None:
        self.note(name, f"stopped unexpectedly{gone.said()}")
        gone.close()
        del self._live[name]
        self._back_off(name)

    def _back_off(self, name: str) -> None:
        deaths = self._deaths[name] = self._deaths.get(name, 0) + 1
        delay = 0.0 if deaths == 1 else min(BACKOFF_MAX_S, 2.0 ** (deaths - 2))
        self._next_start[name] = time.monotonic() + delay

    def call(
        self,
        name: str,
        tool: str,
        arguments: dict[str, Any],
        cancel: threading.Event | None,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        """One call's envelope; `McpError` when the server could not be reached or answer.
        `progress` hears the server's progress notifications (see the module guarantees)."""
        connection = self._connection(name)
        if self.hooks.caps is not None:
            self.hooks.caps.begin(name)  # what the server asks now counts toward this call
        try:
            limit = connection.server.timeout
            heard = _throttled(progress) if progress is not None else None
            result = envelope(
                connection.call(tool, arguments, limit * HARD_CAP, cancel, limit, heard)
            )
        except McpError as exc:
            self.note(name, f"{tool}: {exc.code.value} {_logged(exc)}")
            raise
        self._deaths.pop(name, None)  # a good answer ends the back-off
        self.note(name, f"{tool}: {'ok' if result['ok'] else 'the tool reported an error'}")
        return result

    def stop(self, name: str) -> None:
        """Stop one server (its configuration changed or the user asked)."""
        with self._locks[name]:
            live = self._live.pop(name, None)
            if live is not None:
                live.close()
                self.note(name, "stopped")
        if self.hooks.caps is not None:
            self.hooks.caps.forget(name)  # a new session: its caps start again

    def configured(self) -> list[str]:
        """The servers in the configuration (an unreadable file: none)."""
        try:
            return sorted(self._config())
        except HarmonyDeskError:
            return []

    def running(self) -> list[str]:
        return sorted(n for n, c in self._live.items() if c.alive)

    def close(self) -> None:
        for name in list(self._live):
            self.stop(name)

    def offered(self, name: str, offline: bool = False) -> list[tuple[str, Tool]]:
        """Every tool the server offers, as (its own name, the app tool), starting the server;
        two that reduce to one function name are left out (see the module guarantees)."""
        server = self.server(name, offline)
        listed = self.connection(name).tools()
        names = collections.Counter(function_name(name, t.name) for t in listed)
        out = []
        for t in listed:
            if names[function_name(name, t.name)] > 1:
                self.note(name, f"{t.name}: left out, another tool has the same function name")
                continue
            if "model" not in visibility(t):  # an MCP App's own tool: its view calls it
                continue
            out.append((str(t.name), self._tool(name, server, t)))
        return out

    def tools(self, name: str, offline: bool = False) -> list[Tool]:
        """The server's tools its allow-list keeps, as app tools (starting the server)."""
        allowed = self.server(name, offline).enabled_tools
        return [t for own, t in self.offered(name, offline) if allowed is None or own in allowed]

    def _tool(self, name: str, server: McpServer, listed: Any) -> Tool:
        from app.tools.mcp.schemas import arguments_model  # with the first server's tools

        schema = dict(listed.input_schema or {"type": "object"})
        original = str(listed.name)

        def run(ctx: ToolContext | None = None, **arguments: Any) -> Any:
            _check(schema, arguments)
            cancel, heard = (ctx.cancel, ctx.report) if ctx else (None, None)
            try:
                said = self.call(name, original, arguments, cancel, heard)
            except McpError as exc:
                failed = ToolError(exc.message, exc.code.value)
                failed.details = exc.details
                raise failed from None
            if not said["ok"]:
                raise ToolError(said["error"]["message"])
            return said["content"]

        call = _Identified(run, server_identity(server), self.hooks.caps)
        return Tool(
            name=function_name(name, original),
            namespace="functions",
            description=(listed.description or original).strip(),
            arguments=arguments_model(schema),
            function=call,
            risk=_risk(getattr(listed, "annotations", None)),
            deadline_ms=int(server.timeout * HARD_CAP * 1000),  # progress cannot pass it
            plugin=plugin_label(name),
            wants_context=True,
        )


def _throttled(progress: Progress) -> Progress:
    """`progress`, said at most every `PROGRESS_S`: a report sooner than that after the last
    is dropped, unless it says the work is done."""
    said = [0.0]

    def relay(done: float, total: float | None, message: str | None) -> None:
        now = time.monotonic()
        if now - said[0] >= PROGRESS_S or (total is not None and done >= total):
            said[0] = now
            progress(done, total, redact(message or "", shapes=False))

    return relay


def _logged(exc: McpError) -> str:
    """An error for the server's log: its sentence, then its details."""
    return f"{exc.message}\n{exc.details}" if exc.details else exc.message


class _Identified:
    """A tool's function that carries its server's identity, for its approvals, and the caps
    what its server asks counts against, for the turn that offers it (`caps.begin_turns`)."""

    def __init__(self, run: Callable[..., Any], identity: str, caps: Caps | None) -> None:
        self._run, self.approval_identity, self.caps = run, identity, caps

    def __call__(self, ctx: ToolContext | None = None, **arguments: Any) -> Any:
        return self._run(ctx, **arguments)


def _check(schema: dict[str, Any], arguments: dict[str, Any]) -> None:
    from app.tools.mcp.schemas import misfit

    problem = misfit(schema, arguments)
    if problem:
        raise ToolError(
            f"the arguments do not fit the tool ({problem})", ErrorCode.CALL_SCHEMA.value
        )


def _risk(annotations: Any) -> Risk:
    """What the server says of the tool (its own word: every call is still approved)."""
    if annotations is not None and getattr(annotations, "read_only_hint", None):
        return Risk.READ_ONLY
    if annotations is not None and getattr(annotations, "open_world_hint", None):
        return Risk.NETWORK
    return Risk.RUNS_CODE


__all__ = ["MCP_PREFIX", "McpPool", "function_name", "plugin_label"]
