"""Build a tiny, random-weight multimodal pair for tests: a `llama`-architecture text model
(SmolLM2's real tokenizer, copied from the bundled GGUF) and a matching LLaVA-style projector
(`clip.projector_type = "mlp"`: a 2-layer CLIP-like ViT, then mm.0 -> GELU -> mm.2 into the text
model's embedding width), which llama.cpp's multimodal library (`llama_cpp.mtmd_cpp`) loads.

A 32×32 image in 8×8 patches becomes 16 image tokens. Deterministic: the same arguments give the
same bytes; files are cached by a key of their arguments like tests/tiny_gpt_oss.py's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.gguf_fields import read_fields
from tests.session_dirs import build_once
from tests.tiny_gpt_oss import cache_dir

BUILDER_VERSION = 1
# text model
N_EMBD, N_HEAD, N_HEAD_KV, N_FF, N_LAYER = 64, 4, 2, 128, 2
# vision encoder + projector
V_EMBD, V_HEAD, V_FF, V_LAYER, IMAGE_SIZE, PATCH_SIZE = 32, 2, 64, 2, 32, 8
N_IMAGE_TOKENS = (IMAGE_SIZE // PATCH_SIZE) ** 2


@dataclass(frozen=True)
class ViT:
    """The vision encoder's shape: the tests' tiny one by default; the bench's is ViT-S-like."""

    image_size: int = IMAGE_SIZE
    patch_size: int = PATCH_SIZE
    width: int = V_EMBD
    ff: int = V_FF
    blocks: int = V_LAYER
    heads: int = V_HEAD

    @property
    def tokens(self) -> int:
        return (self.image_size // self.patch_size) ** 2


TINY = ViT()
SMALL = ViT(image_size=224, patch_size=14, width=384, ff=1536, blocks=6, heads=6)  # 256 tokens


def _normal(rng: np.random.Generator, shape: tuple[int, ...], sigma: float = 0.02) -> np.ndarray:
    return (rng.standard_normal(shape) * sigma).astype(np.float32)


def _write_text(path: Path, seed: int) -> None:
    import gguf

    from app.library.bundled import default_model_path

    fields = read_fields(default_model_path())
    w = gguf.GGUFWriter(str(path), arch="llama")
    for key, f in fields.items():  # SmolLM2's tokenizer and chat template
        if key.startswith("tokenizer."):
            kind, *inner = (gguf.GGUFValueType(t) for t in f.types)
            w.add_key_value(key, f.value, kind, inner[0] if inner else None)
    n_vocab = len(fields["tokenizer.ggml.tokens"].value)
    head = N_EMBD // N_HEAD
    w.add_string("general.name", "tiny-vision-text-test")
    for name, value in {
        "context_length": 2048, "embedding_length": N_EMBD, "block_count": N_LAYER,
        "feed_forward_length": N_FF, "attention.head_count": N_HEAD,
        "attention.head_count_kv": N_HEAD_KV, "rope.dimension_count": head, "vocab_size": n_vocab,
    }.items():  # fmt: skip
        w.add_uint32(f"llama.{name}", value)
    w.add_float32("llama.rope.freq_base", 10000.0)
    w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    rng = np.random.default_rng(seed)
    kv = N_HEAD_KV * head
    w.add_tensor("token_embd.weight", _normal(rng, (n_vocab, N_EMBD), 1.0).astype(np.float16))
    w.add_tensor("output.weight", _normal(rng, (n_vocab, N_EMBD), 0.5).astype(np.float16))
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, np.float32))
    for layer in range(N_LAYER):
        p = f"blk.{layer}."
        w.add_tensor(p + "attn_norm.weight", np.ones(N_EMBD, np.float32))
        w.add_tensor(p + "ffn_norm.weight", np.ones(N_EMBD, np.float32))
        for name, rows, cols in (
            ("attn_q", N_EMBD, N_EMBD), ("attn_k", kv, N_EMBD), ("attn_v", kv, N_EMBD),
            ("attn_output", N_EMBD, N_EMBD), ("ffn_gate", N_FF, N_EMBD),
            ("ffn_up", N_FF, N_EMBD), ("ffn_down", N_EMBD, N_FF),
        ):  # fmt: skip
            w.add_tensor(f"{p}{name}.weight", _normal(rng, (rows, cols), 0.1))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _write_projector(
    path: Path, seed: int, n_embd_text: int, drop: Collection[str] = (), vit: ViT = TINY
) -> None:
    """`n_embd_text` is mm.2's output width: a value other than the text model's N_EMBD makes a
    projector that does not match its model (llama.cpp refuses it at mtmd_init_from_file);
    `drop` names tensors to leave out (a damaged projector: llama.cpp segfaults on it)."""
    import gguf

    w = gguf.GGUFWriter(str(path), arch="clip")
    w.add_string("general.name", "tiny-vision-mmproj-test")
    w.add_uint32("general.file_type", 0)  # all F32
    w.add_string("clip.projector_type", "mlp")
    w.add_bool("clip.has_vision_encoder", True)
    w.add_bool("clip.has_text_encoder", False)
    w.add_bool("clip.use_gelu", True)
    w.add_uint32("clip.vision.image_size", vit.image_size)
    w.add_uint32("clip.vision.patch_size", vit.patch_size)
    w.add_uint32("clip.vision.embedding_length", vit.width)
    w.add_uint32("clip.vision.feed_forward_length", vit.ff)
    w.add_uint32("clip.vision.block_count", vit.blocks)
    w.add_uint32("clip.vision.projection_dim", n_embd_text)
    w.add_uint32("clip.vision.attention.head_count", vit.heads)
    w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-5)
    w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
    rng = np.random.default_rng(seed)
    n_pos = vit.tokens + 1  # with the class embedding
    tensors = {
        # ggml's conv2d kernel [KW, KH, IC, OC] is numpy (OC, IC, KH, KW)
        "v.patch_embd.weight": _normal(rng, (vit.width, 3, vit.patch_size, vit.patch_size), 0.2),
        "v.patch_embd.bias": _normal(rng, (vit.width,)),
        "v.class_embd": _normal(rng, (vit.width,), 0.2),
        "v.position_embd.weight": _normal(rng, (n_pos, vit.width), 0.2),
        "v.pre_ln.weight": np.ones(vit.width, np.float32),
        "v.pre_ln.bias": np.zeros(vit.width, np.float32),
        "mm.0.weight": _normal(rng, (n_embd_text, vit.width), 0.3),
        "mm.0.bias": _normal(rng, (n_embd_text,)),
        "mm.2.weight": _normal(rng, (n_embd_text, n_embd_text), 0.3),
        "mm.2.bias": _normal(rng, (n_embd_text,)),
    }
    for layer in range(vit.blocks):
        p = f"v.blk.{layer}."
        tensors |= {
            p + "ln1.weight": np.ones(vit.width, np.float32),
            p + "ln1.bias": np.zeros(vit.width, np.float32),
            p + "ln2.weight": np.ones(vit.width, np.float32),
            p + "ln2.bias": np.zeros(vit.width, np.float32),
            p + "attn_q.weight": _normal(rng, (vit.width, vit.width), 0.2),
            p + "attn_q.bias": _normal(rng, (vit.width,)),
            p + "attn_k.weight": _normal(rng, (vit.width, vit.width), 0.2),
            p + "attn_k.bias": _normal(rng, (vit.width,)),
            p + "attn_v.weight": _normal(rng, (vit.width, vit.width), 0.2),
            p + "attn_v.bias": _normal(rng, (vit.width,)),
            p + "attn_out.weight": _normal(rng, (vit.width, vit.width), 0.2),
            p + "attn_out.bias": _normal(rng, (vit.width,)),
            p + "ffn_up.weight": _normal(rng, (vit.ff, vit.width), 0.2),
            p + "ffn_up.bias": _normal(rng, (vit.ff,)),
            p + "ffn_down.weight": _normal(rng, (vit.width, vit.ff), 0.2),
            p + "ffn_down.bias": _normal(rng, (vit.width,)),
        }
    for name, array in tensors.items():
        if name not in drop:
            w.add_tensor(name, array)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _folder(name: str) -> Path:
    """Each file in a folder of its own: the app pairs a model with a projector in its folder,
    so no other test model (nor another projector) may find one there by chance."""
    path = cache_dir() / "vision" / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_text(seed: int = 4321) -> Path:
    """The path of the tiny llama-architecture text model (built once, then cached)."""
    key = hashlib.sha256(f"{BUILDER_VERSION}:text:{seed}".encode()).hexdigest()[:16]
    path = _folder("text") / f"tiny-vision-text-{key}.gguf"
    return build_once(path, lambda partial: _write_text(partial, seed))


def build_projector(
    seed: int = 4322, n_embd_text: int = N_EMBD, drop: Collection[str] = (), vit: ViT = TINY
) -> Path:
    """The path of the tiny LLaVA-style `mmproj` matching `build_text()` (built once, then cached)."""
    shape = "" if vit == TINY else f":{vit}"
    key = hashlib.sha256(
        f"{BUILDER_VERSION}:mmproj:{seed}:{n_embd_text}:{sorted(drop)}{shape}".encode()
    ).hexdigest()[:16]
    path = _folder(f"mmproj-{key}") / f"mmproj-tiny-vision-{key}.gguf"
    return build_once(
        path, lambda partial: _write_projector(partial, seed, n_embd_text, drop, vit)
    )


def probe(
    text_path: str, mmproj_path: str, seeds: tuple[int, ...] = (1, 1, 2), n_gen: int = 4
) -> dict:
    """Load the pair with llama-cpp-python's low-level API and `mtmd`, and for each image seed
    (a random 32×32 RGB bitmap) tokenize a prompt with the media marker, evaluate its chunks
    into a fresh KV cache and decode `n_gen` greedy tokens. Meant for a child process (llama.cpp
    may abort); returns plain data: chunk types and sizes, n_past, the first logits, the tokens."""
    import ctypes

    import llama_cpp
    import llama_cpp.mtmd_cpp as mtmd

    llama_cpp.llama_backend_init()
    mparams = llama_cpp.llama_model_default_params()
    mparams.n_gpu_layers = 0
    model = llama_cpp.llama_model_load_from_file(text_path.encode(), mparams)
    if not model:
        raise RuntimeError("text model did not load")
    cparams = llama_cpp.llama_context_default_params()
    cparams.n_ctx, cparams.n_batch, cparams.n_ubatch = 512, 512, 512
    ctx = llama_cpp.llama_init_from_model(model, cparams)
    vocab = llama_cpp.llama_model_get_vocab(model)
    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
    pparams = mtmd.mtmd_context_params_default()
    pparams.use_gpu = False
    pparams.warmup = False
    pparams.print_timings = False
    mctx = mtmd.mtmd_init_from_file(mmproj_path.encode(), model, pparams)
    if not mctx:
        return {"loaded": False}
    marker = mtmd.mtmd_default_marker().decode()
    prompt = (
        f"<|im_start|>user\nWhat is in this picture? {marker}<|im_end|>\n<|im_start|>assistant\n"
    )
    out: dict = {"loaded": True, "marker": marker, "vision": bool(mtmd.mtmd_support_vision(mctx)),
                 "runs": []}  # fmt: skip
    for seed in seeds:
        pixels = np.random.default_rng(seed).integers(
            0, 256, (IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.uint8
        )
        buf = (ctypes.c_uint8 * pixels.size).from_buffer_copy(pixels.tobytes())
        bitmap = mtmd.mtmd_bitmap_init(IMAGE_SIZE, IMAGE_SIZE, buf)
        chunks = mtmd.mtmd_input_chunks_init()
        text = mtmd.mtmd_input_text(prompt.encode(), len(prompt.encode()), True, True)
        bitmaps = (mtmd.mtmd_bitmap_p_ctypes * 1)(bitmap)
        rc = mtmd.mtmd_tokenize(mctx, chunks, ctypes.byref(text), bitmaps, 1)
        run: dict = {"seed": seed, "tokenize_rc": rc, "chunks": []}
        for i in range(mtmd.mtmd_input_chunks_size(chunks)):
            chunk = mtmd.mtmd_input_chunks_get(chunks, i)
            run["chunks"].append({
                "type": mtmd.mtmd_input_chunk_get_type(chunk),
                "n_tokens": mtmd.mtmd_input_chunk_get_n_tokens(chunk),
                "n_pos": mtmd.mtmd_input_chunk_get_n_pos(chunk),
            })  # fmt: skip
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
        new_n_past = llama_cpp.llama_pos(0)
        run["eval_rc"] = mtmd.mtmd_helper_eval_chunks(
            mctx, ctx, chunks, 0, 0, 512, True, ctypes.byref(new_n_past)
        )
        n_past = new_n_past.value
        run["n_past"] = n_past
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, -1), (n_vocab,)).copy()
        run["logits_head"] = logits[:64].tolist()
        tokens = []
        for _ in range(n_gen):
            token = int(np.argmax(logits))
            tokens.append(token)
            one = (llama_cpp.llama_token * 1)(token)
            if llama_cpp.llama_decode(ctx, llama_cpp.llama_batch_get_one(one, 1)) != 0:
                raise RuntimeError("decode failed")
            n_past += 1
            logits = np.ctypeslib.as_array(
                llama_cpp.llama_get_logits_ith(ctx, -1), (n_vocab,)
            ).copy()
        run["tokens"] = tokens
        run["n_past_end"] = n_past
        out["runs"].append(run)
        mtmd.mtmd_input_chunks_free(chunks)
        mtmd.mtmd_bitmap_free(bitmap)
    mtmd.mtmd_free(mctx)
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)
    return out


# python -m tests.tiny_vision TEXT MMPROJ: the probe's JSON on stdout's last line
if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(probe(sys.argv[1], sys.argv[2])))
