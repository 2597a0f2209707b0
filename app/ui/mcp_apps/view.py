"""An MCP App's view in the conversation: the tool's own page in a sandboxed web view, sized and
themed with the window, with the strip where the person answers what it asks.

Guarantees: the page is shown in its server's sandbox (`sandbox.py`: own off-the-record profile
and origin, every request gated by the resource's declared CSP, which the page is also given
before any markup of its own), wired to the host only through the bridge (`channel.py`,
`session.py`); its height follows what the page asks for, between `MIN_HEIGHT` and the smaller
of `MAX_HEIGHT` and most of the window's height, its width is the conversation column's; the
page is told the window's theme (light or dark, with the theme's colours as the extension's
style variables) at start and again whenever it changes; a link it asks to open is opened only
after the person agrees, and only http(s); no context menu (no "open in a new window", no
inspector); when the view goes, what it was asking is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QLocale, Qt, QTimeZone, QUrl
from PySide6.QtGui import QColor, QDesktopServices
from PySide6.QtWebEngineWidgets import QWebEngineView
from PySide6.QtWidgets import QFrame, QVBoxLayout, QWidget

from app.controllers.mcp_apps import Answer, AppHost, AppPage, PendingCall, wire, with_policy
from app.ui import theme
from app.ui.mcp_apps.asks import AskStrip
from app.ui.mcp_apps.channel import Bridge, connect
from app.ui.mcp_apps.sandbox import SandboxPage, origin
from app.ui.mcp_apps.session import MAX_HEIGHT, MIN_HEIGHT, AppSession

FIRST_HEIGHT = 160  # until the page says how tall it is
WINDOW_SHARE = 0.8  # of the window's height, at most


def styles(t: theme.Theme) -> dict[str, str]:
    """The theme's colours as the extension's style variables."""
    return {
        "--color-background-primary": t.surface,
        "--color-background-secondary": t.window,
        "--color-background-tertiary": t.code,
        "--color-background-info": t.notice,
        "--color-text-primary": t.text,
        "--color-text-secondary": t.muted,
        "--color-text-info": t.text,
        "--color-text-danger": t.error,
        "--color-text-success": t.ok,
        "--color-border-primary": t.border,
        "--color-border-secondary": t.border,
        "--color-ring-primary": t.accent,
        "--border-radius-sm": "4px",
        "--border-radius-md": "6px",
        "--font-sans": "system-ui, sans-serif",
        "--font-mono": "ui-monospace, monospace",
    }


class McpAppView(QFrame):
    """See the module guarantees."""

    def __init__(
        self,
        host: AppHost,
        page: AppPage,
        tool: dict[str, Any],
        parent: QWidget | None = None,
        opener: Callable[[QUrl], bool] = QDesktopServices.openUrl,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("mcpAppView")
        self.setAccessibleName(f"The view of {tool.get('title') or tool.get('name', 'a tool')}")
        if page.prefers_border is not False:
            self.setFrameShape(QFrame.Shape.StyledPanel)
        self._opener, self._tool = opener, tool
        self.web = QWebEngineView(self)
        self.web.setContextMenuPolicy(Qt.ContextMenuPolicy.NoContextMenu)
        self.web.setAccessibleName("App view")
        self.sandbox = SandboxPage(host.identity, page.csp, self.web)
        self.web.setPage(self.sandbox)
        self.bridge = Bridge(self)
        connect(self.sandbox, self.bridge)
        self.asks = AskStrip(self)
        self.session = AppSession(self.bridge, host, page, tool, self._context, self)
        self.session.resized.connect(self._resize)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.web)
        layout.addWidget(self.asks)
        self.web.setFixedHeight(FIRST_HEIGHT)
        self.destroyed.connect(self.session.closed.set)
        self._paint_background()
        self.sandbox.setHtml(with_policy(page.html, page.csp), origin(host.identity))

    # --- the host's side ----------------------------------------------------------------

    def tell_input(self, arguments: dict[str, Any]) -> None:
        self.session.tell(wire.TOOL_INPUT, {"arguments": arguments})

    def tell_result(self, result: dict[str, Any]) -> None:
        self.session.tell(wire.TOOL_RESULT, result)

    def theme_changed(self) -> None:
        """The window's theme changed (`app.ui.appearance.apply` calls this)."""
        self._paint_background()
        self.session.context_changed()

    def _paint_background(self) -> None:
        self.sandbox.setBackgroundColor(QColor(theme.current().surface))

    def _room(self) -> int:
        window = self.window()
        tallest = int(window.height() * WINDOW_SHARE) if window is not self else MAX_HEIGHT
        return max(MIN_HEIGHT, min(MAX_HEIGHT, tallest))

    def _context(self) -> dict[str, Any]:
        current = theme.current()
        return wire.host_context(
            theme="dark" if current.name == "dark" else "light",
            styles=styles(current),
            width=max(1, self.web.width()),
            max_height=self._room(),
            tool=self._tool,
            locale=QLocale.system().bcp47Name(),
            time_zone=bytes(QTimeZone.systemTimeZoneId().data()).decode(),
        )

    def _resize(self, height: int) -> None:
        self.web.setFixedHeight(min(height, self._room()))

    # --- asking the person (`session.Asker`) ----------------------------------------------

    def ask_call(self, call: PendingCall, answer: Callable[[Answer], None]) -> None:
        self.asks.ask_call(call, answer)

    def ask_link(self, url: str, answer: Callable[[bool], None]) -> None:
        def answered(agreed: bool) -> None:
            answer(agreed and bool(self._opener(QUrl(url))))

        self.asks.ask_link(url, answered)

    def close_view(self) -> None:
        """Refuse what the view asks and stop its page (before it is deleted)."""
        self.session.closed.set()
        self.asks.refuse_all()
        self.sandbox.triggerAction(self.sandbox.WebAction.Stop)


__all__ = ["McpAppView", "styles"]
