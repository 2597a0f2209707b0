"""Model downloads against a real HTTP(S) server on loopback serving generated files."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.errors import DownloadError, DownloadProblem
from app.library.download import Download, DownloadRequest, partial_of
from app.library.queue import DownloadQueue, paused_downloads
from tests.file_server import FileServer, payload

MIB = 1 << 20
FAST = {"backoff_s": 0.01, "timeout_s": 10.0}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[FileServer]:
    s = FileServer(tmp_path)
    yield s
    s.close()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch(url: str, dest: Path, **kw: object) -> tuple[Path, list[tuple[int, int | None]]]:
    seen: list[tuple[int, int | None]] = []
    opts = {**FAST, **{k: v for k, v in kw.items() if k in ("retries", "timeout_s")}}
    req = DownloadRequest(
        url, dest, **{k: v for k, v in kw.items() if k in ("sha256", "size", "filename")}
    )  # type: ignore[arg-type]
    path = Download(req, on_progress=lambda d, t: seen.append((d, t)), **opts).run()  # type: ignore[arg-type]
    return path, seen


def test_a_full_download_is_checked_and_renamed_into_place(
    server: FileServer, tmp_path: Path
) -> None:
    body = payload(3 * MIB + 17)
    url = server.add("model-Q4_K_M.gguf", body)
    path, seen = fetch(
        url + "?download=true", tmp_path / "models", sha256=sha(body), size=len(body)
    )
    assert path == tmp_path / "models" / "model-Q4_K_M.gguf" and path.read_bytes() == body
    assert seen[-1] == (len(body), len(body)) and seen[0][0] == 0
    assert [p.name for p in path.parent.iterdir()] == [
        "model-Q4_K_M.gguf"
    ]  # no partial, no sidecar


def test_a_dropped_connection_resumes_with_a_range_request(
    server: FileServer, tmp_path: Path
) -> None:
    body = payload(5 * MIB)
    url = server.add("m.gguf", body)
    server.drop_after = MIB + 5
    path, _ = fetch(url, tmp_path, sha256=sha(body))
    assert path.read_bytes() == body
    ranges = [r for p, r in server.requests]
    assert ranges[0] is None and ranges[1] is not None and ranges[1].startswith("bytes=")
    assert int(ranges[1].removeprefix("bytes=").rstrip("-")) >= MIB  # not from zero


def test_a_failure_keeps_the_partial_file_and_a_new_run_resumes_it(
    server: FileServer, tmp_path: Path
) -> None:
    body = payload(4 * MIB)
    url = server.add("m.gguf", body)
    server.drop_after = 2 * MIB
    with pytest.raises(DownloadError) as failed:
        fetch(url, tmp_path, sha256=sha(body), retries=0)
    assert failed.value.problem is DownloadProblem.NETWORK and "kept" in failed.value.message
    kept = partial_of(tmp_path / "m.gguf").stat().st_size
    assert 0 < kept <= 2 * MIB and not (tmp_path / "m.gguf").exists()
    assert [r.url for r in paused_downloads([tmp_path])] == [url]  # found again after a restart
    path, seen = fetch(url, tmp_path, sha256=sha(body))
    assert path.read_bytes() == body and seen[0][0] == kept
    assert server.requests[-1][1] == f"bytes={kept}-"


def test_the_app_killed_mid_download_resumes_on_the_next_run(
    server: FileServer, tmp_path: Path
) -> None:
    """A real process (the command line) killed with SIGKILL, then the same command again."""
    body = payload(6 * MIB)
    url = server.add("big.gguf", body)
    server.rate = 2 * MIB  # ~3 s for the whole file
    cmd = [
        sys.executable,
        "-m",
        "app",
        "models",
        "download",
        url,
        "--sha256",
        sha(body),
        "--dest",
        str(tmp_path),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    partial = partial_of(tmp_path / "big.gguf")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not partial.exists() or partial.stat().st_size < MIB):
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    kept = partial.stat().st_size
    assert MIB <= kept < len(body)
    server.rate = None
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "big.gguf").read_bytes() == body and not partial.exists()
    last_range = server.requests[-1][1]
    assert last_range is not None and int(last_range[6:-1]) >= MIB  # resumed, not restarted


def test_a_wrong_checksum_is_refused_and_nothing_is_left(
    server: FileServer, tmp_path: Path
) -> None:
    body = payload(MIB)
    url = server.add("m.gguf", body)
    with pytest.raises(DownloadError) as failed:
        fetch(url, tmp_path, sha256="0" * 64)
    assert failed.value.problem is DownloadProblem.CHECKSUM and sha(body) in failed.value.message
    assert list(tmp_path.iterdir()) == []


def test_a_server_without_range_support_starts_again_from_zero(
    server: FileServer, tmp_path: Path
) -> None:
    body = payload(3 * MIB)
    url = server.add("m.gguf", body)
    server.no_ranges = True
    server.drop_after = MIB
    path, seen = fetch(url, tmp_path, sha256=sha(body))
    assert path.read_bytes() == body
    assert server.requests[1][1] is not None  # a range was asked for, the server sent everything
    assert any(d == 0 for d, _ in seen[1:])  # progress went back to zero


def test_cancel_removes_the_partial_file_and_pause_keeps_it(
    server: FileServer, tmp_path: Path
) -> None:
    body = payload(8 * MIB)
    url = server.add("m.gguf", body)
    server.rate = 2 * MIB
    for action, problem in (
        ("cancel", DownloadProblem.CANCELLED),
        ("pause", DownloadProblem.PAUSED),
    ):
        started = threading.Event()

        def progressed(done: int, _total: int | None, started: threading.Event = started) -> None:
            if done > 0:
                started.set()

        download = Download(DownloadRequest(url, tmp_path), on_progress=progressed, **FAST)  # type: ignore[arg-type]
        stop = getattr(download, action)
        threading.Thread(target=lambda s=stop, e=started: e.wait(20) and s(), daemon=True).start()
        with pytest.raises(DownloadError) as stopped:
            download.run()
        assert stopped.value.problem is problem
        assert partial_of(tmp_path / "m.gguf").exists() is (action == "pause")
    server.rate = None
    path, _ = fetch(url, tmp_path)
    assert path.read_bytes() == body


@pytest.mark.parametrize(
    ("path", "problem", "words"),
    [
        ("/files/nothing.gguf", DownloadProblem.NOT_FOUND, "HTTP 404"),
        ("/loop/a", DownloadProblem.REDIRECTS, "loop"),
        ("/html", DownloadProblem.NOT_GGUF, "not a GGUF"),
    ],
)
def test_clear_errors(
    server: FileServer, tmp_path: Path, path: str, problem: DownloadProblem, words: str
) -> None:
    with pytest.raises(DownloadError) as failed:
        fetch(server.base + path, tmp_path, filename="x.gguf")
    assert failed.value.problem is problem and words in failed.value.message
    assert list(tmp_path.iterdir()) == []


def test_a_redirect_is_followed(server: FileServer, tmp_path: Path) -> None:
    body = payload(MIB)
    server.add("m.gguf", body)
    path, _ = fetch(server.base + "/redirect/m.gguf", tmp_path, filename="m.gguf")
    assert path.read_bytes() == body


def test_416_on_a_partial_file_that_no_longer_matches(server: FileServer, tmp_path: Path) -> None:
    body = payload(MIB)
    url = server.add("m.gguf", body)
    server.drop_after = MIB // 2
    with pytest.raises(DownloadError):
        fetch(url, tmp_path, retries=0)
    server.files["m.gguf"] = payload(MIB // 4, seed=9)  # the file on the server was replaced
    server.if_range = False  # a server that does not check If-Range answers 416
    with pytest.raises(DownloadError) as failed:
        fetch(url, tmp_path)
    assert failed.value.problem is DownloadProblem.RANGE and "416" in failed.value.message
    assert not partial_of(tmp_path / "m.gguf").exists()


def test_a_file_replaced_on_the_server_starts_again_from_zero(
    server: FileServer, tmp_path: Path
) -> None:
    url = server.add("m.gguf", payload(MIB))
    server.drop_after = MIB // 2
    with pytest.raises(DownloadError):
        fetch(url, tmp_path, retries=0)
    new = payload(MIB // 4 * 3, seed=9)
    server.files["m.gguf"] = new  # If-Range does not match: the server sends the new file whole
    path, seen = fetch(url, tmp_path, sha256=sha(new))
    assert path.read_bytes() == new and seen[0][0] == 0


def test_a_tls_failure_says_so(tmp_path: Path) -> None:
    server = FileServer(tmp_path, tls=True)
    try:
        url = server.add("m.gguf", payload(MIB))
        with pytest.raises(DownloadError) as failed:
            fetch(url, tmp_path / "out")
    finally:
        server.close()
    assert failed.value.problem is DownloadProblem.TLS
    assert "secure connection" in failed.value.message and "certificate" in failed.value.message


def test_a_size_that_is_not_the_catalogues_is_refused(server: FileServer, tmp_path: Path) -> None:
    url = server.add("m.gguf", payload(MIB))
    with pytest.raises(DownloadError) as failed:
        fetch(url, tmp_path, size=MIB + 1)
    assert failed.value.problem is DownloadProblem.CHANGED and list(tmp_path.iterdir()) == []


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs (needs permission to mount, as on the CI machines)."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {made.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def test_too_little_space_is_refused_before_writing(server: FileServer, small_disk: Path) -> None:
    url = server.add("m.gguf", payload(6 * MIB))
    with pytest.raises(DownloadError) as failed:
        fetch(url, small_disk)
    assert failed.value.problem is DownloadProblem.NO_SPACE and "free" in failed.value.message
    assert not any(p.suffix == ".partial" for p in small_disk.iterdir())


def test_a_disk_that_fills_up_while_writing(
    server: FileServer, small_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.library.download as download

    monkeypatch.setattr(download, "SPACE_MARGIN", 0)
    url = server.add("m.gguf", payload(3 * MIB))
    original = download.Download._check_space

    def check_then_fill(self: Download, start: int) -> None:
        original(self, start)  # 3 MiB needed, 4 MiB free: it passes...
        (small_disk / "filler").write_bytes(b"\0" * (2 * MIB))  # ...then another program writes

    monkeypatch.setattr(download.Download, "_check_space", check_then_fill)
    with pytest.raises(DownloadError) as failed:
        fetch(url, small_disk, retries=0)
    assert failed.value.problem is DownloadProblem.DISK_FULL and "kept" in failed.value.message
    assert partial_of(small_disk / "m.gguf").exists() and not (small_disk / "m.gguf").exists()


def test_the_queue_never_runs_more_than_its_limit(server: FileServer, tmp_path: Path) -> None:
    bodies = {f"m{i}.gguf": payload(2 * MIB, seed=i) for i in range(4)}
    urls = [server.add(name, body) for name, body in bodies.items()]
    server.rate = 4 * MIB
    running: set[str] = set()
    most = 0
    lock = threading.Lock()

    def update(p: object) -> None:
        nonlocal most
        with lock:
            (running.add if p.state == "running" else running.discard)(p.job_id)  # type: ignore[attr-defined]
            most = max(most, len(running))

    queue = DownloadQueue(limit=2, on_update=update, **FAST)
    ids = [queue.add(DownloadRequest(u, tmp_path)) for u in urls]
    with pytest.raises(DownloadError, match="already in the queue"):
        queue.add(DownloadRequest(urls[0], tmp_path))
    states = [queue.wait(i, timeout=60).state for i in ids]
    assert states == ["done"] * 4 and most == 2
    for name, body in bodies.items():
        assert (tmp_path / name).read_bytes() == body


def test_a_partial_file_that_is_already_whole_is_checked_and_finished(
    server: FileServer, tmp_path: Path
) -> None:
    """Killed after the last byte but before the rename: the server answers 416 for the range
    after the end, and the file is checked and put in place without fetching anything."""
    body = payload(MIB)
    url = server.add("m.gguf", body)
    server.rate = 4 * MIB
    download = Download(DownloadRequest(url, tmp_path, sha256=sha(body)), **FAST)  # type: ignore[arg-type]
    download._finish = lambda: download.partial  # type: ignore[method-assign]  # "killed" here
    assert download.run().read_bytes() == body  # whole, still named .partial
    server.rate = None
    path, seen = fetch(url, tmp_path, sha256=sha(body))
    assert path.read_bytes() == body and seen[-1] == (len(body), len(body))
    assert server.requests[-1][1] == f"bytes={len(body)}-"


def test_parts_that_fit_one_by_one_but_not_together_are_refused_before_any_starts(
    server: FileServer, small_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.library.download as download
    from app.library.download import check_space

    monkeypatch.setattr(download, "SPACE_MARGIN", 0)

    urls = [server.add(f"big-0000{i}-of-00002.gguf", payload(3 * MIB, seed=i)) for i in (1, 2)]
    requests = [DownloadRequest(u, small_disk, size=3 * MIB) for u in urls]
    check_space(requests[:1], "one part")  # 3 MiB of 4: fine alone
    with pytest.raises(DownloadError) as refused:
        check_space(requests, "the model")
    assert (
        refused.value.problem is DownloadProblem.NO_SPACE
        and "6.0 MiB more" in refused.value.message
    )
    assert list(small_disk.iterdir()) == []
