"""The debug pane's Prompt page: the exact prompt the model read, its special tokens shown as
their text in the theme's highlight.

Guarantees: a token is special by its id — one of the model's special tokens as the engine
read them (`special`: its control tokens, which the token table holds as b"", and its
template's markers), whatever the template family (Harmony, ChatML, Llama 3, Mistral, Gemma…)
— never by what its text looks like, so text a user typed that looks like a marker is shown
plain; every special token is its own highlighted run (the theme's `special` background and
`special_text` colour), never hidden; the ordinary tokens between two special ones are one run,
their bytes decoded together (a character split over tokens reads whole) and redacted together
(a secret split over tokens is still caught); an id outside the table shows as `<id>`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit

from app.domain.redact import redact
from app.ui.theme import current

Run = tuple[str, bool]  # (text, whether it is one special token)


def prompt_runs(
    ids: Sequence[int], table: Sequence[bytes], special: Mapping[int, bytes]
) -> list[Run]:
    """The prompt `ids` as runs of text (see the module guarantees)."""
    runs: list[Run] = []
    plain: list[bytes] = []

    def close_plain() -> None:
        if plain:
            runs.append((redact(b"".join(plain).decode("utf-8", errors="replace")), False))
            plain.clear()

    for token in ids:
        spelled = special.get(token)
        if spelled is not None:
            close_plain()
            runs.append((redact(spelled.decode("utf-8", errors="replace")), True))
        elif 0 <= token < len(table):
            plain.append(table[token])
        else:
            plain.append(f"<{token}>".encode())
    close_plain()
    return runs


def special_format() -> QTextCharFormat:
    """How a special token is shown: the theme's highlight."""
    t = current()
    marked = QTextCharFormat()
    marked.setBackground(QColor(t.special))
    marked.setForeground(QColor(t.special_text))
    return marked


def show_prompt(box: QPlainTextEdit, runs: Sequence[Run]) -> None:
    """`box` holds `runs`, each special one highlighted (in place of what it held)."""
    box.clear()
    cursor = QTextCursor(box.document())
    cursor.beginEditBlock()
    plain, marked = QTextCharFormat(), special_format()
    for text, is_special in runs:
        cursor.insertText(text, marked if is_special else plain)
    cursor.endEditBlock()
    box.moveCursor(QTextCursor.MoveOperation.Start)


def highlighted(box: QPlainTextEdit) -> list[str]:
    """The texts `box` shows highlighted as special tokens, in order (what a reader sees)."""
    background = QColor(current().special)
    found: list[str] = []
    block = box.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.charFormat().background().color() == background:
                found.append(fragment.text())
            it += 1
        block = block.next()
    return found


__all__ = ["Run", "highlighted", "prompt_runs", "show_prompt", "special_format"]
