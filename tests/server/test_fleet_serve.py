"""Several real models behind the real `serve`: SmolLM2 is the default; two tiny random-weight
GGUFs (Qwen3's and Llama 3's tokenizers and templates) are offered beside the library, under a
memory budget that holds SmolLM2 and one of them. A request naming the first loads it in a
worker of its own; one naming the second unloads the first (idle) to make room; Gemma 3, too big
for what SmolLM2 leaves, is refused with the figures; the default model answers throughout, and
names clients hardcode reach it through the default alias."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2 as httpx
import openai

from app.engine.local.memory import estimate_memory
from app.engine.local.serving import Models
from app.gguf.info import read_model
from app.library.scan import ScanCache
from tests.server.test_server import _serve
from tests.tiny_models import build


def _need(path: Path, room: int = 1 << 62) -> Any:
    entry = ScanCache().read(path)[0]
    return Models(sequences=1).need(entry, None, room)


def _loaded(base: str) -> dict[str, str]:
    listed = httpx.get(f"{base}/v1/models", timeout=10).json()["data"]
    return {e["id"]: e["status"]["value"] for e in listed if "status" in e}


def test_models_load_on_request_and_the_idle_one_makes_room(tmp_path: Path, smollm_model: Any,
                                                            gemma_model: Any) -> None:
    first, second = build("qwen3"), build("llama3")
    default = estimate_memory(read_model(str(smollm_model)), 2048, sequences=1).total
    a, b = _need(first).total, _need(second).total
    budget = default + max(a, b) + min(a, b) // 2  # SmolLM2 and one of them, never both
    room = budget - default
    assert _need(Path(gemma_model), room).total > room  # Gemma cannot fit beside SmolLM2
    gib = f"{budget / (1 << 30):.6f}"
    for base in _serve(str(smollm_model), tmp_path, "--parallel", "1", "--memory", gib,
                       "--models", f"library,{first},{second}", "--idle-unload", "0"):
        client = openai.OpenAI(base_url=f"{base}/v1", api_key="none", max_retries=0)
        said = [{"role": "user", "content": "Hello"}]
        assert _loaded(base)[first.stem] == "unloaded"
        one = client.chat.completions.create(model=first.stem, messages=said, max_tokens=4)  # type: ignore[arg-type]
        assert one.model == first.stem and one.usage and one.usage.completion_tokens > 0
        assert _loaded(base)[first.stem] == "loaded"
        two = client.chat.completions.create(model=second.stem, messages=said, max_tokens=4)  # type: ignore[arg-type]
        assert two.model == second.stem
        states = _loaded(base)
        assert states[first.stem] == "unloaded" and states[second.stem] == "loaded", states
        refused = httpx.post(f"{base}/v1/chat/completions", timeout=60,
                             json={"model": Path(gemma_model).stem, "messages": said})
        message = refused.json()["error"]["message"]
        assert refused.status_code == 400 and "needs about" in message and "leave" in message, message
        hardcoded = client.chat.completions.create(model="gpt-4o", messages=said, max_tokens=4)  # type: ignore[arg-type]
        assert hardcoded.model == Path(smollm_model).stem  # `*=`: the default model
        status = httpx.get(f"{base}/harmony-desk/status", timeout=10).json()
        assert {m["name"] for m in status["models"]} == {Path(smollm_model).stem, second.stem}
        client.close()


def test_an_embedding_model_loads_on_request_and_answers_embeddings_only(
    tmp_path: Path, smollm_model: Any
) -> None:
    import llama_cpp
    import numpy as np

    from tests import tiny_embedding

    bert = tiny_embedding.build("mean")
    reference = llama_cpp.Llama(str(bert), embedding=True, verbose=False)
    expected = np.asarray(reference.create_embedding("This is a test")["data"][0]["embedding"])
    reference.close()
    for base in _serve(str(smollm_model), tmp_path, "--parallel", "1", "--models", str(bert),
                       "--idle-unload", "0"):
        listed = {e["id"]: e for e in httpx.get(f"{base}/v1/models", timeout=10).json()["data"]}
        assert listed[bert.stem]["status"]["value"] == "unloaded"
        assert listed[bert.stem]["architecture"]["output_modalities"] == ["embeddings"]
        client = openai.OpenAI(base_url=f"{base}/v1", api_key="none", max_retries=0, timeout=60)
        got = client.embeddings.create(model=bert.stem, input="This is a test")
        assert got.model == bert.stem
        vector = np.asarray(got.data[0].embedding)
        assert np.allclose(vector, expected / np.linalg.norm(expected), atol=1e-3)
        assert _loaded(base)[bert.stem] == "loaded"
        said = [{"role": "user", "content": "Hello"}]
        chat = httpx.post(f"{base}/v1/chat/completions", timeout=60,
                          json={"model": bert.stem, "messages": said})
        assert chat.status_code == 400 and chat.json()["error"]["code"] == "model_cannot_chat"
        embed = httpx.post(f"{base}/v1/embeddings", timeout=60,
                           json={"model": Path(smollm_model).stem, "input": "x"})
        assert embed.status_code == 400 and embed.json()["error"]["code"] == "model_cannot_embed"
        gone = httpx.post(f"{base}/models/unload", timeout=60, json={"model": bert.stem})
        assert gone.status_code == 200 and _loaded(base)[bert.stem] == "unloaded"
        own = client.embeddings.create(model="text-embedding-3-small", input="This is a test")
        assert own.model != bert.stem  # the server's own embedding model answers the alias
        client.close()
