"""Text from a file the user attached: plain text, Markdown, source code, HTML, PDF, DOCX.

Guarantees: every file gives an `Extracted` — its text by page (PDF, 1-based) or as one page
of lines (the rest), and a notice when some or all of it could not be read (an encrypted PDF,
pages with no text layer such as scans, a binary file whatever its name, a damaged file, one
over the size limit, a decompression bomb, a page of too many operators); nothing here raises
for a bad file, whatever it holds. Sizes are bounded before the work (`app.documents.bounded`):
a DOCX's parts are measured before python-docx reads them, a PDF's streams stop decompressing
at a limit and each page's operators are counted before pypdf parses them (a page over the
limit is said and skipped, the others are read). A text file is binary when a NUL byte or a
byte that is not UTF-8 is anywhere in it, not only at its start. HTML loses its tags, scripts
and styles; a DOCX keeps its paragraphs and its tables (cells joined with " | "), in order.
Libraries: `pypdf` (BSD-3-Clause) for PDF, `python-docx` (MIT) for Word files.
"""

from __future__ import annotations

import html.parser
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from app.documents.bounded import PAGE_OPERATORS, PDF_OPERATORS, operators, pdf_limits, zip_refusal

if TYPE_CHECKING:
    from pypdf import PageObject

MAX_BYTES = 64 * 1024 * 1024
TEXT_SUFFIXES = {
    ".txt",
    ".md",
    ".markdown",
    ".rst",
    ".csv",
    ".json",
    ".yaml",
    ".yml",
    ".toml",
    ".ini",
    ".log",
    ".py",
    ".js",
    ".ts",
    ".tsx",
    ".jsx",
    ".java",
    ".c",
    ".h",
    ".cpp",
    ".hpp",
    ".rs",
    ".go",
    ".rb",
    ".php",
    ".sh",
    ".sql",
    ".css",
    ".swift",
    ".kt",
    ".cs",
    ".lua",
    ".r",
    ".m",
    ".scala",
    ".xml",
    "",
}
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | {".pdf", ".docx"}


@dataclass(frozen=True)
class Page:
    """Text with where it is: `page` (1-based) for a PDF, else None with its first line."""

    text: str
    page: int | None = None
    first_line: int = 1


@dataclass(frozen=True)
class Extracted:
    path: str
    kind: str  # text, html, pdf, docx
    pages: list[Page] = field(default_factory=list)
    notice: str | None = None  # what could not be read, said on the message

    @property
    def text(self) -> str:
        return "\n\n".join(p.text for p in self.pages if p.text)


def _binary(data: bytes) -> bool:
    """A NUL byte, or bytes that are not UTF-8, anywhere in `data` (a character cut at the very
    end is allowed)."""
    if b"\x00" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.reason != "unexpected end of data" or exc.start < len(data) - 4
    return False


class _Text(html.parser.HTMLParser):
    SKIP = frozenset({"script", "style", "head", "noscript", "template"})
    BREAK = frozenset(
        {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "section"}
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag in self.SKIP:
            self.skipping += 1
        elif tag in self.BREAK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP and self.skipping:
            self.skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def _html(text: str) -> str:
    parser = _Text()
    parser.feed(text)
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def _pdf_pages(pdf_pages: Iterable[PageObject]) -> tuple[list[Page], list[str]]:
    """The pages' text, measured before reading; and what was not read, said."""
    pages: list[Page] = []
    unread: list[str] = []
    budget = PDF_OPERATORS
    for number, page in enumerate(pdf_pages, 1):
        try:
            contents = page.get_contents()
            count = operators(contents.get_data(), PAGE_OPERATORS) if contents is not None else 0
            budget -= count
            if budget < 0:
                unread.append(f"pages {number}– not read: over {PDF_OPERATORS:,} operators in all")
                break
            if count > PAGE_OPERATORS:
                unread.append(f"page {number} not read: it has over {PAGE_OPERATORS:,} operators")
                continue
            pages.append(Page(page.extract_text() or "", page=number))
        except Exception as exc:  # pypdf raises many kinds (limits included) for a hostile page
            unread.append(f"page {number} could not be read ({exc})")
    return pages, unread


def _pdf(path: Path) -> Extracted:
    from pypdf import PdfReader

    with pdf_limits():
        try:
            reader = PdfReader(str(path))
            if reader.is_encrypted and not reader.decrypt(""):
                return Extracted(str(path), "pdf", notice="the PDF is encrypted: no text was read")
            pages, unread = _pdf_pages(reader.pages)
        except Exception as exc:  # pypdf raises many kinds (limits included) for a damaged file
            return Extracted(str(path), "pdf", notice=f"the PDF could not be read ({exc})")
    empty = [p.page for p in pages if not p.text.strip()]
    if pages and len(empty) == len(pages) and not unread:
        return Extracted(str(path), "pdf", pages, "no page has a text layer (scanned?): no text")
    numbers = ", ".join(map(str, empty))
    said = f"page {numbers} has" if len(empty) == 1 else f"pages {numbers} have"
    notes = unread + ([f"{said} no text layer (scanned?): nothing read there"] if empty else [])
    return Extracted(str(path), "pdf", pages, "; ".join(notes) or None)


def _docx(path: Path) -> Extracted:
    refused = zip_refusal(path)  # before python-docx reads any part whole
    if refused is not None:
        return Extracted(str(path), "docx", notice=f"the Word file was not read: {refused}")
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(str(path))
        parts = []
        for block in document.iter_inner_content():
            if isinstance(block, Paragraph):
                parts.append(block.text)
            elif isinstance(block, Table):
                for row in block.rows:
                    parts.append(" | ".join(cell.text.strip() for cell in row.cells))
    except Exception as exc:  # python-docx raises many kinds for a damaged file
        return Extracted(str(path), "docx", notice=f"the Word file could not be read ({exc})")
    return Extracted(str(path), "docx", [Page("\n".join(parts))])


def _text(path: Path, suffix: str) -> Extracted:
    data = path.read_bytes()
    if _binary(data):
        return Extracted(str(path), "text", notice="this is a binary file, not text")
    text = data.decode("utf-8", errors="replace")
    if suffix in HTML_SUFFIXES:
        return Extracted(str(path), "html", [Page(_html(text))])
    return Extracted(str(path), "text", [Page(text)])


def extract(path: Path) -> Extracted:
    """The text of `path` (see the module guarantees)."""
    suffix = path.suffix.lower()
    try:
        size = path.stat().st_size
    except OSError as exc:
        return Extracted(str(path), "text", notice=f"the file could not be read ({exc.strerror})")
    if size > MAX_BYTES:
        return Extracted(str(path), "text", notice=f"the file is over {MAX_BYTES >> 20} MiB")
    reader = _pdf if suffix == ".pdf" else _docx if suffix == ".docx" else None
    try:
        return reader(path) if reader else _text(path, suffix)
    except OSError as exc:
        return Extracted(str(path), "text", notice=f"the file could not be read ({exc.strerror})")
    except (MemoryError, RecursionError) as exc:  # a file built to exhaust the reader
        kind = type(exc).__name__
        return Extracted(str(path), "text", notice=f"the file could not be read ({kind})")


__all__ = ["SUFFIXES", "Extracted", "Page", "extract"]
