"""One HTTP(S) GET for a download: redirects followed, failures said in words.

Guarantees: only http:// and https:// are fetched; https verifies certificates against the
system's authorities plus certifi's where installed (bundles); redirects are followed up to
`MAX_REDIRECTS`, and a loop is named as a loop; a range request carries `If-Range` with the
validator the server gave before, so a changed file comes back whole (200) rather than as a
range of the new one; every foreign error is mapped to a `DownloadError` here: TLS failures
(`TLS`), refused / reset / timed-out connections and HTTP 5xx or 429 (`NETWORK`, retried by
the caller), 404 / 410 (`NOT_FOUND`), other refusals (`HTTP`).
"""

from __future__ import annotations

import http.client
import ssl
from urllib.parse import urljoin, urlsplit

from app import __version__
from app.errors import DownloadError, DownloadProblem

MAX_REDIRECTS = 10
Opened = tuple[http.client.HTTPResponse, http.client.HTTPConnection]


def ssl_context() -> ssl.SSLContext:
    """The system's certificate authorities, plus certifi's where it is installed (bundles)."""
    context = ssl.create_default_context()
    try:
        import certifi

        context.load_verify_locations(certifi.where())
    except (ImportError, OSError):
        pass
    return context


def open_get(url: str, *, start: int = 0, validator: str = "", timeout_s: float = 30.0) -> Opened:
    """The response to GET `url` (from byte `start`), after any redirects; close both."""
    here, seen = url, {url}
    for _ in range(MAX_REDIRECTS + 1):
        conn = _connection(here, timeout_s)
        headers = {"User-Agent": f"harmony-desk/{__version__}", "Accept-Encoding": "identity"}
        if start:
            headers["Range"] = f"bytes={start}-"
            if validator:
                headers["If-Range"] = validator
        parts = urlsplit(here)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise network_error(exc, url, parts.hostname or here) from exc
        if response.status not in (301, 302, 303, 307, 308):
            return response, conn
        location = response.getheader("Location")
        response.close()
        conn.close()
        if not location:
            raise DownloadError(
                DownloadProblem.HTTP,
                here,
                f"the server redirected (HTTP {response.status}) without saying where",
            )
        here = urljoin(here, location)
        if here in seen:
            raise DownloadError(
                DownloadProblem.REDIRECTS,
                url,
                f"the server's redirects go round in a loop (back to {here})",
            )
        seen.add(here)
    raise DownloadError(DownloadProblem.REDIRECTS, url, f"more than {MAX_REDIRECTS} redirects")


def _connection(url: str, timeout_s: float) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DownloadError(
            DownloadProblem.HTTP, url, "only http:// and https:// addresses can be downloaded"
        )
    if parts.scheme == "https":
        return http.client.HTTPSConnection(
            parts.hostname, parts.port, timeout=timeout_s, context=ssl_context()
        )
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout_s)


def network_error(exc: Exception, url: str, host: str = "") -> DownloadError:
    """`exc` (raised while talking to the server of `url`) as a `DownloadError`."""
    if isinstance(exc, ssl.SSLError):
        why = getattr(exc, "verify_message", None) or exc.reason or str(exc)
        return DownloadError(
            DownloadProblem.TLS,
            url,
            f"the secure connection to {host or urlsplit(url).hostname} failed ({why});"
            " nothing was downloaded from it",
        )
    return DownloadError(
        DownloadProblem.NETWORK, url, f"{network_words(exc)}; the part fetched so far is kept"
    )


def network_words(exc: BaseException) -> str:
    """What went wrong on the network, in words ("the network failed (…)"), for an asker that
    fetched no part of a file (a search, a listing)."""
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return f"the network failed ({why or type(exc).__name__})"


def status_error(url: str, status: int, reason: str) -> DownloadError:
    """An HTTP status that is not a file as a `DownloadError`."""
    if status in (404, 410):
        return DownloadError(
            DownloadProblem.NOT_FOUND, url, f"the server has no file there (HTTP {status})"
        )
    if status in (401, 403):
        return DownloadError(
            DownloadProblem.HTTP,
            url,
            f"the server refused access (HTTP {status} {reason}); the model's page may ask"
            " you to sign in or accept its licence first",
        )
    retry = status >= 500 or status == 429
    problem = DownloadProblem.NETWORK if retry else DownloadProblem.HTTP
    return DownloadError(problem, url, f"the server answered HTTP {status} {reason}")
