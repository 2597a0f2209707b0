"""Fetching a web page for the browser tool: HTTP(S) only, bounded in size, time and redirects.

Guarantees:
- an offline conversation's fetcher never opens a connection or looks up a name: every fetch
  is an `E-OFFLINE` tool error before any network call;
- only `http` and `https` URLs; each host name is resolved once, every address it resolves to
  is checked, and the connection goes to the checked address (the name is kept for the Host
  header and TLS), so a name that resolves again to another address cannot steer the browser
  (DNS rebinding); by default only global addresses are opened — loopback, private,
  link-local, shared (100.64.0.0/10), reserved and documentation ranges are refused, and so
  are IPv6 forms that embed such an IPv4 address (mapped, 6to4, Teredo, NAT64);
  `allow_private=True` lifts that (the tests' loopback server, an intranet);
- the whole fetch, redirects, headers and body included, ends within `timeout_s`: a server
  that trickles bytes is cut at the deadline (the socket is shut from a timer); a pending
  fetch never keeps the process from exiting (its socket is shut at interpreter exit);
- at most `max_bytes` of body are read (the rest is dropped and the page says it was cut), at
  most `max_redirects` redirects are followed, each target checked like the first URL;
- a charset the browser cannot decode is a clear tool error, never a guess;
- every failure is a `ToolError` with `E-NETWORK` (or `E-OFFLINE`) and a sentence the model
  and the user can read.
"""

from __future__ import annotations

import contextlib
import http.client
import importlib
import ipaddress
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
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


def _network_error(message: str) -> ToolError:
    return ToolError(message, ErrorCode.NETWORK.value)


Resolver = Callable[[str, int], list[str]]

_ACTIVE: set[socket.socket] = set()
_ACTIVE_LOCK = threading.Lock()
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _shut_all() -> None:
    """At interpreter exit: every pending fetch fails at once instead of holding the exit."""
    with _ACTIVE_LOCK:
        for sock in list(_ACTIVE):
            _shut(sock)


# Exit hooks run in reverse order of registration: the pool module registers its join first
# (on import), so this one runs before it and the pool's threads are free to end.
importlib.import_module("concurrent.futures.thread")
threading._register_atexit(_shut_all)  # type: ignore[attr-defined]


def system_resolver(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to, through the system's resolver."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """True only for a global address, looking through IPv6 forms that embed an IPv4 one."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = [address.ipv4_mapped, address.sixtofour]
        if address.teredo is not None:
            embedded += list(address.teredo)
        if address in _NAT64:
            embedded.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        if any(e is not None and not is_public(e) for e in embedded):
            return False
    return address.is_global and not address.is_multicast


class _Pinned:
    """Connects to the checked address; the name stays for the Host header and TLS."""

    address: str
    deadline: float
    timer: threading.Timer

    def _pinned_socket(self, port: int, timeout: float | None) -> socket.socket:
        sock = socket.create_connection((self.address, port), timeout)
        with _ACTIVE_LOCK:
            _ACTIVE.add(sock)
        return sock


class _HTTP(_Pinned, http.client.HTTPConnection):
    def connect(self) -> None:
        self.sock = self._pinned_socket(self.port, self.timeout)


class _HTTPS(_Pinned, http.client.HTTPSConnection):
    def connect(self) -> None:
        raw = self._pinned_socket(self.port, self.timeout)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)  # type: ignore[attr-defined]
        with _ACTIVE_LOCK:
            _ACTIVE.add(self.sock)


class Fetcher:
    """Fetches pages for one conversation (see the module guarantees)."""

    def __init__(
        self,
        *,
        offline: bool = False,
        allow_private: bool = False,
        limits: FetchLimits | None = None,
        resolve: Resolver = system_resolver,
    ) -> None:
        self.offline = offline
        self.allow_private = allow_private
        self.limits = limits or FetchLimits()
        self.resolve = resolve

    def fetch(self, url: str) -> Fetched:
        if self.offline:
            raise ToolError(
                "this conversation is offline: the browser may not use the network",
                ErrorCode.OFFLINE.value,
            )
        deadline = time.monotonic() + self.limits.timeout_s
        for _ in range(self.limits.max_redirects + 1):
            conn, response = self._open(url, deadline)
            try:
                if response.status in (301, 302, 303, 307, 308):
                    location = response.headers.get("Location")
                    if not location:
                        raise _network_error(f"{url} redirected without saying where")
                    url = urllib.parse.urljoin(url, location)
                    continue
                if response.status >= 400:
                    raise _network_error(f"{url} answered {response.status} {response.reason}")
                return self._read(url, response, deadline)
            finally:
                self._close(conn)
        raise _network_error(f"more than {self.limits.max_redirects} redirects from {url}")

    def _address(self, host: str, port: int) -> str:
        """The one address this fetch connects to, after checking every address of `host`."""
        try:
            found = [ipaddress.ip_address(a.split("%")[0]) for a in self.resolve(host, port)]
        except (OSError, ValueError) as exc:
            raise _network_error(f"cannot find the host {host}: {exc}") from exc
        if not found:
            raise _network_error(f"cannot find the host {host}: no address")
        for address in found if not self.allow_private else ():
            if not is_public(address):
                raise _network_error(
                    f"{host} is on this machine or the local network, or in a range that is"
                    f" not public ({address});"
                    " the browser does not open such addresses unless the settings allow it"
                )
        return str(found[0])

    def _open(self, url: str, deadline: float) -> tuple[_Pinned, Any]:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise _network_error(f"the browser opens http and https addresses only, not {url!r}")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:
            raise _network_error(f"{url!r} has a bad port: {exc}") from exc
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _network_error(f"{url} did not answer within {self.limits.timeout_s:g} s")
        kind = _HTTPS if parts.scheme == "https" else _HTTP
        conn = kind(parts.hostname, port, timeout=remaining)
        conn.address, conn.deadline = self._address(parts.hostname, port), deadline
        timer = threading.Timer(remaining, self._expire, args=(conn,))
        timer.daemon = True
        timer.start()
        conn.timer = timer
        path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
        headers = {"User-Agent": USER_AGENT, "Accept": "text/html,text/plain,*/*;q=0.5"}
        try:
            conn.request("GET", path, headers=headers)
            return conn, conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            self._close(conn)
            if time.monotonic() >= deadline:
                raise _network_error(
                    f"{url} did not answer within {self.limits.timeout_s:g} s"
                ) from exc
            raise _network_error(f"cannot open {url}: {exc}") from exc

    @staticmethod
    def _expire(conn: Any) -> None:
        if conn.sock is not None:
            _shut(conn.sock)

    @staticmethod
    def _close(conn: Any) -> None:
        conn.timer.cancel()
        sock = conn.sock
        with _ACTIVE_LOCK:
            _ACTIVE.discard(sock)
        conn.close()

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
                chunk = response.read1(64 * 1024)
                if time.monotonic() > deadline:
                    raise _network_error(f"{url} did not finish within {self.limits.timeout_s:g} s")
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > self.limits.max_bytes:
                    truncated = True
                    break
        except (OSError, http.client.HTTPException) as exc:
            if time.monotonic() >= deadline:
                raise _network_error(
                    f"{url} did not finish within {self.limits.timeout_s:g} s"
                ) from exc
            raise _network_error(f"reading {url} failed: {exc}") from exc
        body = b"".join(chunks)[: self.limits.max_bytes]
        charset = headers.get_content_charset() or "utf-8"
        try:
            text = body.decode(charset, errors="replace")
        except LookupError as exc:
            raise _network_error(
                f"{url} is written in the charset {charset!r}, which the browser cannot read"
            ) from exc
        return Fetched(url, content_type, text, truncated)


_TEXTUAL = frozenset({"application/json", "application/xhtml+xml", "application/xml"})

__all__ = ["USER_AGENT", "FetchLimits", "Fetched", "Fetcher"]
