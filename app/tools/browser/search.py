"""Search providers for the browser tool: one small interface, two providers.

- `SearxngSearch`: a SearXNG instance's JSON API (`/search?q=…&format=json`), for people who
  run their own or use a public one with the JSON format enabled.
- `DuckDuckGoSearch`: DuckDuckGo's HTML endpoint, which needs no key and no account.

Guarantees: every provider fetches through the conversation's `Fetcher` (so offline, size,
time and address rules hold for searches too); results are at most `topn`, each with a title
and an absolute http(s) URL; a reply the provider cannot read is an `E-NETWORK` tool error
that says which provider and why, never an empty list passed off as "no results".
"""

from __future__ import annotations

import json
import re
import urllib.parse
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Protocol

from app.errors import ErrorCode
from app.tools.api import ToolError
from app.tools.browser.fetch import Fetcher

DUCKDUCKGO_URL = "https://html.duckduckgo.com/html/"


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str
    snippet: str = ""


class SearchProvider(Protocol):
    name: str

    def search(self, query: str, topn: int) -> list[SearchResult]: ...


def _usable(url: str) -> bool:
    return urllib.parse.urlsplit(url).scheme in ("http", "https")


class SearxngSearch:
    """A SearXNG instance (its JSON output must be enabled in its settings)."""

    name = "searxng"

    def __init__(self, base_url: str, fetcher: Fetcher) -> None:
        self.base_url = base_url.rstrip("/")
        self.fetcher = fetcher

    def search(self, query: str, topn: int) -> list[SearchResult]:
        url = f"{self.base_url}/search?" + urllib.parse.urlencode({"q": query, "format": "json"})
        page = self.fetcher.fetch(url)
        try:
            data = json.loads(page.text)
            items = data["results"]
            results = [
                SearchResult(
                    str(r.get("title") or r["url"]), str(r["url"]), str(r.get("content") or "")
                )
                for r in items
                if isinstance(r, dict) and _usable(str(r.get("url", "")))
            ]
        except (ValueError, KeyError, TypeError) as exc:
            raise ToolError(
                f"the SearXNG instance at {self.base_url} did not answer in its JSON format"
                f" ({type(exc).__name__}: {exc}); is `json` enabled in its search formats?",
                ErrorCode.NETWORK.value,
            ) from exc
        return results[:topn]


class _DuckDuckGoParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.results: list[list[str]] = []  # [title, url, snippet]
        self._field: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        classes = (values.get("class") or "").split()
        if tag == "a" and "result__a" in classes:
            self.results.append(["", _ddg_target(values.get("href") or ""), ""])
            self._field = "title"
        elif "result__snippet" in classes and self.results:
            self._field = "snippet"

    def handle_endtag(self, tag: str) -> None:
        if tag in ("a", "td", "div"):
            self._field = None

    def handle_data(self, data: str) -> None:
        if self._field == "title":
            self.results[-1][0] += data
        elif self._field == "snippet":
            self.results[-1][2] += data


def _ddg_target(href: str) -> str:
    """The real URL behind a DuckDuckGo result link (`//duckduckgo.com/l/?uddg=…`)."""
    parts = urllib.parse.urlsplit(href)
    wrapped = urllib.parse.parse_qs(parts.query).get("uddg")
    return wrapped[0] if wrapped else urllib.parse.urljoin("https:", href)


class DuckDuckGoSearch:
    """DuckDuckGo's HTML results page."""

    name = "duckduckgo"

    def __init__(
        self, fetcher: Fetcher, base_url: str = "https://html.duckduckgo.com/html/"
    ) -> None:
        self.base_url = base_url
        self.fetcher = fetcher

    def search(self, query: str, topn: int) -> list[SearchResult]:
        url = self.base_url + "?" + urllib.parse.urlencode({"q": query})
        page = self.fetcher.fetch(url)
        parser = _DuckDuckGoParser()
        parser.feed(page.text)
        parser.close()
        results = [
            SearchResult(re.sub(r"\s+", " ", t).strip(), u, re.sub(r"\s+", " ", s).strip())
            for t, u, s in parser.results
            if _usable(u)
        ]
        if not results and "no-results" not in page.text:  # DuckDuckGo's "No results." marker
            raise ToolError(
                "DuckDuckGo answered with a page the app cannot read as search results",
                ErrorCode.NETWORK.value,
            )
        return results[:topn]


__all__ = ["DuckDuckGoSearch", "SearchProvider", "SearchResult", "SearxngSearch"]
