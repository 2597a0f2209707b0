"""The strip under an MCP App's view where the person answers what the view asks: running one
of its server's tools, opening an address in the browser.

Guarantees: one question at a time, the others wait in order; a tool call shows the tool and its
arguments (inert: no control or bidi character acts) with Run, Allow in this chat and Deny; a
link shows the whole address with Open and Don't open; each question is answered exactly once —
by its button, or as refused when the strip goes away (`refuse_all`).
"""

from __future__ import annotations

import collections
import json
from collections.abc import Callable

from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from app.controllers.mcp_apps import Answer, PendingCall
from app.controllers.mcp_asks import CHOICES
from app.domain.inert import inert
from app.domain.tool_names import readable
from app.ui.mcp_apps.session import DENIED
from app.ui.theme import mark

SHOWN_CHARS = 400  # of a call's arguments, in the question


class _Question:
    def __init__(self, words: str, buttons: list[tuple[str, Callable[[], None]]]) -> None:
        self.words, self.buttons = words, buttons


class AskStrip(QFrame):
    """See the module guarantees."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("mcpAppAsk")
        mark(self, "notice")
        self.setAccessibleName("The app asks")
        layout = QVBoxLayout(self)
        self.words = QLabel(self)
        self.words.setWordWrap(True)
        self.words.setAccessibleName("What the app asks")
        self.row = QHBoxLayout()
        layout.addWidget(self.words)
        layout.addLayout(self.row)
        self._buttons: list[QPushButton] = []  # the shown question's
        self._questions: collections.deque[_Question] = collections.deque()
        self._refusals: dict[int, Callable[[], None]] = {}
        self.hide()

    def ask_call(self, call: PendingCall, answer: Callable[[Answer], None]) -> None:
        shown = inert(json.dumps(call.arguments, ensure_ascii=False), SHOWN_CHARS)
        name = inert(readable(call.tool.qualified_name, call.tool.plugin))  # "add · server"
        words = f"The app asks to run {name} ({call.tool.risk.value}) with {shown}."
        buttons = [
            ("Run", lambda: answer(CHOICES["once"])),
            ("Allow in this chat", lambda: answer(CHOICES["chat"])),
            ("Deny", lambda: answer(CHOICES["deny"])),
        ]
        self._add(_Question(words, buttons), lambda: answer(DENIED))

    def ask_link(self, url: str, answer: Callable[[bool], None]) -> None:
        words = f"The app asks to open {inert(url, 2000)} in your browser."
        buttons = [("Open", lambda: answer(True)), ("Don't open", lambda: answer(False))]
        self._add(_Question(words, buttons), lambda: answer(False))

    def _add(self, question: _Question, refuse: Callable[[], None]) -> None:
        self._refusals[id(question)] = refuse
        self._questions.append(question)
        if len(self._questions) == 1:
            self._show(question)

    def _show(self, question: _Question) -> None:
        while self.row.count():
            self.row.takeAt(0)
        for old in self._buttons:
            old.hide()
            old.deleteLater()
        self._buttons = []
        self.words.setText(question.words)
        for text, act in question.buttons:
            button = QPushButton(text, self)
            button.setAccessibleName(text)
            button.clicked.connect(lambda _=False, act=act, q=question: self._answered(q, act))
            self.row.addWidget(button)
            self._buttons.append(button)
        self.row.addStretch(1)
        self.show()

    def _answered(self, question: _Question, act: Callable[[], None]) -> None:
        if not self._questions or self._questions[0] is not question:
            return  # already answered
        self._questions.popleft()
        self._refusals.pop(id(question), None)
        act()
        if self._questions:
            self._show(self._questions[0])
        else:
            self.hide()

    def press(self, text: str) -> None:
        """Press the button `text` of the question shown (for keyboard users and tests)."""
        for button in self._buttons if self._questions else ():
            if button.text() == text:
                button.click()
                return
        raise LookupError(f"no button {text!r} is shown")

    def refuse_all(self) -> None:
        refusals = list(self._refusals.values())
        self._refusals.clear()
        self._questions.clear()
        for refuse in refusals:
            refuse()


__all__ = ["AskStrip"]
