r"""How answers are rendered: code coloured by Pygments, math drawn by ziamath and copied as its
source, single newlines kept, quotes and tables drawn, no caret, a theme switch that restyles
views in place, and a tail-only streaming path — real widgets on the offscreen platform."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QColor, QFont, QGuiApplication, QImage, QTextCursor, QTextDocument
from PySide6.QtWidgets import QApplication

from app.ui import appearance, theme
from app.ui.markdown.copying import MATH_SOURCE
from app.ui.markdown.math_spans import find_math
from app.ui.markdown.view import MarkdownView
from app.ui.settings.dialog import apply_look

PYTHON = '```python\ndef greet(name):\n    return "hello " + name\n```\n'
RUST = '```rust\nfn main() {\n    println!("hi");\n}\n```\n'


@pytest.fixture(autouse=True)
def light_again() -> Any:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    font = QFont(app.font())
    appearance.apply(app, "light")
    yield
    app.setFont(font)
    appearance.apply(app, "light")


def view_of(qtbot: Any, text: str, *, stream: bool = False, finish: bool = True) -> MarkdownView:
    view = MarkdownView(accessible_name="Answer")
    qtbot.addWidget(view)
    view.resize(700, 300)
    view.show()
    if stream:
        for c in text:
            view.append_text(c)
    else:
        view.append_text(text)
    if finish:
        view.finish()
    return view


def char_format_at(view: MarkdownView, needle: str) -> Any:
    found = view.document().find(needle)
    assert not found.isNull(), needle
    cursor = QTextCursor(view.document())
    cursor.setPosition(found.selectionStart() + 1)  # the format of the character before it
    return cursor.charFormat()


def style_colour(style: str, token: Any) -> str:
    from pygments.styles import get_style_by_name

    return "#" + get_style_by_name(style).style_for_token(token)["color"].lower()


def formulas(view: MarkdownView) -> list[tuple[str, QImage]]:
    """(source, image) of each formula image in the document, in order."""
    out = []
    block = view.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fmt = it.fragment().charFormat()
            if fmt.isImageFormat():
                name = fmt.toImageFormat().name()
                image = view.document().resource(QTextDocument.ResourceType.ImageResource, QUrl(name))
                out.append((fmt.property(MATH_SOURCE), image))
            it += 1
        block = block.next()
    return out


def copied(view: MarkdownView) -> str:
    view.selectAll()
    view.copy()  # what Ctrl+C and the context menu's Copy do
    return QGuiApplication.clipboard().text()


def test_python_and_rust_are_coloured_by_token_kind_from_the_first_line(qtbot: Any) -> None:
    from pygments.token import Keyword, String

    view = view_of(qtbot, PYTHON + "\n" + RUST)
    style = theme.LIGHT.code_style
    for keyword, string in (("def", '"hello '), ("fn", '"hi"')):
        kw = char_format_at(view, keyword).foreground().color().name()
        st = char_format_at(view, string).foreground().color().name()
        assert kw == style_colour(style, Keyword) and st == style_colour(style, String)
        assert kw != st
    assert view.code_blocks() == [PYTHON.split("\n", 1)[1][:-4], RUST.split("\n", 1)[1][:-4]]
    assert "python · Copy" in view.toPlainText() and "rust · Copy" in view.toPlainText()


def test_a_code_blocks_copy_link_copies_exactly_it_tabs_included(qtbot: Any) -> None:
    view = view_of(qtbot, "Build:\n\n```make\nall:\n\techo hi\n```\n\nDone.")
    assert view.code_blocks() == ["all:\n\techo hi\n"]
    view.anchorClicked.emit(QUrl("copy:0"))  # what clicking the link does
    assert QGuiApplication.clipboard().text() == "all:\n\techo hi\n"


def test_an_unknown_language_is_plain_text(qtbot: Any) -> None:
    from app.ui.markdown.code_highlight import spans

    assert spans("x = 1", "nosuchlanguage", "default") == () == spans("x = 1", "", "default")
    view = view_of(qtbot, "```nosuchlanguage\nx = 1\n```\n")
    assert view.code_blocks() == ["x = 1\n"] and "nosuchlanguage · Copy" in view.toPlainText()
    assert char_format_at(view, "x = 1").foreground().style() == Qt.BrushStyle.NoBrush


def test_inline_math_is_an_image_and_copies_as_its_source(qtbot: Any) -> None:
    view = view_of(qtbot, r"Euler: $e^{i\pi}+1=0$ is neat.")
    [(source, image)] = formulas(view)
    assert source == r"$e^{i\pi}+1=0$"
    assert isinstance(image, QImage) and not image.isNull() and image.width() > 20
    assert r"Euler: $e^{i\pi}+1=0$ is neat." in copied(view)


def test_display_math_stands_centred_on_its_own_line_and_copies_exactly(qtbot: Any) -> None:
    view = view_of(qtbot, "The integral\n$$\\int_0^1 x^2\\,dx$$\nis a third.")
    [(source, image)] = formulas(view)
    assert source == r"$$\int_0^1 x^2\,dx$$" and not image.isNull()
    block = view.document().begin()
    while "\ufffc" not in block.text():
        block = block.next()
    assert block.text() == "\ufffc"  # alone on its line
    assert block.blockFormat().alignment() & Qt.AlignmentFlag.AlignHCenter
    assert copied(view) == "The integral\n$$\\int_0^1 x^2\\,dx$$\nis a third."


def test_math_is_not_rendered_in_code_nor_for_prices(qtbot: Any) -> None:
    text = "Use `$x$` here.\n\n```\n$y$\n```\n\nIt costs $5 and $10."
    view = view_of(qtbot, text)
    assert formulas(view) == []
    plain = view.toPlainText()
    assert "$x$" in plain and "$y$" in plain and "$5 and $10" in plain


def test_a_formula_that_cannot_be_drawn_shows_its_source_as_code(qtbot: Any) -> None:
    view = view_of(qtbot, r"Broken: $\frac{$ and fine: $x$.")
    assert [source for source, _ in formulas(view)] == ["$x$"]
    assert char_format_at(view, r"$\frac{$").fontFixedPitch()
    assert r"$\frac{$" in copied(view)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (r"a $x$ b", [("$x$", False)]),
        (r"$$x$$ and \[y\] and \(z\)", [("$$x$$", True), (r"\[y\]", True), (r"\(z\)", False)]),
        ("It costs $5 and $10.", []),
        ("from $ 5 to $5", []),
        (r"an escaped \$x\$ stays", []),
        ("`$x$` and ``a ` $y$``", []),
        ("```\n$x$\n```\n$y$", [("$y$", False)]),
        ("$a\n\nb$", []),  # never across a blank line
        ("$$\nx\n$$", [("$$\nx\n$$", True)]),
    ],
)
def test_math_spans_follow_the_delimiter_rules(text: str, found: list[tuple[str, bool]]) -> None:
    assert [(s.source, s.display) for s in find_math(text)] == found


def layout_of(view: MarkdownView) -> list[tuple[str, list[tuple[float, float, int]]]]:
    """Each block's text and its lines' (y, height, length): what a reader sees laid out."""
    view.document().size()  # lays the document out
    out = []
    block = view.document().begin()
    while block.isValid():
        layout = block.layout()
        lines = [layout.lineAt(i) for i in range(layout.lineCount())]
        out.append((block.text(), [(ln.y(), ln.height(), ln.textLength()) for ln in lines]))
        block = block.next()
    return out


def test_single_newlines_stay_line_breaks_while_streaming_and_after(qtbot: Any) -> None:
    view = view_of(qtbot, "line one\nline two", stream=True, finish=False)
    streaming = layout_of(view)
    [(text, lines)] = streaming
    assert text == "line one\u2028line two" and len(lines) == 2  # one paragraph, two lines
    view.finish()
    assert layout_of(view) == streaming
    assert copied(view) == "line one\nline two"


def test_the_layout_is_the_same_streamed_char_by_char_and_at_once_and_after_finish(qtbot: Any) -> None:
    text = "Intro **bold**\nsecond line $x^2$\n\n- item\n  more\n- two\n\nLast paragraph\nends here"
    streamed = view_of(qtbot, text, stream=True, finish=False)
    before = layout_of(streamed)
    streamed.finish()
    assert layout_of(streamed) == before
    assert layout_of(view_of(qtbot, text)) == before


def test_a_quote_has_a_bar_and_muted_text(qtbot: Any) -> None:
    view = view_of(qtbot, "Before.\n\n> quoted words\n> second line\n\nAfter.")
    found = view.document().find("quoted words")
    block = found.block()
    assert block.blockFormat().intProperty(block.blockFormat().Property.BlockQuoteLevel) == 1
    assert char_format_at(view, "quoted").foreground().color() == QColor(theme.LIGHT.muted)
    image = view.viewport().grab().toImage()
    box = view.document().documentLayout().blockBoundingRect(block)
    text_left = int(box.left() + block.blockFormat().leftMargin())
    y = int(box.center().y())
    page = QColor(theme.LIGHT.surface)
    drawn = {image.pixelColor(x, y).name() for x in range(text_left)} - {page.name()}
    assert drawn  # a bar in the margin left of the quote's text, darker than the page
    assert all(QColor(c).lightness() < page.lightness() for c in drawn)


TABLE = "Results:\n| Name | Value |\n|------|------:|\n| alpha | $x$ |\n| beta | 2 |\n\nAfter."


def test_a_table_has_borders_a_shaded_header_and_copies_as_tab_separated_values(qtbot: Any) -> None:
    view = view_of(qtbot, TABLE)
    table = QTextCursor(view.document().find("alpha")).currentTable()
    assert table is not None and (table.rows(), table.columns()) == (3, 2)
    fmt = table.format()
    assert fmt.border() == 1 and fmt.borderBrush().color() == QColor(theme.LIGHT.border)
    assert fmt.cellPadding() > 0
    header = {table.cellAt(0, c).format().background().color().name() for c in range(2)}
    body = {table.cellAt(1, c).format().background().style() for c in range(2)}
    assert header == {QColor(theme.LIGHT.code).name()} and body == {Qt.BrushStyle.NoBrush}
    assert "table · Copy" in view.toPlainText()
    view.anchorClicked.emit(QUrl("table:0"))
    assert QGuiApplication.clipboard().text() == "Name\tValue\nalpha\t$x$\nbeta\t2"
    assert view.tables() == ["Name\tValue\nalpha\t$x$\nbeta\t2"]


def test_a_theme_switch_restyles_an_open_view_in_place(qtbot: Any) -> None:
    from pygments.token import Keyword

    view = view_of(qtbot, PYTHON + "\nand $x^2$ too")
    def_block = view.document().find("def greet").block()
    assert def_block.blockFormat().background().color() == QColor(theme.LIGHT.code)
    light_keyword = char_format_at(view, "def").foreground().color().name()
    assert light_keyword == style_colour(theme.LIGHT.code_style, Keyword)
    [(_, light_image)] = formulas(view)
    apply_look("dark", 0)  # what the Settings dialog does
    def_block = view.document().find("def greet").block()
    assert def_block.blockFormat().background().color() == QColor(theme.DARK.code)
    dark_keyword = char_format_at(view, "def").foreground().color().name()
    assert dark_keyword == style_colour(theme.DARK.code_style, Keyword) != light_keyword
    [(_, dark_image)] = formulas(view)
    assert ink(dark_image) == QColor(theme.DARK.text).name() != ink(light_image)


def ink(image: QImage) -> str:
    """The colour of a formula image's most opaque pixel."""
    pixels = (image.pixelColor(x, y) for x in range(image.width()) for y in range(image.height()))
    return max(pixels, key=lambda c: c.alpha()).name()


def test_a_finished_answer_has_no_caret_but_stays_selectable(qtbot: Any) -> None:
    view = view_of(qtbot, "Some answer text.")
    assert view.cursorWidth() == 0
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_Home, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(view, Qt.Key.Key_End, Qt.KeyboardModifier.ShiftModifier)
    assert view.textCursor().selectedText() == "Some answer text."


def test_an_append_to_a_long_answer_only_replaces_the_tail(qtbot: Any) -> None:
    paragraphs = [f"Paragraph {i} with `code` and $x_{i}$.\nA second line." for i in range(150)]
    view = view_of(qtbot, "\n\n".join(paragraphs) + "\n\nThe unfinished tail", finish=False)
    tail_start = view.document().find("The unfinished tail").block().position()
    changes: list[tuple[int, int, int]] = []
    view.document().contentsChange.connect(lambda at, removed, added: changes.append((at, removed, added)))
    view.append_text(" goes on")
    assert changes and all(at >= tail_start - 1 for at, _, _ in changes)
    assert max(removed + added for _, removed, added in changes) < 100  # the tail, not the answer
    assert view.toPlainText().endswith("The unfinished tail goes on")


def test_a_tail_too_long_to_colour_while_streaming_is_coloured_at_finish_in_place(qtbot: Any) -> None:
    from pygments.token import Number

    from app.ui.markdown.view import TAIL_HIGHLIGHT

    code = "```python\n" + "x = 12345\n" * (TAIL_HIGHLIGHT // 10 + 1)
    view = view_of(qtbot, code, finish=False)
    assert char_format_at(view, "12345").foreground().style() == Qt.BrushStyle.NoBrush
    streaming = layout_of(view)
    view.finish()
    number = char_format_at(view, "12345").foreground().color().name()
    assert number == style_colour(theme.LIGHT.code_style, Number)
    assert layout_of(view) == streaming


def test_code_streaming_in_is_coloured_line_by_line_and_whole_at_finish(qtbot: Any) -> None:
    from pygments.token import Keyword

    view = view_of(qtbot, "```python\ndef f():\n    return 1\n", stream=True, finish=False)
    keyword = style_colour(theme.LIGHT.code_style, Keyword)
    assert char_format_at(view, "def").foreground().color().name() == keyword  # a finished line
    assert view.code_blocks() == ["def f():\n    return 1\n"]
    view.finish()
    assert char_format_at(view, "return").foreground().color().name() == keyword


def test_characters_beyond_the_basic_plane_shift_nothing(qtbot: Any) -> None:
    text = 'Party 🎉🎉 time $x^2$ and\nnext 😀 line $y$\n\n```python\ns = "😀"  # 🎉 note\n```\n'
    view = view_of(qtbot, text, stream=True)
    assert [source for source, _ in formulas(view)] == ["$x^2$", "$y$"]
    assert copied(view) == 'Party 🎉🎉 time $x^2$ and\nnext 😀 line $y$\ns = "😀"  # 🎉 note'
    assert view.code_blocks() == ['s = "😀"  # 🎉 note\n']
    assert char_format_at(view, "# 🎉 note").fontItalic()  # the comment, coloured where it is


def test_the_view_module_loads_neither_pygments_nor_ziamath() -> None:
    code = "import sys, app.ui.markdown.view; print(sorted({'pygments', 'ziamath'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
