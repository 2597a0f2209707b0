"""A small real WebAssembly module for the compiled-runtime cache's tests.

`compile_small(folder)` compiles a few functions with the same wasmtime the python tool uses,
writes the native code under a fresh name (`module-<id>.cwasm`, so a file left from another
key is told apart) and adds one line to `compiles.log`: a test counts compiles by its lines.
Its one argument is the folder, as the cache's compile child passes it; `COMPILE_PAUSE_S` in
the environment holds the compile open that long, so two processes overlap for certain.
`python -m tests.tools.runtime_fixture FOLDER KEY` prepares the folder for that key and prints
`compiled` or `found` (the cross-process tests run it).
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

from app.tools.sandbox_runtime import CompiledCache, CompileSpec

WAT = """(module
  (func $fib (export "fib") (param i32) (result i32)
    (if (result i32) (i32.lt_u (local.get 0) (i32.const 2))
      (then (local.get 0))
      (else (i32.add (call $fib (i32.sub (local.get 0) (i32.const 1)))
                     (call $fib (i32.sub (local.get 0) (i32.const 2)))))))
  (memory (export "memory") 1))"""


def compile_small(folder: str) -> None:
    import wasmtime

    pause = float(os.environ.get("COMPILE_PAUSE_S", "0"))
    if pause:
        time.sleep(pause)
    engine = wasmtime.Engine()
    module = wasmtime.Module(engine, WAT)
    store = wasmtime.Store(engine)
    fib = wasmtime.Instance(store, module, []).exports(store)["fib"]
    assert fib(store, 10) == 55  # type: ignore[operator]  # the compiled code runs
    target = Path(folder) / f"module-{uuid.uuid4().hex[:8]}.cwasm"
    target.write_bytes(module.serialize())
    with (Path(folder) / "compiles.log").open("a") as log:
        log.write(f"{os.getpid()}\n")


def compile_greedy(folder: str) -> None:
    """A compile that wants far more memory than its cap allows."""
    hog = bytearray(1024 * 1024 * 1024)
    hog[::4096] = b"x" * len(hog[::4096])


def small_spec(folder: Path, version: str = "1", memory_bytes: int = 1 << 30) -> CompileSpec:
    return CompileSpec(folder, {"module": "small", "version": version}, compile_small, memory_bytes)


def compiles(folder: Path) -> list[str]:
    log = folder / "compiles.log"
    return log.read_text().split() if log.exists() else []


if __name__ == "__main__":
    from tests.tools.runtime_fixture import small_spec as spec  # pickled by its module's name

    cache = CompiledCache(spec(Path(sys.argv[1]), sys.argv[2]))
    print("compiled" if cache.prepare() else "found", flush=True)
