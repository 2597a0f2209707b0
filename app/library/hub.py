"""The Hugging Face hub's public API, read for GGUF models: search, and a repository's files.

Guarantees: the hub is `$HARMONY_DESK_HUB` (tests point it at a server on loopback), else
https://huggingface.co; nothing is asked of it but what a caller asks for (the window asks
only when the user searches or opens a repository); every answer is bounded (`MAX_ANSWER`
bytes, `MAX_ENTRIES` entries) and checked field by field — an entry that is not what the API
documents is left out, an answer with nothing readable, an unreachable hub, an HTTP refusal or
a body that is not JSON is a `LibraryError` with one sentence, never another exception. A
repository's GGUF files are listed one per model: the parts of a split model
(`NAME-00001-of-0000N.gguf`) are one file, its size their total, with a problem when a part
is missing; image projectors (`mmproj…`) are left out; every part must carry the sha256 the
hub publishes for it (its LFS object id), which its download is checked against. Pure: no Qt.
"""

from __future__ import annotations

import http.client
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, urlsplit

from app.errors import DownloadError, DownloadProblem, HarmonyDeskError
from app.gguf.info import SPLIT_NAME
from app.library.cards import quant_of_name, strip_quant
from app.library.download import DownloadRequest
from app.library.folders import LibraryError
from app.library.http_get import network_words, open_get

HUB_VARIABLE = "HARMONY_DESK_HUB"
DEFAULT_HUB = "https://huggingface.co"
MAX_ANSWER = 8 << 20  # bytes of JSON one answer may have
MAX_ENTRIES = 5000  # a repository's files read from one answer
MAX_QUERY = 200
MAX_SIZE = 1 << 50  # a file size beyond this is not a model file
REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
SHA256 = re.compile(r"[0-9a-f]{64}")


def hub_url() -> str:
    """The hub's address: `$HARMONY_DESK_HUB`, else huggingface.co (no trailing slash)."""
    url = (os.environ.get(HUB_VARIABLE) or DEFAULT_HUB).strip().rstrip("/")
    return url if urlsplit(url).scheme in ("http", "https") else DEFAULT_HUB


@dataclass(frozen=True)
class HubRepo:
    """A repository the search found."""

    id: str
    downloads: int = 0
    likes: int = 0
    modified: str = ""  # the day of its last change, YYYY-MM-DD
    gated: bool = False  # the hub asks the user to accept terms before a download

    @property
    def owner(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.id.split("/", 1)[1]


@dataclass(frozen=True)
class HubPart:
    path: str  # inside the repository
    size: int
    sha256: str


@dataclass(frozen=True)
class HubFile:
    """One model in a repository: a GGUF file, or the parts of a split one."""

    repo: str
    name: str  # the (first) file's path in the repository, without its split suffix
    quantization: str
    parts: tuple[HubPart, ...]
    problem: str = ""  # why it cannot be downloaded; empty when it can

    @property
    def size(self) -> int:
        return sum(p.size for p in self.parts)

    # what the memory estimate reads of a model (`app.engine.local.memory.Sized`): the file's
    # bytes are its weights; the cache and vocabulary are unknown before its header is read
    @property
    def weights_bytes(self) -> int:
        return self.size

    @property
    def kv_bytes_per_token(self) -> int:
        return 0

    @property
    def vocab_size(self) -> int:
        return 0

    @property
    def title(self) -> str:
        return strip_quant(PurePosixPath(self.name).name)

    def requests(self, dest: Path, hub: str | None = None) -> list[DownloadRequest]:
        """One checked download per part, into `dest` (and the file's folder in the
        repository under it, so that two quantisations of one name never collide)."""
        base = hub or hub_url()
        return [
            DownloadRequest(
                file_url(base, self.repo, p.path),
                dest.joinpath(*PurePosixPath(p.path).parent.parts),
                sha256=p.sha256,
                size=p.size,
            )
            for p in self.parts
        ]


def file_url(hub: str, repo: str, path: str) -> str:
    """Where the hub serves a file of a repository (its main branch)."""
    return f"{hub}/{repo}/resolve/main/{quote(path, safe='/')}"


def search(query: str, *, hub: str | None = None, limit: int = 30) -> list[HubRepo]:
    """The GGUF repositories matching `query`, most downloaded first (an empty query: the
    most downloaded of all)."""
    query = " ".join(query.split())[:MAX_QUERY]
    base = hub or hub_url()
    url = (
        f"{base}/api/models?search={quote(query)}&filter=gguf&sort=downloads"
        f"&limit={max(1, min(limit, 100))}"
    )
    answer = _get_json(url, base, "search for models")
    if not isinstance(answer, list):
        raise LibraryError(f"The model hub at {_host(base)} answered the search with no list.")
    repos = [r for r in (_repo(item) for item in answer[: max(limit, 1)]) if r is not None]
    if answer and not repos:
        raise LibraryError(
            f"The model hub at {_host(base)} answered the search, but with no model this app"
            " can read."
        )
    return repos


def files(repo: str, *, hub: str | None = None) -> list[HubFile]:
    """The GGUF models in `repo`, smallest first."""
    if not REPO_ID.fullmatch(repo):
        raise LibraryError(f"“{repo[:100]}” is not a model repository's name (owner/name).")
    base = hub or hub_url()
    answer = _get_json(
        f"{base}/api/models/{repo}/tree/main?recursive=true", base, f"list the files of {repo}"
    )
    if not isinstance(answer, list):
        raise LibraryError(f"The model hub's list of the files of {repo} is not a list.")
    parts = [p for p in (_part(item) for item in answer[:MAX_ENTRIES]) if p is not None]
    return sorted(_models(repo, parts), key=lambda f: (f.problem != "", f.size, f.name))


# --- reading the answers -----------------------------------------------------------------


def _get_json(url: str, base: str, doing: str) -> Any:
    try:
        response, conn = open_get(url, timeout_s=20.0)
    except DownloadError as exc:
        cause, network = exc.__cause__, exc.problem is DownloadProblem.NETWORK
        why = network_words(cause) if network and cause is not None else exc.reason
        raise LibraryError(  # a search keeps no part of a file: not said
            f"Could not reach the model hub at {_host(base)} to {doing}: {why}."
            " Check the internet connection and try again.",
            exc.details or url,
        ) from exc
    try:
        if response.status != 200:
            raise _refusal(response.status, response.reason, base, doing)
        body = response.read(MAX_ANSWER + 1)
    except (OSError, http.client.HTTPException) as exc:
        raise LibraryError(
            f"The connection to the model hub at {_host(base)} broke while it answered; try again.",
            str(exc),
        ) from exc
    finally:
        response.close()
        conn.close()
    if len(body) > MAX_ANSWER:
        raise LibraryError(
            f"The model hub at {_host(base)} answered with more than {MAX_ANSWER >> 20} MiB;"
            " that is not an answer this app reads."
        )
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise LibraryError(
            f"The model hub at {_host(base)} did not answer in JSON (asked to {doing}).",
            body[:200].decode("utf-8", "replace"),
        ) from exc


def _refusal(status: int, reason: str, base: str, doing: str) -> HarmonyDeskError:
    host = _host(base)
    if status == 404:
        return LibraryError(f"The model hub at {host} has no such model (HTTP 404).")
    if status in (401, 403):
        return LibraryError(
            f"The model hub at {host} refused to {doing} (HTTP {status}): the model may be"
            " private or ask you to accept its terms on its page."
        )
    if status == 429:
        return LibraryError(f"The model hub at {host} asks to slow down; try again in a minute.")
    return LibraryError(f"The model hub at {host} could not {doing} (HTTP {status} {reason}).")


def _host(base: str) -> str:
    return urlsplit(base).netloc or base


def _int(value: Any) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SIZE
    return value if ok else 0


def _repo(item: Any) -> HubRepo | None:
    if not isinstance(item, dict):
        return None
    ident = item.get("id") or item.get("modelId")
    if not isinstance(ident, str) or not REPO_ID.fullmatch(ident):
        return None
    modified = item.get("lastModified") or ""
    day = (
        modified[:10]
        if isinstance(modified, str) and re.match(r"\d{4}-\d\d-\d\d", modified)
        else ""
    )
    gated = item.get("gated")
    return HubRepo(
        ident, _int(item.get("downloads")), _int(item.get("likes")), day, gated not in (None, False)
    )


def _part(item: Any) -> HubPart | None:
    """A GGUF file of the tree (its checksum "" when the hub gives none)."""
    if not isinstance(item, dict) or item.get("type", "file") != "file":
        return None
    path, size, lfs = item.get("path"), item.get("size"), item.get("lfs")
    if not isinstance(path, str) or not path.lower().endswith(".gguf") or len(path) > 400:
        return None
    pure = PurePosixPath(path)
    if path.startswith("/") or "\\" in path or any(c in ("", ".", "..") for c in pure.parts):
        return None
    if any(ord(c) < 32 for c in path) or pure.name.lower().startswith("mmproj"):
        return None
    sha = ""
    if isinstance(lfs, dict):
        oid = lfs.get("oid") or lfs.get("sha256")
        sha = oid.lower() if isinstance(oid, str) and SHA256.fullmatch(oid.lower()) else ""
        size = lfs.get("size", size)
    if not isinstance(size, int) or isinstance(size, bool) or not 0 < size <= MAX_SIZE:
        return None
    return HubPart(path, size, sha)


def _models(repo: str, parts: list[HubPart]) -> list[HubFile]:
    singles: list[HubFile] = []
    split: dict[tuple[str, str, int], dict[int, HubPart]] = {}
    for p in parts:
        pure = PurePosixPath(p.path)
        m = SPLIT_NAME.match(pure.name)
        if m is None:
            singles.append(_file(repo, p.path, (p,), ""))
            continue
        split.setdefault((str(pure.parent), m["stem"], int(m["count"])), {})[int(m["no"])] = p
    for (folder, stem, count), found in split.items():
        missing = [n for n in range(1, count + 1) if n not in found]
        problem = ""
        if missing or count < 1 or len(found) != count:
            problem = f"{len(missing) or 'some'} of its {count} parts are not in the repository"
        ordered = tuple(found[n] for n in sorted(found))
        name = str(PurePosixPath(folder) / f"{stem}.gguf")
        singles.append(_file(repo, name, ordered, problem))
    return singles


def _file(repo: str, name: str, parts: tuple[HubPart, ...], problem: str) -> HubFile:
    if not problem and any(not p.sha256 for p in parts):
        problem = "the hub publishes no sha256 for it, so its download could not be checked"
    pure = PurePosixPath(name)
    quant = quant_of_name(pure.name) or quant_of_name(f"{pure.parent.name}.gguf")
    return HubFile(repo, name, quant, parts, problem)


__all__ = ["HubFile", "HubPart", "HubRepo", "file_url", "files", "hub_url", "search"]
