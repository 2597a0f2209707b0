"""A model's multimodal projector in the worker: images into the prompt and into the KV cache.

Guarantees:
- `Vision.load` opens an mmproj GGUF for the loaded model with llama.cpp's multimodal library
  (`llama_cpp.mtmd_cpp`), its lines routed to the worker's log; a projector llama.cpp refuses
  (another model's width, a missing key, not a projector at all) gives the reason it logged.
- `expand` turns a request's prompt, where each `IMAGE_ID` stands for one of its images, into
  the prompt as the cache will hold it: around each image the text tokens the projector's
  family writes there (Gemma 3's `<start_of_image>`, …), and for the image itself `n_pos`
  copies of a negative id drawn from the image's sha256 — the same image gives the same ids,
  so prefix reuse and KV snapshots treat it as the tokens it became, and never match another.
- `evaluate` encodes one image with the projector and decodes its embeddings into a sequence's
  cache at its place (llama.cpp's helper: non-causal attention where the family needs it);
  the embeddings are kept (up to `EMBEDDINGS_BYTES`, by sha256), so an image sent again after
  the cache moved on — a client that sends the whole conversation each turn — is decoded
  from them without being encoded again: the same numbers, so the same answer.
- Every chunk list `expand` made is freed by `Expanded.close`; the context by `close`.
Only the worker imports this module (llama.cpp may abort the process on a damaged projector).
"""

from __future__ import annotations

import collections
import ctypes
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from app.domain.images import ImagePixels
from app.engine.protocol import IMAGE_ID, GenerateRequest
from app.engine.worker.native_log import native_log
from app.errors import HarmonyDeskError

EMBEDDINGS_BYTES = 256 << 20  # images' embeddings kept, to read one sent again at no cost
_SPAN = 1 << 28  # image ids are -2 - (a 28-bit slice of the sha256): clear of IMAGE_ID


def image_token(sha256: str) -> int:
    """The negative id every position of an image holds in a sequence's token list."""
    return -2 - int(sha256[:7], 16) % _SPAN


def is_image(token: int) -> bool:
    return token < IMAGE_ID


class VisionError(HarmonyDeskError):
    """An image the projector could not take, and why (one sentence)."""


@dataclass(frozen=True)
class Piece:
    """One image chunk of a prompt: what the projector encodes at one place (an image may be
    several, its slices), named by its image's sha256 and its number among them."""

    chunk: Any
    key: str
    n_pos: int  # cache positions it takes
    n_tokens: int  # embeddings it becomes
    image: int = 0  # its image's number among the prompt's (from 0)
    first: bool = True  # the first piece of its image (where its encoding is said)


@dataclass
class Expanded:
    """A prompt with its images in place: `tokens` (image positions as `image_token`s),
    `images` (position of an image chunk's first token → the chunk), and per image how many
    tokens it became."""

    tokens: list[int]
    images: dict[int, Piece] = field(default_factory=dict)
    counts: list[int] = field(default_factory=list)
    _lists: list[Any] = field(default_factory=list, repr=False)
    _mtmd: Any = field(default=None, repr=False)

    def close(self) -> None:
        for chunks in self._lists:
            self._mtmd.mtmd_input_chunks_free(chunks)
        self._lists.clear()
        self.images.clear()


class Vision:
    """One loaded projector."""

    def __init__(self, mtmd: Any, ctx: Any, path: str, n_embd: int) -> None:
        self.mtmd, self.ctx, self.path, self.n_embd = mtmd, ctx, path, n_embd
        self.marker = mtmd.mtmd_default_marker()
        self._kept: collections.OrderedDict[str, Any] = collections.OrderedDict()

    @classmethod
    def load(
        cls, path: str, model: Any, n_threads: int, gpu: bool, errors: Callable[[], list[str]]
    ) -> Vision | str:
        """The projector at `path` for `model` (a `llama_model` pointer), or why not, with
        the last error line llama.cpp logged (`errors`: the worker's, read after the load)."""
        import llama_cpp.llama_cpp as low
        import llama_cpp.mtmd_cpp as mtmd

        _route_log(mtmd, low)
        params = mtmd.mtmd_context_params_default()
        params.use_gpu = gpu
        params.print_timings = False
        params.n_threads = n_threads
        ctx = mtmd.mtmd_init_from_file(path.encode(), model, params)
        why = f"the projector {os.path.basename(path)} cannot be used with this model"
        said = errors()
        if not ctx:
            return f"{why} (llama.cpp's multimodal library refused it{': ' if said else ''}" + (
                f"{said[-1]})" if said else ")"
            )
        if not mtmd.mtmd_support_vision(ctx):
            mtmd.mtmd_free(ctx)
            return f"{why}: it is a projector for sound, not images"
        return cls(mtmd, ctx, path, int(low.llama_model_n_embd_inp(model)))

    def close(self) -> None:
        if self.ctx:
            self.mtmd.mtmd_free(self.ctx)
            self.ctx = None

    def expand(self, prompt: list[int], images: tuple[ImagePixels, ...]) -> Expanded:
        """The prompt with its images in place (see the module guarantees)."""
        mtmd = self.mtmd
        marks = sum(1 for t in prompt if t == IMAGE_ID)
        if marks != len(images):
            raise VisionError(f"the prompt has {marks} image places for {len(images)} images")
        out = Expanded([], _mtmd=mtmd)
        index = 0
        for token in prompt:
            if token != IMAGE_ID:
                out.tokens.append(token)
                continue
            try:
                self._one(images[index], out)
            except VisionError:
                out.close()
                raise
            index += 1
        return out

    def _one(self, image: ImagePixels, out: Expanded) -> None:
        mtmd = self.mtmd
        if len(image.rgb) != image.width * image.height * 3:
            raise VisionError(f"image {len(out.counts) + 1} does not hold the pixels it says")
        buf = (ctypes.c_uint8 * len(image.rgb)).from_buffer_copy(image.rgb)
        bitmap = mtmd.mtmd_bitmap_init(image.width, image.height, buf)
        if not bitmap:
            raise VisionError(f"image {len(out.counts) + 1} could not be prepared")
        mtmd.mtmd_bitmap_set_id(bitmap, image.sha256.encode())
        chunks = mtmd.mtmd_input_chunks_init()
        text = mtmd.mtmd_input_text(self.marker, len(self.marker), False, True)
        bitmaps = (mtmd.mtmd_bitmap_p_ctypes * 1)(bitmap)
        try:
            rc = mtmd.mtmd_tokenize(self.ctx, chunks, ctypes.byref(text), bitmaps, 1)
        finally:
            mtmd.mtmd_bitmap_free(bitmap)
        if rc != 0:
            mtmd.mtmd_input_chunks_free(chunks)
            raise VisionError(f"the projector could not prepare image {len(out.counts) + 1}")
        out._lists.append(chunks)
        mark = image_token(image.sha256)
        count = 0
        for i in range(mtmd.mtmd_input_chunks_size(chunks)):  # text, then the image's pieces
            chunk = mtmd.mtmd_input_chunks_get(chunks, i)
            if mtmd.mtmd_input_chunk_get_type(chunk) == 0:  # MTMD_INPUT_CHUNK_TYPE_TEXT
                n = ctypes.c_size_t(0)
                ids = mtmd.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(n))
                out.tokens += [int(ids[j]) for j in range(n.value)]
                continue
            n_pos = int(mtmd.mtmd_input_chunk_get_n_pos(chunk))
            n_tokens = int(mtmd.mtmd_input_chunk_get_n_tokens(chunk))
            key = f"{image.sha256}:{image.width}x{image.height}:{i}"
            first = not any(p.image == len(out.counts) for p in out.images.values())
            out.images[len(out.tokens)] = Piece(chunk, key, n_pos, n_tokens, len(out.counts), first)
            out.tokens += [mark] * n_pos
            count += n_tokens
        out.counts.append(count)

    def facts(self) -> dict[str, Any]:
        """What `ModelInfo` says of the projector: its path and a 512×512 image's tokens."""
        return {"projector": self.path, "image_tokens": self.probe()}

    def probe(self, side: int = 512) -> int:
        """The tokens a `side`×`side` image becomes (what the app guesses for one it has not
        sent yet); 0 when the projector cannot prepare it."""
        grey = ImagePixels("0" * 64, side, side, bytes([128]) * (side * side * 3))
        try:
            expanded = self.expand([IMAGE_ID], (grey,))
        except VisionError:
            return 0
        expanded.close()
        return expanded.counts[0]

    def evaluate(self, lctx: Any, piece: Piece, n_past: int, seq: int, n_batch: int) -> int:
        """Decode the image `piece` into sequence `seq` from `n_past` (encoded by the projector,
        or its embeddings taken from those kept); the position after it."""
        import llama_cpp.llama_cpp as low

        embd = self._encoded(piece)
        after = low.llama_pos(0)
        rc = self.mtmd.mtmd_helper_decode_image_chunk(
            self.ctx,
            lctx,
            piece.chunk,
            embd,
            n_past,
            seq,
            n_batch,
            ctypes.byref(after),
            self.mtmd.mtmd_helper_post_decode_callback(),
            None,  # no callback: a NULL one
        )
        if rc != 0:
            raise VisionError(f"llama.cpp could not evaluate the image (status {rc})")
        return int(after.value)

    def _encoded(self, piece: Piece) -> Any:
        """The piece's embeddings: kept from an earlier encoding, or encoded now and kept (the
        least recently used dropped past `EMBEDDINGS_BYTES`)."""
        kept = self._kept.get(piece.key)
        if kept is not None:
            self._kept.move_to_end(piece.key)
            return kept
        rc = self.mtmd.mtmd_encode_chunk(self.ctx, piece.chunk)
        if rc != 0:
            raise VisionError(f"the projector could not encode the image (status {rc})")
        count = piece.n_tokens * self.n_embd
        embd = (ctypes.c_float * count)()
        ctypes.memmove(embd, self.mtmd.mtmd_get_output_embd(self.ctx), count * 4)
        self._kept[piece.key] = embd
        while sum(ctypes.sizeof(e) for e in self._kept.values()) > EMBEDDINGS_BYTES:
            self._kept.popitem(last=False)
        return embd


class Images:
    """The loaded projector (None: the model sees no images) and the images of the requests
    under way: expanded when a request comes, freed when it ends."""

    def __init__(self) -> None:
        self.vision: Vision | None = None
        self._held: dict[int, Expanded] = {}

    def expand(self, req: GenerateRequest) -> GenerateRequest | str:
        """`req` with its images in its prompt (`Vision.expand`), or why it is refused."""
        if self.vision is None:
            return "this model sees no images: load it with its projector (an mmproj GGUF)"
        try:
            expanded = self.vision.expand(list(req.prompt_ids), req.images)
        except VisionError as exc:
            return exc.message
        if not expanded.tokens or is_image(expanded.tokens[-1]):
            expanded.close()
            return "the prompt ends with an image; the model needs text after it to answer"
        self._held[req.request] = expanded
        return replace(req, prompt_ids=tuple(expanded.tokens), images=())

    def of(self, request: int) -> Expanded | None:
        return self._held.get(request)

    def forget(self, request: int) -> None:
        """Free the images of a request that ended."""
        expanded = self._held.pop(request, None)
        if expanded is not None:
            expanded.close()

    def close(self) -> None:
        for request in list(self._held):
            self.forget(request)
        if self.vision is not None:
            self.vision.close()
            self.vision = None


def projector_stamp(path: str) -> str:
    """What KV snapshots record of the projector images went through: its name and size."""
    if not path:
        return ""
    try:
        return f"{os.path.basename(path)}:{os.path.getsize(path)}"
    except OSError:
        return path


_callbacks: list[Any] = []  # the log callbacks handed to llama.cpp live as long as the process


def _route_log(mtmd: Any, low: Any) -> None:
    """mtmd's lines go to the worker's log like llama.cpp's own (`native_log.py`)."""
    if _callbacks:
        return
    callback = low.llama_log_callback(native_log)
    _callbacks.append(callback)
    mtmd.mtmd_log_set(callback, ctypes.c_void_p(0))
    mtmd.mtmd_helper_log_set(callback, ctypes.c_void_p(0))


__all__ = [
    "Expanded",
    "Images",
    "Vision",
    "VisionError",
    "image_token",
    "is_image",
    "projector_stamp",
]
