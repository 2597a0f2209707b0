"""The wire between an MCP App's page and the host: the page's `postMessage` JSON-RPC, carried
to Python and back.

The page runs as the top document, so its `window.parent` is itself. Two small scripts are put
in before any of the page's own:
- in the page's world, `window.parent` becomes a stand-in whose `postMessage` hands the message
  on, and the host's messages arrive as `message` events whose `source` is that stand-in — what
  the extension's SDK (`PostMessageTransport(window.parent, window.parent)`) expects of a frame;
- in an isolated world the page's scripts cannot reach, the Qt web channel relays those messages
  to `Bridge.receive` and the host's `Bridge.toApp` back to the page.

Guarantees: the web channel and its `Bridge` object exist only in the isolated world (the page's
scripts never see `qt` or the host's object: they can only send messages, which the host
checks); a message is taken only from the page's own window (never from a frame it embeds);
messages sent before the channel is ready are kept and sent in order once it is; the page's
`RTCPeerConnection` is taken away (a peer connection's traffic would pass no request gate).
"""

from __future__ import annotations

from PySide6.QtCore import QFile, QIODevice, QObject, Signal, Slot
from PySide6.QtWebChannel import QWebChannel
from PySide6.QtWebEngineCore import QWebEnginePage, QWebEngineScript

TAG = "__harmonyDeskMcpApp"
WORLD = QWebEngineScript.ScriptWorldId.ApplicationWorld

PAGE_SCRIPT = """
(function () {
  "use strict";
  var TAG = "%(tag)s";
  var host = Object.freeze({
    postMessage: function (message) {
      var envelope = {};
      envelope[TAG] = "to-host";
      envelope.message = message;
      window.postMessage(envelope, "*");
    }
  });
  Object.defineProperty(window, "parent", {value: host, configurable: false});
  ["RTCPeerConnection", "webkitRTCPeerConnection", "RTCDataChannel"].forEach(function (name) {
    try { Object.defineProperty(window, name, {value: undefined, configurable: false}); }
    catch (e) {}
  });
  window.addEventListener("message", function (event) {
    var data = event.data;
    if (event.source !== window || !data || data[TAG] !== "to-app") return;
    event.stopImmediatePropagation();
    var relayed = new MessageEvent("message", {data: data.message, origin: location.origin});
    Object.defineProperty(relayed, "source", {value: host});
    window.dispatchEvent(relayed);
  }, true);
})();
"""

RELAY_SCRIPT = """
(function () {
  "use strict";
  var TAG = "%(tag)s";
  var bridge = null, early = [];
  window.addEventListener("message", function (event) {
    var data = event.data;
    if (event.source !== window || !data || data[TAG] !== "to-host") return;
    var text;
    try { text = JSON.stringify(data.message); } catch (e) { return; }
    if (typeof text !== "string") return;
    if (bridge) bridge.receive(text); else early.push(text);
  });
  new QWebChannel(qt.webChannelTransport, function (channel) {
    bridge = channel.objects.bridge;
    bridge.toApp.connect(function (text) {
      var envelope = {};
      envelope[TAG] = "to-app";
      envelope.message = JSON.parse(text);
      window.postMessage(envelope, "*");
    });
    early.splice(0).forEach(function (text) { bridge.receive(text); });
  });
})();
"""


class Bridge(QObject):
    """The host's end of the wire: `received` for each message, `send` for the page's."""

    received = Signal(str)
    toApp = Signal(str)  # the name the page's relay connects to

    @Slot(str)
    def receive(self, text: str) -> None:
        self.received.emit(text)

    def send(self, text: str) -> None:
        self.toApp.emit(text)


def _web_channel_js() -> str:
    source = QFile(":/qtwebchannel/qwebchannel.js")
    if not source.open(QIODevice.OpenModeFlag.ReadOnly):
        raise RuntimeError("Qt's qwebchannel.js is missing from Qt WebChannel")
    try:
        return bytes(source.readAll().data()).decode()
    finally:
        source.close()


def _script(name: str, code: str, world: int) -> QWebEngineScript:
    script = QWebEngineScript()
    script.setName(name)
    script.setSourceCode(code)
    script.setWorldId(world)
    script.setInjectionPoint(QWebEngineScript.InjectionPoint.DocumentCreation)
    script.setRunsOnSubFrames(False)
    return script


def connect(page: QWebEnginePage, bridge: Bridge) -> QWebChannel:
    """Put the two scripts into `page` and serve `bridge` to the isolated one."""
    words = {"tag": TAG}
    main = QWebEngineScript.ScriptWorldId.MainWorld
    page.scripts().insert(_script("mcp-app-parent", PAGE_SCRIPT % words, main))
    relay = _web_channel_js() + RELAY_SCRIPT % words
    page.scripts().insert(_script("mcp-app-relay", relay, WORLD))
    channel = QWebChannel(page)
    channel.registerObject("bridge", bridge)
    page.setWebChannel(channel, WORLD)
    return channel


__all__ = ["Bridge", "connect"]
