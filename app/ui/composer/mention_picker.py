"""The "@" and "/" picker: after "@", the documents library's files and the MCP servers'
resources; after a "/" that starts the message, the MCP servers' prompts — each filtered by
what follows.

Guarantees: a mention starts only at the start of a word ("@rep" after a space or at the start
of a line, never inside "bob@example.com"); a command only at the very start of the message
("/summ", never "a/b" nor a second line); the picker shows only when at least one entry
matches what is typed (nothing to pick, nothing shown, and an empty library is never offered),
but for a server that could not list, which is said in its section right after the "@" or "/";
MCP entries come in a section per server (name, description, MIME type; a prompt's arguments,
required ones marked "*"), after the documents; the section headings and problems cannot be
picked and Up and Down step over them. It never takes the keyboard focus — the message box
keeps every keystroke and hands the picker only Up, Down, Tab and Esc while it is showing, and
Enter only once the user has moved in the list with Up or Down (so "@dataclass" then Enter
still sends, and Shift+Enter is always a new line) or at once for a "/" command.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QWidget

if TYPE_CHECKING:  # MCP loads when the composer first uses it
    from app.controllers.mcp_context import Offer, Section

    Entry: TypeAlias = Path | Offer | None  # None: a heading or a problem, not to be picked

SHOWN = 8  # documents listed at most (and resources or prompts of each server)
LONGEST = 256  # characters a mention may have
DESCRIBED = 80  # characters of a description shown in its row (all of it in the tooltip)
_MENTION = re.compile(r"(?:^|\s)@([^\s@]*)$")
_COMMAND = re.compile(r"/([^\s/]*)")


def mention_at(before_cursor: str) -> str | None:
    """What is typed after a word-starting "@" right before the cursor ("" just after the
    "@"); None when the cursor is not in a mention."""
    tail = before_cursor[-LONGEST:]  # per keystroke: never a scan of a long paste
    if len(tail) < len(before_cursor):
        tail = "x" + tail  # not the start of a line
    found = _MENTION.search(tail)
    return found.group(1) if found else None


def command_at(before_cursor: str) -> str | None:
    """What is typed after a "/" that starts the message, when the cursor is still in that
    word ("" just after the "/"); None otherwise."""
    if len(before_cursor) > LONGEST:
        return None
    found = _COMMAND.fullmatch(before_cursor)
    return found.group(1) if found else None


def matching(documents: list[Path], typed: str) -> list[Path]:
    """The documents whose file name contains `typed` (any case), those starting with it first."""
    needle = typed.casefold()
    hits = [d for d in documents if needle in d.name.casefold()]
    return sorted(hits, key=lambda d: not d.name.casefold().startswith(needle))[:SHOWN]


def matching_offers(offers: Sequence[Offer], typed: str) -> list[Offer]:
    """The offers whose name (or a resource's URI) contains `typed`, those starting with it
    first."""
    needle = typed.casefold()
    hits = [o for o in offers if needle in o.name.casefold() or needle in o.key.casefold()]
    return sorted(hits, key=lambda o: not o.name.casefold().startswith(needle))[:SHOWN]


def described(offer: Offer) -> str:
    """An offer's row: its name, the start of its description, its MIME type or arguments."""
    words = " ".join(offer.description.split())
    if len(words) > DESCRIBED:
        words = words[: DESCRIBED - 1] + "…"
    row = offer.name + (f" — {words}" if words else "")
    if offer.kind == "resource" and offer.mime_type:
        row += f" · {offer.mime_type}"
    if offer.arguments:
        row += " · " + ", ".join(a.name + ("*" if a.required else "") for a in offer.arguments)
    return row


class MentionPicker(QListWidget):
    """The matching entries, under the message box; picked with the mouse or the keys the box
    hands over (`key`)."""

    picked = Signal(Path)  # a document
    offered = Signal(object)  # an MCP `Offer`: a resource after "@", a prompt after "/"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setAccessibleName("Documents to attach")
        self.setMaximumHeight(200)
        self.setToolTip("Tab attaches the highlighted document; Up and Down choose another")
        self.moved = False  # Up or Down pressed since the picker showed: Enter picks too
        self.enter_picks = False  # a "/" command: Enter picks at once
        self._entries: list[Entry] = []
        self.itemClicked.connect(self._clicked)
        self.hide()

    def show_for(
        self, documents: list[Path], typed: str | None, sections: Sequence[Section] = ()
    ) -> None:
        """After "@": the documents and resources matching `typed` (None: not in a mention),
        or hide."""
        rows: list[tuple[str, Entry, str]] = []
        mcp: list[tuple[str, Entry, str]] = []
        if typed is not None:
            found = matching(documents, typed)
            mcp = self._sections(sections, typed)
            if found and mcp:
                rows.append(("Documents", None, ""))
            rows += [(p.name, p, str(p)) for p in found] + mcp
        self.setAccessibleName(
            "Documents and resources to attach" if mcp else "Documents to attach"
        )
        self.enter_picks = False
        self._fill(rows, typed == "")

    def show_commands(self, sections: Sequence[Section], typed: str | None) -> None:
        """After a starting "/": the prompts matching `typed` (None: not a command), or hide."""
        rows = self._sections(sections, typed) if typed is not None else []
        self.setAccessibleName("MCP prompts")
        self.enter_picks = True
        self._fill(rows, typed == "")

    def _sections(self, sections: Sequence[Section], typed: str) -> list[tuple[str, Entry, str]]:
        rows: list[tuple[str, Entry, str]] = []
        for section in sections:
            found = matching_offers(section.offers, typed)
            if section.problem and not typed:
                rows.append((f"MCP {section.server}: {section.problem}", None, section.problem))
            elif found:
                rows.append((f"MCP {section.server}", None, ""))
                rows += [(described(o), o, f"{o.key}\n{o.description}".strip()) for o in found]
        return rows

    def _fill(self, rows: list[tuple[str, Entry, str]], problems_too: bool) -> None:
        self.clear()
        self._entries = []
        heading = QFont(self.font())
        heading.setBold(True)
        for text, entry, tip in rows:
            item = QListWidgetItem(text, self)
            item.setToolTip(tip)
            if entry is None:
                item.setFlags(Qt.ItemFlag.NoItemFlags)
                item.setFont(heading)
            self._entries.append(entry)
        pickable = any(e is not None for e in self._entries)
        shown = pickable or (problems_too and bool(rows))
        if shown and not self.isVisible():
            self.moved = False
        self.setVisible(shown)
        if pickable:
            self._step(0, 1)

    def _step(self, start: int, step: int) -> None:
        """Highlight the first entry that can be picked from row `start` on, going `step`."""
        count = self.count()
        for i in range(count):
            row = (start + step * i) % count
            if self._entries[row] is not None:
                self.setCurrentRow(row)
                return

    def key(
        self, key: int, modifiers: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier
    ) -> bool:
        """A key the message box hands over while the picker shows; True when it was used."""
        if not self.isVisible() or modifiers & ~Qt.KeyboardModifier.KeypadModifier:
            return False
        if key == Qt.Key.Key_Escape:
            self.hide()
            return True
        item = self.currentItem()
        if item is None or self._entries[self.row(item)] is None:
            return False  # only a problem shows: every other key is the box's
        if key in (Qt.Key.Key_Up, Qt.Key.Key_Down):
            step = -1 if key == Qt.Key.Key_Up else 1
            self._step(self.currentRow() + step, step)
            self.moved = True
            return True
        enter = key in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if key == Qt.Key.Key_Tab or (enter and (self.moved or self.enter_picks)):
            self._clicked(item)
            return True
        return False

    def _clicked(self, item: QListWidgetItem) -> None:
        entry = self._entries[self.row(item)]
        if entry is None:
            return
        self.hide()
        if isinstance(entry, Path):
            self.picked.emit(entry)
        else:
            self.offered.emit(entry)


__all__ = [
    "SHOWN",
    "MentionPicker",
    "command_at",
    "described",
    "matching",
    "matching_offers",
    "mention_at",
]
