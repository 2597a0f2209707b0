"""Transcript cards: a tool call (approve, edit, deny, running time, result) and a JSON result.

Guarantees: a pending tool card shows the tool by its readable name ("get_current_time ·
time", `app/domain/tool_names.py`; the name the model called it by in the tooltip), its
declared risk and its arguments in an editor, with Run, Allow in this chat, Always allow, Deny
and Never; the edited arguments are sent only if they are a JSON object (otherwise the card
says why and waits); the elapsed time ticks while the call runs, with the progress its tool
reports (a bar when it knows the total, and its words: "Running… 2.1 s · 3 of 10 ·
indexing"); the result or error is shown collapsed and expands on demand (the toggle says Show
result or Hide result, as it will act; the result's box is as tall as its lines, up to
`RESULT_MAX_PX`, then it scrolls); a result the model read cut (to its share of the context)
offers Show whole result, which opens the whole, read-only, from the tool audit. A JSON card
shows the answer pretty-printed with a valid/invalid badge and, when invalid, the failing path
and reason.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.controllers.chat import Mode
from app.controllers.tool_results import whole_key
from app.domain.tool_names import MCP_SOURCE, readable
from app.ui.markdown.view import monospace
from app.ui.theme import mark
from app.ui.transcript.whole_result import WholeResultDialog

ARGS_MAX_PX = 110  # a tool call's arguments, at their tallest
RESULT_MAX_PX = 200  # its result, at its tallest
WRAP_CHARS = 80  # about where a line of arguments wraps in the column (their box's height)
Decide = Callable[[str, bool, "dict[str, Any] | None", "Mode | None"], None]


def _button(text: str, name: str, parent: QWidget) -> QPushButton:
    button = QPushButton(text, parent)
    button.setAccessibleName(name)
    return button


class FittedText(QPlainTextEdit):
    """Read-only monospace text as tall as its lines, up to `most` px (then it scrolls): its
    lines counted where its width wraps them, again whenever that width changes."""

    def __init__(self, most: int, parent: QWidget) -> None:
        super().__init__(parent)
        self.most = most
        self.setFont(monospace())

    def fit(self) -> None:
        metrics = self.fontMetrics()
        width = self.viewport().width() - 8
        laid_out = self.isVisible() and width > 0  # else about where the column wraps
        chars = max(20, width // max(1, metrics.horizontalAdvance("M"))) if laid_out else WRAP_CHARS
        text = self.toPlainText().split("\n")
        lines = sum(1 + max(0, len(line) - 1) // chars for line in text)
        self.setFixedHeight(min(metrics.lineSpacing() * lines + 14, self.most))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            self.fit()


class ToolCard(QFrame):
    """One tool call in the transcript."""

    def __init__(self, data: dict[str, Any], decide: Decide, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("toolCard")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        mark(self, "card")
        self.setAccessibleName("Tool call")
        self.data = data
        self._decide = decide
        self._started: float | None = None
        layout = QVBoxLayout(self)
        self.title = QLabel(self)
        self.args = FittedText(ARGS_MAX_PX, self)
        self.args.setAccessibleName("Tool arguments")
        self.args.setFixedHeight(ARGS_MAX_PX)
        self.problem = QLabel(self)
        mark(self.problem, "error")
        self.problem.hide()  # shown while it says something
        buttons = self._build_decisions()
        result_row = self._build_result()
        for w in (self.title, self.args, self.problem):
            layout.addWidget(w)
        layout.addLayout(buttons)
        layout.addLayout(result_row)
        layout.addWidget(self.result)
        self.run.clicked.connect(lambda: self._answer(True, None))
        self.allow_chat.clicked.connect(lambda: self._answer(True, Mode.ALLOW_CONVERSATION))
        self.always.clicked.connect(lambda: self._answer(True, Mode.ALWAYS))
        self.deny.clicked.connect(lambda: self._answer(False, None))
        self.never.clicked.connect(lambda: self._answer(False, Mode.DENY))
        self._tick = QTimer(self)
        self._tick.setInterval(100)
        self._tick.timeout.connect(self._show_elapsed)
        self.refresh()

    def _build_decisions(self) -> QHBoxLayout:
        """Run, Allow in this chat, Always allow, Deny and Never (shown while pending)."""
        buttons = QHBoxLayout()
        self.run = _button("Run", "Run the tool call", self)
        self.allow_chat = _button(
            "Allow in this chat", "Allow this tool for this conversation", self
        )
        self.always = _button("Always allow", "Always allow this tool", self)
        self.deny = _button("Deny", "Deny the tool call", self)
        self.never = _button("Never", "Never allow this tool", self)
        for b in (self.run, self.allow_chat, self.always, self.deny, self.never):
            buttons.addWidget(b)
        buttons.addStretch(1)
        return buttons

    def _build_result(self) -> QHBoxLayout:
        """The call's state with the Show result toggle beside it; the result (collapsed)."""
        self.state = QLabel(self)
        self.state.setAccessibleName("Tool call state")
        self.toggle = QToolButton(self)
        self.toggle.setText("Show result")
        self.toggle.setAccessibleName("Show or hide the tool result")
        self.toggle.setCheckable(True)
        self.result = FittedText(RESULT_MAX_PX, self)
        self.result.setReadOnly(True)
        self.result.setAccessibleName("Tool result")
        self.result.hide()
        self.toggle.toggled.connect(self._show_result)
        self.whole = QToolButton(self)  # shown when the model read the result cut
        self.whole.setText("Show whole result")
        self.whole.setAccessibleName("Show the whole tool result")
        self.whole.clicked.connect(self.show_whole)
        self.whole_dialog: WholeResultDialog | None = None
        self.bar = QProgressBar(self)  # while running, when the tool reports a total
        self.bar.setAccessibleName("Tool call progress")
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(False)
        self.bar.setMaximumWidth(120)
        self.bar.hide()
        row = QHBoxLayout()
        row.addWidget(self.state, 1)
        row.addWidget(self.bar)
        row.addWidget(self.toggle)
        row.addWidget(self.whole)
        return row

    def _show_result(self, on: bool) -> None:
        self.result.setVisible(on)
        self.toggle.setText("Hide result" if on else "Show result")
        self.result.fit()

    def show_whole(self) -> None:
        """Open the whole result the model read cut (from the tool audit)."""
        key = whole_key(str(self.data.get("result", "")))
        if key is None:
            return
        self.whole_dialog = WholeResultDialog(self.readable_name(), key, self)
        self.whole_dialog.show()

    def _answer(self, allow: bool, remember: Mode | None) -> None:
        arguments: dict[str, Any] | None = None
        if allow:
            try:
                value = json.loads(self.args.toPlainText())
            except ValueError as exc:
                self._say_problem(f"The arguments are not JSON: {exc}")
                return
            if not isinstance(value, dict):
                self._say_problem("The arguments must be a JSON object.")
                return
            arguments = value
        self._say_problem("")
        self._decide(str(self.data.get("call_id", "")), allow, arguments, remember)

    def readable_name(self) -> str:
        """The tool as a person reads it ("get_current_time · time")."""
        return readable(str(self.data.get("tool", "?")), str(self.data.get("source") or ""))

    def _show_title(self) -> None:
        """The tool in bold, its server or plugin, its risk; the called name as a tooltip."""
        d = self.data
        name, _, server = self.readable_name().partition(" · ")
        where = html.escape(f" · {server}") if server else ""
        source = str(d.get("source") or "")
        if source.startswith(MCP_SOURCE) and server:
            where += " · MCP server"
        elif source:
            where += f" · from {html.escape(source)}"
        risk = f" · {html.escape(str(d['risk']))}" if d.get("risk") else ""
        self.title.setText(f"<b>{html.escape(name)}</b>{where}{risk}")
        self.title.setToolTip(f"The model called it {d.get('tool', '?')}")

    def refresh(self) -> None:
        d = self.data
        self._show_title()
        if (self.args.toPlainText() != d.get("arguments", "") and d.get("state") != "pending") or (
            d.get("state") == "pending" and not self.args.toPlainText()
        ):
            self.args.setPlainText(str(d.get("arguments", "")))
            self._fit_args()
        pending = d.get("state") == "pending"
        self.args.setReadOnly(not pending)
        for b in (self.run, self.allow_chat, self.always, self.deny, self.never):
            b.setVisible(pending)
        state = d.get("state", "called")
        if state == "running":
            self._started = self._started or time.monotonic()
            self._tick.start()
        else:
            self._tick.stop()
        words = {
            "called": "Waiting…",
            "pending": "Waiting for your decision",
            "running": "Running…",
            "denied": "Denied",
            "ok": "Done",
            "error": "Failed",
        }
        text = words.get(state, state)
        if d.get("duration_ms") is not None and state in ("ok", "error"):
            text += f" in {d['duration_ms'] / 1000:.2f} s"
        if d.get("decision"):
            text += f" ({d['decision']})"
        self.state.setText(text)
        self._show_progress()
        if "result" in d:
            if self.result.toPlainText() != str(d["result"]):
                self.result.setPlainText(str(d["result"]))
                self.result.fit()
            self.toggle.setVisible(True)
            if state == "error":
                self.toggle.setChecked(True)
        else:
            self.toggle.setVisible(False)
        self.whole.setVisible(whole_key(str(d.get("result", ""))) is not None)

    def _say_problem(self, text: str) -> None:
        self.problem.setText(text)
        self.problem.setVisible(bool(text))

    def _fit_args(self) -> None:
        """The arguments' box as tall as their lines, up to `ARGS_MAX_PX` (then it scrolls)."""
        self.args.fit()

    def _show_elapsed(self) -> None:
        if self._started is not None:
            said = progress_words(self.data.get("progress"))
            self.state.setText(f"Running… {time.monotonic() - self._started:.1f} s{said}")

    def _show_progress(self) -> None:
        """The bar, while the call runs and its tool has said a total; the words with the time."""
        running = self.data.get("state") == "running"
        progress: dict[str, Any] = (self.data.get("progress") or {}) if running else {}
        total = progress.get("total")
        self.bar.setVisible(bool(total))
        if total:
            self.bar.setValue(int(1000 * min(1.0, max(0.0, progress.get("done", 0) / total))))
        if progress:
            self._show_elapsed()


def progress_words(progress: dict[str, Any] | None) -> str:
    """A running call's progress as words after its time (" · 3 of 10 · indexing"); ""
    when its tool has said none."""
    if not progress:
        return ""
    done, total, message = progress.get("done", 0), progress.get("total"), progress.get("message")
    amount = f"{done:g} of {total:g}" if total else f"{done:g} so far"
    return f" · {amount}" + (f" · {message}" if message else "")


class JsonCard(QFrame):
    """A JSON answer: pretty-printed, with its verdict."""

    def __init__(self, text: str, data: dict[str, Any], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("jsonCard")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        mark(self, "card")
        self.setAccessibleName("JSON result")
        layout = QVBoxLayout(self)
        valid = bool(data.get("valid"))
        self.badge = QLabel("✓ valid JSON" if valid else "✗ invalid JSON", self)
        self.badge.setAccessibleName("JSON verdict")
        mark(self.badge, "badge-ok" if valid else "badge-error")
        layout.addWidget(self.badge, 0, Qt.AlignmentFlag.AlignLeft)  # as wide as its words
        if not valid:
            where = data.get("path") or "/"
            self.reason = QLabel(
                f"{data.get('code', '')} at {where}: {data.get('error', '')}", self
            )
            self.reason.setWordWrap(True)
            layout.addWidget(self.reason)
        self.plan = QLabel(_plan_line(data), self)
        self.plan.setAccessibleName("What the schema's keywords got")
        self.plan.setWordWrap(True)
        mark(self.plan, "muted")
        layout.addWidget(self.plan)
        self.body = QPlainTextEdit(self)
        self.body.setReadOnly(True)
        self.body.setFont(monospace())
        self.body.setPlainText(text)
        self.body.setAccessibleName("JSON text")
        lines = min(text.count("\n") + 2, 14)
        self.body.setFixedHeight(self.body.fontMetrics().lineSpacing() * lines + 12)
        layout.addWidget(self.body)


def _plan_line(data: dict[str, Any]) -> str:
    """Which keywords the grammar enforced, which were checked after, and what was retried."""
    enforced, after = data.get("enforced") or [], data.get("checked_after") or []
    if enforced or after:
        checked = "Checked after: " + "; ".join(after) if after else "Nothing left to check after"
        parts = [f"Enforced while generating: {', '.join(enforced)}", checked]
    else:
        parts = ["Checked after: the whole schema (the endpoint generated the answer)"]
    retried = data.get("retried") or []
    if retried:
        parts.append(f"Retried {len(retried)}× ({'; '.join(retried)})")
    return " · ".join(parts)


__all__ = ["JsonCard", "ToolCard", "progress_words"]
