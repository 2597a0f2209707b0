"""The window's own turn is never queued behind the local server's clients, on the real SmolLM2:
File ▸ Serve this model with four sequences (one reserved for the window), eight `openai`
clients streaming long answers (three decoding, five queued, as `/harmony-desk/status` says),
and a message sent in the window meanwhile is answered while the clients are still busy."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx
import openai

from tests.gui_helpers import real_model_window
from tests.server.test_server import _free_port
from tests.ui.test_window import send


def test_the_windows_turn_starts_while_eight_server_clients_are_busy(
    qtbot: Any, qloop: Any, tmp_path: Path, smollm_model: Any
) -> None:
    with real_model_window(qtbot, tmp_path, smollm_model, max_tokens=8) as window:
        window.serve.port = port = _free_port()
        window.serve.action.setChecked(True)
        base = f"http://127.0.0.1:{port}"
        api = openai.OpenAI(base_url=f"{base}/v1", api_key="none", max_retries=0, timeout=600)
        ended: list[float] = []

        def client(i: int) -> None:
            words = f"Tell a long story about lighthouse number {i}."
            stream = api.chat.completions.create(
                model="m", messages=[{"role": "user", "content": words}], max_tokens=200,
                temperature=0, stream=True,
            )  # fmt: skip
            for _ in stream:
                pass
            ended.append(time.monotonic())

        threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        use: dict[str, int] = {}
        while time.monotonic() < deadline:
            use = httpx.get(f"{base}/harmony-desk/status", timeout=10).json()["sequences"]
            if use["queued"] == 5:
                break
            time.sleep(0.1)
        assert use == {"total": 4, "reserved": 1, "busy": 3, "queued": 5}
        send(qtbot, window, "Name a colour.", timeout=120_000)
        answered = time.monotonic()
        reply = window.controller.doc.turns[-1].version.reply
        after = httpx.get(f"{base}/harmony-desk/status", timeout=10).json()["sequences"]
        for t in threads:
            t.join(600)
        api.close()
        window.serve.action.setChecked(False)
    assert reply is not None and reply.debug is not None and reply.debug.timings["generated"] > 0
    assert len(ended) == 8 and sum(e > answered for e in ended) >= 6
    assert after["busy"] + after["queued"] >= 6  # the clients were still at it
