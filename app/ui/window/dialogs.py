"""The dialogs and pages the main window opens: a model file, the model's settings, Settings…,
the Tools… menu, MCP servers…, Endpoints… and the models page.

Guarantees: each launcher takes the window and returns at once where the dialog is modeless
(settings, MCP servers, the models page), so the window stays responsive; the model settings
are refused, with a sentence in the window, until a model is loaded, and a change that only
applies at load (the context length too) reloads the model when the user keeps "Reload now"
on, with the model's own context length and without changing the one other models load with;
saved settings apply to the window at once, each through a subscription by its checked name
(`follow_settings`), and only when it changed; there is one models page per window, kept while it
lives and rescanned each time it is shown again. The window is taken as `Window`, what the
launchers use of it (`MainWindow` is one; this module does not import it, it imports this).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from PySide6.QtWidgets import QMenu, QWidget

from app.domain.budget import Overflow
from app.ui.composer import tools_menu
from app.ui.mcp.page import McpPage
from app.ui.models.page import ModelsPage
from app.ui.settings.dialog import SettingsDialog
from app.ui.settings.model_settings import ModelSettings
from app.ui.start_folder import open_file
from app.ui.window.endpoints import EndpointDialog

if TYPE_CHECKING:
    from app.controllers.chat import ChatController
    from app.controllers.library_host import LibraryHost
    from app.controllers.mcp_host import McpHost
    from app.controllers.model_host import ModelHost
    from app.controllers.preferences import Settings, SettingsWatch
    from app.ui.composer.composer import Composer
    from app.ui.composer.overflow_menu import OverflowMenu


class Window(Protocol):
    """The main window as its dialogs use it."""

    controller: ChatController
    host: ModelHost
    library: LibraryHost
    mcp: McpHost
    composer: Composer
    context_length: int  # what models load with
    threads: int | None  # what models load with (None: the physical cores less one)
    overflow_menu: OverflowMenu
    settings_watch: SettingsWatch  # the saved settings, as the window last applied them
    models_page: ModelsPage | None  # made the first time it is shown

    def window(self) -> QWidget: ...  # Qt's: the window itself (the dialogs' parent)

    def load_model(self, path: str | None = None, *, n_ctx: int | None = None) -> object: ...

    def show_problem(self, text: str, details: str = "") -> None: ...

    def insert_offer(self, what: tuple[str, str, str], arguments: dict[str, str]) -> None: ...


def open_model_file(window: Window) -> None:
    """File ▸ Open model…: a GGUF file, loaded with the window's context length."""
    path = open_file(window.window(), "Open a model", "GGUF models (*.gguf)")
    if path:
        window.load_model(path)


def edit_model_settings(window: Window) -> None:
    """File ▸ Model settings…: the loaded model's, remembered per model file."""
    host = window.host
    if not host.ready:
        window.show_problem("Load a model first; its settings are remembered per model file.")
        return
    dialog = ModelSettings(host, window.window())
    if dialog.exec() and dialog.load_changed and host.path:
        shared = window.context_length  # what other models load with stays as it was
        window.load_model(host.path, n_ctx=dialog.choice().context_length or shared)
        window.context_length = shared


def show_settings(window: Window) -> SettingsDialog:
    """File ▸ Settings…: saved settings apply at once (the theme, the text size, the answer
    length, the reasoning effort new messages start with)."""
    host = window.host
    dialog = SettingsDialog(
        window.window(), gpu=host.gpu_offload if host.ready and host.path else None
    )

    def saved() -> None:
        if dialog.saved is not None:
            window.settings_watch.update(dialog.saved)

    dialog.accepted.connect(saved)
    dialog.open()
    return dialog


def follow_settings(window: Window) -> None:
    """Apply the saved settings the window uses, and each again when the Settings dialog
    changes it (`show_settings`), never when another one changes."""
    c, composer = window.controller, window.composer

    def answer_length(s: Settings) -> None:
        c.max_tokens = s.max_tokens

    def effort(s: Settings) -> None:
        said = "default effort" if s.reasoning_effort == "default" else s.reasoning_effort
        composer.effort.setCurrentText(said)

    def context_length(s: Settings) -> None:
        window.context_length = s.context_length

    def threads(s: Settings) -> None:
        window.threads = s.threads or None

    def overflow(s: Settings) -> None:
        c.overflow = Overflow(s.overflow)
        window.overflow_menu.set_default(c.overflow)

    def compaction(s: Settings) -> None:
        c.compact_at = s.compact_at_percent / 100
        c.keep_recent = s.keep_recent_percent / 100

    on = window.settings_watch.subscribe
    on(answer_length, "max_tokens")
    on(effort, "reasoning_effort")
    on(context_length, "context_length")
    on(threads, "threads")
    on(overflow, "overflow")
    on(compaction, "compact_at_percent", "keep_recent_percent")


def choose_tools(window: Window) -> QMenu:
    """The composer's Tools button: its menu, above the button; it stays open while tools are
    ticked, and the button says how many are on."""
    composer, controller = window.composer, window.controller
    return tools_menu.choose_tools(
        window.window(),
        controller,
        composer.tools_button,
        window.mcp,
        window.insert_offer,
        changed=lambda: composer.set_tools_on(len(controller.doc.tools)),
    )


def show_mcp(window: Window) -> McpPage:
    """File ▸ MCP servers…: add, edit, import, test and enable the user's MCP servers."""
    page = McpPage(window.mcp, window.controller, window.window())
    page.open()
    return page


def show_endpoints(window: Window) -> None:
    """File ▸ Endpoints… (shown only when the window has remote endpoints)."""
    assert window.controller.remote is not None
    EndpointDialog(window.controller.remote, window.window()).exec()


def show_models(window: Window) -> ModelsPage:
    """The models page (one, kept while the window lives)."""
    if window.models_page is None:
        window.models_page = ModelsPage(window.library, window.window())  # it scans when it opens
        window.models_page.loadRequested.connect(lambda path: load_from_library(window, path))
    else:
        window.library.refresh()  # files may have come or gone meanwhile
    window.models_page.show()
    window.models_page.raise_()
    return window.models_page


def load_from_library(window: Window, path: str) -> None:
    """A model the models page asked for, with the context length it was just set to."""
    window.load_model(path, n_ctx=window.library.settings.context_length)  # as just read


__all__ = [
    "choose_tools",
    "edit_model_settings",
    "load_from_library",
    "open_model_file",
    "show_endpoints",
    "show_mcp",
    "show_models",
    "show_settings",
]
