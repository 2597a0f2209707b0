"""The composer's Tools menu: the tools a conversation may call, plugins to trust, and what
the conversation's MCP servers offer.

Guarantees: the menu opens above the Tools button and lists the built-ins, the trusted plugins
and the configured MCP servers (`mcp:NAME`, with the prompt tokens their tools add once the
server has been tested) with the conversation's choice checked, then "Require a tool call"
(enabled while a tool is on), then the plugins found but not trusted; ticking a tool (mouse,
Enter or Space) applies at once, tells `changed` (the button then says how many are on) and
leaves the menu open, so several are chosen in one go; choosing a plugin to trust
shows where it is and its sha256 and asks — nothing of a plugin runs until the user trusted it
as it is now. For each MCP server the conversation uses, its prompts can be inserted into the
message box and its resources attached to the message as context (read off the GUI thread;
a prompt's arguments are asked for first).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QInputDialog, QMenu, QMessageBox, QWidget

from app.controllers.chat import ChatController, PluginIdentity
from app.controllers.mcp_host import MCP_PREFIX, McpHost
from app.ui.composer.field import StayOpenMenu, popup_above


def _label(name: str, mcp: McpHost | None) -> str:
    probe = mcp.probes.get(name.removeprefix(MCP_PREFIX)) if mcp is not None else None
    if not name.startswith(MCP_PREFIX) or probe is None:
        return name
    return f"{name}  ({sum(t[2] for t in probe.tools)} tools, about {probe.tokens:,} tokens)"


def _offers(menu: QMenu, controller: ChatController, mcp: McpHost) -> None:
    """Each used server's prompts and resources (as its last test listed them)."""
    for name in controller.doc.tools:
        probe = mcp.probes.get(name.removeprefix(MCP_PREFIX))
        if not name.startswith(MCP_PREFIX) or probe is None:
            continue
        server = name.removeprefix(MCP_PREFIX)
        for prompt, description, arguments in probe.prompts:
            item = menu.addAction(f"Insert prompt {server} ▸ {prompt}")
            item.setToolTip(description)
            item.setData(("prompt", server, prompt, arguments))
        for uri, title in probe.resources:
            menu.addAction(f"Attach {server} ▸ {title}").setData(("resource", server, uri))


def _tool_items(
    menu: QMenu, controller: ChatController, mcp: McpHost | None, changed: Callable[[], None] | None
) -> None:
    """The tools, checked as the conversation has them, and Require a tool call; a tick
    applies at once."""
    tools: list[QAction] = []
    for name in controller.tools.available():
        action = menu.addAction(_label(name, mcp))
        action.setCheckable(True)
        action.setChecked(name in controller.doc.tools)
        action.setData(("tool", name))
        tools.append(action)
    required = menu.addAction("Require a tool call")
    required.setCheckable(True)
    required.setChecked(controller.tool_choice == "required")
    required.setEnabled(bool(controller.doc.tools))
    required.setToolTip("The model's next answers start with a call to one of these tools")
    required.setData(("choice",))

    def ticked() -> None:
        controller.set_tools(tuple(a.data()[1] for a in tools if a.isChecked()))
        required.setEnabled(bool(controller.doc.tools))
        if changed is not None:
            changed()

    def require(on: bool) -> None:
        controller.tool_choice = "required" if on else "auto"

    for action in tools:
        action.toggled.connect(ticked)
    required.toggled.connect(require)


def choose_tools(
    parent: QWidget,
    controller: ChatController,
    button: QWidget,
    mcp: McpHost | None = None,
    offer: Callable[[tuple[str, str, str], dict[str, str]], None] | None = None,
    changed: Callable[[], None] | None = None,
) -> QMenu:
    """Open the menu above `button` (it returns at once; the menu applies each choice as it is
    made); `offer` inserts an MCP prompt or resource (`(kind, server, name or uri)`, the
    prompt's arguments) into the message box; `changed` is told each time the tools change."""
    menu = StayOpenMenu(parent)
    menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    menu.setToolTipsVisible(True)
    _tool_items(menu, controller, mcp, changed)
    pending = controller.tools.pending()
    if pending:
        menu.addSeparator()
    for name in sorted(pending):
        menu.addAction(f"Trust plugin {name}…").setData(("trust", name))
    if mcp is not None and offer is not None:
        menu.addSeparator()
        _offers(menu, controller, mcp)

    def chosen(action: QAction) -> None:
        """Trust a plugin, or offer a prompt or resource, once the menu has closed."""
        what = action.data()
        if not what or what[0] in ("tool", "choice"):
            return  # ticked: applied already
        if what[0] == "trust":
            identity = pending[what[1]]
            QTimer.singleShot(0, lambda: ask_trust(parent, controller, identity))
        elif offer is not None:
            QTimer.singleShot(0, lambda: _offer(parent, what, offer))

    menu.triggered.connect(chosen)
    popup_above(menu, button)
    return menu


def _offer(
    parent: QWidget,
    what: tuple[Any, ...],
    offer: Callable[[tuple[str, str, str], dict[str, str]], None],
) -> None:
    arguments = _ask_arguments(parent, what[3]) if what[0] == "prompt" else {}
    if arguments is not None:
        offer((what[0], what[1], what[2]), arguments)


def _ask_arguments(parent: QWidget, names: tuple[str, ...]) -> dict[str, str] | None:
    values = {}
    for name in names:
        value, ok = QInputDialog.getText(parent, "Prompt argument", f"{name}:")
        if not ok:
            return None
        values[name] = value
    return values


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
        controller.tools.trust(identity.name)


__all__ = ["ask_trust", "choose_tools"]
