"""What a request's log line says of the generations that answered it.

Guarantees: the guard opens a record for each request (`opened`), in the request's context; an
answer that ends adds its figures to it (`noted`: prompt tokens, of them evaluated, reused from
a live cache and restored from a kept state, and the tokens generated) — several for `n` > 1 —
as does what else it did (`remarked`: the summary its prompt carries, made or reused), and the
guard's line ends with them (`said`). Outside a request (a test driving an answer
directly) nothing is recorded.
"""

from __future__ import annotations

import contextvars

from app.domain.events import GenerationDone

_FIGURES: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "request_figures", default=None
)


def opened() -> contextvars.Token[list[str] | None]:
    """A new record for the request being served (reset it with the token when it ends)."""
    return _FIGURES.set([])


def closed(token: contextvars.Token[list[str] | None]) -> None:
    _FIGURES.reset(token)


def noted(done: GenerationDone) -> None:
    """Add the figures of a generation that ended to the request's record, if there is one."""
    figures = _FIGURES.get()
    if figures is None:
        return
    t = done.timings
    figures.append(
        f"prompt {t.prompt_tokens} (evaluated {t.prompt_evaluated}, reused {t.prompt_reused},"
        f" restored {t.prompt_restored}{' from ' + t.restored_from if t.restored_from else ''}),"
        f" generated {t.generated}"
    )


def remarked(text: str) -> None:
    """Add `text` (what else the answer did: a compaction) to the request's record, if any."""
    figures = _FIGURES.get()
    if figures is not None:
        figures.append(text)


def said() -> str:
    """The record as the end of the log line ("" when no generation ended)."""
    figures = _FIGURES.get()
    return "; " + "; ".join(figures) if figures else ""
