"""The model library: scanning real GGUF files (split ones too), the memory estimate against
what llama.cpp allocates, the catalogue, folders, the default model, deleting to the trash."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import app.library.scan as scan_module
from app.domain.library import Fit, MemoryEstimate, human_size
from app.engine.local.client import WorkerClient
from app.engine.local.memory import estimate_memory
from app.errors import LoadProblem, ModelLoadError, ResourceError
from app.gguf.info import read_gguf, read_model
from app.library.catalog import load_catalog
from app.library.folders import (
    LibraryError,
    library_folders,
    models_dir,
    set_default,
    startup_model,
    trash_model,
    with_folder,
    without_folder,
)
from app.library.scan import ScanCache, describe, scan
from app.settings import Settings
from tests.private_trash import use_private_trash
from tests.tiny_gpt_oss import build_split


@pytest.fixture(scope="module")
def split_parts(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return build_split(tmp_path_factory.mktemp("split"))


def test_a_scan_describes_each_model_from_its_header(
    tmp_path: Path, gemma_model: Path, tiny_model: Path
) -> None:
    (tmp_path / "google").mkdir()
    (tmp_path / "google" / "gemma.gguf").symlink_to(gemma_model)
    (tmp_path / "tiny.gguf").symlink_to(tiny_model)
    (tmp_path / "broken.gguf").write_bytes(b"<html>not a model</html>" * 10)
    (tmp_path / "half.gguf.partial").write_bytes(b"GGUF")  # a download in progress: not a model
    entries = {e.name: e for e in scan([tmp_path], cache=ScanCache(tmp_path / "cache.json"))}
    assert sorted(entries) == ["broken", "gemma", "tiny"]
    g = entries["gemma"]
    assert (g.architecture, g.quantization, g.context_length, g.vocab_size) == (
        "gemma3",
        "Q4_K_M",
        32768,
        262144,
    )
    assert (
        g.parameters == read_gguf(gemma_model).parameter_count
        and g.file_size == gemma_model.stat().st_size
    )
    assert g.template == "gemma" and not g.has_chat_template and g.usable  # no template of its own: its family's
    t = entries["tiny"]
    assert (t.architecture, t.template, t.vocab_size) == ("gpt-oss", "harmony", 201088)
    assert not entries["broken"].usable and entries["broken"].problem == (
        "it is not a GGUF model file (it looks like a web page; perhaps a download or sign-in page"
        " was saved in place of the model)"
    )


def test_a_split_model_is_one_entry_and_llama_cpp_runs_it(
    split_parts: list[Path], tiny_model: Path
) -> None:
    assert len(split_parts) == 4
    entries = scan([split_parts[0].parent], cache=ScanCache(split_parts[0].parent / "c.json"))
    assert len(entries) == 1
    e = entries[0]
    assert e.name == "tiny-split" and e.path == str(split_parts[0]) and len(e.files) == 4
    assert e.file_size == sum(p.stat().st_size for p in split_parts)
    assert e.parameters == read_gguf(tiny_model).parameter_count  # every part's tensors counted
    with WorkerClient() as client:  # llama.cpp is given the first part and finds the others
        client.load(e.path, n_ctx=256, n_threads=1)
        events = list(client.generate([200006, 1428, 200008, 12194], stop_ids=[], max_tokens=3))
    assert sum(1 for ev in events if type(ev).__name__ == "TokenStep") == 3


def test_a_missing_part_is_named(split_parts: list[Path], tmp_path: Path) -> None:
    for p in split_parts:
        if "00003" not in p.name:
            (tmp_path / p.name).symlink_to(p)
    entries = scan([tmp_path], cache=ScanCache(tmp_path / "c.json"))
    assert len(entries) == 1 and not entries[0].usable
    assert (
        "tiny-split-00003-of-00004.gguf" in entries[0].problem
        and "not in the folder" in entries[0].problem
    )
    with pytest.raises(ModelLoadError) as refused:
        read_model(tmp_path / split_parts[0].name)
    assert refused.value.problem is LoadProblem.MISSING_FILE
    (tmp_path / split_parts[0].name).unlink()  # without its first part it is still listed
    assert [e.name for e in scan([tmp_path], cache=ScanCache(tmp_path / "c.json"))] == [
        "tiny-split"
    ]


def test_a_rescan_reads_no_header_until_a_file_changes(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(tiny_model.read_bytes())
    first = scan([tmp_path], cache=ScanCache(tmp_path / "c.json"))
    reads: list[Path] = []
    real = scan_module.read_model
    monkeypatch.setattr(scan_module, "read_model", lambda p: reads.append(Path(p)) or real(p))
    assert scan([tmp_path], cache=ScanCache(tmp_path / "c.json")) == first and reads == []
    os.utime(model, ns=(1, 1))
    assert scan([tmp_path], cache=ScanCache(tmp_path / "c.json")) != first and reads == [model]


def test_the_kv_estimate_is_what_llama_cpp_allocates(gemma_model: Path, tiny_model: Path) -> None:
    """llama.cpp's own log of its KV buffers, for Gemma 3 (sliding-window layers) and gpt-oss."""
    script = (
        "import sys, llama_cpp\n"
        "llama_cpp.Llama(sys.argv[1], n_ctx=int(sys.argv[2]), n_threads=1, verbose=True)\n"
    )
    for model in (gemma_model, tiny_model):
        info = read_model(model)
        for n_ctx in (512, 2048):
            run = subprocess.run(
                [sys.executable, "-c", script, str(model), str(n_ctx)],
                capture_output=True,
                text=True,
                timeout=120,
            )
            sizes = re.findall(r"llama_kv_cache: size = +([\d.]+) MiB", run.stderr)
            assert sizes, run.stderr[-2000:]
            reported = sum(float(s) for s in sizes) * 2**20
            rounding = 0.006 * 2**20 * len(sizes)  # the log prints MiB with two decimals
            assert info.kv_cache_bytes(n_ctx) == pytest.approx(reported, abs=rounding), (model, n_ctx)


def test_the_estimate_bounds_the_workers_peak_memory(gemma_model: Path) -> None:
    info = read_model(gemma_model)
    estimate = estimate_memory(info, 2048)
    with WorkerClient() as client:
        client.load(gemma_model, n_ctx=2048, n_threads=1)
        for _ in client.generate(list(range(1000, 1300)), stop_ids=[], max_tokens=4):
            pass
        status = Path(f"/proc/{client.pid}/status").read_text()
    peak = int(re.search(r"VmHWM:\s+(\d+) kB", status)[1]) * 1024  # type: ignore[index]
    assert peak <= estimate.total <= 2.5 * peak, (peak, estimate)


def test_the_verdict_in_words() -> None:
    def est(available: int | None) -> MemoryEstimate:
        return MemoryEstimate(4096, 12 << 30, 192 << 20, 260 << 20, available)

    assert est(64 << 30).verdict is Fit.FITS and est(64 << 30).words().startswith("Fits:")
    assert est(13 << 30).verdict is Fit.TIGHT and "only just" in est(13 << 30).words()
    too_big = est(8 << 30)
    assert too_big.verdict is Fit.TOO_BIG
    assert too_big.words().startswith("Will not fit") and "8.0 GiB is available" in too_big.words()
    assert "smaller quantisation" in too_big.words() and est(None).verdict is Fit.UNKNOWN
    assert "answers at once" not in est(64 << 30).words()  # one answer: nothing to say


def test_the_verdict_says_the_cache_is_counted_for_each_answer_at_once(tiny_model: Path) -> None:
    from app.controllers.model_context import estimate

    info = read_model(tiny_model)
    one = estimate(info, 4096, sequences=1, available=64 << 30)
    four = estimate(info, 4096, sequences=4, available=64 << 30)
    assert four.kv_cache == 4 * one.kv_cache > 0 and four.weights == one.weights
    assert f"KV cache {human_size(four.kv_cache)} for 4 answers at once," in four.words()
    assert "answers at once" not in one.words() and four.at_once() == " for 4 answers at once"


def test_the_catalogue_lists_gpt_oss_with_checked_files(tmp_path: Path) -> None:
    catalog = load_catalog()
    big = catalog.find("gpt-oss-120b")
    small = catalog.find("gpt-oss-20b")
    assert small is not None and big is not None and len(big.files) == 3
    assert all(
        f.url.startswith("https://") and len(f.sha256) == 64 and f.size > 0
        for m in catalog.models
        for f in m.files
    )
    names = [r.target.name for r in big.requests(tmp_path)]
    assert names == [f"gpt-oss-120b-mxfp4-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    damaged = tmp_path / "c.json"
    damaged.write_text(json.dumps({"models": [{"id": "x", "name": "x", "files": []}]}))
    with pytest.raises(ResourceError, match="damaged"):
        load_catalog(damaged)


def test_folders_and_the_default_model(tmp_path: Path, tiny_model: Path) -> None:
    settings = with_folder(Settings(), tmp_path)
    assert library_folders(settings) == [models_dir(), tmp_path.resolve()]
    assert with_folder(settings, tmp_path) == settings  # no duplicates
    assert library_folders(without_folder(settings, tmp_path)) == [models_dir()]
    with pytest.raises(LibraryError):
        with_folder(settings, tmp_path / "nope")
    model = tmp_path / "m.gguf"
    model.write_bytes(tiny_model.read_bytes())
    settings = set_default(settings, model)
    assert startup_model(settings) == str(model)
    model.unlink()
    assert startup_model(settings) is None  # gone: the bundled model starts instead
    with pytest.raises(ModelLoadError):
        set_default(settings, tmp_path / "missing.gguf")


def test_delete_moves_every_part_to_the_trash(
    split_parts: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    trash = use_private_trash(monkeypatch, home)
    folder = tmp_path / "models"
    folder.mkdir()
    for p in split_parts:
        (folder / p.name).write_bytes(p.read_bytes())
    entry = describe(folder / split_parts[0].name)
    moved = trash_model(entry)
    assert len(moved) == 4 and list(folder.iterdir()) == []
    trashed = sorted(p.name for p in trash.iterdir())
    assert trashed == sorted(p.name for p in split_parts)
    assert (
        len(list((home / "Trash" / "info").iterdir())) == 4
    )  # restorable from the desktop's trash
    bundled = scan([], bundled=split_parts[0], cache=ScanCache(tmp_path / "c.json"))[0]
    with pytest.raises(LibraryError, match="bundled"):
        trash_model(bundled)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", "models", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_the_command_line(tmp_path: Path, tiny_model: Path, split_parts: list[Path]) -> None:
    env = {
        **os.environ,
        "HARMONY_DESK_DATA": str(tmp_path / "data"),
        "HARMONY_DESK_CONFIG": str(tmp_path / "config"),
    }
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "tiny.gguf").symlink_to(tiny_model)
    for p in split_parts:
        (extra / p.name).symlink_to(p)
    assert cli("folders", "add", str(extra), env=env).returncode == 0
    listed = cli("list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert (
        "tiny-split" in listed.stdout
        and "4 parts" in listed.stdout
        and "template harmony" in listed.stdout
    )
    assert "gpt-oss · 25.9M parameters · F16 · context 131,072" in listed.stdout
    assert "tokens for 4 answers at once — " in listed.stdout  # the settings' parallel, as loads count it
    rows = [
        json.loads(line)
        for line in cli("list", "--json", "--ctx", "8192", env=env).stdout.splitlines()
    ]
    tiny = next(r for r in rows if r["name"] == "tiny")
    assert tiny["memory"]["n_ctx"] == 8192 and tiny["memory"]["fit"] in ("fits", "tight")
    assert tiny["memory"]["sequences"] == 4
    alone = [json.loads(line) for line in cli("list", "--json", "--ctx", "8192", "--parallel", "1", env=env).stdout.splitlines()]
    assert next(r for r in alone if r["name"] == "tiny")["memory"]["kv_cache"] * 4 == tiny["memory"]["kv_cache"]
    info = json.loads(cli("info", str(tiny_model)).stdout)
    assert info["metadata"]["general.architecture"] == "gpt-oss"
    assert info["metadata"]["tokenizer.ggml.tokens"] == {
        "omitted": "array of 201088 str",
        "length": 201088,
    }
    assert info["parameters"] == read_gguf(tiny_model).parameter_count
    catalog = cli("catalog").stdout
    assert "gpt-oss-20b" in catalog and "gpt-oss-120b" in catalog
    assert cli("default", str(extra / "tiny.gguf"), env=env).stdout.strip() == str(
        extra / "tiny.gguf"
    )
    bad = cli("info", str(tmp_path / "nope.gguf"))
    assert bad.returncode == 2 and "no such file" in bad.stderr
