"""The composer's Tools… menu: the tools a conversation may call, and plugins to trust.

Guarantees: the menu lists the built-ins and the trusted plugins with the conversation's
choice checked, then the plugins found but not trusted; choosing one of those shows where it
is and its sha256 and asks — nothing of a plugin runs until the user trusted it as it is now.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QMenu, QMessageBox, QWidget

from app.controllers.chat import ChatController, PluginIdentity


def choose_tools(parent: QWidget, controller: ChatController, at: QPoint) -> None:
    """Show the menu at `at` and apply what the user chose."""
    menu = QMenu(parent)
    for name in controller.available_tools():
        action = menu.addAction(name)
        action.setCheckable(True)
        action.setChecked(name in controller.doc.tools)
    pending = controller.pending_plugins()
    if pending:
        menu.addSeparator()
    for name in sorted(pending):
        menu.addAction(f"Trust plugin {name}…").setData(name)
    chosen = menu.exec(at)
    if chosen is not None and chosen.data():
        ask_trust(parent, controller, pending[chosen.data()])
    elif chosen is not None:
        enabled = tuple(a.text() for a in menu.actions() if a.isCheckable() and a.isChecked())
        controller.set_tools(enabled)


def ask_trust(parent: QWidget, controller: ChatController, identity: PluginIdentity) -> None:
    """Nothing of a plugin runs until the user has seen where it is and trusted it."""
    answer = QMessageBox.question(
        parent,
        "Trust this plugin?",
        f"The tool plugin “{identity.name}” ({identity.kind}) is not trusted yet, or its"
        f" files changed since you trusted it.\n\n{identity.path}\nsha256"
        f" {identity.sha256}\n\nA trusted plugin's code runs on this computer with your"
        " rights (in a separate process). Trust it?",
    )
    if answer == QMessageBox.StandardButton.Yes:
        controller.trust_plugin(identity.name)


__all__ = ["ask_trust", "choose_tools"]
