"""The pictures of issue 56's note: `python -m tests.ui.shots OUT [--size 640x480 ...]` draws
the window offscreen, in the light and the dark theme at each size (1600×1000 and 640×480
unless `--size` says), into the folder OUT:

- `chats-streaming`: a chat whose answer streams (its Stop), another chat beside it;
- `chats-queued`: that other chat open, its message queued behind the streaming answer;
- `queue`: the other chat with two messages queued;
- `reading`: the real SmolLM2 reading a long prompt ("Reading 1,7xx tokens… NN %");
- `tool-calls`: View ▸ Tool calls in this chat… after a call to a real MCP server (the SDK's,
  over stdio) that the user approved;
- `base-model`: the Ctrl+L chooser, Gemma 3 270M with its "base model" badge.

Guarantees: real widgets, the real controllers and store, on fresh settings, history and cache
folders (`app.ui.screenshot.fresh_folders`); the scripted source where a real model is not
needed to show the state (held mid-answer, so a streaming picture shows the same state every
run), the real SmolLM2 for the prompt read and the chooser; every state is waited for before
it is drawn, and a state not reached stops the script with an error (exit status 1); each
file is named `NAME-THEME-WxH.png`.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer
from PySide6.QtGui import QAction

from app.controllers.bridge import EngineBridge
from app.controllers.model_host import ModelHost
from app.domain.progress import PromptRead
from app.store.history import HistoryStore
from app.tools.mcp.config import McpServer, save_servers
from app.ui.app import application, build_window
from app.ui.screenshot import bundled_model, fresh_folders
from app.ui.transcript.cards import ToolCard
from app.ui.window.main_window import MainWindow
from tests.ui.shot_kit import (
    SIZES,
    THEMES,
    HeldClient,
    centre_over,
    look,
    pump,
    run,
    save,
    wait_signal,
    wait_until,
)

if TYPE_CHECKING:
    from app.ui.models.chooser import ModelChooser
    from app.ui.tool_calls.dialog import ToolCallsDialog

PASSAGE = (
    "The keeper climbed the stairs of the lighthouse at dusk, as every evening, and lit the "
    "lamp. Far out, a small boat was struggling against the wind. "
)
STORY = "<|channel|>final<|message|>" + PASSAGE * 40 + "<|return|>"
SHORT = "<|channel|>final<|message|>Four.<|return|>"
CALL = (
    "<|channel|>commentary to=functions.time__get_current_time <|constrain|>json"
    '<|message|>{"timezone":"Europe/Oslo"}<|call|>'
)
TOLD = "<|channel|>final<|message|>It is {time} in Oslo.<|return|>"
CALLS = "Tool calls in this chat…"
CLOCK = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_clock_server.py"
LOG = "Summarise this pump log from station {n}:\n" + "the pump ran and the valve held. " * 220


def _window(host: ModelHost, history: Path) -> MainWindow:
    window = build_window(host, HistoryStore(history))
    window.show()
    window.controller.settle()
    welcome = window.transcript.empty_state.welcome
    if welcome is not None and welcome.isVisible():  # the second hour: dismissed long ago
        welcome.close_button.click()
    return window


def _enter(window: MainWindow, text: str) -> None:
    window.composer.box.setPlainText(text)
    window.composer.send.click()


def _open(window: MainWindow, doc_id: str) -> None:
    window.controller.select(doc_id)
    wait_until("the chat to open", lambda: window.controller.doc.id == doc_id)
    pump()


def _new_chat(window: MainWindow) -> None:
    before = window.controller.doc.id
    window.new_action.trigger()
    wait_until("a new chat", lambda: window.controller.doc.id != before)
    window.controller.settle()


def chats(folder: Path, out: Path, sizes: list[tuple[int, int]]) -> None:
    """Two chats (one streaming, one queued behind it) and the queue of two."""
    client = HeldClient([STORY, SHORT, SHORT, SHORT], hold_after=120)
    host = ModelHost(EngineBridge())
    host.use(client, "harmony")
    window = _window(host, folder / "chats.db")
    c = window.controller
    try:
        wait_signal("the story's first words", c.segmentText,
                    lambda: _enter(window, "Write a long story about a lighthouse keeper"))  # fmt: skip
        wait_until("the story held mid-answer", client.held.is_set)
        story = c.doc.id
        _new_chat(window)
        _enter(window, "What is 2+2?")
        wait_until("the message queued", lambda: window.composer.queued.isVisible())
        _shoot_all(window, out, "chats-queued", sizes)
        second = c.doc.id
        _open(window, story)
        _shoot_all(window, out, "chats-streaming", sizes)
        _open(window, second)
        _enter(window, "And what is the capital of France? One word, please.")
        wait_until("two queued", lambda: len(c.queue.of(second)) == 2)
        _shoot_all(window, out, "queue", sizes)
    finally:
        client.release.set()
        _close(window, host)


def _close(window: MainWindow, host: ModelHost) -> None:
    """Stop what still answers or waits in the queue, let it end, then close."""
    c = window.controller
    for item in list(c.queue.items):
        c.queue.remove(item.id)
    c.stop_shown()
    wait_until("the answers to end", lambda: not c.busy, 30)
    window.close()
    host.close()
    pump()


def _shoot_all(window: MainWindow, out: Path, name: str, sizes: list[tuple[int, int]]) -> None:
    for theme_name in THEMES:
        for size in sizes:
            look(window, theme_name, size)
            save(window, out, name, theme_name)


def tool_calls(folder: Path, out: Path, sizes: list[tuple[int, int]]) -> None:
    """A call to the MCP clock server, approved; then View ▸ Tool calls in this chat…"""
    save_servers({"time": McpServer(command=sys.executable, args=(str(CLOCK),), timeout=30)})
    host = ModelHost(EngineBridge())
    told = TOLD.format(time="14:05")
    host.use_scripted([CALL, told])
    window = _window(host, folder / "tool-calls.db")
    c = window.controller
    try:
        c.set_tools(("mcp:time",))
        _enter(window, "What time is it in Oslo?")
        wait_until("the call to wait for approval", lambda: _pending(window) is not None, 60)
        card = _pending(window)
        assert card is not None
        wait_signal("the answer after the call", c.replyFinished, card.run.click, 60)
        action = next(a for a in window.findChildren(QAction) if a.text() == CALLS)
        for theme_name in THEMES:
            for size in sizes:
                look(window, theme_name, size)
                dialog = _calls_dialog(window, action)
                centre_over(dialog, window)
                save(window, out, "tool-calls", theme_name)
                dialog.close()
    finally:
        c.tools.close()
        _close(window, host)


def _pending(window: MainWindow) -> ToolCard | None:
    turns = window.transcript.turns
    cards = [w for w in turns[-1].segments if isinstance(w, ToolCard)] if turns else []
    return cards[-1] if cards and cards[-1].data.get("state") == "pending" else None


def _calls_dialog(window: MainWindow, action: QAction) -> ToolCallsDialog:
    from app.ui.tool_calls.dialog import ToolCallsDialog

    action.trigger()
    dialog = window.findChild(ToolCallsDialog)
    assert dialog is not None
    dialog.fit_to(window)
    wait_until("the audit read", lambda: dialog.table.topLevelItemCount() == 1, 30)
    first = dialog.table.topLevelItem(0)
    assert first is not None
    dialog.table.setCurrentItem(first)
    pump()
    return dialog


def reading_and_chooser(folder: Path, out: Path, sizes: list[tuple[int, int]]) -> None:
    """The chooser with Gemma's badge, SmolLM2 loaded; then SmolLM2 reading a long prompt."""
    model = bundled_model()
    if model is None:
        raise RuntimeError("the bundled SmolLM2 is not installed: no reading picture")
    host = ModelHost(EngineBridge())
    window = _window(host, folder / "reading.db")
    try:
        wait_signal("SmolLM2 loaded", host.loaded,
                    lambda: window.load_model(str(model), n_ctx=4096), 120)  # fmt: skip
        _chooser(window, out, sizes)  # first: its picture's chat list holds no read logs
        window.controller.max_tokens = 8
        station = 0
        for theme_name in THEMES:
            for size in sizes:
                station += 1
                look(window, theme_name, size)
                _read_and_shoot(window, out, theme_name, LOG.format(n=station))
    finally:
        _close(window, host)


def _read_and_shoot(window: MainWindow, out: Path, theme_name: str, prompt: str) -> None:
    """Send `prompt` in a new chat; draw the window once the note says 25–90 % read."""
    c, note = window.controller, window.reading
    taken: list[Path] = []

    def grab() -> None:
        said = re.fullmatch(r"Reading [\d,]+ tokens… (\d+) %", note.text())
        if not taken and note.isVisible() and said and 25 <= int(said.group(1)) <= 90:
            taken.append(save(window, out, "reading", theme_name))

    def read(_turn: int, progress: object) -> None:
        if isinstance(progress, PromptRead):
            QTimer.singleShot(0, grab)  # once the note has taken it and is laid out

    if c.doc.turns:
        _new_chat(window)
    c.progressed.connect(read)
    try:
        wait_signal("the long prompt's answer", c.replyFinished,
                    lambda: _enter(window, prompt), 180)  # fmt: skip
    finally:
        c.progressed.disconnect(read)
    if not taken:
        raise RuntimeError("the prompt was read before a picture of the note could be taken")


def _chooser(window: MainWindow, out: Path, sizes: list[tuple[int, int]]) -> None:
    for theme_name in THEMES:
        for size in sizes:
            look(window, theme_name, size)
            chooser = window.model_label.choose()
            wait_until("Gemma's base-model badge", partial(_badged, chooser), 60)
            pump()
            save(window, out, "base-model", theme_name)
            chooser.hide()


def _badged(chooser: ModelChooser) -> bool:
    from app.ui.models.rows import BADGES

    items = [chooser.list.item(i) for i in range(chooser.list.count())]
    return any("base model" in (item.data(BADGES) or ()) for item in items)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.ui.shots", description=__doc__)
    parser.add_argument("out", type=Path, help="the folder the PNGs go to")
    parser.add_argument("--size", action="append", help="WxH (repeatable; default both)")
    args = parser.parse_args(argv)
    sizes = [_size(s) for s in args.size] if args.size else list(SIZES)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # drawn, never shown
    with fresh_folders() as folder:
        application("light")
        try:
            run(lambda: _all(folder, args.out.resolve(), sizes))
        except (TimeoutError, RuntimeError) as problem:
            print(f"shots: {problem}", file=sys.stderr)
            return 1
    return 0


def _all(folder: Path, out: Path, sizes: list[tuple[int, int]]) -> None:
    chats(folder, out, sizes)
    tool_calls(folder, out, sizes)
    reading_and_chooser(folder, out, sizes)


def _size(text: str) -> tuple[int, int]:
    width, _, height = text.partition("x")
    return int(width), int(height)


if __name__ == "__main__":
    sys.exit(main())
