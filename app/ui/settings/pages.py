"""The Settings dialog's pages: which settings go on which page and under which heading, how
each is labelled, and the control and inline help each one gets.

Guarantees: every shown setting (`preferences.fields`) is on exactly one page, and one this
table does not place lands on a last "More" page, so a new setting still appears without
dialog code; each has a readable label (the table's, else its name with its first letter in
capitals and GPU, KV, CPU kept as acronyms), and its description as a muted, wrapped line
under its control (its tooltip too, and what a screen reader says of it); a choice is a combo
box holding the value as its data, a number a spin box within the model's bounds with its unit,
and where 0 means "decide for me" the box says so ("Automatic", "System default"), not 0, as
does the help line. Model settings lays its sections out the same way (`SectionRows`: a
heading, then label, control and help lines, rows it can hide whole).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.controllers import preferences
from app.domain.budget import Overflow
from app.ui.theme import mark

LABELS = {
    "theme": "Theme",
    "font_size": "Text size",
    "reasoning_effort": "Reasoning effort",
    "context_length": "Context length",
    "max_tokens": "Longest answer",
    "threads": "Threads",
    "gpu_layers": "GPU layers",
    "trash_retention_days": "Keep deleted chats",
    "max_downloads": "Downloads at once",
    "overflow": "When the context is full",
    "kv_cache_gib": "Conversation cache",
    "parallel": "Answers at once",
}
UNITS = {
    "font_size": " pt",
    "context_length": " tokens",
    "max_tokens": " tokens",
    "trash_retention_days": " days",
    "kv_cache_gib": " GiB",
}
ZERO = {  # 0 means "decide for me" (or "none")
    "threads": "Automatic",
    "font_size": "System default",
    "kv_cache_gib": "None",
}
STEPS = {"context_length": 1024, "max_tokens": 256}
WORDS = {
    "gpu_layers": {"auto": "automatic", "all": "all layers", "none": "none (CPU only)"},
    "overflow": {p.value: p.said for p in Overflow},
}
ACRONYMS = {"gpu": "GPU", "kv": "KV", "cpu": "CPU", "mcp": "MCP", "url": "URL", "ui": "UI"}
FIELD_WIDTH = 220  # the controls' width: every page lines up
GAP = 6  # pixels between one setting's last line and the next setting


@dataclass(frozen=True)
class Section:
    heading: str
    names: tuple[str, ...]


@dataclass(frozen=True)
class Page:
    title: str
    icon: str  # a Material Design icon name (app/ui/icons.py)
    sections: tuple[Section, ...]


PAGES = (
    Page("Appearance", "palette-outline", (Section("Look", ("theme", "font_size")),)),
    Page(
        "Chat",
        "chat-outline",
        (Section("New messages", ("reasoning_effort", "max_tokens", "overflow")),),
    ),
    Page(
        "Model & performance",
        "chip",
        (
            Section("Loading a model", ("context_length", "parallel", "gpu_layers")),
            Section("Generation", ("threads",)),
            Section("Downloads", ("max_downloads",)),
        ),
    ),
    Page(
        "Privacy & data",
        "shield-lock-outline",
        (
            Section("Deleted chats", ("trash_retention_days",)),
            Section("Conversation cache", ("kv_cache_gib",)),
        ),
    ),
)
DATA_PAGE = "Privacy & data"  # the page the data folder is shown on


def label(name: str) -> str:
    """The setting's name as the dialog shows it."""
    if name in LABELS:
        return LABELS[name]
    words = [ACRONYMS.get(w, w) for w in name.split("_")]
    first = words[0] if words[0].isupper() else words[0].capitalize()
    return " ".join([first, *words[1:]])


def help_text(name: str, description: str) -> str:
    """The description, with the values it explains said as the control shows them
    ("(0: …)" becomes "(Automatic: …)", "(auto: …)" "(automatic: …)")."""
    shown = {"0": ZERO[name]} if name in ZERO else {}
    shown.update(WORDS.get(name, {}))
    return re.sub(r"\((\w+): ", lambda m: f"({shown.get(m[1], m[1])}: ", description)


def pages(fields: list[preferences.Field]) -> list[Page]:
    """The pages holding `fields`: the table's, then "More" for any it does not place."""
    names = {f.name for f in fields}
    out = []
    for page in PAGES:
        sections = tuple(
            Section(s.heading, tuple(n for n in s.names if n in names)) for s in page.sections
        )
        out.append(Page(page.title, page.icon, tuple(s for s in sections if s.names)))
    placed = {n for page in PAGES for s in page.sections for n in s.names}
    rest = tuple(f.name for f in fields if f.name not in placed)
    if rest:
        out.append(Page("More", "tune-variant", (Section("Other settings", rest),)))
    return [p for p in out if p.sections or p.title == DATA_PAGE]


@dataclass
class Row:
    """One setting's widgets: its label, its control and its help line."""

    name: str
    label: QLabel
    control: QComboBox | QSpinBox
    help: QLabel

    def value(self) -> object:
        box = self.control
        if isinstance(box, QComboBox):
            data = box.currentData()
            return data if data is not None else box.currentText()
        return box.value()


def _control(field: preferences.Field, parent: QWidget) -> QComboBox | QSpinBox:
    if field.kind == "choice":
        combo = QComboBox(parent)
        words = WORDS.get(field.name, {})
        for choice in field.choices:
            combo.addItem(words.get(choice, choice), choice)
        combo.setCurrentIndex(max(0, combo.findData(str(field.value))))
        return combo
    spin = QSpinBox(parent)
    spin.setRange(field.low, field.high)
    spin.setGroupSeparatorShown(field.high >= 10_000)
    spin.setSuffix(UNITS.get(field.name, ""))
    spin.setSingleStep(STEPS.get(field.name, 1))
    if field.name in ZERO and field.low == 0:
        spin.setSpecialValueText(ZERO[field.name])
    spin.setValue(int(field.value))
    return spin


def row(field: preferences.Field, parent: QWidget) -> Row:
    """The label, control and help line of `field` (see the module guarantees)."""
    name = label(field.name)
    control = _control(field, parent)
    control.setMinimumWidth(FIELD_WIDTH)
    control.setAccessibleName(name)
    control.setToolTip(field.description)
    said = help_text(field.name, field.description)
    control.setAccessibleDescription(said)
    caption = QLabel(name, parent)
    caption.setBuddy(control)
    helper = QLabel(said, parent)
    helper.setWordWrap(True)
    helper.setAccessibleName(f"About {name.lower()}")
    helper.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    mark(helper, "muted")
    return Row(field.name, caption, control, helper)


def heading(text: str, parent: QWidget) -> QLabel:
    """A section's heading: its words in bold, a little larger than the text."""
    title = QLabel(text, parent)
    font = QFont(title.font())
    font.setBold(True)
    font.setPointSizeF(font.pointSizeF() * 1.1)
    title.setFont(font)
    title.setAccessibleName(text)
    return title


def grid() -> QGridLayout:
    """The grid every section lays its settings out in (labels, then controls)."""
    layout = QGridLayout()
    layout.setColumnStretch(1, 1)
    layout.setHorizontalSpacing(16)
    layout.setVerticalSpacing(3)
    return layout


def section_grid(rows: list[Row]) -> QGridLayout:
    """Label on the left; the control, then its help under it, on the right; a little room
    before the next setting."""
    layout = grid()
    for i, r in enumerate(rows):
        at = 3 * i
        layout.addWidget(r.label, at, 0)
        layout.addWidget(r.control, at, 1, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(r.help, at + 1, 1)
        layout.setRowMinimumHeight(at + 2, 10 if i + 1 < len(rows) else 0)
    return layout


def line_up(labels: list[QLabel]) -> None:
    """Every label as wide as the widest, its text on the right: the controls of every
    section and page start at the same place."""
    width = max((label.sizeHint().width() for label in labels), default=0)
    for caption in labels:
        caption.setMinimumWidth(width)
        caption.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)


def help_line(text: str, parent: QWidget) -> QLabel:
    """A muted, wrapped line of help."""
    said = QLabel(text, parent)
    said.setWordWrap(True)
    mark(said, "muted")
    return said


def beside(box: QWidget, said: QLabel, parent: QWidget) -> QWidget:
    """A control at the dialog's control width, and what it says beside it."""
    pair = QWidget(parent)
    line = QHBoxLayout(pair)
    line.setContentsMargins(0, 0, 0, 0)
    box.setFixedWidth(FIELD_WIDTH)
    line.addWidget(box)
    line.addWidget(said, 1)
    return pair


class SectionRows:
    """A section's grid: a label, a control beside it, lines under the control."""

    def __init__(self, column: QVBoxLayout, title: str, parent: QWidget) -> None:
        column.addSpacing(6)
        column.addWidget(heading(title, parent))
        self.grid: QGridLayout = grid()
        column.addLayout(self.grid)
        self.parent = parent
        self.labels: list[QLabel] = []
        self.rows: dict[str, list[QWidget]] = {}  # a row's widgets, to hide it whole
        self.gaps: dict[str, int] = {}  # the grid row of the room after it

    def add(self, key: str, label: str, control: QWidget, *under: QWidget) -> None:
        at = self.grid.rowCount()
        caption = QLabel(label, self.parent)
        caption.setBuddy(control)
        self.labels.append(caption)
        self.grid.addWidget(caption, at, 0)
        if isinstance(control, QComboBox | QSpinBox):
            control.setFixedWidth(FIELD_WIDTH)
            self.grid.addWidget(control, at, 1, Qt.AlignmentFlag.AlignLeft)
        else:
            self.grid.addWidget(control, at, 1)
        for i, widget in enumerate(under, 1):
            self.grid.addWidget(widget, at + i, 1)
        self.gaps[key] = at + len(under) + 1
        self.grid.setRowMinimumHeight(self.gaps[key], GAP)  # room before the next row
        self.rows[key] = [caption, control, *under]

    def show_row(self, key: str, shown: bool) -> None:
        """Show or hide the row whole, with the room after it."""
        for widget in self.rows[key]:
            widget.setVisible(shown)
        self.grid.setRowMinimumHeight(self.gaps[key], GAP if shown else 0)


def page_widget(
    page: Page, rows: dict[str, Row], parent: QWidget
) -> tuple[QScrollArea, QVBoxLayout]:
    """The page in a frameless scroll area, and its column (to add more to it)."""
    inner = QWidget()
    column = QVBoxLayout(inner)
    column.setContentsMargins(8, 4, 12, 8)
    column.setSpacing(6)
    title = QLabel(page.title, inner)
    font = QFont(title.font())
    font.setBold(True)
    font.setPointSizeF(font.pointSizeF() * 1.35)
    title.setFont(font)
    column.addWidget(title)
    for section in page.sections:
        column.addSpacing(8)
        column.addWidget(heading(section.heading, inner))
        column.addLayout(section_grid([rows[n] for n in section.names]))
    scroll = QScrollArea(parent)
    scroll.setFrameShape(QFrame.Shape.NoFrame)
    scroll.setWidgetResizable(True)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    scroll.setWidget(inner)
    scroll.setAccessibleName(f"{page.title} settings")
    return scroll, column


__all__ = [
    "LABELS",
    "PAGES",
    "Page",
    "Row",
    "Section",
    "SectionRows",
    "beside",
    "grid",
    "heading",
    "help_line",
    "help_text",
    "label",
    "line_up",
    "page_widget",
    "pages",
    "row",
]
