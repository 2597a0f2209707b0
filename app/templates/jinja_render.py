"""Renders a chat template's Jinja source the way Hugging Face does, in a bounded helper process.

Guarantees: the template never runs in the app's process. It runs in a small helper process
(`app/templates/jinja_sandbox.py`: Jinja's immutable sandbox, Hugging Face's globals and
`tojson`), started once and reused across renders, whose address space the kernel caps at
`RENDER_MEMORY_MB` over its idle size and whose CPU time it caps past each render. A render
that does not answer within `RENDER_SECONDS` of wall time (compiling included: Jinja folds
constant expressions such as `9 ** 999999999` when it compiles) has its helper killed — the
next render starts a fresh one — and is refused, as is every later render of that source (at
once); so is a render that needs more memory, writes more than `RENDER_CHARS`, or whose helper
dies. Why this and not Python-level checks: a trace function or operator overrides cannot stop
one C-level operation (`x ** 99999999`, `'a' * 3000000000`, `s.replace('a', s)`) in time, and
cannot bound memory across many small steps; a killed process and an address-space limit
can. Every failure is a `JinjaTemplateError` that says which bound, or what the template
raised, and to pick a registry template instead; renders from several threads take turns.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import threading
import time
from typing import Any

from app.errors import HarmonyDeskError
from app.templates.jinja_sandbox import serve, tojson

RENDER_SECONDS = 1.5  # wall time of one render, compiling included
RENDER_CHARS = 2_000_000
RENDER_MEMORY_MB = 160  # over the helper's idle address space
START_SECONDS = 60.0  # for the helper to start (a Python process importing Jinja)
_ADVICE = "; choose a built-in template for this model (Model settings)"


class JinjaTemplateError(HarmonyDeskError):
    """The model's own chat template cannot be used."""


class _Helper:
    """One running helper process and the app's end of its pipe."""

    def __init__(self) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process: Any = ctx.Process(
            target=serve,
            args=(child, RENDER_MEMORY_MB, RENDER_CHARS),
            daemon=True,
            name="harmony-desk-templates",
        )
        self.process.start()
        child.close()
        if not self._answer(START_SECONDS).get("ready"):
            self.stop()
            raise JinjaTemplateError("the chat template helper process did not start")

    def _answer(self, seconds: float) -> dict[str, Any]:
        """The helper's next answer; `{}` when none came in `seconds` or it died."""
        deadline = time.monotonic() + seconds
        try:
            while not self.conn.poll(max(0.0, deadline - time.monotonic())):
                if time.monotonic() >= deadline or not self.process.is_alive():
                    return {}
            answer = json.loads(self.conn.recv_bytes())
        except (EOFError, OSError, ValueError):
            return {}
        return answer if isinstance(answer, dict) else {}

    def render(self, source: str, context: dict[str, Any]) -> dict[str, Any]:
        try:
            self.conn.send((source, context))
        except (OSError, ValueError):
            return {}
        return self._answer(RENDER_SECONDS)

    def stop(self) -> None:
        self.process.kill()
        self.process.join(5)
        self.conn.close()


_LOCK = threading.Lock()
_HELPER: list[_Helper] = []  # the running helper, when one is
_OVERRAN: set[str] = set()  # digests of sources that once ran past the deadline


def _render(source: str, context: dict[str, Any]) -> dict[str, Any]:
    digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
    with _LOCK:
        if digest in _OVERRAN:
            return {}
        if not _HELPER:
            _HELPER.append(_Helper())
        helper = _HELPER[0]
        answer = helper.render(source, context)
        if not answer:  # too slow, or dead (its CPU limit): it is not reused
            helper.stop()
            _HELPER.clear()
            _OVERRAN.add(digest)
        return answer


def helper_pid() -> int | None:
    """The running helper's process id (for tests and the debug pane), if one runs."""
    with _LOCK:
        return int(_HELPER[0].process.pid) if _HELPER else None


def render(source: str, **context: Any) -> str:
    """`source` rendered with `context` (see the module guarantees)."""
    answer = _render(source, context)
    if "text" in answer:
        return str(answer["text"])
    kind, error = answer.get("kind"), str(answer.get("error", ""))
    if not answer:
        error = f"ran longer than {RENDER_SECONDS:g} s or past its CPU time, and was stopped"
    if kind == "refused":
        raise JinjaTemplateError(error)
    if kind == "failed":
        raise JinjaTemplateError(f"the model's chat template failed: {error}{_ADVICE}")
    raise JinjaTemplateError(f"the model's chat template {error}{_ADVICE}")


__all__ = [
    "RENDER_CHARS",
    "RENDER_MEMORY_MB",
    "RENDER_SECONDS",
    "JinjaTemplateError",
    "helper_pid",
    "render",
    "tojson",
]
