"""Trusted tool plugins run in a plugin-host process, never in the app's own.

The app sends the host one plugin at a time to import, and waits for each with a deadline;
then it sends tool calls, which the host runs on threads and answers by call id.

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
import importlib
import importlib.metadata
import importlib.util
import itertools
import json
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from app.tools.api import Risk, Tool, ToolContext, ToolError, schema_arguments
from app.tools.child import start_child, stop_child

MAX_FRAME = 16 << 20


@dataclass(frozen=True)
class PluginSpec:
    """Where a trusted plugin's code is: `target` is `module[:attribute]`, or "" for a file."""

    name: str
    kind: str  # "entry point", "folder" or "file"
    root: str
    target: str


# --- inside the host process ------------------------------------------------------------


def _import(spec: PluginSpec) -> Any:
    if spec.kind == "entry point":
        return importlib.metadata.EntryPoint(spec.name, spec.target, "harmony_desk.tools").load()
    if not spec.target:
        module_spec = importlib.util.spec_from_file_location(
            f"harmony_desk_plugin_{spec.name}", spec.root
        )
        if module_spec is None or module_spec.loader is None:
            raise ImportError(f"cannot import {spec.root}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_spec.name] = module
        module_spec.loader.exec_module(module)
        return module
    if spec.root not in sys.path:
        sys.path.append(spec.root)
    module_name, _, attribute = spec.target.partition(":")
    module = importlib.import_module(module_name.strip())
    return getattr(module, attribute.strip()) if attribute else module


def _describe(t: Tool) -> dict[str, Any]:
    return {
        "name": t.name,
        "namespace": t.namespace,
        "description": t.description,
        "parameters": t.parameters,
        "risk": t.risk.value,
        "deadline_ms": t.deadline_ms,
        "body": t.body,
        "text_reply": t.text_reply,
        "wants_context": t.wants_context,
    }


def _run_call(tools: dict[str, Tool], request: dict[str, Any]) -> dict[str, Any]:
    from pydantic import ValidationError

    reply: dict[str, Any] = {"op": "result", "id": request["id"]}
    t = tools.get(f"{request['plugin']}:{request['tool']}")
    try:
        if t is None:
            raise ToolError(f"no tool {request['tool']!r} in plugin {request['plugin']!r}")
        values = t.parse_arguments(request["args"]).model_dump()
        if t.wants_context:
            values["ctx"] = ToolContext(**request["ctx"])
        result = t.function(**values)
        json.dumps(result)
        return reply | {"ok": True, "result": result}
    except ToolError as exc:
        return reply | {"ok": False, "code": exc.code, "message": exc.message}
    except ValidationError as exc:
        return reply | {"ok": False, "code": "E-CALL-SCHEMA", "message": f"{exc}"}
    except BaseException as exc:  # SystemExit from a plugin is its failure, not the host's end
        return reply | {
            "ok": False,
            "code": "E-TOOL-ERROR",
            "message": f"the tool failed: {type(exc).__name__}: {exc}",
        }


def _answer(send: Callable[[dict[str, Any]], None], tools: dict[str, Tool], request: Any) -> None:
    send(_run_call(tools, request))


def serve(conn: Connection) -> None:
    """The plugin host's main: import plugins when asked, then run calls on threads."""
    from app.tools.discovery import plugin_tools
    from app.tools.sandbox_host import die_with_parent

    die_with_parent()
    tools: dict[str, Tool] = {}
    send_lock = threading.Lock()
    pool = cf.ThreadPoolExecutor(max_workers=8, thread_name_prefix="plugin-call")

    def send(message: dict[str, Any]) -> None:
        with send_lock:
            conn.send_bytes(json.dumps(message).encode())

    while True:
        try:
            request = json.loads(conn.recv_bytes(MAX_FRAME))
        except (EOFError, OSError, ValueError):
            return
        if request["op"] == "load":
            spec = PluginSpec(**request["spec"])
            try:
                found = plugin_tools(spec.name, _import(spec))
            except BaseException as exc:
                send({"op": "failed", "name": spec.name, "error": f"{type(exc).__name__}: {exc}"})
                continue
            tools.update({f"{spec.name}:{t.qualified_name}": t for t in found})
            send({"op": "loaded", "name": spec.name, "tools": [_describe(t) for t in found]})
        elif request["op"] == "call":
            pool.submit(_answer, send, tools, request)


# --- in the app --------------------------------------------------------------------------


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


__all__ = ["PluginHost", "PluginSpec", "serve"]
