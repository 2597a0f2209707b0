"""The status bar's line: the model and where it runs, the worker's state, the last answer's
speed, and how full the context is (or, for a remote answer, the usage its endpoint reported).

Guarantees: figures are shown as the engine measured them (tokens/s of decoding, the first
token's latency, prompt plus generated against the context); the context is split by part on a
small bar (`budget_bar.py`: instructions, tools, documents, history, the answer's reserve, room
left), its tooltip the budget's sentence, its figure in the error colour and saying so from
nearly full; a remote answer says its endpoint (☁) and never claims a context figure it was
not told. Beside the figure: "compacted" while the open chat's latest compaction applies (its
tooltip, and the bar's, say how many exchanges stand as a summary and the prompt's tokens
before and after), and the Compact now button (`compaction_controls.py` wires it). Once it
`follow`s the chat controller, the figures are the open chat's and passing sentences clear
themselves (`status_follow.py`).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QLabel, QStatusBar, QWidget

from app.controllers.chat import ChatController
from app.domain.budget import Budget
from app.domain.compaction import Compaction
from app.domain.figures import Figures
from app.ui.theme import mark
from app.ui.transcript.turn_parts import ActionButton
from app.ui.window.budget_bar import BudgetBar, figure
from app.ui.window.endpoints import where
from app.ui.window.status_follow import StatusFollower


class StatusLine:
    """The four labels of the window's status bar."""

    def __init__(self, bar: QStatusBar) -> None:
        self.model = QLabel(bar)
        self.worker = QLabel("worker: idle", bar)
        self.speed = QLabel(bar)
        self.budget = BudgetBar(bar)  # the context's parts, drawn (`budget_bar.py`)
        self.context = QLabel(bar)
        bar.addPermanentWidget(self.budget)
        for label, name in (
            (self.model, "Loaded model"),
            (self.worker, "Worker state"),
            (self.speed, "Speed of the last answer"),
            (self.context, "Context"),
        ):
            label.setAccessibleName(name)
            bar.addPermanentWidget(label)
        self.compacted = QLabel("compacted", bar)
        self.compacted.setAccessibleName("Compaction")
        mark(self.compacted, "muted")
        self.compacted.hide()
        bar.addPermanentWidget(self.compacted)
        self.compact = ActionButton(
            "Compact now",
            "Compact now: summarise the older exchanges at once (/compact); every message stays,"
            " and Undo on the marker gives them back",
            "arrow-collapse-vertical",
            bar,
        )
        bar.addPermanentWidget(self.compact)
        self._compaction = ""  # what the bar's tooltip adds: the compaction that applies

    def follow(self, controller: ChatController) -> StatusFollower:
        """Follow the open chat (`status_follow.py`): its figures, sentences that clear."""
        bar = self.model.parentWidget()
        assert isinstance(bar, QStatusBar)
        self.follower = StatusFollower(bar, self, controller, (self.model, self.worker))
        return self.follower

    def permanent(self) -> list[QWidget]:
        """The widgets that stand at the bar's right, in order."""
        return [self.budget, self.model, self.worker, self.speed, self.context]

    def clear_figures(self) -> None:
        """No answer's figures (a chat with none yet)."""
        self.speed.clear()
        self.context.clear()
        self.show_budget(None)

    def busy(self, busy: bool) -> None:
        self.worker.setText("worker: generating" if busy else "worker: ready")

    def loaded(self, name: str, runs_on: str) -> None:
        self.model.setText(f"{name} · on {runs_on}")

    def timings(self, s: dict[str, Any]) -> None:
        self.speed.setText(Figures.of(s).speed())  # as the answer's footer says them
        prompt, generated = int(s.get("prompt_tokens", 0)), int(s.get("generated", 0))
        if s.get("endpoint"):  # a remote answer: the usage the endpoint reported
            usage = (
                f"{prompt} prompt + {generated} completion = {prompt + generated} tokens"
                if prompt
                else f"usage not reported ({generated} chunks streamed)"
            )
            self.context.setText(f"{where(s['endpoint'])}: {usage}")
            self.show_budget(None)
            return
        budget = Budget.from_dict(s.get("budget") or {})
        if budget is None:  # no budget measured: the figures the engine gave
            self.context.setText(f"context {prompt + generated}/{int(s.get('n_ctx', 0))}")
        self.show_budget(budget.grown(generated) if budget is not None else None)

    def show_budget(self, budget: Budget | None) -> None:
        """The context's parts on the bar, its figure (warned when nearly full) beside it."""
        self.budget.show_budget(budget)
        if budget is not None:
            self.context.setText(figure(budget))
            self.context.setToolTip(budget.sentence())
            if self._compaction:
                self.budget.setToolTip(f"{budget.sentence()}\n{self._compaction}")
            mark(self.context, "error" if budget.nearly_full else "")
        else:
            self.context.setToolTip("")
            mark(self.context, "")

    def show_compaction(self, compaction: Compaction | None) -> None:
        """The open chat's latest compaction (None: none applies), said beside the figure."""
        self._compaction = said_of(compaction) if compaction is not None else ""
        self.compacted.setVisible(compaction is not None)
        self.compacted.setToolTip(self._compaction)
        self.compacted.setAccessibleDescription(self._compaction)
        self.show_budget(self.budget.budget)


def said_of(compaction: Compaction) -> str:
    """ "compacted: 12 exchanges as a summary (the prompt 9,400 → 610 tokens)"."""
    plural = "" if compaction.exchanges == 1 else "s"
    return (
        f"compacted: {compaction.exchanges} exchange{plural} as a summary (the prompt"
        f" {compaction.tokens_before:,} → {compaction.tokens_after:,} tokens)"
    )


__all__ = ["StatusLine", "said_of"]
