"""`harmony-desk tools prepare`: compile the python tool's runtime now, not at its first call.

Guarantees: exit 0 when the runtime is ready — compiled now (the seconds and the compile's peak
memory are said) or found already compiled and intact — with the cache folder on stdout; exit 1
with the reason on stderr when the runtime is not installed or cannot be compiled. It waits for
a compile another process has under way rather than starting a second one. `tell_terminal`
makes a terminal conversation's python tool say so on stderr before its first call waits for
that compile.
"""

from __future__ import annotations

import sys
import time

from app.tools.sandbox import runtime_folder, unavailable_reason
from app.tools.sandbox_runtime import CompiledCache, RuntimeCompileError, runtime_spec
from app.tools.session import ConversationTools


def _say(note: str) -> None:
    print(f"[{note}…]", file=sys.stderr, flush=True)


def tell_terminal(tools: ConversationTools) -> None:
    """A wait for the runtime's compile is said on stderr before it starts (see the module)."""
    if tools.sandbox is not None:
        tools.sandbox.on_wait = _say


def prepare() -> int:
    """See the module guarantees."""
    reason = unavailable_reason()
    if reason is not None:
        print(f"harmony-desk: the python tool is unavailable: {reason}", file=sys.stderr)
        return 1
    cache = CompiledCache(runtime_spec(runtime_folder()))
    started = time.perf_counter()
    try:
        compiled = cache.prepare(_say)
    except RuntimeCompileError as exc:
        print(f"harmony-desk: {exc.message}", file=sys.stderr)
        return 1
    seconds = time.perf_counter() - started
    if compiled and cache.last is not None:
        peak = cache.last.peak_bytes / 2**20
        print(f"compiled in {seconds:.0f} s (peak memory {peak:,.0f} MiB)", file=sys.stderr)
    print(f"the python tool is ready; its compiled runtime is in {runtime_folder()}")
    return 0


__all__ = ["prepare", "tell_terminal"]
