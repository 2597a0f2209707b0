"""The screenshot command (`harmony-desk --screenshot PATH --theme … --view …`): one view of the
window drawn offscreen and saved as a PNG (the README's pictures, `make screenshots`).

Guarantees: the conversation views show a real conversation — the bundled default model
(SmolLM2) loaded in its worker process, `QUESTIONS` asked with a fixed seed, each answer waited
for, its footer's tokens/s measured — and every view names the loaded model in its header;
where that model is not installed, or with `scripted=True`, the scripted sample (`SAMPLE_TURNS`:
a preamble, a tool card, a JSON result) is drawn instead, and says so in the picture (the model
is named `SCRIPTED_NAME`) and on stderr, never silently; the window runs on fresh settings,
history and cache folders, removed afterwards (a picture never shows the user's own chats or
choices, and the user's recent models and KV snapshots are not touched); the theme is
`theme_choice`, else the user's; nothing reaches the network.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.controllers import preferences
from app.controllers.sample_host import bundled_model, real_host, scripted_host
from app.ui.app import application, build_window
from app.ui.window.main_window import MainWindow

SEED = 7  # the same answers every run
QUESTIONS = (  # a newcomer's first two questions (their answers are the model's own)
    "What is the capital of France?",
    "Write a Python function that returns the square of a number.",
    "Give me three tips for learning to cook.",
)
MAX_TOKENS = 160  # an answer's length at most: a picture, not an essay
SCRIPTED_NAME = "scripted sample (no model installed)"
_CALL = '<|constrain|>json<|message|>{"timezone":"Europe/Oslo"}<|call|>'
SAMPLE_TURNS = [
    (
        "<|channel|>analysis<|message|>The user wants the weather; call the tool.<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>Let me check the time first.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.current_time " + _CALL,
        "<|channel|>final<|message|>Here is a summary:\n\n* It is **daytime** in Oslo.\n\n"
        "```python\nprint('hello')\n```\n<|return|>",
    ),
    (
        "<|channel|>analysis<|message|>JSON please.<|end|><|start|>assistant"
        '<|channel|>final<|message|>{"answer":"42"}<|return|>',
    ),
]


@dataclass(frozen=True)
class View:
    """What one `--view` draws: the window's size, whether a conversation is shown, and
    whether the debug pane is open."""

    size: tuple[int, int]
    conversation: bool
    debug: bool = False


VIEWS = {
    "sample": View((1280, 860), conversation=True),
    "empty": View((1100, 760), conversation=False),
    "narrow": View((640, 480), conversation=True),
}


@contextmanager
def fresh_folders() -> Iterator[Path]:
    """Settings, history and cache in a new folder for the duration (the user's KV snapshots,
    signed with the user's own key, are never read with another)."""
    names = ("HARMONY_DESK_CONFIG", "HARMONY_DESK_DATA", "HARMONY_DESK_CACHE")
    before = {name: os.environ.get(name) for name in names}
    with tempfile.TemporaryDirectory(prefix="harmony-desk-shot-") as folder:
        for name in names:
            os.environ[name] = str(Path(folder) / name.rsplit("_", 1)[1].lower())
        try:
            yield Path(folder)
        finally:
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


async def converse(window: MainWindow, model: Path, questions: tuple[str, ...]) -> None:
    """Load `model`, then ask `questions` one after the other with the fixed seed, each
    answer finished before the next question."""
    host, chat = window.host, window.controller
    if not await window.load_model(str(model), n_ctx=2048):
        raise RuntimeError(f"the bundled model did not load: {model}")
    if host.sampling is not None:
        host.sampling = host.sampling.model_copy(update={"seed": SEED})
    chat.max_tokens = MAX_TOKENS
    for question in questions:
        chat.send(question)
        await chat.wait()
        reply = chat.doc.turns[-1].version.reply
        said = " ".join(reply.visible_text().split()) if reply is not None else ""
        print(f"asked {question!r}; {host.name} answered {said[:60]!r}", file=sys.stderr)


async def scripted_sample(window: MainWindow) -> None:
    """The scripted sample: a tool call allowed, then a JSON answer."""
    c = window.controller
    c.set_tools(("current_time",))
    c.send("What time is it in Oslo?")
    while c.busy:
        await asyncio.sleep(0.01)
        reply = c.doc.turns[-1].version.reply
        for seg in reply.segments if reply else []:
            if seg.kind == "tool" and seg.data.get("state") == "pending":
                c.decide(seg.data["call_id"], True)
    c.set_tools(())
    c.json_schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    c.send("Answer in JSON.")
    await c.wait()


def run(work: Coroutine[Any, Any, None]) -> None:
    """Run `work` on a qasync loop over the application's event loop until it ends."""
    import qasync

    app = application()
    loop = qasync.QEventLoop(app, already_running=True)
    asyncio.set_event_loop(loop)
    future = asyncio.ensure_future(work)
    while not future.done():  # (the loop's callbacks run inside processEvents)
        app.processEvents()
        time.sleep(0.005)
    future.result()


def settle(window: MainWindow) -> None:
    """Laid out and painted: posted events and a few rounds of events handled."""
    app = application()
    for _ in range(20):
        app.processEvents()
        time.sleep(0.005)
    window.repaint()


def screenshot(
    path: str, theme_choice: str | None = None, view: str = "sample", scripted: bool = False
) -> int:
    """Draw `view` (a key of `VIEWS`) in `theme_choice` ("light", "dark"; None: the user's)
    and save it as a PNG at `path`; 0 when written."""
    theme = theme_choice or preferences.current().theme
    with fresh_folders():
        return _draw(Path(path), theme, VIEWS[view], scripted)


def _draw(path: Path, theme: str, view: View, scripted: bool) -> int:
    application(theme)
    model = None if scripted else bundled_model()
    host = real_host()
    if model is None:
        scripts = [s for turn in SAMPLE_TURNS for s in turn]
        host = scripted_host(scripts, "harmony", SCRIPTED_NAME)  # named so in the picture
        print("drawing the scripted sample, not a real conversation", file=sys.stderr)
    window = build_window(host)
    window.set_debug(view.debug, remember=False)
    window.resize(*view.size)
    window.show()
    try:
        if model is not None:
            questions = QUESTIONS if view.conversation else ()
            run(converse(window, model, questions))
        elif view.conversation:
            run(scripted_sample(window))
        settle(window)
        path.parent.mkdir(parents=True, exist_ok=True)
        ok = window.grab().save(str(path))
    finally:
        window.close()
        host.close()
    print(f"{'wrote' if ok else 'could not write'} {path}", file=sys.stderr)
    return 0 if ok else 1
