"""The sandbox an MCP App's page runs in: one off-the-record web profile per server, a gate on
every request, and a page that never leaves the document it was given.

Guarantees:
- each server (by its identity: command and arguments, or URL) has its own off-the-record
  profile — cookies, storage and cache in memory only, gone with the app, never shared with
  another server's views — and its own origin (`https://<digest>.mcp-app.invalid/`, a name that
  can never resolve);
- every request of a page goes through its `Gate`: one that leaves the page (any scheme but
  `data:`, `blob:` and `about:`) passes only when the page's declared CSP names its origin
  (`app.tools.mcp.apps_csp.allowed`); `file:`, `qrc:`, the app's own schemes and every other
  address are blocked and counted in `refused`; the profile's own gate lets through only what
  one of its pages declares, so a worker's request is held to the same list;
- the page's settings refuse local file access, windows opened by script, clipboard, plugins,
  PDF, DNS prefetch, screen capture, full screen and drops; every permission asked (camera,
  microphone, location, …) is denied; downloads are cancelled;
- the page stays on its document: every navigation of the main frame after the first load is
  refused (links go through the bridge's `ui/open-link`, which asks the user), and a window a
  script asks for is never made; a subframe navigates only where the CSP lets it.
"""

from __future__ import annotations

import collections
import hashlib
import logging

from PySide6.QtCore import QObject, QUrl
from PySide6.QtWebEngineCore import (
    QWebEngineDownloadRequest,
    QWebEnginePage,
    QWebEnginePermission,
    QWebEngineProfile,
    QWebEngineSettings,
    QWebEngineUrlRequestInfo,
    QWebEngineUrlRequestInterceptor,
)
from PySide6.QtWidgets import QApplication

from app.controllers.mcp_apps import Csp, allowed

log = logging.getLogger("ui")
LOCAL_SCHEMES = ("data", "blob", "about")  # never leave the page
REFUSED_KEPT = 200
Attr = QWebEngineSettings.WebAttribute
_OFF = (
    Attr.LocalContentCanAccessFileUrls,
    Attr.LocalContentCanAccessRemoteUrls,
    Attr.JavascriptCanOpenWindows,
    Attr.JavascriptCanAccessClipboard,
    Attr.JavascriptCanPaste,
    Attr.PluginsEnabled,
    Attr.PdfViewerEnabled,
    Attr.DnsPrefetchEnabled,
    Attr.ScreenCaptureEnabled,
    Attr.FullScreenSupportEnabled,
    Attr.NavigateOnDropEnabled,
    Attr.AllowWindowActivationFromJavaScript,
    Attr.HyperlinkAuditingEnabled,
    Attr.AllowRunningInsecureContent,
    Attr.AllowGeolocationOnInsecureOrigins,
    Attr.AutoLoadIconsForPage,
    Attr.TouchIconsEnabled,
    Attr.ErrorPageEnabled,
)
_ON = (Attr.WebRTCPublicInterfacesOnly, Attr.JavascriptEnabled, Attr.LocalStorageEnabled)


def deny(permission: QWebEnginePermission) -> None:
    permission.deny()


class Gate(QWebEngineUrlRequestInterceptor):
    """Blocks every request that leaves the page unless one of `csps` declares its origin."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.csps: list[Csp] = []
        self.refused: collections.deque[str] = collections.deque(maxlen=REFUSED_KEPT)

    def passes(self, url: QUrl) -> bool:
        if url.scheme().lower() in LOCAL_SCHEMES:
            return True
        text = url.toString()
        return any(allowed(csp, text) for csp in self.csps)

    def interceptRequest(self, info: QWebEngineUrlRequestInfo) -> None:
        url = info.requestUrl()
        if not self.passes(url):
            info.block(True)
            self.refused.append(url.toString()[:300])
            log.debug("MCP app: blocked a request for %s", url.toString()[:300])


def _harden(settings: QWebEngineSettings) -> None:
    for attribute in _OFF:
        settings.setAttribute(attribute, False)
    for attribute in _ON:
        settings.setAttribute(attribute, True)


def _refuse_download(download: QWebEngineDownloadRequest) -> None:
    download.cancel()


class Profiles:
    """Each server's profile and origin, made on first use, for the life of the app."""

    def __init__(self) -> None:
        self._made: dict[str, tuple[QWebEngineProfile, Gate]] = {}

    def profile(self, identity: str) -> tuple[QWebEngineProfile, Gate]:
        made = self._made.get(identity)
        if made is None:
            profile = QWebEngineProfile(QApplication.instance())  # no name: off the record
            profile.setHttpCacheType(QWebEngineProfile.HttpCacheType.MemoryHttpCache)
            profile.setPersistentCookiesPolicy(
                QWebEngineProfile.PersistentCookiesPolicy.NoPersistentCookies
            )
            profile.setPersistentPermissionsPolicy(
                QWebEngineProfile.PersistentPermissionsPolicy.AskEveryTime
            )
            profile.setSpellCheckEnabled(False)
            _harden(profile.settings())
            gate = Gate(profile)
            profile.setUrlRequestInterceptor(gate)
            profile.downloadRequested.connect(_refuse_download)
            made = self._made[identity] = (profile, gate)
        return made


PROFILES = Profiles()


def origin(identity: str) -> QUrl:
    """The server's own origin for its views' pages (see the module guarantees)."""
    digest = hashlib.sha256(identity.encode()).hexdigest()[:24]
    return QUrl(f"https://{digest}.mcp-app.invalid/")


class SandboxPage(QWebEnginePage):
    """A page that keeps to its document (see the module guarantees)."""

    def __init__(self, identity: str, csp: Csp, parent: QObject | None = None) -> None:
        profile, shared = PROFILES.profile(identity)
        super().__init__(profile, parent)
        self.csp = csp
        self.gate = Gate(self)
        self.gate.csps.append(csp)
        self._shared = shared
        shared.csps.append(csp)
        self.setUrlRequestInterceptor(self.gate)
        _harden(self.settings())
        self.permissionRequested.connect(deny)
        self._loaded = False
        self.destroyed.connect(lambda: _forget(shared, csp))

    def acceptNavigationRequest(
        self, url: QUrl | str, kind: QWebEnginePage.NavigationType, is_main_frame: bool
    ) -> bool:
        url = QUrl(url)
        if not is_main_frame:
            return self.gate.passes(url)
        first = not self._loaded and url.scheme() == "data"
        self._loaded = self._loaded or first
        if not first:
            log.debug("MCP app: refused navigating to %s", url.toString()[:300])
        return first

    def createWindow(self, _kind: QWebEnginePage.WebWindowType) -> QWebEnginePage:
        return None  # type: ignore[return-value]  # no popups: a link is opened through `ui/open-link`, which asks

    def javaScriptConsoleMessage(
        self,
        level: QWebEnginePage.JavaScriptConsoleMessageLevel,
        message: str,
        line: int,
        source: str,
    ) -> None:
        log.debug("MCP app console (%s) %s:%d %s", level.name, source[:80], line, message[:500])

    def chooseFiles(self, *_args: object) -> list[str]:
        return []  # the app's page never gets a file of the user's


def _forget(gate: Gate, csp: Csp) -> None:
    if csp in gate.csps:
        gate.csps.remove(csp)


__all__ = ["PROFILES", "Gate", "SandboxPage", "origin"]
