"""Variables a GGUF's chat template reads beyond the conversation: firefunction-v2's
`functions` and `datetime` (which no OpenAI-shaped request carries) are given, as llama.cpp
gives `datetime`, so such a GGUF renders and its calls are learned; Llama 3.x's `date_string`
is left to the template's own default, so its prompt (and the prompt cache) keeps from day to
day."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from app.templates.calls.detect import detect
from app.templates.jinja import GgufJinja, jinja_template
from app.templates.jinja_variables import extra_variables

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "llama_templates"
TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "The time in a zone",
        "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}},
    },
}


def _template(name: str) -> GgufJinja:
    found = jinja_template((FIXTURES / f"{name}.jinja").read_text(encoding="utf-8"))
    assert isinstance(found, GgufJinja)
    return found


def test_firefunction_renders_the_declared_functions_and_today() -> None:
    template = _template("fireworks-ai-llama-3-firefunction-v2")
    text = template.render([{"role": "user", "content": "What time is it in Oslo?"}], [TOOL])
    declared = text.split("Available functions as JSON spec:\n", 1)[1].split("\nToday is ", 1)[0]
    assert json.loads(declared) == [TOOL["function"]]
    assert f"Today is {dt.date.today().strftime('%b %d %Y')}." in text
    bare = template.render([{"role": "user", "content": "Hi"}])  # no tools: an empty list
    assert "Available functions as JSON spec:\n[]\nToday is" in bare


def test_firefunction_and_cohere_command_r_plus_calls_are_learned() -> None:
    for name in ("fireworks-ai-llama-3-firefunction-v2", "CohereForAI-c4ai-command-r-plus-tool_use"):
        source = (FIXTURES / f"{name}.jinja").read_text(encoding="utf-8")
        found = detect(source, families=False)
        assert found.format is not None, (name, found.reason)


def test_llama_3_keeps_its_own_date() -> None:
    assert "date_string" not in extra_variables([TOOL])
    text = _template("meta-llama-Llama-3.1-8B-Instruct").render([{"role": "user", "content": "Hi"}])
    assert "Today Date: 26 Jul 2024" in text
