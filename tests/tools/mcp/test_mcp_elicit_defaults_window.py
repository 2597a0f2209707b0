"""Elicitation defaults (SEP-1034) in the window, offscreen: the SDK server of
`test_mcp_elicit_defaults` asks through the window's own path (`WindowAsks` → `Presenter` →
the form dialog); every field comes prefilled with its default (text, the number spin boxes,
the check box, the choice, the multiple choice), Send sends the defaults and the server's tool
receives them as the host sent them; an optional field emptied is filled from its default by
the host, a number left "not given" too; a form asked again shows what was given and what was
wrong."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import replace
from typing import Any, TypeVar

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit, QListWidget, QMainWindow

from app.controllers.mcp_asks import WindowAsks
from app.domain.elicit_form import Form
from app.tools.audit import AuditLog
from app.tools.mcp.config import McpServer
from app.tools.mcp.elicit import read_form
from app.tools.mcp.tools import McpPool
from app.ui.mcp.elicit_dialog import NOT_GIVEN, FormDialog, NumberSpin, Presenter
from tests.tools.mcp.test_mcp_elicit_defaults import DEFAULTS, SCHEMA, Served, folders, mugs

__all__ = ["folders", "mugs"]  # the fixtures, shared


class Call:
    """One call of the server's `order` on a thread of its own; `envelope` holds what it
    returned (a future the test waits on: no Qt object is touched off the GUI thread — a
    signal emitted from this thread once took the test process down in Qt's garbage
    collection)."""

    def __init__(self, pool: McpPool) -> None:
        self.pool = pool
        self.envelope: Future[Any] = Future()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        try:
            self.envelope.set_result(self.pool.call("mugs", "order", {}, None))
        except BaseException as exc:  # said by the test's `result()`
            self.envelope.set_exception(exc)

    def wait(self, qtbot: Any) -> Any:
        """The envelope, once the call returned (the Qt loop running meanwhile)."""
        qtbot.waitUntil(self.envelope.done, timeout=30_000)
        self.thread.join(10)
        return self.envelope.result()


W = TypeVar("W")


def _w(dialog: FormDialog, name: str, kind: type[W]) -> W:
    """The dialog's widget for field `name`, which is a `kind`."""
    widget = dialog.widgets[name]
    assert isinstance(widget, kind), (name, widget)
    return widget


def _checked(widget: QListWidget) -> list[str]:
    items = [widget.item(i) for i in range(widget.count())]
    return [i.data(Qt.ItemDataRole.UserRole) for i in items if i.checkState() == Qt.CheckState.Checked]


@pytest.fixture()
def window_pool(qtbot: Any, mugs: Served, folders: dict[str, str]) -> Any:
    """A main window that shows the pool's requests in its dialogs, and the pool."""
    window = QMainWindow()
    qtbot.addWidget(window)
    asks = WindowAsks()
    asks.shown = True  # a window shows the requests
    presenter = Presenter(window, asks, open_url=lambda _url: True)
    made: list[McpPool] = []
    pool = McpPool(lambda: {"mugs": McpServer(url=mugs.url)}, hooks=asks.hooks(lambda: made[0]))
    made.append(pool)
    yield presenter, pool
    pool.close()


def _dialog(qtbot: Any, presenter: Presenter, pool: McpPool) -> tuple[FormDialog, Call]:
    call = Call(pool)
    with qtbot.waitSignal(presenter.dialogShown, timeout=30_000) as shown:
        call.start()
    dialog = shown.args[0]
    assert isinstance(dialog, FormDialog)
    return dialog, call


def test_the_dialog_prefills_every_field_and_send_sends_the_defaults(qtbot: Any, window_pool: Any, mugs: Served) -> None:
    presenter, pool = window_pool
    form, call = _dialog(qtbot, presenter, pool)
    assert _w(form, "reason", QLineEdit).text() == ""  # required, no default
    assert _w(form, "name", QLineEdit).text() == "Ada" and _w(form, "email", QLineEdit).text() == "ada@example.com"
    count, size = _w(form, "count", NumberSpin), _w(form, "size", NumberSpin)
    assert count.value() == 2 and count.text() == "2" and (count.minimum(), count.maximum()) == (0, 5)
    assert size.value() == pytest.approx(0.3) and size.text() == "0.3"
    assert _w(form, "gift", QCheckBox).isChecked()
    colour = _w(form, "colour", QComboBox)
    assert colour.currentData() == "green" and colour.currentText() == "green"
    assert _checked(_w(form, "extras", QListWidget)) == ["lid", "spoon"]
    assert _w(form, "when", QLineEdit).text() == "2026-03-01" and _w(form, "note", QLineEdit).text() == ""
    form.send_button.click()  # the reason is missing: said, nothing sent
    assert form.isVisible() and form.problem.text() == "“Reason” is required." and mugs.received == []
    _w(form, "reason", QLineEdit).setText("For the office.")
    form.send_button.click()
    envelope = call.wait(qtbot)
    assert mugs.received == [{"reason": "For the office.", **DEFAULTS}]  # what the host sent
    assert envelope["content"]["result"].startswith('ordered: {"reason":"For the office.","name":"Ada",')
    entry = AuditLog().read("").entries[0]
    assert entry["decision"] == "accept" and entry["result"]["answered"] == ["reason", *DEFAULTS]


def test_an_emptied_optional_field_is_filled_from_its_default_and_a_change_is_kept(qtbot: Any, window_pool: Any, mugs: Served) -> None:
    presenter, pool = window_pool
    form, call = _dialog(qtbot, presenter, pool)
    _w(form, "reason", QLineEdit).setText("Tea.")
    _w(form, "name", QLineEdit).setText("")
    count = _w(form, "count", NumberSpin)
    count.setValue(count.minimum())  # "not given"
    assert count.text() == NOT_GIVEN and count.number() is None
    _w(form, "gift", QCheckBox).setChecked(False)
    colour = _w(form, "colour", QComboBox)
    colour.setCurrentIndex(colour.findData("blue"))
    _w(form, "extras", QListWidget).item(1).setCheckState(Qt.CheckState.Checked)
    email = _w(form, "email", QLineEdit)
    email.setText("nobody")
    form.send_button.click()
    assert form.isVisible() and form.problem.text() == "“Email” takes an email address." and form.focusWidget() is email
    email.setText("grace@example.com")
    form.send_button.click()
    call.wait(qtbot)
    sent = {**DEFAULTS, "reason": "Tea.", "email": "grace@example.com", "gift": False, "colour": "blue",
            "extras": ["lid", "saucer", "spoon"]}  # fmt: skip
    assert mugs.received == [{k: sent[k] for k in ("reason", *DEFAULTS)}]  # name and count: their defaults


def test_a_form_asked_again_shows_what_was_given_and_what_was_wrong(qtbot: Any) -> None:
    form = read_form("srv", "Tell me.", SCHEMA)
    assert isinstance(form, Form)
    again = replace(form, given={"reason": "Tea", "size": "s", "count": 9, "gift": True, "tags": []},
                    wrong=(("count", "“count” takes a whole number from 1 to 5."),))  # fmt: skip
    replies: list[Any] = []
    dialog = FormDialog(again, replies.append)
    qtbot.addWidget(dialog)
    dialog.show()
    assert _w(dialog, "reason", QLineEdit).text() == "Tea" and _w(dialog, "size", QComboBox).currentData() == "s"
    assert _w(dialog, "gift", QCheckBox).isChecked() and _checked(_w(dialog, "tags", QListWidget)) == []
    assert _w(dialog, "count", NumberSpin).number() == 5  # 9 held to its range by the spin box
    assert not dialog.problem.isHidden() and dialog.problem.text() == "“count” takes a whole number from 1 to 5."
    rate = _w(dialog, "rate", NumberSpin)
    assert rate.text() == NOT_GIVEN  # no default that fits
    rate.stepBy(1)  # stepping from "not given" starts in range, nearest zero
    assert rate.number() == 0
    dialog.send_button.click()
    assert [r.content for r in replies] == [{"reason": "Tea", "size": "s", "count": 5, "rate": 0.0, "gift": True,
                                             "site": "https://example.com/a", "tags": []}]  # fmt: skip
