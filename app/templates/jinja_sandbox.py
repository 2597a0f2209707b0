"""The template helper process: where a chat template's Jinja code runs, under hard limits.

Runs `serve(conn, memory_mb, max_chars)` in its own OS process (started by
`app/templates/jinja_render.py`); nothing in the app's process ever compiles or renders a
model's template. Guarantees: the template runs in Jinja's immutable sandbox (no attribute
tricks, no file or network access; the one mutation allowed is growing a list) with what
Hugging Face gives a chat template — `raise_exception`, `strftime_now`, loop controls,
`{% generation %}` blocks (rendered), and `tojson` as `json.dumps` (not ASCII-only, `, ` and
`: ` separators unless asked otherwise). The kernel bounds what no Python-level check can
(one operation such as `9 ** 999999999`, folded by Jinja's compiler, or `'a' * 3000000000`):
the process's address space is capped at `memory_mb` over what it holds once ready
(`RLIMIT_AS`, so a big allocation is a `MemoryError` answered as a failure), and before each
render its CPU time is capped a few seconds past what it has used (`RLIMIT_CPU`, a backstop:
the app kills it at its wall deadline first). Every request gets one answer (JSON, never a
pickle: the app does not unpickle what template code could influence): `{"text": …}`, or
`{"error": …, "kind": "failed" | "memory" | "size"}`; output past `max_chars` is refused.
`*` and `**` are also checked as they run (`check_binop`: a quick refusal of a repetition
past `max_chars` or a huge integer power; intercepted, Jinja never folds them when compiling).
Compiled templates are cached per source.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from multiprocessing.connection import Connection
from typing import Any, NoReturn

from app.errors import HarmonyDeskError
from app.rlimits import limit_cpu, limit_memory

CPU_MARGIN_S = 3  # RLIMIT_CPU past the time used so far (whole seconds; the wall deadline is first)


MAX_POWER_BITS = (
    1_000_000  # `a ** b` of integers: far past what a template can print (4,300 digits)
)
_LIMITS = {"chars": 2_000_000}  # set by `serve`


class TemplateRefused(HarmonyDeskError):
    """`raise_exception(...)` in a template: the template refuses the conversation."""


class TooBig(HarmonyDeskError):
    """An operation whose result would pass a bound, refused before it runs."""


def check_binop(operator: str, left: Any, right: Any) -> None:
    """`TooBig` for a repetition longer than the output may be, or an integer power past
    `MAX_POWER_BITS` (a quick, clear refusal; the process limits hold either way)."""
    if operator == "*" and isinstance(left, int) and not isinstance(left, bool):
        left, right = right, left
    chars, bits = _LIMITS["chars"], MAX_POWER_BITS
    repeated = isinstance(left, str | list | tuple) and isinstance(right, int)
    if operator == "*" and repeated and len(left) * right > chars:
        raise TooBig(f"wrote more than {chars:,} characters")
    integers = isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1
    if operator == "**" and integers and left.bit_length() * right > bits:
        raise TooBig(f"computes a number of more than {bits:,} bits")


def _raise(message: str) -> NoReturn:
    raise TemplateRefused(f"the model's chat template refused the conversation: {message}")


def tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """Hugging Face's `tojson` (not Jinja's HTML-safe one); a lazy sequence (`map`) as a list."""
    if not isinstance(value, str | bytes | dict | list | tuple) and hasattr(value, "__next__"):
        value = list(value)
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


@lru_cache(maxsize=32)
def _compiled(source: str) -> Any:
    from jinja2 import nodes
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class _Generation(Extension):
        """`{% generation %}…{% endgeneration %}` renders its body (Hugging Face's marker)."""

        tags = {"generation"}  # noqa: RUF012 - Jinja's own attribute

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return nodes.Scope(body, lineno=lineno)

    class _Sandbox(ImmutableSandboxedEnvironment):
        """Immutable, but a template may grow a list it made (`ids.append(…)`); `*` and `**`
        are checked when they run (intercepted, so never folded when compiling)."""

        intercepted_binops = frozenset({"*", "**"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            check_binop(operator, left, right)
            return super().call_binop(context, operator, left, right)

        def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
            if isinstance(obj, list) and attr in ("append", "extend"):
                return True
            return bool(super().is_safe_attribute(obj, attr, value))

    env = _Sandbox(trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals.update(raise_exception=_raise, strftime_now=lambda f: datetime.now().strftime(f))
    return env.from_string(source)


def _rendered(source: str, context: dict[str, Any], max_chars: int) -> dict[str, str]:
    """The answer for one render (see the module guarantees)."""
    out: list[str] = []
    size = 0
    try:
        for chunk in _compiled(source).generate(**context):
            size += len(chunk)
            if size > max_chars:
                return {"kind": "size", "error": f"wrote more than {max_chars:,} characters"}
            out.append(chunk)
        return {"text": "".join(out)}
    except TooBig as exc:
        return {"kind": "size", "error": str(exc)}
    except MemoryError:
        out.clear()
        return {"kind": "memory", "error": "needed more memory than a template may use"}
    except TemplateRefused as exc:
        return {"kind": "refused", "error": str(exc)}
    except Exception as exc:  # anything template code raises is the template's failure
        return {"kind": "failed", "error": f"{type(exc).__name__}: {exc}"[:2000]}


def serve(conn: Connection, memory_mb: int, max_chars: int) -> None:
    """Process entry point: answer render requests `(source, context)` until the pipe closes."""
    import jinja2.sandbox  # noqa: F401 - imported before the address space is measured

    _LIMITS["chars"] = max_chars
    _compiled("warm {{ 1 }}").render()
    limit_memory(memory_mb)
    conn.send_bytes(b'{"ready": true}')
    while True:
        try:
            source, context = conn.recv()
        except (EOFError, OSError):
            return
        limit_cpu(CPU_MARGIN_S)
        conn.send_bytes(json.dumps(_rendered(source, context, max_chars)).encode())


__all__ = ["TemplateRefused", "TooBig", "check_binop", "serve", "tojson"]
