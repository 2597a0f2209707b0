"""Downloading a model: streamed to a partial file, resumable, checked, renamed into place.

Guarantees: bytes go to `NAME.partial` beside the target, described by a sidecar
(`NAME.partial.json`: URL, the server's validator, size, sha256), so a download resumes with
an HTTP range request after a dropped connection (retried here a few times, with backoff) or
after an app restart; a server that ignores ranges, or whose file changed, starts again from
zero; free space is checked once the size is known; the whole file is checked against its
sha256 when one is known and must start like a GGUF, is fsynced, then renamed over the target
in one step — the target is never touched before that; pausing keeps the partial file,
cancelling removes it. Every failure is a `DownloadError` with a `DownloadProblem` and a
sentence (404, 416, redirect loops, TLS failures, a full disk, a wrong checksum, ...); a
failure keeps the partial file whenever resuming could still use it.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from app.domain.library import human_size
from app.errors import DownloadError, DownloadProblem
from app.library.http_get import network_error, open_get, status_error
from app.readback import read_back

CHUNK = 1 << 20
SPACE_MARGIN = 16 << 20  # left free beyond the file itself
PROGRESS_EVERY_S = 0.1
_RETRYABLE = (DownloadProblem.NETWORK,)
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._+-]+")

Progress = Callable[[int, "int | None"], None]


@dataclass(frozen=True)
class DownloadRequest:
    """What to fetch and where: `dest` is a folder; the name comes from the URL unless given."""

    url: str
    dest: Path
    sha256: str | None = None
    size: int | None = None  # the expected size (from the catalogue), checked against the server's
    filename: str | None = None

    @property
    def target(self) -> Path:
        return self.dest / (self.filename or filename_from_url(self.url))


def filename_from_url(url: str) -> str:
    """The file name a URL names (its last path segment, made safe), e.g. `model-Q4_K_M.gguf`."""
    name = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    name = _SAFE_NAME.sub("_", name).strip("._") or "model.gguf"
    return name


def partial_of(target: Path) -> Path:
    return target.with_name(target.name + ".partial")


def discard_partial(target: Path) -> None:
    """Remove what a download of `target` has fetched so far, and its description."""
    partial_of(target).unlink(missing_ok=True)
    _sidecar(target).unlink(missing_ok=True)


def _sidecar(target: Path) -> Path:
    return target.with_name(target.name + ".partial.json")


class _Stopped(Exception):
    pass


class Download:
    """One download; `run` blocks (call it on a worker thread) and returns the finished file."""

    def __init__(
        self,
        request: DownloadRequest,
        *,
        on_progress: Progress | None = None,
        timeout_s: float = 30.0,
        retries: int = 3,
        backoff_s: float = 1.0,
    ) -> None:
        self.request = request
        self.target = request.target
        self.partial = partial_of(self.target)
        self.on_progress = on_progress
        self.timeout_s, self.retries, self.backoff_s = timeout_s, retries, backoff_s
        self._stop = threading.Event()
        self._discard = False
        self.total: int | None = request.size
        self.done = 0
        self.resumed_from = 0  # where the last request started (tests and the debug log read it)
        self._validator = ""
        self._last_report = 0.0
        self._digest: hashlib._Hash | None = None  # sha256 of the bytes written so far

    # --- control (any thread) --------------------------------------------------------------

    def pause(self) -> None:
        """Stop, keeping the partial file for a later resume."""
        self._stop.set()

    def cancel(self) -> None:
        """Stop and remove the partial file."""
        self._discard = True
        self._stop.set()

    # --- the work --------------------------------------------------------------------------

    def run(self) -> Path:
        """Fetch (or resume) the file; returns its final path."""
        if self.target.exists():
            raise DownloadError(
                DownloadProblem.EXISTS, self.target, "a file of that name is already there"
            )
        self.request.dest.mkdir(parents=True, exist_ok=True)
        attempt = 0
        while True:
            try:
                self._fetch()
                break
            except _Stopped:
                return self._stopped()
            except DownloadError as exc:
                attempt += 1
                if exc.problem not in _RETRYABLE or attempt > self.retries:
                    raise
                if self._stop.wait(self.backoff_s * 2 ** (attempt - 1)):
                    return self._stopped()
        return self._finish()

    def _stopped(self) -> Path:
        if self._discard:
            self.discard()
            raise DownloadError(DownloadProblem.CANCELLED, self.target, "it was cancelled")
        raise DownloadError(
            DownloadProblem.PAUSED, self.target, "it was paused; the part fetched so far is kept"
        )

    def discard(self) -> None:
        """Remove the partial file and its description."""
        discard_partial(self.target)

    def _resume_point(self) -> int:
        """Bytes already fetched that a resume may keep (0 when they belong to another file)."""
        saved = read_back(_sidecar(self.target))  # (bounded: `readback.DEFAULT_LIMIT`)
        try:
            have = self.partial.stat().st_size
        except OSError:
            return 0
        if not isinstance(saved, dict) or saved.get("url") != self.request.url:
            return 0
        self._validator = str(saved.get("validator") or "")
        return have

    def _fetch(self) -> None:
        start = self._resume_point()
        response, conn = open_get(
            self.request.url, start=start, validator=self._validator, timeout_s=self.timeout_s
        )
        self.resumed_from = start
        try:
            start = self._accept(response, start)
            if start < 0:  # the server says the partial file is already whole
                return
            self._check_space(start)
            self._save_sidecar()
            self._stream(response, start)
        finally:
            response.close()
            conn.close()

    def _accept(self, response: http.client.HTTPResponse, start: int) -> int:
        """Where the response's bytes begin (-1: the partial file is already whole)."""
        status = response.status
        if status == 206:
            m = re.match(r"bytes (\d+)-(\d+)/(\d+|\*)", response.getheader("Content-Range") or "")
            if m is None or int(m[1]) != start:
                raise DownloadError(
                    DownloadProblem.HTTP,
                    self.request.url,
                    "the server sent a range it was not asked for",
                )
            self._set_total(int(m[3]) if m[3] != "*" else None)
            return start
        if status == 200:
            length = response.getheader("Content-Length")
            self._set_total(int(length) if length and length.isdigit() else None)
            self._validator = (
                response.getheader("ETag") or response.getheader("Last-Modified") or ""
            )
            return 0  # from the beginning: a first request, or a server that ignores ranges
        if status == 416:
            m = re.match(r"bytes \*/(\d+)", response.getheader("Content-Range") or "")
            if m is not None and int(m[1]) == start and start > 0:
                self._set_total(start)
                self.done = start
                return -1
            self.discard()
            raise DownloadError(
                DownloadProblem.RANGE,
                self.request.url,
                "the server refused the byte range (HTTP 416): the file there no longer matches"
                " the part fetched before, which was removed; start the download again",
            )
        raise status_error(self.request.url, status, response.reason)

    def _set_total(self, total: int | None) -> None:
        expected = self.request.size
        if total is not None and expected is not None and total != expected:
            raise DownloadError(
                DownloadProblem.CHANGED,
                self.request.url,
                f"the server's file is {total:,} bytes but {expected:,} were expected;"
                " it is not the file the catalogue describes",
            )
        self.total = total if total is not None else expected

    def _check_space(self, start: int) -> None:
        if self.total is not None:
            _refuse_unless_room(self.total - start, self.request.dest, self.target)

    def _save_sidecar(self) -> None:
        record = {
            "url": self.request.url,
            "validator": self._validator,
            "size": self.total,
            "expected_size": self.request.size,
            "sha256": self.request.sha256,
        }
        _sidecar(self.target).write_text(json.dumps(record), encoding="utf-8")

    def _stream(self, response: http.client.HTTPResponse, start: int) -> None:
        mode = "r+b" if start else "wb"
        if not self.partial.exists():
            mode = "wb"
        try:
            with self.partial.open(mode) as out:
                out.truncate(start)
                self._digest = self._hash_prefix(start) if self.request.sha256 else None
                out.seek(start)
                self.done = start
                self._report(force=True)
                self._copy(response, out)
                out.flush()
                os.fsync(out.fileno())
        except OSError as exc:
            if getattr(exc, "errno", None) == 28:  # ENOSPC
                raise DownloadError(
                    DownloadProblem.DISK_FULL,
                    self.target,
                    f"the disk is full after {self.done:,} bytes; the part fetched is kept —"
                    " free some space and resume",
                ) from exc
            raise DownloadError(
                DownloadProblem.DISK_FULL if exc.errno == 122 else DownloadProblem.WRITE,
                self.target,
                f"it could not be written ({exc.strerror})",
            ) from exc
        if self.total is not None and self.done < self.total:
            raise DownloadError(
                DownloadProblem.NETWORK,
                self.request.url,
                f"the connection closed after {self.done:,} of {self.total:,} bytes;"
                " the part fetched so far is kept",
            )

    def _hash_prefix(self, start: int) -> hashlib._Hash:
        """The sha256 state after the first `start` bytes already in the partial file."""
        digest = hashlib.sha256()
        with self.partial.open("rb") as f:
            left = start
            while left and (block := f.read(min(4 << 20, left))):
                digest.update(block)
                left -= len(block)
        return digest

    def _copy(self, response: http.client.HTTPResponse, out: object) -> None:
        write, digest = out.write, self._digest  # type: ignore[attr-defined]
        while True:
            if self._stop.is_set():
                raise _Stopped
            try:
                block = (
                    response.read1(CHUNK) if hasattr(response, "read1") else response.read(CHUNK)
                )
            except (OSError, http.client.HTTPException) as exc:
                raise network_error(exc, self.request.url) from exc
            if not block:
                return
            if self.done == 0 and not block.startswith(b"GGUF"[: len(block)]):
                self._not_gguf(block[:64])
            write(block)
            if digest is not None:
                digest.update(block)
            self.done += len(block)
            self._report()

    def _report(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.on_progress is not None and (force or now - self._last_report >= PROGRESS_EVERY_S):
            self._last_report = now
            self.on_progress(self.done, self.total)

    def _finish(self) -> Path:
        """Check the whole partial file, then rename it into place."""
        self._report(force=True)
        self._check_content()
        os.replace(self.partial, self.target)
        _sidecar(self.target).unlink(missing_ok=True)
        _fsync_dir(self.target.parent)
        return self.target

    def _not_gguf(self, head: bytes) -> None:
        from app.gguf.magic import looks_like

        size = self.partial.stat().st_size if self.partial.exists() else len(head)
        kind = looks_like(head, size).split(";")[0] or "something else"
        self.discard()
        error = DownloadError(
            DownloadProblem.NOT_GGUF,
            self.request.url,
            f"what the server sent is not a GGUF model (it looks like {kind}); check that the"
            " address is a direct link to a .gguf file",
        )
        error.details = f"the first bytes: {head[:16].hex(' ')}"
        raise error

    def _check_content(self) -> None:
        with self.partial.open("rb") as f:
            head = f.read(64)
        if head[:4] != b"GGUF":
            self._not_gguf(head)
        if self.request.sha256:
            if self._digest is None:  # already whole before this run (a 416 on resume)
                self._digest = self._hash_prefix(self.partial.stat().st_size)
            digest = self._digest.hexdigest()
            if digest != self.request.sha256.lower():
                self.discard()
                raise DownloadError(
                    DownloadProblem.CHECKSUM,
                    self.request.url,
                    f"the file's sha256 is {digest}, not {self.request.sha256.lower()};"
                    " it was removed",
                )


def _refuse_unless_room(need: int, dest: Path, what: object) -> None:
    """A `NO_SPACE` error unless `need` bytes (and the margin) fit on the disk of `dest`."""
    folder = dest
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the folder may not be made yet: its disk is its parent's
    free = shutil.disk_usage(folder).free
    if need + SPACE_MARGIN > free:
        raise DownloadError(
            DownloadProblem.NO_SPACE,
            what,
            f"it needs {human_size(need)} more and {human_size(free)} is free on the disk of"
            f" {dest}; nothing was written",
        )


def check_space(requests: list[DownloadRequest], what: object) -> None:
    """Refuse, before any starts, downloads whose known sizes together do not fit (the parts
    of a split model, say); bytes already in partial files count as fetched."""
    by_folder: dict[Path, int] = {}
    for r in requests:
        if r.size is None or r.target.exists():
            continue
        partial = partial_of(r.target)
        have = partial.stat().st_size if partial.exists() else 0
        by_folder[r.dest] = by_folder.get(r.dest, 0) + max(r.size - have, 0)
    for dest, need in by_folder.items():
        _refuse_unless_room(need, dest, what)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
