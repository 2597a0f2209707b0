"""The window's dialogs for what an MCP server asks beside tool calls: a form for a request for
input (elicitation), an address to open, and the approval of a sampling request
(`app/ui/mcp/sampling_dialog.py`); `attach` connects them to the window.

Guarantees: a form is built from its fields alone — each labelled by its title (else its
name), a required one marked with *, its description under it, a secret-looking one's text
hidden as it is typed — each prefilled with the server's default (SEP-1034: a text's, a
number's in its spin box, a yes/no's check, a choice's in its list, a multiple choice's
checks) or, for a form asked again, with the answer given and what was wrong with it said;
Send settles the answer as the host does (`app.domain.elicit_form.settle`: defaults filled,
every value checked against the schema): what is wrong is said, field by field, the first
wrong field takes the focus, and nothing is sent until it fits. A number's spin box holds its
range; its lowest step, shown as "—", is "not given".
Send answers `accept` with the values, Decline `decline`, Cancel, Esc or closing the dialog
`cancel`, as the protocol defines. An address is shown in its canonical form with its real
host set apart ("Site: evil.example (the link says accounts.google.com…)"), and Open opens
that very string (accept), nothing re-read from the server. Everything the server wrote —
its name, the message, labels, descriptions, choices, the address — is shown inert and as
plain text (`app/ui/mcp/plain.py`): no markup rendered, no control or bidi character acting.
Each dialog answers once; a request withdrawn at its deadline closes its dialog. The dialogs are
window-modal and never block the window's loop, and open within their screen: a long form
scrolls, what is wrong and the buttons stay on the screen. A cap on what servers may ask, once
reached, is said in the window's status bar (once per cap: the caps tell once).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from PySide6.QtCore import QObject, QSize, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.controllers.mcp_asks import Asked, SamplingAsk, WindowAsks
from app.domain.elicit_form import Action, Form, FormField, Reply, UrlAsk, parse, settle
from app.domain.inert import inert
from app.ui.mcp.plain import plain_label, plain_tip, set_plain
from app.ui.mcp.sampling_dialog import SamplingDialog
from app.ui.window.screen_fit import fit_dialog, scrolled

NOT_GIVEN = "—"  # a spin box's lowest step: no number given
SPAN = 1e15  # an unbounded number's range either side of zero (whole numbers exact in a float)


class NumberSpin(QDoubleSpinBox):
    """A number's or a whole number's spin box over its field's range; its lowest step, one
    below the range and shown as `NOT_GIVEN`, is "not given" (`number()` None); stepping from
    it starts at the default, else at the value in range nearest zero."""

    def __init__(self, field: FormField, value: Any) -> None:
        super().__init__()
        self.whole = field.kind == "integer"
        span = max(SPAN, abs(float(field.default or 0)))  # an unbounded default is in range
        low = field.minimum if field.minimum is not None else -span
        high = field.maximum if field.maximum is not None else span
        self.setDecimals(0 if self.whole else 6)
        self.setRange(low - 1, max(low, high))
        self.setSpecialValueText(NOT_GIVEN)
        start = min(max(0.0, low), high)
        self._start = float(field.default) if field.default is not None else start
        given = isinstance(value, int | float) and not isinstance(value, bool)
        self.setValue(float(value) if given else self.minimum())

    def number(self) -> int | float | None:
        """The number given, or None."""
        value = self.value()
        if value <= self.minimum():
            return None
        return round(value) if self.whole else value

    def stepBy(self, steps: int) -> None:
        if self.value() <= self.minimum() and steps > 0:
            self.setValue(self._start)
            return
        super().stepBy(steps)

    def textFromValue(self, value: float) -> str:
        text = super().textFromValue(value)
        point = self.locale().decimalPoint()
        return text.rstrip("0").rstrip(point) if not self.whole and point in text else text


Widget = QLineEdit | QCheckBox | QComboBox | QListWidget | NumberSpin


class _Answering(QDialog):
    """A dialog that answers its request once: closing it unanswered is `cancel`."""

    def __init__(self, parent: QWidget | None, answer: Callable[[Reply], None]) -> None:
        super().__init__(parent)
        self._answer: Callable[[Reply], None] | None = answer
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setMinimumWidth(440)

    def reply(self, action: Action, content: dict[str, Any] | None = None) -> None:
        answer, self._answer = self._answer, None
        if answer is not None:
            answer(Reply(action, content))
        self.done(
            QDialog.DialogCode.Accepted if action == "accept" else QDialog.DialogCode.Rejected
        )

    def reject(self) -> None:  # Esc, the close button
        self.reply("cancel")

    def withdraw(self) -> None:
        """The request's deadline passed: the dialog goes, answering nothing."""
        self._answer = None
        self.done(QDialog.DialogCode.Rejected)

    def _buttons(self, *buttons: QPushButton) -> QHBoxLayout:
        row = QHBoxLayout()
        row.addStretch(1)
        for button in buttons:
            row.addWidget(button)
        return row


def _said(text: str, name: str) -> QLabel:
    return plain_label(text, name, lines=True)


class FormDialog(_Answering):
    """A request for input as a form (see the module guarantees)."""

    def __init__(
        self, form: Form, answer: Callable[[Reply], None], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent, answer)
        self.form = form
        self.setWindowTitle(f"{inert(form.server, 80)} asks for input")
        body = QWidget(self)  # what is asked: it scrolls on a small screen, the buttons stay
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(_said(f"The MCP server “{form.server}” asks:", "asker"))
        layout.addWidget(_said(form.message, "message"))
        fields = QFormLayout()
        self.widgets: dict[str, Widget] = {}
        given = form.given or {}
        for field in form.fields:
            value = given.get(field.name, field.default) if form.given else field.default
            widget = self.widgets[field.name] = _widget(field, value)
            widget.setObjectName(field.name)
            label = plain_label(field.label + (" *" if field.required else ""), wrap=False)
            label.setToolTip(plain_tip(field.description))
            widget.setToolTip(plain_tip(field.description))
            fields.addRow(label, widget)
            if field.description:
                fields.addRow("", _said(field.description, f"{field.name}_description"))
        layout.addLayout(fields)
        if any(f.required for f in form.fields):
            layout.addWidget(_said("* required", "required_note"))
        layout.addStretch(1)
        outer = QVBoxLayout(self)
        outer.addWidget(scrolled(body, self), 1)
        self.problem = _said("", "problem")
        self.problem.setStyleSheet("color: #b3261e;")
        self.problem.hide()
        outer.addWidget(self.problem)
        if form.wrong:
            self._show_wrong(dict(form.wrong))
        self.send_button = QPushButton("Send")
        self.send_button.setDefault(True)
        self.decline_button = QPushButton("Decline")
        self.cancel_button = QPushButton("Cancel")
        self.send_button.clicked.connect(self.send)
        self.decline_button.clicked.connect(lambda: self.reply("decline"))
        self.cancel_button.clicked.connect(lambda: self.reply("cancel"))
        outer.addLayout(self._buttons(self.cancel_button, self.decline_button, self.send_button))
        fit_dialog(self, body.sizeHint() + QSize(40, 100))  # all of it where there is room

    def values(self) -> dict[str, Any]:
        """The values as typed, each read as its field's kind (None: not given)."""
        return {f.name: _value(f, self.widgets[f.name]) for f in self.form.fields}

    def send(self) -> None:
        """Accept with the answer settled (defaults filled), if it fits the schema; else say
        what does not."""
        settled = settle(self.form, self.values())
        if settled.wrong:
            self._show_wrong(settled.wrong)
            return
        self.reply("accept", settled.content)

    def _show_wrong(self, wrong: dict[str, str]) -> None:
        """Say what is wrong, field by field; the first wrong field takes the focus."""
        set_plain(self.problem, "\n".join(wrong.values()), lines=True)
        self.problem.show()
        first = self.widgets.get(next(iter(wrong)))
        if first is not None:
            first.setFocus()


def _widget(field: FormField, value: Any) -> Widget:
    """The field's widget, showing `value` (its default, or the answer given)."""
    match field.kind:
        case "boolean":
            box = QCheckBox()
            box.setChecked(value is True)
            return box
        case "choice":
            combo = QComboBox()
            combo.addItem("— choose —", None)
            for option, label in field.options:
                combo.addItem(inert(label, 200), option)
            combo.setCurrentIndex(max(0, combo.findData(value)))
            return combo
        case "number" | "integer":
            return NumberSpin(field, value)
        case "choices":
            listed = QListWidget()
            chosen = value if isinstance(value, list) else []
            for option, label in field.options:
                item = QListWidgetItem(inert(label, 200))
                item.setData(Qt.ItemDataRole.UserRole, option)
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                checked = Qt.CheckState.Checked if option in chosen else Qt.CheckState.Unchecked
                item.setCheckState(checked)
                listed.addItem(item)
            listed.setMaximumHeight(24 * min(6, len(field.options)) + 8)
            return listed
    edit = QLineEdit("" if value is None else str(value))
    edit.setPlaceholderText(inert(field.hint(), 200))
    if field.secret:
        edit.setEchoMode(QLineEdit.EchoMode.Password)
    if field.max_length:
        edit.setMaxLength(field.max_length)
    return edit


def _value(field: FormField, widget: Widget) -> Any:
    if isinstance(widget, NumberSpin):
        return widget.number()
    if isinstance(widget, QCheckBox):
        return widget.isChecked()
    if isinstance(widget, QComboBox):
        return widget.currentData()
    if isinstance(widget, QListWidget):
        items = [widget.item(i) for i in range(widget.count())]
        return [
            i.data(Qt.ItemDataRole.UserRole)
            for i in items
            if i.checkState() == Qt.CheckState.Checked
        ]
    return parse(field, widget.text())


class UrlDialog(_Answering):
    """A request to open an address (see the module guarantees)."""

    def __init__(
        self,
        ask: UrlAsk,
        answer: Callable[[Reply], None],
        open_url: Callable[[str], object],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent, answer)
        self.ask, self._open_url = ask, open_url
        self.setWindowTitle(f"{inert(ask.server, 80)} asks you to open a page")
        layout = QVBoxLayout(self)
        layout.addWidget(
            _said(f"The MCP server “{ask.server}” asks you to open this page:", "asker")
        )
        layout.addWidget(_said(ask.message, "message"))
        layout.addWidget(_said(ask.url, "url"))  # canonical: what Open opens
        layout.addWidget(_said(f"Site: {ask.link.site}", "site"))
        self.open_button = QPushButton("Open in browser")
        self.decline_button = QPushButton("Decline")
        self.cancel_button = QPushButton("Cancel")
        self.open_button.clicked.connect(self._open)
        self.decline_button.clicked.connect(lambda: self.reply("decline"))
        self.cancel_button.clicked.connect(lambda: self.reply("cancel"))
        layout.addLayout(self._buttons(self.cancel_button, self.decline_button, self.open_button))

    def _open(self) -> None:
        self._open_url(self.ask.url)  # the very string shown
        self.reply("accept")


def _browse(url: str) -> bool:
    return QDesktopServices.openUrl(QUrl(url))


class Presenter(QObject):
    """Shows each request of `asks` in its dialog over `parent`, and closes it when withdrawn."""

    dialogShown = Signal(object)  # the dialog, once shown

    def __init__(
        self, parent: QWidget, asks: WindowAsks, open_url: Callable[[str], object] = _browse
    ) -> None:
        super().__init__(parent)
        self.setObjectName("mcp_asks_presenter")
        self.parent_widget, self.asks, self.open_url = parent, asks, open_url
        self.dialogs: dict[str, QDialog] = {}
        asks.asked.connect(self._present)
        asks.withdrawn.connect(self._withdraw)
        asks.capped.connect(self._capped)

    def _capped(self, _server: str, sentence: str) -> None:
        """A cap reached: said in the window's status bar, once per cap (the caps tell once)."""
        status = getattr(self.parent_widget, "statusBar", None)
        if callable(status):
            status().showMessage(sentence, 30_000)

    def _present(self, asked: Asked) -> None:
        answer = partial(self._answered, asked.id)
        what, parent = asked.what, self.parent_widget
        dialog: QDialog
        if isinstance(what, SamplingAsk):
            dialog = SamplingDialog(what, answer, parent)
        elif isinstance(what, UrlAsk):
            dialog = UrlDialog(what, answer, self.open_url, parent)
        else:
            dialog = FormDialog(what, answer, parent)
        self.dialogs[asked.id] = dialog
        dialog.open()
        self.dialogShown.emit(dialog)

    def _answered(self, ident: str, value: Any) -> None:
        self.dialogs.pop(ident, None)
        self.asks.answer(ident, value)

    def _withdraw(self, ident: str) -> None:
        dialog = self.dialogs.pop(ident, None)
        if isinstance(dialog, _Answering | SamplingDialog):
            dialog.withdraw()


def attach(window: Any, open_url: Callable[[str], object] | None = None) -> Presenter:
    """Let `window` (the main window: its `controller`) answer what its MCP servers ask, in
    dialogs over it; once per window (a second call gives the first presenter, with `open_url`
    if given: how an accepted address is opened, the desktop's browser by default)."""
    found = window.findChild(Presenter, "mcp_asks_presenter")
    if isinstance(found, Presenter):
        found.open_url = open_url or found.open_url
        return found
    asks: WindowAsks = window.controller.tools.asks
    asks.chat, asks.shown = window.controller, True
    return Presenter(window, asks, open_url or _browse)


__all__ = ["NOT_GIVEN", "FormDialog", "NumberSpin", "Presenter", "UrlDialog", "attach"]
