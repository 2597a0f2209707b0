"""Fetching a web page for the browser tool: HTTP(S) only, bounded in size, time and redirects.

Guarantees:
- an offline conversation's fetcher never opens a connection or looks up a name: every fetch
  is an `E-OFFLINE` tool error before any network call;
- only `http` and `https` URLs; by default addresses on this machine or the local network
  (loopback, private, link-local) are refused, so a model cannot be steered into local
  services; `allow_private=True` lifts that (the tests' loopback server, an intranet);
- at most `max_bytes` of body are read (the rest is dropped and the page says it was cut),
  the whole fetch ends within `timeout_s`, at most `max_redirects` redirects are followed,
  each redirect target checked like the first URL;
- every failure is a `ToolError` with `E-NETWORK` (or `E-OFFLINE`) and a sentence the model
  and the user can read.
"""

from __future__ import annotations

import ipaddress
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from email.message import Message as HeaderMessage
from typing import Any

from app.errors import ErrorCode
from app.tools.api import ToolError

USER_AGENT = "HarmonyDesk/0.1 (+browser tool)"


@dataclass(frozen=True)
class FetchLimits:
    max_bytes: int = 2 * 1024 * 1024
    timeout_s: float = 15.0
    max_redirects: int = 5


@dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    content_type: str  # e.g. "text/html"
    text: str
    truncated: bool = False


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # redirects are followed by `Fetcher` itself, each target checked


def _network_error(message: str) -> ToolError:
    return ToolError(message, ErrorCode.NETWORK.value)


class Fetcher:
    """Fetches pages for one conversation (see the module guarantees)."""

    def __init__(
        self,
        *,
        offline: bool = False,
        allow_private: bool = False,
        limits: FetchLimits | None = None,
    ) -> None:
        self.offline = offline
        self.allow_private = allow_private
        self.limits = limits or FetchLimits()
        self._opener = urllib.request.build_opener(_NoRedirect())

    def fetch(self, url: str) -> Fetched:
        if self.offline:
            raise ToolError(
                "this conversation is offline: the browser may not use the network",
                ErrorCode.OFFLINE.value,
            )
        deadline = time.monotonic() + self.limits.timeout_s
        for _ in range(self.limits.max_redirects + 1):
            self._check_url(url)
            response = self._open(url, deadline)
            if response.status in (301, 302, 303, 307, 308):
                location = response.headers.get("Location")
                response.close()
                if not location:
                    raise _network_error(f"{url} redirected without saying where")
                url = urllib.parse.urljoin(url, location)
                continue
            with response:
                return self._read(url, response, deadline)
        raise _network_error(f"more than {self.limits.max_redirects} redirects from {url}")

    def _check_url(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise _network_error(f"the browser opens http and https addresses only, not {url!r}")
        if self.allow_private:
            return
        try:
            infos = socket.getaddrinfo(parts.hostname, parts.port or 443, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise _network_error(f"cannot find the host {parts.hostname}: {exc}") from exc
        for info in infos:
            address = ipaddress.ip_address(info[4][0])
            if address.is_private or address.is_loopback or address.is_link_local:
                raise _network_error(
                    f"{parts.hostname} is on this machine or the local network ({address});"
                    " the browser does not open such addresses unless the settings allow it"
                )

    def _open(self, url: str, deadline: float) -> Any:
        request = urllib.request.Request(
            url, headers={"User-Agent": USER_AGENT, "Accept": "text/html,text/plain,*/*;q=0.5"}
        )
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _network_error(f"{url} did not answer within {self.limits.timeout_s:g} s")
        try:
            return self._opener.open(request, timeout=remaining)
        except urllib.error.HTTPError as exc:
            if exc.code in (301, 302, 303, 307, 308):
                return exc
            exc.close()
            raise _network_error(f"{url} answered {exc.code} {exc.reason}") from exc
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise _network_error(f"cannot open {url}: {reason}") from exc

    def _read(self, url: str, response: Any, deadline: float) -> Fetched:
        headers: HeaderMessage = response.headers
        content_type = headers.get_content_type()
        if not (content_type.startswith("text/") or content_type in _TEXTUAL):
            raise _network_error(f"{url} is {content_type}, which the browser cannot show as text")
        chunks: list[bytes] = []
        size = 0
        truncated = False
        try:
            while True:
                if time.monotonic() > deadline:
                    raise _network_error(f"{url} did not finish within {self.limits.timeout_s:g} s")
                chunk = response.read(64 * 1024)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > self.limits.max_bytes:
                    truncated = True
                    break
        except (OSError, TimeoutError) as exc:
            raise _network_error(f"reading {url} failed: {exc}") from exc
        body = b"".join(chunks)[: self.limits.max_bytes]
        charset = headers.get_content_charset() or "utf-8"
        try:
            text = body.decode(charset, errors="replace")
        except LookupError:
            text = body.decode("utf-8", errors="replace")
        return Fetched(url, content_type, text, truncated)


_TEXTUAL = frozenset({"application/json", "application/xhtml+xml", "application/xml"})

__all__ = ["USER_AGENT", "FetchLimits", "Fetched", "Fetcher"]
