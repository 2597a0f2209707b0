"""Text from a file the user attached: plain text, Markdown, source code, HTML, PDF, DOCX.

Guarantees: every file gives an `Extracted` — its text by page (PDF, 1-based) or as one page
of lines (the rest), and a notice when some or all of it could not be read (an encrypted PDF,
pages with no text layer such as scans, a binary file whatever its name, a damaged file, one
over the size limit); nothing here raises for a bad file. HTML loses its tags, scripts and
styles; a DOCX keeps its paragraphs and its tables (cells joined with " | "), in order.
Libraries: `pypdf` (BSD-3-Clause) for PDF, `python-docx` (MIT) for Word files.
"""

from __future__ import annotations

import html.parser
from dataclasses import dataclass, field
from pathlib import Path

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
    sample = data[:8192]
    if b"\x00" in sample:
        return True
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(sample) - 4  # a character cut at the sample's end is fine
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


def _pdf(path: Path) -> Extracted:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted and not reader.decrypt(""):
            return Extracted(str(path), "pdf", notice="the PDF is encrypted: no text was read")
        pages = [Page(p.extract_text() or "", page=i + 1) for i, p in enumerate(reader.pages)]
    except (PdfReadError, OSError, ValueError, KeyError, TypeError) as exc:
        return Extracted(str(path), "pdf", notice=f"the PDF could not be read ({exc})")
    empty = [p.page for p in pages if not p.text.strip()]
    if len(empty) == len(pages):
        return Extracted(str(path), "pdf", pages, "no page has a text layer (scanned?): no text")
    numbers = ", ".join(map(str, empty))
    said = f"page {numbers} has" if len(empty) == 1 else f"pages {numbers} have"
    notice = f"{said} no text layer (scanned?): nothing read there" if empty else None
    return Extracted(str(path), "pdf", pages, notice)


def _docx(path: Path) -> Extracted:
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


def extract(path: Path) -> Extracted:
    """The text of `path` (see the module guarantees)."""
    suffix = path.suffix.lower()
    try:
        size = path.stat().st_size
    except OSError as exc:
        return Extracted(str(path), "text", notice=f"the file could not be read ({exc.strerror})")
    if size > MAX_BYTES:
        return Extracted(str(path), "text", notice=f"the file is over {MAX_BYTES >> 20} MiB")
    if suffix == ".pdf":
        return _pdf(path)
    if suffix == ".docx":
        return _docx(path)
    data = path.read_bytes()
    if _binary(data):
        return Extracted(str(path), "text", notice="this is a binary file, not text")
    text = data.decode("utf-8", errors="replace")
    if suffix in HTML_SUFFIXES:
        return Extracted(str(path), "html", [Page(_html(text))])
    return Extracted(str(path), "text", [Page(text)])


__all__ = ["SUFFIXES", "Extracted", "Page", "extract"]
