"""An address another party asks a person to open (an MCP server's URL-mode request for
input), read once into the form that is both shown and opened.

Guarantees: `read_link` accepts https, or http to a loopback host (127.0.0.0/8, ::1,
localhost), and nothing else; it refuses, with a sentence, an address with whitespace, a
control character or a backslash (where browsers and parsers disagree), a host that is no
plain DNS name or IP literal (percent-encoded, numeric shorthand like `0x7f.1`, empty labels),
a bad port, and one longer than `MAX_URL` once canonical. The `Link` it gives holds the
canonical address — scheme and host in lower case, the host in IDNA (punycode) ASCII, the
default port left out, user name and password dropped, everything else percent-encoded to
ASCII — which is what the person is shown and, unchanged, what is opened: there is no second
parse. `Link.site` is the host set apart, as a sentence-part: the host alone, or, when the
address tries to look like another — a user name before `@` (`https://accounts.google.com@
evil.example/`), a known-looking domain in front of the real one (`accounts.google.com.evil.
example`), a non-ASCII (lookalike) host — the real site and what the link seems to say:
"evil.example (the link says accounts.google.com…)".
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from app.domain.inert import LIMIT, inert

MAX_URL = LIMIT  # characters of a canonical address: a longer one is refused, never cut
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_LOOKS_LIKE_A_DOMAIN = re.compile(r"\.(?:com|net|org|edu|gov|mil|int|io|co|app|dev|[a-z]{2})$")
_SECOND_LEVEL = {"co", "com", "net", "org", "gov", "edu", "ac", "or", "ne", "go"}  # co.uk…
_PATH_SAFE = "/:@!$&'()*+,;=-._~%"
_QUERY_SAFE = _PATH_SAFE + "?"
_NOT_ALLOWED = re.compile(r"[\x00-\x20\x7f-\x9f\\]")
_CLAIM = 60  # characters of what the link seems to say, in the site's sentence-part


@dataclass(frozen=True)
class Link:
    """An address read by `read_link` (see the module guarantees)."""

    url: str  # canonical: shown, and opened as it is
    host: str  # the host as DNS sees it (IDNA ASCII, lower case; an IP literal)
    registered: str  # the name its owner registered (the last labels), or the host
    claimed: str = ""  # what the address seems to say instead ("": nothing misleads)

    @property
    def site(self) -> str:
        """The host set apart: "evil.example (the link says accounts.google.com…)"."""
        if not self.claimed:
            return self.host
        return f"{self.registered} (the link says {inert(self.claimed, _CLAIM)}…)"


def loopback(host: str) -> bool:
    """Whether `host` (a name, an IP literal, bracketed or not) is this computer."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _registered(labels: list[str]) -> str:
    """The registered name: the last two labels, three under a country's second level
    (`example.co.uk`); without the public-suffix list, a fair reading."""
    keep = 3 if len(labels) > 2 and len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVEL else 2
    return ".".join(labels[-keep:])


def _ascii_host(raw: str) -> str | None:
    """The host in IDNA ASCII, lower case (an IPv6 literal in brackets); None when it is no
    plain name or IP literal."""
    try:
        address = ipaddress.ip_address(raw)
    except ValueError:
        pass
    else:
        return f"[{address.compressed}]" if address.version == 6 else address.compressed
    try:
        host = raw.rstrip(".").encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None
    labels = host.split(".")
    if not all(_LABEL.match(label) for label in labels) or labels[-1].isdigit():
        return None  # percent-encoded, empty labels, numeric shorthand like 0x7f.1
    return host


def _unicode(host: str) -> str:
    try:
        return host.encode("ascii").decode("idna")
    except UnicodeError:
        return host


def _claimed(host: str, userinfo: str) -> tuple[str, str]:
    """(the registered name, what the address seems to say instead, "" when nothing)."""
    if host.startswith("[") or re.fullmatch(r"[\d.]+", host):
        return host, userinfo
    registered = _registered(host.split("."))
    if userinfo:
        return registered, userinfo
    if "xn--" in host:
        return registered, _unicode(host)  # a lookalike: its Unicode form
    front = host[: -len(registered)].rstrip(".")
    if "." in front and _LOOKS_LIKE_A_DOMAIN.search(front):
        return registered, front  # accounts.google.com.evil.example
    return host, ""


def read_link(raw: str) -> Link | str:
    """`raw` as a `Link`, or the sentence that says why it is not opened (see the module
    guarantees)."""
    if _NOT_ALLOWED.search(raw):
        return "The address holds spaces, control characters or a backslash."
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError:
        return "The address cannot be read."
    scheme, raw_host = parts.scheme.lower(), parts.hostname or ""
    only = "Only an https address (or http to this computer) is opened."
    if scheme not in ("https", "http"):
        return only
    host = _ascii_host(raw_host) if raw_host else None
    if host is None:
        return "The address has no host that can be shown as it is."
    if scheme == "http" and not loopback(host):
        return only
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    registered, claimed = _claimed(host, userinfo)
    default = {"https": 443, "http": 80}[scheme]
    where = host + (f":{port}" if port is not None and port != default else "")
    url = f"{scheme}://{where}{quote(parts.path or '/', safe=_PATH_SAFE)}"
    url += f"?{quote(parts.query, safe=_QUERY_SAFE)}" if parts.query else ""
    url += f"#{quote(parts.fragment, safe=_QUERY_SAFE)}" if parts.fragment else ""
    if len(url) > MAX_URL:
        return f"The address is {len(url):,} characters; at most {MAX_URL:,} are shown."
    return Link(url, host, registered, claimed)


__all__ = ["MAX_URL", "Link", "loopback", "read_link"]
