"""The model library against reference tools, measured in the same run.

    python bench/library.py [--size-mib 512] [--repeat 3]

Printed, ours next to the reference, with ratios (best of `--repeat` runs each):
- reading a model's header (metadata + tensor table, never the weights): `read_model` vs
  llama.cpp's own Python reader (`gguf.GGUFReader`, from the `gguf` package; run once), on the
  bundled Gemma 3 270M (262,144-token vocabulary) and the tiny gpt-oss test model (201,088
  tokens and 446,000 merges); then a rescan of an unchanged folder through the scan cache;
- a download over loopback of a generated file from a local HTTP server: ours (streamed to a
  partial file, sha256 checked while writing, fsynced, renamed into place) vs `curl -o` followed
  by `sha256sum` (the same work done by the usual tools).
Checked before printing (no figures otherwise, exit status 1): ours read as many tensors as the
reference; each scan found both models; each download left the whole file, with its sha256.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault(
    "HARMONY_DESK_CACHE", str(Path.home() / ".cache" / "harmony-desk-tests" / "app-cache")
)

from app.gguf.info import read_model
from app.library.bundled import gemma_model_path
from app.library.download import Download, DownloadRequest
from app.library.scan import ScanCache, scan
from tests.file_server import FileServer, payload
from tests.tiny_gpt_oss import build


def fail(why: str) -> NoReturn:
    raise SystemExit(f"no figures: {why}")


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The best time (s) of `repeat` calls of `fn`, and what its last call returned."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def headers(repeat: int) -> None:
    import gguf

    print("Reading a header (metadata + tensor table)")
    print(f"{'model':<28}{'ours ms':>10}{'gguf-py ms':>12}{'ours / ref':>12}")
    for label, path in (
        ("Gemma 3 270M (bundled)", gemma_model_path()),
        ("tiny gpt-oss (tests)", build()),
    ):
        ours, info = best(partial(read_model, path), repeat)
        ref, reader = best(partial(gguf.GGUFReader, path), 1)  # ~15 s a file: once is enough
        if len(info.tensors) != len(reader.tensors):
            fail(f"{label}: ours read {len(info.tensors)} tensors, gguf-py {len(reader.tensors)}")
        print(f"{label:<28}{ours * 1000:>10.1f}{ref * 1000:>12.1f}{ours / ref:>11.4f}×")
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        (folder / "gemma.gguf").symlink_to(gemma_model_path())
        (folder / "tiny.gguf").symlink_to(build())
        cache = folder / "scan.json"

        def cold_scan() -> list[Any]:
            cache.unlink(missing_ok=True)
            return scan([folder], cache=ScanCache(cache))

        cold, found = best(cold_scan, repeat)
        warm, again = best(lambda: scan([folder], cache=ScanCache(cache)), repeat)
        if len(found) != 2 or len(again) != 2:
            fail(f"the scans found {len(found)} and {len(again)} of the 2 models")
        print(
            f"scan of both models: cold {cold * 1000:.1f} ms, unchanged folder {warm * 1000:.2f} ms"
            f" ({cold / warm:.0f}× faster from the cache)"
        )


def downloads(size_mib: int, repeat: int) -> None:
    curl = shutil.which("curl")
    body = payload(size_mib << 20)
    digest = hashlib.sha256(body).hexdigest()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        server = FileServer(tmp)
        url = server.add("bench.gguf", body)
        out = tmp / "out"

        def ours() -> None:
            shutil.rmtree(out, ignore_errors=True)
            Download(DownloadRequest(url, out, sha256=digest)).run()

        def reference() -> str:
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            subprocess.run([curl or "curl", "-sf", "-o", str(out / "bench.gguf"), url], check=True)
            return subprocess.run(
                ["sha256sum", str(out / "bench.gguf")], check=True, capture_output=True, text=True
            ).stdout.split()[0]

        def whole(who: str) -> None:
            got = out / "bench.gguf"
            size = got.stat().st_size if got.is_file() else 0
            if size != len(body) or hashlib.sha256(got.read_bytes()).hexdigest() != digest:
                fail(f"{who} left {size:,} of {len(body):,} bytes, or other bytes")

        a, _ = best(ours, repeat)
        whole("our download")
        print(f"\nDownloading {size_mib} MiB over loopback, sha256 checked")
        if curl is None:
            print(f"ours {size_mib / a:.0f} MiB/s (no curl here for the reference)")
        else:
            b, said = best(reference, repeat)
            whole("curl")
            if said != digest:
                fail("sha256sum said another digest")
            print(
                f"ours {a:.2f} s ({size_mib / a:.0f} MiB/s) vs curl + sha256sum {b:.2f} s"
                f" ({size_mib / b:.0f} MiB/s): {a / b:.2f}× the time"
            )
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mib", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"cpus: {os.cpu_count()}\n")
    headers(args.repeat)
    downloads(args.size_mib, args.repeat)


if __name__ == "__main__":
    main()
