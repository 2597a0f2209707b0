"""Making llama.cpp's `Llama` for a load request: llama-cpp-python reads its default model and
context parameters from module functions, so they are swapped for the call and put back.

Guarantees: the model loads with the request's context (each of `sequences` sequences its own
`n_ctx` and cache stream when more than one), batch, threads and placement
(`placement.llama_arguments`); its load progress goes out as `LoadProgress`, and a cancel of
the request stops it; llama.cpp's CPU "extra buffer" path is used only when asked; the
module's defaults are restored whatever happens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.engine.protocol import FromWorker, LoadProgress, LoadRequest
from app.engine.worker.placement import llama_arguments


def _defaults(
    low: Any, req: LoadRequest, send: Callable[[FromWorker], None], cancelled: Callable[[], bool]
) -> tuple[Any, Any, Any]:
    """Default model params that report load progress and stop on cancel, and context
    params with the request's sequences (each its own cache stream when more than one)."""
    model_defaults = low.llama_model_default_params
    context_defaults = low.llama_context_default_params
    extra_buffers = req.extra_buffers

    def report(fraction: float, _data: Any) -> bool:
        send(LoadProgress(req.request, float(fraction)))
        return not cancelled()

    callback = low.llama_progress_callback(report)

    def model_params() -> Any:
        p = model_defaults()
        p.progress_callback = callback
        # llama.cpp's CPU "extra buffer" (weight repacking, AMX) path crashed with SIGSEGV on
        # Q4_K weights on these machines (AVX-512/AMX CPUs); plain buffers are safe everywhere.
        p.use_extra_bufts = extra_buffers
        return p

    def context_params() -> Any:
        p = context_defaults()
        p.n_seq_max = max(1, req.sequences)
        p.kv_unified = req.sequences <= 1  # one stream per sequence: exact side by side
        return p

    return model_params, context_params, callback


def llama_for(
    lc: Any,
    low: Any,
    req: LoadRequest,
    path: str,
    placement: Any,
    send: Callable[[FromWorker], None],
    cancelled: Callable[[], bool],
) -> Any:
    """A `Llama` for `path` with the request's context, threads and sequences."""
    model_params, context_params, keep_alive = _defaults(low, req, send, cancelled)
    defaults = low.llama_model_default_params, low.llama_context_default_params
    low.llama_model_default_params = model_params
    low.llama_context_default_params = context_params
    try:
        return lc.Llama(
            model_path=path,
            n_ctx=req.n_ctx * max(1, req.sequences),
            n_batch=req.n_batch,
            n_threads=req.n_threads,
            n_threads_batch=req.n_threads,
            verbose=False,
            **llama_arguments(placement),
        )
    finally:
        low.llama_model_default_params, low.llama_context_default_params = defaults
        del keep_alive
