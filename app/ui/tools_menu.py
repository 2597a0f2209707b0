"""The composer's Tools… menu: the tools a conversation may call, plugins to trust, and what
the conversation's MCP servers offer.

Guarantees: the menu lists the built-ins, the trusted plugins and the configured MCP servers
(`mcp:NAME`, with the prompt tokens their tools add once the server has been tested) with the
conversation's choice checked, then the plugins found but not trusted; choosing one of those
shows where it is and its sha256 and asks — nothing of a plugin runs until the user trusted it
as it is now. For each MCP server the conversation uses, its prompts can be inserted into the
message box and its resources attached to the message as context (read off the GUI thread;
a prompt's arguments are asked for first).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QInputDialog, QMenu, QMessageBox, QWidget

from app.controllers.chat import ChatController, PluginIdentity
from app.controllers.mcp_host import MCP_PREFIX, McpHost


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


def choose_tools(
    parent: QWidget,
    controller: ChatController,
    at: QPoint,
    mcp: McpHost | None = None,
    offer: Callable[[tuple[str, str, str], dict[str, str]], None] | None = None,
) -> None:
    """Show the menu at `at` and apply what the user chose; `offer` inserts an MCP prompt or
    resource (`(kind, server, name or uri)`, the prompt's arguments) into the message box."""
    menu = QMenu(parent)
    for name in controller.tools.available():
        action = menu.addAction(_label(name, mcp))
        action.setCheckable(True)
        action.setChecked(name in controller.doc.tools)
        action.setData(("tool", name))
    if controller.doc.tools:
        required = menu.addAction("Require a tool call")
        required.setCheckable(True)
        required.setChecked(controller.tool_choice == "required")
        required.setToolTip("The model's next answers start with a call to one of these tools")
        required.setData(("choice",))
    pending = controller.tools.pending()
    if pending:
        menu.addSeparator()
    for name in sorted(pending):
        menu.addAction(f"Trust plugin {name}…").setData(("trust", name))
    if mcp is not None and offer is not None:
        menu.addSeparator()
        _offers(menu, controller, mcp)
    chosen = menu.exec(at)
    what = chosen.data() if chosen is not None else None
    if not what:
        return
    if what[0] == "choice":
        controller.tool_choice = "required" if chosen.isChecked() else "auto"
    elif what[0] == "trust":
        ask_trust(parent, controller, pending[what[1]])
    elif what[0] == "tool":
        checked = [a.data()[1] for a in menu.actions()
                   if a.isCheckable() and a.isChecked() and a.data()[0] == "tool"]  # fmt: skip
        controller.set_tools(tuple(checked))
    elif offer is not None:
        arguments = _ask_arguments(parent, what[3]) if what[0] == "prompt" else {}
        if arguments is not None:
            offer(what[:3], arguments)


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
