"""Trusted tool plugins run in a plugin-host process, never in the app's own.

The app sends the host one plugin at a time to import, and waits for each with a deadline;
then it sends tool calls, which the host runs on threads and answers by call id. This module
is the app's side; the host process's side is `app/tools/plugin_child.py`, and what both
read (`PluginSpec`, the frame limit) is `app/tools/plugin_load.py`.

Guarantees:
- a plugin that raises (`SystemExit` included), blocks at import past `import_seconds`, or
  crashes the process is reported as failed with what happened; the host is restarted
  without it and the other plugins load;
- each tool the host offers becomes a `Tool` in the app whose function forwards the call; a
  host that dies during calls fails those calls with a sentence (E-TOOL-ERROR) and is
  started again (with the same plugins) on the next call;
- only plain JSON crosses the pipe, one frame per message, bounded in size.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import itertools
import json
import threading
from multiprocessing.connection import Connection
from typing import Any

from app.tools.api import Risk, Tool, ToolContext, ToolError, schema_arguments
from app.tools.child import start_child, stop_child
from app.tools.plugin_child import serve
from app.tools.plugin_load import MAX_FRAME, PluginSpec


class PluginHost:
    """The app's side of one plugin-host process (see the module guarantees)."""

    def __init__(self, import_seconds: float = 10.0) -> None:
        self.import_seconds = import_seconds
        self._process: Any = None
        self._conn: Any = None
        self._loaded: list[PluginSpec] = []
        self._pending: dict[int, cf.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def _start(self) -> None:
        self._process, self._conn = start_child(serve, (), "harmony-desk-plugins")

    def _stop(self) -> None:
        proc, conn = self._process, self._conn
        self._process = self._conn = None
        stop_child(proc, conn)

    def _load_one(self, spec: PluginSpec) -> dict[str, Any]:
        if self._process is None:
            self._start()
        self._conn.send_bytes(json.dumps({"op": "load", "spec": dataclasses.asdict(spec)}).encode())
        try:
            if self._conn.poll(self.import_seconds):
                reply: dict[str, Any] = json.loads(self._conn.recv_bytes(MAX_FRAME))
                return reply
            why = f"its import did not finish within {self.import_seconds:g} s"
        except (EOFError, OSError, ValueError):
            self._process.join(timeout=2)
            why = f"it stopped the plugin host (exit status {self._process.exitcode})"
        self._stop()
        return {"op": "failed", "name": spec.name, "error": f"{why}; it was not loaded"}

    def load(self, specs: list[PluginSpec]) -> tuple[dict[str, list[Tool]], dict[str, str]]:
        """Import each plugin in the host: its tools as app tools, and the failures by name."""
        tools: dict[str, list[Tool]] = {}
        failures: dict[str, str] = {}
        with self._lock:
            for spec in specs:
                reply = self._load_one(spec)
                if reply["op"] == "loaded":
                    self._loaded.append(spec)
                    tools[spec.name] = [self._proxy(spec.name, d) for d in reply["tools"]]
                else:
                    failures[spec.name] = f"{reply['error']} (in {spec.root})"
            if self._process is not None:
                threading.Thread(target=self._read, args=(self._conn,), daemon=True).start()
        return tools, failures

    def _read(self, conn: Connection) -> None:
        while True:
            try:
                reply = json.loads(conn.recv_bytes(MAX_FRAME))
            except (EOFError, OSError, ValueError):
                break
            future = self._pending.pop(int(reply.get("id", -1)), None)
            if future is not None:
                future.set_result(reply)
        with self._lock:
            if self._conn is conn:
                self._stop()
        for key in list(self._pending):
            future = self._pending.pop(key, None)
            if future is not None:
                future.set_result(
                    {
                        "ok": False,
                        "code": "E-TOOL-ERROR",
                        "message": "the plugin"
                        " host stopped during the call; it restarts on the next one",
                    }
                )

    def _ensure_running(self) -> None:
        if self._process is not None:
            return
        specs, self._loaded = self._loaded, []
        for spec in specs:
            if self._load_one(spec)["op"] == "loaded":
                self._loaded.append(spec)
        if self._process is not None:
            threading.Thread(target=self._read, args=(self._conn,), daemon=True).start()

    def call(
        self, plugin: str, tool: str, args: dict[str, Any], ctx: dict[str, Any], timeout: float
    ) -> Any:
        """Run one call in the host; the result, or `ToolError` with the host's reason."""
        future: cf.Future[dict[str, Any]] = cf.Future()
        with self._lock:
            self._ensure_running()
            if self._process is None:
                raise ToolError(f"plugin {plugin} could not be loaded again")
            call_id = next(self._ids)
            self._pending[call_id] = future
            message = {
                "op": "call",
                "id": call_id,
                "plugin": plugin,
                "tool": tool,
                "args": args,
                "ctx": ctx,
            }
            self._conn.send_bytes(json.dumps(message).encode())
        try:
            reply = future.result(timeout=timeout)
        except cf.TimeoutError:
            self._pending.pop(call_id, None)
            raise ToolError(f"no result within {timeout:g} s", "E-TOOL-TIMEOUT") from None
        if not reply.get("ok"):
            raise ToolError(str(reply.get("message")), str(reply.get("code", "E-TOOL-ERROR")))
        return reply.get("result")

    def _proxy(self, plugin: str, d: dict[str, Any]) -> Tool:
        qualified = (
            d["namespace"] if d["name"] == d["namespace"] else f"{d['namespace']}.{d['name']}"
        )
        timeout = d["deadline_ms"] / 1000 + 1.0

        order = list(d["parameters"].get("properties", {}))

        def forward(*args: Any, **values: Any) -> Any:
            values.update(zip(order, args, strict=False))  # called like the plugin's function
            ctx = values.pop("ctx", None)
            context = ctx.plain() if isinstance(ctx, ToolContext) else {"call_id": ""}
            return self.call(plugin, qualified, values, context, timeout)

        return Tool(
            name=d["name"],
            namespace=d["namespace"],
            description=d["description"],
            arguments=schema_arguments(d["parameters"]),
            function=forward,
            risk=Risk(d["risk"]),
            deadline_ms=int(d["deadline_ms"]),
            plugin=plugin,
            wants_context=bool(d["wants_context"]),
            body=d["body"],
            text_reply=bool(d["text_reply"]),
        )

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def close(self) -> None:
        with self._lock:
            self._stop()
