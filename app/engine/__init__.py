"""The engine: everything between a turn request and the model's tokens, sorted by the side of
the process line the code runs on. It re-exports nothing; import from the module that owns a
name.

- `request.py`   `GenerationRequest`: every knob of one generation, built once at each door
- `session.py`   the `Session` protocol (`generate(conversation, request)`, its one entry point)
                 and its `Capabilities`; `Generation`, `TurnRecord`
- `backend.py`   the backend seam: `ModelBackend`, and `ModelLoader` for one that loads models
- `protocol.py`  every message on the worker pipe, each with its request id; the process and
                 request state tables
- `overflow.py`  the context budget, and the conversation fitted to it
- `cores.py`     how many threads llama.cpp gets, and the spare core (both sides read it)
- `worker/`      the worker process, the only code that imports llama.cpp: load, the
                 scheduler's plans carried out (decode, KV reuse, speculation, images), JSON
                 mode's mask on the sampler chain; imports only the protocol, the cores and
                 `app.constrain`
- `local/`       the app side of the worker: the process handle (the only, deferred, importer of
                 `worker/`), the request router, `WorkerClient`, the local `ChatSession`, the
                 tokenizer, the memory estimate, the scripted test double
- `remote/`      OpenAI-compatible endpoints behind the same session protocol
- `turn/`        `run_turn`, the sans-I/O tool-turn loop and the tool turn, over any session
"""
