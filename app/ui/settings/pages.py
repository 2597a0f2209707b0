"""The Settings dialog's pages: the settings laid out as their declarations place them (page,
section, label, unit, what 0 means: `Shown` in `app/settings.py`), with the control and inline
help each one gets.

Guarantees: every shown setting (`preferences.fields`) is on exactly one page, the one it is
declared on, under its section's heading, in the pages' and sections' declared order; a field
declared on no page (a `preferences.Field` without `shown`) lands on a last "More" page, so it
still appears without dialog code; each has a readable label (its declared one, else its name
with its first letter in capitals and GPU, KV, CPU kept as acronyms), and its description as a
muted, wrapped line under its control (its tooltip too, and what a screen reader says of it); a
choice is a combo box holding the value as its data and saying it in its declared words, a
number a spin box within the model's bounds with its unit and step, and where 0 means "decide
for me" the box says so ("Automatic", "System default"), not 0, as does the help line. Model
settings lays its sections out the same way (`SectionRows`: a heading, then label, control and
help lines, rows it can hide whole)."""

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
from app.domain.declared import Setting
from app.ui.theme import mark

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


DATA_PAGE = preferences.DATA_PAGE.title  # the page the data folder is shown on


def label(name: str) -> str:
    """The setting's name as the dialog shows it: its declared label, else its name read out."""
    declared = preferences.declared_label(name)
    if declared:
        return declared
    words = [ACRONYMS.get(w, w) for w in name.split("_")]
    first = words[0] if words[0].isupper() else words[0].capitalize()
    return " ".join([first, *words[1:]])


def help_text(field: preferences.Field) -> str:
    """The description, with the values it explains said as the control shows them
    ("(0: …)" becomes "(Automatic: …)", "(auto: …)" "(automatic: …)")."""
    shown = field.shown
    said = {"0": shown.zero} if shown is not None and shown.zero else {}
    said.update(shown.words if shown is not None else ())
    return re.sub(r"\((\w+): ", lambda m: f"({said.get(m[1], m[1])}: ", field.description)


def pages(fields: list[preferences.Field]) -> list[Page]:
    """The pages holding `fields`, as their declarations place them (in the order of `fields`
    within a section), then "More" for any declared on no page."""
    out = []
    for page in preferences.pages():
        sections = tuple(
            Section(heading, tuple(f.name for f in fields if _on(f, page.title, heading)))
            for heading in page.sections
        )
        out.append(Page(page.title, page.icon, tuple(s for s in sections if s.names)))
    placed = {n for page in out for s in page.sections for n in s.names}
    rest = tuple(f.name for f in fields if f.name not in placed)
    if rest:
        out.append(Page("More", "tune-variant", (Section("Other settings", rest),)))
    return [p for p in out if p.sections or p.title == DATA_PAGE]


def _on(field: preferences.Field, title: str, heading: str) -> bool:
    shown = field.shown
    return (
        shown is not None
        and shown.page is not None
        and (shown.page.title, shown.section) == (title, heading)
    )


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
    shown = field.shown
    if field.kind == "choice":
        combo = QComboBox(parent)
        for choice in field.choices:
            combo.addItem(shown.said(choice) if shown is not None else choice, choice)
        combo.setCurrentIndex(max(0, combo.findData(str(field.value))))
        return combo
    spin = QSpinBox(parent)
    spin.setRange(field.low, field.high)
    spin.setGroupSeparatorShown(field.high >= 10_000)
    if shown is not None:
        spin.setSuffix(shown.unit)
        spin.setSingleStep(int(shown.step))
        if shown.zero and field.low == 0:
            spin.setSpecialValueText(shown.zero)
    spin.setValue(int(field.value))
    return spin


def row(field: preferences.Field, parent: QWidget) -> Row:
    """The label, control and help line of `field` (see the module guarantees)."""
    name = field.label or label(field.name)
    control = _control(field, parent)
    control.setMinimumWidth(FIELD_WIDTH)
    control.setAccessibleName(name)
    control.setToolTip(field.description)
    said = help_text(field)
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

    def add_setting(self, declared: Setting, control: QWidget, *under: QWidget) -> None:
        """The row of a declared setting: its name the row's key, its declared label."""
        self.add(declared.name, declared.shown.label, control, *under)

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
    "DATA_PAGE",
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
