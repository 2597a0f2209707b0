"""llama-cpp-python's own OpenAI-compatible server, for the remote-endpoint tests.

    python tests/llama_server.py MODEL PORT

Started as `python -m llama_cpp.server` would be, with one change the app's own worker makes
too: llama.cpp's CPU "extra buffer" (weight repacking) path is turned off, because it crashes on
Q4_K weights on these machines (AVX-512/AMX CPUs). One thread, a 1,024-token context.
"""

from __future__ import annotations

import sys

import llama_cpp
import llama_cpp.llama as high_level
import uvicorn
from llama_cpp.server.app import create_app
from llama_cpp.server.settings import ModelSettings, ServerSettings

_default = llama_cpp.llama_model_default_params


def _params():  # type: ignore[no-untyped-def]
    p = _default()
    p.use_extra_bufts = False
    return p


llama_cpp.llama_model_default_params = _params
high_level.llama_cpp.llama_model_default_params = _params  # type: ignore[attr-defined]


def main() -> None:
    model, port = sys.argv[1], int(sys.argv[2])
    server = ServerSettings(host="127.0.0.1", port=port)
    models = [
        ModelSettings(
            model=model,
            model_alias="gemma",
            n_ctx=1024,
            n_threads=1,
            n_threads_batch=1,
            verbose=False,
        )
    ]
    app = create_app(server_settings=server, model_settings=models)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
