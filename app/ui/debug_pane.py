"""The debug pane: analysis, the exact prompt, raw tokens, parser events, sampling and timings.

Guarantees: it holds text only while it is on; turning it off empties every tab, so no
analysis stays anywhere in the widget tree; it shows the selected reply (the newest by
default) and follows it while it streams; special tokens in the prompt are highlighted and
the prompt's token count is shown; secrets are redacted from everything it shows; nothing
here is ever put on the clipboard by the transcript's Copy actions.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QPlainTextEdit,
    QTabWidget,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from app.controllers.history import Reply
from app.domain.redact import redact
from app.ui.markdown_view import monospace


def _text_box(name: str, parent: QWidget) -> QPlainTextEdit:
    box = QPlainTextEdit(parent)
    box.setReadOnly(True)
    box.setFont(monospace())
    box.setAccessibleName(name)
    return box


_SPECIAL = "background:#fff3b0;color:#7a4b00"


class DebugPane(QDockWidget):
    """A dock with one tab per kind of detail."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Debug", parent)
        self.setObjectName("debugPane")
        self.setAccessibleName("Debug pane")
        self.tabs = QTabWidget(self)
        self.tabs.setAccessibleName("Debug details")
        self.analysis = _text_box("Analysis", self.tabs)
        prompt_page = QWidget(self.tabs)
        layout = QVBoxLayout(prompt_page)
        self.prompt_count = QLabel(prompt_page)
        self.prompt = QTextEdit(prompt_page)
        self.prompt.setReadOnly(True)
        self.prompt.setFont(monospace())
        self.prompt.setAccessibleName("Rendered prompt")
        layout.addWidget(self.prompt_count)
        layout.addWidget(self.prompt)
        self.tokens = _text_box("Generated tokens", self.tabs)
        self.events = _text_box("Parser events", self.tabs)
        self.details = _text_box("Sampling and timings", self.tabs)
        self.tabs.addTab(self.analysis, "Analysis")
        self.tabs.addTab(prompt_page, "Prompt")
        self.tabs.addTab(self.tokens, "Tokens")
        self.tabs.addTab(self.events, "Events")
        self.tabs.addTab(self.details, "Details")
        self.setWidget(self.tabs)
        self.token_table: Sequence[bytes] = ()
        self._shown_prompt: tuple[int, ...] = ()

    def _piece(self, token: int) -> str:
        if 0 <= token < len(self.token_table):
            return self.token_table[token].decode("utf-8", errors="replace")
        return f"<{token}>"

    def clear_all(self) -> None:
        for box in (self.analysis, self.tokens, self.events, self.details):
            box.clear()
        self.prompt.clear()
        self.prompt_count.clear()
        self._shown_prompt = ()

    def show_reply(self, reply: Reply | None) -> None:
        if not self.isVisible() or reply is None:
            self.clear_all()
            return
        d = reply.debug
        if self.analysis.toPlainText() != redact(d.analysis):
            self.analysis.setPlainText(redact(d.analysis))
        if d.prompt_ids != self._shown_prompt:
            self._shown_prompt = d.prompt_ids
            parts = []
            for t in d.prompt_ids:
                piece = html.escape(redact(self._piece(t)))
                special = piece.startswith("&lt;|") and piece.endswith("|&gt;")
                parts.append(
                    f'<span style="background:#fff3b0;color:#7a4b00">{piece}</span>'
                    if special
                    else piece
                )
            self.prompt.setHtml("<pre>" + "".join(parts) + "</pre>")
            self.prompt_count.setText(f"{len(d.prompt_ids)} prompt tokens")
        self.tokens.setPlainText("\n".join(f"{t}\t{self._piece(t)!r}" for t in d.token_ids))
        self.events.setPlainText("\n".join(redact(e) for e in d.events))
        timings = "\n".join(f"{k}: {v}" for k, v in d.timings.items())
        self.details.setPlainText(
            redact(
                f"model: {reply.model}\nsampling: {d.sampling}\n"
                f"stop reason: {d.stop_reason}\n{timings}"
            )
        )


__all__ = ["DebugPane"]
