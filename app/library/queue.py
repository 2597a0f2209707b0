"""The download queue: downloads in the order asked, never more than the limit at once.

Guarantees: at most `limit` downloads run (each on its own thread), the others wait in
order; every change of a job (queued, running with bytes / rate / time left, paused,
verifying, done, failed, cancelled) is reported to `on_update` as a `DownloadProgress`
value; the same target is never downloaded twice at once; pause keeps the partial file,
cancel removes it, resume and retry continue from the partial file; partial downloads left
by an earlier run are found again (`paused_downloads`) from their sidecar files, in a models
folder or two levels under it.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from app.domain.library import DownloadProgress
from app.errors import DownloadError, DownloadProblem
from app.library.download import Download, DownloadRequest, discard_partial
from app.readback import read_back

Update = Callable[[DownloadProgress], None]
RATE_SMOOTHING = 0.3  # weight of the newest rate sample


@dataclass
class _Job:
    request: DownloadRequest
    progress: DownloadProgress
    download: Download | None = None
    last: tuple[float, int] = (0.0, 0)  # (time, bytes) of the previous report


class DownloadQueue:
    """Model downloads, at most `limit` at once."""

    def __init__(
        self, limit: int = 2, on_update: Update | None = None, **download_options: float
    ) -> None:
        self.limit = limit
        self.on_update = on_update or (lambda _p: None)
        self._options = download_options
        self._jobs: dict[str, _Job] = {}
        self._order: list[str] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._finished = threading.Condition(self._lock)

    # --- asking --------------------------------------------------------------------------

    def add(self, request: DownloadRequest, *, paused: bool = False) -> str:
        """Queue `request`; its job id. The same target already in the queue is refused."""
        target = str(request.target)
        with self._lock:
            for job_id, job in self._jobs.items():
                if job.progress.target == target and job.progress.state not in _ENDED:
                    raise DownloadError(
                        DownloadProblem.EXISTS, target, f"it is already in the queue (job {job_id})"
                    )
            job_id = f"d{next(self._ids)}"
            state = "paused" if paused else "queued"
            self._jobs[job_id] = _Job(request, DownloadProgress(job_id, request.url, target, state))
            self._order.append(job_id)
        self._emit(job_id)
        self._start_waiting()
        return job_id

    def pause(self, job_id: str) -> None:
        self._stop(job_id, discard=False)

    def cancel(self, job_id: str) -> None:
        self._stop(job_id, discard=True)

    def resume(self, job_id: str) -> None:
        """Queue a paused, failed or cancelled job again (it continues from its partial file)."""
        with self._lock:
            job = self._jobs[job_id]
            if job.progress.state not in ("paused", "failed", "cancelled"):
                return
            job.progress = replace(job.progress, state="queued", message="", rate=0.0)
        self._emit(job_id)
        self._start_waiting()

    retry = resume

    def set_limit(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._start_waiting()

    def jobs(self) -> list[DownloadProgress]:
        with self._lock:
            return [self._jobs[j].progress for j in self._order]

    def wait(self, job_id: str, timeout: float | None = None) -> DownloadProgress:
        """Block until the job has ended (done, failed, paused or cancelled)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._finished:
            while self._jobs[job_id].progress.state not in (*_ENDED, "paused"):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._finished.wait(left)
            return self._jobs[job_id].progress

    def close(self) -> None:
        """Pause every running download (their partial files stay for the next run)."""
        for job_id in list(self._order):
            if self._jobs[job_id].progress.state in ("running", "queued"):
                self.pause(job_id)

    # --- running -------------------------------------------------------------------------

    def _stop(self, job_id: str, *, discard: bool) -> None:
        with self._lock:
            job = self._jobs[job_id]
            if job.progress.state == "done" or (job.progress.state == "cancelled" and not discard):
                return
            running = job.download if job.progress.state == "running" else None
            if running is None:
                if discard:
                    discard_partial(job.request.target)
                job.progress = replace(
                    job.progress, state="cancelled" if discard else "paused", rate=0.0
                )
                self._finished.notify_all()
        if running is not None:
            (running.cancel if discard else running.pause)()
        else:
            self._emit(job_id)

    def _start_waiting(self) -> None:
        starting = []
        with self._lock:
            running = sum(1 for j in self._jobs.values() if j.progress.state == "running")
            for job_id in self._order:
                job = self._jobs[job_id]
                if running >= self.limit:
                    break
                if job.progress.state == "queued":
                    job.download = Download(
                        job.request,
                        on_progress=self._progress_of(job_id),
                        **self._options,  # type: ignore[arg-type]
                    )
                    job.progress = replace(job.progress, state="running")
                    job.last = (time.monotonic(), 0)
                    running += 1
                    starting.append(job_id)
        for job_id in starting:
            self._emit(job_id)
            threading.Thread(
                target=self._run, args=(job_id,), name=f"download-{job_id}", daemon=True
            ).start()

    def _progress_of(self, job_id: str) -> Callable[[int, int | None], None]:
        def report(done: int, total: int | None) -> None:
            with self._lock:
                job = self._jobs[job_id]
                then, before = job.last
                now = time.monotonic()
                rate = job.progress.rate
                if now > then and before and done >= before:
                    sample = (done - before) / (now - then)
                    rate = sample if rate <= 0 else rate + RATE_SMOOTHING * (sample - rate)
                job.last = (now, done)
                job.progress = replace(job.progress, done=done, total=total, rate=rate)
            self._emit(job_id)

        return report

    def _run(self, job_id: str) -> None:
        job = self._jobs[job_id]
        assert job.download is not None
        try:
            path = job.download.run()
        except DownloadError as exc:
            state = {DownloadProblem.PAUSED: "paused", DownloadProblem.CANCELLED: "cancelled"}
            self._end(job_id, state.get(exc.problem, "failed"), exc.message)
        except Exception as exc:  # a bug must not leave the job "running" for ever
            self._end(job_id, "failed", f"Download stopped: {type(exc).__name__}: {exc}")
            raise
        else:
            self._end(job_id, "done", str(path))
        self._start_waiting()

    def _end(self, job_id: str, state: str, message: str) -> None:
        with self._lock:
            job = self._jobs[job_id]
            job.progress = replace(job.progress, state=state, message=message, rate=0.0)
            self._finished.notify_all()
        self._emit(job_id)

    def _emit(self, job_id: str) -> None:
        with self._lock:
            progress = self._jobs[job_id].progress
        self.on_update(progress)


_ENDED = ("done", "failed", "cancelled")


def paused_downloads(folders: Iterable[Path]) -> list[DownloadRequest]:
    """Downloads an earlier run left unfinished in `folders` (from their sidecar files)."""
    found = []
    for folder in folders:
        # in the folder, or two levels down (Discover's publisher/repository folders)
        patterns = ("*.partial.json", "*/*.partial.json", "*/*/*.partial.json")
        sidecars = sorted(p for g in patterns for p in folder.glob(g)) if folder.is_dir() else []
        for sidecar in sidecars:
            saved = read_back(sidecar)  # (bounded: `readback.DEFAULT_LIMIT`)
            if not isinstance(saved, dict) or "url" not in saved:
                continue  # none, set aside, or not a download's description
            url = str(saved["url"])
            size = saved.get("expected_size")
            found.append(
                DownloadRequest(
                    url=url,
                    dest=sidecar.parent,
                    sha256=saved.get("sha256") or None,
                    size=size if isinstance(size, int) else None,
                    filename=sidecar.name.removesuffix(".partial.json"),
                )
            )
    return found
