"""The tool-call formats by name: what a template's `tool_calls` names.

Guarantees: every name maps to one format instance; `call_format(None)`, or a name with no
format here (Harmony's own, handled by its template), gives None.
"""

from __future__ import annotations

from app.templates.calls.format import CallFormat
from app.templates.calls.functionary import Functionary
from app.templates.calls.gemma import Gemma
from app.templates.calls.gemma4 import Gemma4
from app.templates.calls.gigachat import GigaChat3, GigaChat31
from app.templates.calls.hermes import Hermes
from app.templates.calls.llama3 import Llama3
from app.templates.calls.minimax import MiniMax
from app.templates.calls.mistral import Mistral
from app.templates.calls.muse import Muse
from app.templates.calls.nemotron import Nemotron
from app.templates.calls.pythonic import Pythonic
from app.templates.calls.xml_calls import QwenXml

FORMATS: dict[str, CallFormat] = {
    f.name: f
    for f in (
        Hermes(),
        Llama3(),
        Mistral(),
        QwenXml(),
        Gemma(),
        Gemma4(),
        Nemotron(),
        Pythonic(),
        MiniMax(),
        GigaChat3(),
        GigaChat31(),
        Functionary(),
        Muse(),
    )
}


def call_format(name: str | None) -> CallFormat | None:
    """The format called `name`, None for none."""
    return FORMATS.get(name or "")
