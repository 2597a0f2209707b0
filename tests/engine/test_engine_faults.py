"""Loading errors are typed and clear, and never take the app down: a set of fault files."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from app.engine.local.client import WorkerClient
from app.errors import LoadProblem, ModelLoadError
from app.gguf.info import read_gguf


@pytest.fixture(scope="module")
def faults(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from tests.tiny_gpt_oss import build

    folder = tmp_path_factory.mktemp("faults")
    data = tiny_model.read_bytes()
    files = {
        "truncated": data[: len(data) // 2],
        "zeroed_header": bytes(64) + data[64:],
        "random_bytes": random.Random(7).randbytes(1 << 20),
        "wrong_magic": b"GGUX" + data[4:],
        "tiny": b"GG",
    }
    out = {}
    for name, content in files.items():
        (folder / f"{name}.gguf").write_bytes(content)
        out[name] = folder / f"{name}.gguf"
    out["missing_tensor"] = build(drop={"blk.1.attn_sinks.weight"})
    out["aborts_llama"] = build(drop={"expert_count"})  # llama.cpp hits an assertion: SIGABRT
    out["unknown_architecture"] = _unknown_arch(folder / "frob.gguf")
    return out


def _unknown_arch(path: Path) -> Path:
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), arch="frobnicator")
    w.add_uint32("frobnicator.context_length", 128)
    w.add_tensor("token_embd.weight", np.zeros((8, 4), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize(
    "fault, problem",
    [("truncated", LoadProblem.TRUNCATED), ("zeroed_header", LoadProblem.NOT_GGUF),
     ("random_bytes", LoadProblem.NOT_GGUF), ("wrong_magic", LoadProblem.NOT_GGUF), ("tiny", LoadProblem.NOT_GGUF),
     ("missing_tensor", LoadProblem.LOAD_FAILED), ("unknown_architecture", LoadProblem.UNSUPPORTED_ARCHITECTURE),
     ("aborts_llama", LoadProblem.LOAD_FAILED)],
)
def test_fault_files_give_typed_errors_and_the_worker_recovers(
    faults: dict[str, Path], fault: str, problem: LoadProblem, tiny_model: Path
) -> None:
    with WorkerClient() as client:
        with pytest.raises(ModelLoadError) as info:
            client.load(faults[fault], n_ctx=256, n_threads=1)
        assert info.value.problem is problem
        assert f"“{faults[fault].name}”" in info.value.message  # the name in the sentence,
        assert str(faults[fault]) in info.value.details  # the whole path in the details
        client.load(tiny_model, n_ctx=256, n_threads=1)  # the same client loads a good model after
        assert client.info is not None


def test_missing_file(tmp_path: Path) -> None:
    with WorkerClient() as client, pytest.raises(ModelLoadError) as info:
        client.load(tmp_path / "nope.gguf")
    assert info.value.problem is LoadProblem.MISSING_FILE and "no such file" in info.value.message


def test_not_enough_memory_is_refused_before_loading(tiny_model: Path) -> None:
    with WorkerClient() as client, pytest.raises(ModelLoadError) as info:
        client.load(tiny_model, n_ctx=100_000_000)
    assert info.value.problem is LoadProblem.NOT_ENOUGH_MEMORY
    assert "GiB" in info.value.message and client.pid is None  # no worker was even started


def test_header_facts_of_the_tiny_model(tiny_model: Path) -> None:
    info = read_gguf(tiny_model)
    assert info.architecture == "gpt-oss" and info.vocab_size == 201088
    assert info.context_length == 131072 and len(info.tensors) == 41
    assert info.kv_cache_bytes(1024) == 1024 * 2 * 1 * (64 + 64) * 2


def test_unloadable_model_files_never_raise_anything_untyped(tmp_path: Path) -> None:
    rng = random.Random(3)
    for i in range(200):
        path = tmp_path / f"f{i}.gguf"
        path.write_bytes(b"GGUF" + rng.randbytes(rng.randint(0, 400)))
        try:
            read_gguf(path)
        except ModelLoadError as exc:
            assert exc.problem in (LoadProblem.NOT_GGUF, LoadProblem.TRUNCATED)


