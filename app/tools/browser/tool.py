"""Harmony's built-in `browser` tools: `browser.search`, `browser.open`, `browser.find`.

Guarantees: one `Browser` per conversation keeps the pages it showed, numbered by cursor from 0,
so the model can follow links (`open` with a link id and a cursor), scroll (`open` with `loc`)
and search a page (`find`); the model reads pages as plain text in the gpt-oss browser layout;
search and open are marked as network tools, find reads only pages already fetched; an
offline conversation's browser never reaches the network (every search or open is E-OFFLINE).
"""

from __future__ import annotations

import threading
import urllib.parse
from typing import Annotated

from pydantic import Field

from app.errors import ErrorCode
from app.tools.api import Risk, Tool, ToolError, tool
from app.tools.browser.fetch import Fetcher
from app.tools.browser.page import Page, page_from_html, page_from_text
from app.tools.browser.search import SearchProvider


class Browser:
    """One conversation's browsing state: the pages shown so far, by cursor."""

    def __init__(self, fetcher: Fetcher, search: SearchProvider | None) -> None:
        self.fetcher = fetcher
        self.provider = search
        self.pages: list[Page] = []
        self._lock = threading.Lock()

    def _show(self, page: Page, loc: int = 0, num_lines: int = -1) -> str:
        with self._lock:
            self.pages.append(page)
            cursor = len(self.pages) - 1
        return page.view(cursor, loc, num_lines)

    def _page(self, cursor: int) -> Page:
        with self._lock:
            if not self.pages:
                raise ToolError("no page is open yet: search or open a URL first")
            if cursor == -1:
                return self.pages[-1]
            if not 0 <= cursor < len(self.pages):
                raise ToolError(f"there is no page with cursor {cursor} (0–{len(self.pages) - 1})")
            return self.pages[cursor]

    def search(self, query: str, topn: int = 10) -> str:
        if self.provider is None:
            raise ToolError(
                "no search provider is set up; open a URL directly, or choose a provider in the"
                " settings",
                ErrorCode.TOOL_ERROR.value,
            )
        results = self.provider.search(query, max(1, min(topn, 20)))
        lines: list[str] = []
        links: dict[int, str] = {}
        for i, r in enumerate(results):
            links[i] = r.url
            host = urllib.parse.urlsplit(r.url).hostname or r.url
            lines.append(f"* 【{i}†{r.title}†{host}】")
            if r.snippet:
                lines.append(f"  {r.snippet}")
        if not results:
            lines.append("No results.")
        title = f"Search results for “{query}” ({self.provider.name})"
        return self._show(Page("", title, lines, links))

    def open(
        self,
        id: int | str = -1,
        cursor: int = -1,
        loc: int = -1,
        num_lines: int = -1,
        view_source: bool = False,
    ) -> str:
        if isinstance(id, str) and id.strip().lstrip("-").isdigit():
            id = int(id)  # a link id written as a string
        if isinstance(id, str):
            url = id
        elif id >= 0:
            page = self._page(cursor)
            if id not in page.links:
                raise ToolError(f"page {cursor} has no link {id}")
            url = page.links[id]
        else:  # no id: scroll the page at `cursor`
            page = self._page(cursor)
            return self._show(page, max(loc, 0), num_lines)
        fetched = self.fetcher.fetch(url)
        if view_source or fetched.content_type not in ("text/html", "application/xhtml+xml"):
            page = page_from_text(fetched.url, fetched.text, truncated=fetched.truncated)
        else:
            page = page_from_html(fetched.url, fetched.text, truncated=fetched.truncated)
        return self._show(page, max(loc, 0), num_lines)

    def find(self, pattern: str, cursor: int = -1) -> str:
        page = self._page(cursor)
        needle = pattern.lower()
        lines: list[str] = []
        for n, line in enumerate(page.lines):
            if needle in line.lower():
                lines += [f"# 【{len(lines) // 2}†match at L{n}】", line]
        if not lines:
            lines = [f"No `find` results for pattern: `{pattern}`"]
        title = f"Find results for text: `{pattern}` in `{page.title}`"
        return self._show(Page(page.url, title, lines, {}))


def browser_tools(browser: Browser) -> list[Tool]:
    """The three browser tools bound to one conversation's `Browser`."""

    @tool(name="search", namespace="browser", risk=Risk.NETWORK, text_reply=True)
    def search(
        query: Annotated[str, Field(max_length=500)],
        topn: Annotated[int, Field(ge=1, le=20)] = 10,
        source: Annotated[str, Field(max_length=100)] | None = None,
    ) -> str:
        """Searches for information related to `query` and displays `topn` results."""
        return browser.search(query, topn)

    @tool(name="open", namespace="browser", risk=Risk.NETWORK, text_reply=True)
    def open_(
        id: int | Annotated[str, Field(max_length=2048)] = -1,
        cursor: int = -1,
        loc: int = -1,
        num_lines: Annotated[int, Field(le=500)] = -1,
        view_source: bool = False,
        source: Annotated[str, Field(max_length=100)] | None = None,
    ) -> str:
        """Opens the link `id` from the page indicated by `cursor`, or a URL, at line `loc`."""
        return browser.open(id, cursor, loc, num_lines, view_source)

    @tool(name="find", namespace="browser", risk=Risk.READ_ONLY, text_reply=True)
    def find(pattern: Annotated[str, Field(max_length=200)], cursor: int = -1) -> str:
        """Finds exact matches of `pattern` in the current page, or the page given by `cursor`."""
        return browser.find(pattern, cursor)

    return [search, open_, find]


__all__ = ["Browser", "browser_tools"]
