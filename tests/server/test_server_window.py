"""File ▸ Serve this model, offscreen: the window's model (a scripted token source here; the
real models are served in `test_server.py`) answers an `openai` client on loopback through the
window's engine thread — a malformed gpt-oss call recovered as a tool call, analysis only as
reasoning — and the status bar counts the requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai

from tests.server.test_server import TOOLS, _free_port
from tests.ui.test_window import make_window

CALL_ON_FINAL = ('<|channel|>final to=functions.get_weather <|constrain|>json<|message|>'
                 '{"city":"Oslo","unit":"C"}<|call|>')
ANSWER = ("<|channel|>analysis<|message|>zebra-thought about rain.<|end|>"
          "<|start|>assistant<|channel|>final<|message|>It rains in Oslo.<|return|>")


def test_the_window_serves_its_model_and_counts_the_requests(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, client = make_window(qtbot, tmp_path, [CALL_ON_FINAL, ANSWER])
    window.serve.port = port = _free_port()
    window.serve.action.setChecked(True)
    assert window.serve.label.text().startswith(f"Serving at http://127.0.0.1:{port}/v1")
    api = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0)
    called = api.chat.completions.create(model="m", messages=[{"role": "user", "content": "Weather?"}],
                                         tools=TOOLS)  # type: ignore[arg-type]
    choice = called.choices[0]
    assert choice.finish_reason == "tool_calls"  # the W-catalogue call on `final` is still a call
    assert json.loads(choice.message.tool_calls[0].function.arguments) == {"city": "Oslo", "unit": "C"}
    answered = api.chat.completions.create(model="m", messages=[
        {"role": "user", "content": "Weather?"}, choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": choice.message.tool_calls[0].id, "content": '{"rain": true}'}])
    message = answered.choices[0].message
    assert message.content == "It rains in Oslo."
    assert (message.model_extra or {}).get("reasoning_content") == "zebra-thought about rain."
    sent = client.encoding.decode(client.prompts[-1])
    assert '{"rain": true}' in sent and "to=functions.get_weather" in sent  # the pairing kept
    window.serve.refresh()
    assert window.serve.label.text().endswith("· 2 requests")
    api.close()
    window.serve.action.setChecked(False)
    assert not window.serve.serving.running and window.serve.label.text() == ""
