"""Pages as the browser tool shows them: text lines with numbered links, from HTML or plain text.

Guarantees: scripts, styles and other non-text parts never reach the text; block elements
start new lines, headings keep a `#` mark, list items a `*`; every link with an http(s)
target becomes `【id†text†host】` with `id` counting from 0 in page order, and `links[id]` is
its absolute URL; lines are wrapped at `WIDTH` characters; the page is shown as the gpt-oss
browser shows it: `[cursor] title (url)`, the line range viewed, then `L<n>: text` lines.
"""

from __future__ import annotations

import html
import re
import textwrap
import urllib.parse
from dataclasses import dataclass, field
from html.parser import HTMLParser

WIDTH = 100
_SKIP = frozenset({"script", "style", "noscript", "svg", "template", "iframe", "head", "button"})
_BLOCK = frozenset(
    {
        "p",
        "div",
        "br",
        "li",
        "tr",
        "table",
        "section",
        "article",
        "header",
        "footer",
        "nav",
        "main",
        "aside",
        "blockquote",
        "pre",
        "ul",
        "ol",
        "dl",
        "dt",
        "dd",
        "form",
        "hr",
        "figure",
        "figcaption",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
    }
)


MAX_VIEW_CHARS = 12_000  # one view's share of the context, whatever the page's lines
MAX_TITLE_CHARS = 500


def _capped(lines: list[str], start: int) -> tuple[str, int]:
    """The lines that fit in one view (a single over-long line is cut), and the next line."""
    out: list[str] = []
    used = 0
    for n, line in enumerate(lines):
        if used + len(line) + 1 > MAX_VIEW_CHARS:
            if not out:
                out.append(line[:MAX_VIEW_CHARS])
                n += 1
            return "\n".join(out), start + n
        out.append(line)
        used += len(line) + 1
    return "\n".join(out), start + len(lines)


@dataclass
class Page:
    url: str
    title: str
    lines: list[str]
    links: dict[int, str] = field(default_factory=dict)
    truncated: bool = False

    def view(self, cursor: int, loc: int = 0, num_lines: int = -1) -> str:
        """The page as the model reads it, from line `loc`, `num_lines` lines (-1: a screenful),
        never more than `MAX_VIEW_CHARS` characters of page text."""
        total = len(self.lines)
        start = min(max(loc, 0), max(total - 1, 0))
        count = num_lines if num_lines > 0 else 50
        wanted = min(start + count, total)
        body, end = _capped([f"L{i}: {self.lines[i]}" for i in range(start, wanted)], start)
        header = (f"[{cursor}] {self.title}" + (f" ({self.url})" if self.url else ""))[
            :MAX_TITLE_CHARS
        ]
        shown = f"**viewing lines [{start} - {max(end - 1, start)}] of {max(total - 1, 0)}**"
        notes = ""
        if end < wanted or len(body) >= MAX_VIEW_CHARS:
            notes += (
                f"\n(this view stops at {MAX_VIEW_CHARS} characters; open loc={end} to read on)"
            )
        if self.truncated:
            notes += "\n(the page was longer than the browser reads; the rest was cut)"
        return f"{header}\n{shown}\n\n{body}{notes}"


class _Extractor(HTMLParser):
    def __init__(self, base: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base = base
        self.blocks: list[str] = []
        self.current: list[str] = []
        self.title = ""
        self.links: list[str] = []
        self._skip = 0
        self._in_title = False
        self._link: tuple[str, list[str]] | None = None
        self._prefix = ""

    def _flush(self) -> None:
        text = re.sub(r"\s+", " ", "".join(self.current)).strip()
        if text:
            self.blocks.append(self._prefix + text)
        self.current = []
        self._prefix = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in _SKIP:
            self._skip += 1
            return
        if tag in _BLOCK:
            self._flush()
            if tag[0] == "h" and tag[1:].isdigit():
                self._prefix = "#" * int(tag[1]) + " "
            elif tag == "li":
                self._prefix = "* "
        if tag == "a":
            href = dict(attrs).get("href") or ""
            target = urllib.parse.urljoin(self.base, href)
            if urllib.parse.urlsplit(target).scheme in ("http", "https"):
                self._link = (target, [])

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
            return
        if tag == "a" and self._link is not None:
            target, words = self._link
            self._link = None
            label = re.sub(r"\s+", " ", "".join(words)).strip()
            if label:
                host = urllib.parse.urlsplit(target).hostname or ""
                self.current.append(f"【{len(self.links)}†{label}†{host}】")
                self.links.append(target)
        if tag in _BLOCK:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self._skip:
            return
        if self._link is not None:
            self._link[1].append(data)
        else:
            self.current.append(data)


def _wrap(blocks: list[str]) -> list[str]:
    lines: list[str] = []
    for block in blocks:
        lines.extend(textwrap.wrap(block, WIDTH, break_long_words=False) or [""])
    return lines


def page_from_html(url: str, text: str, *, truncated: bool = False) -> Page:
    parser = _Extractor(url)
    parser.feed(text)
    parser.close()
    parser._flush()
    title = re.sub(r"\s+", " ", html.unescape(parser.title)).strip() or url
    links = dict(enumerate(parser.links))
    return Page(url, title, _wrap(parser.blocks), links, truncated)


def page_from_text(url: str, text: str, *, title: str = "", truncated: bool = False) -> Page:
    lines: list[str] = []
    for line in text.splitlines():  # indentation kept: code and data read as they are
        line = line.rstrip()
        lines.extend([line[i : i + WIDTH] for i in range(0, len(line), WIDTH)] or [""])
    return Page(url, title or url, lines, {}, truncated)


__all__ = ["WIDTH", "Page", "page_from_html", "page_from_text"]
