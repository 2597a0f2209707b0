"""The plugin host's child process: it imports trusted plugins and runs their tools.

This module runs in a child process of the app (started by `app/tools/plugin_host.py`, whose
`PluginHost` passes `serve` as the process's target), never in the app itself.

Guarantees:
- one request per frame, answered in kind: a `load` with `loaded` (the plugin's tools,
  described as plain JSON) or `failed` (what the import raised, `SystemExit` included); a
  `call` with a `result` carrying the same id, run on a thread so calls overlap;
- a tool's failure is an answer (its error code and sentence), never the host's end;
- the process ends when its pipe closes and when the app's process ends.
"""

from __future__ import annotations

import concurrent.futures as cf
import importlib
import importlib.metadata
import importlib.util
import json
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from pydantic import ValidationError

from app.tools.api import Tool, ToolContext, ToolError
from app.tools.child import die_with_parent
from app.tools.plugin_load import ENTRY_POINT_GROUP, MAX_FRAME, PluginSpec, plugin_tools


def _import(spec: PluginSpec) -> Any:
    if spec.kind == "entry point":
        return importlib.metadata.EntryPoint(spec.name, spec.target, ENTRY_POINT_GROUP).load()
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


__all__ = ["serve"]
