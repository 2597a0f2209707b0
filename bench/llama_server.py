"""The servers the serving benches compare, and one streamed chat request measured against them.

- llama.cpp's own `llama-server`, of the llama.cpp vendored in llama-cpp-python's sdist (the
  version the app runs), found in `~/.cache/harmony-desk-bench/llama.cpp/build/bin/` or, when
  missing, built there: the sdist fetched with `pip download --no-binary :all: --no-deps`, its
  `vendor/llama.cpp` copied out and built with CMake and Ninja (minutes; said on stderr, logged
  to `build.log`, which ends with `done <exit status>`). One build at a time: a lock file, and a
  build another process started (a log without its `done` line, written to lately) is waited for.
- The app's own `serve`, started with a temporary config folder, so that the choices a bench
  passes (`--speculative` is remembered per model) never change the user's.

Both start on a free loopback port, are waited for until they answer, and are stopped (a server
that exits first raises `Unavailable` with the end of its log). `stream` sends one streamed chat
completion and keeps what it saw (`take` reads each line of it); `problem` says why a stream
does not count (or None).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2 as httpx

from bench.llama_server_build import CACHE, Unavailable, binary, say

ROOT = Path(__file__).resolve().parent.parent
STARTING_S = 300  # a server must answer within this


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A server process on a loopback port: `base` is its URL, without `/v1`."""

    name: str
    argv: list[str]
    port: int
    ready: str  # the path that answers 200 once the model is loaded
    stop_signal: int = signal.SIGTERM
    env: dict[str, str] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def running(server: Server) -> Iterator[Server]:
    """`server` started and answering; stopped on the way out, whatever happened."""
    with tempfile.TemporaryDirectory() as folder:
        log_path = Path(folder) / "server.log"
        with open(log_path, "wb") as log:
            env = {**os.environ, "HARMONY_DESK_CONFIG": str(Path(folder) / "config"), **server.env}
            proc = subprocess.Popen(
                server.argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env
            )
            try:
                _await(server, proc, log_path)
                yield server
            finally:
                proc.send_signal(server.stop_signal)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def _await(server: Server, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTING_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-1500:]
            raise Unavailable(f"{server.name} exited ({proc.returncode}) on starting:\n{tail}")
        try:
            if httpx.get(server.base + server.ready, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise Unavailable(f"{server.name} did not answer {server.ready} in {STARTING_S} s")


def add_flash_attn(parser: argparse.ArgumentParser) -> None:
    """The benches' `--flash-attn`: the same in the app's server and llama-server."""
    parser.add_argument(
        "--flash-attn",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="flash attention in both servers (default off, as the app loads a model)",
    )


def llama_server(
    model: str | Path,
    *,
    threads: int,
    slots: int,
    ctx: int,
    spec: Sequence[str] = (),
    template: str | None = None,
    flash_attn: bool = False,
) -> Server:
    """llama-server on `model`: `ctx` tokens per slot (it divides `-c` among its slots), weight
    repacking off (it crashes on these CPUs, as the app's worker knows), no web UI; `spec` is
    more flags, e.g. `("--spec-type", "ngram-simple")`; `template` names one of llama.cpp's
    built-in chat templates, for a model whose GGUF has none (Gemma 3 270M base: `gemma`, as
    the app picks), where llama-server would fall back to ChatML."""
    port = free_port()
    named = ("--no-jinja", "--chat-template", template) if template else ()
    argv = [
        str(binary()),
        "-m",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-t",
        str(threads),
        "-tb",
        str(threads),
        "-np",
        str(slots),
        "-c",
        str(ctx * slots),
        "--no-repack",
        "--no-webui",
        "-fa",
        "on" if flash_attn else "off",
        *named,
        *spec,
    ]
    return Server("llama-server", argv, port, "/health")


def ours(
    model: str | Path,
    *,
    threads: int,
    parallel: int,
    ctx: int,
    speculative: str = "off",
    flash_attn: bool = False,
    extra: Sequence[str] = (),
) -> Server:
    """The app's `serve` on `model`: every one of `parallel` answers with `ctx` tokens; flash
    attention as `flash_attn` (llama-server is given the same: its own default is auto); no
    repetition penalty, as llama-server samples by default (SmolLM2's template has 1.1, which
    also moves the scores a greedy choice is made on away from the log-probabilities sent);
    `extra` is more arguments (`--projector FILE`)."""
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "app",
        "serve",
        "--model",
        str(model),
        "--port",
        str(port),
        "--threads",
        str(threads),
        "--parallel",
        str(parallel),
        "--ctx",
        str(ctx),
        "--speculative",
        speculative,
        "--flash-attn" if flash_attn else "--no-flash-attn",
        "--repeat-penalty",
        "1.0",
        *extra,
    ]
    return Server("ours", argv, port, "/v1/models", signal.SIGINT)  # Ctrl+C stops its worker


@dataclass
class Streamed:
    """What one streamed chat completion delivered, timed by its client (perf_counter s)."""

    sent: float = 0.0
    first: float = 0.0  # the first content (or reasoning) chunk; 0 when none came
    ended: float = 0.0
    chunks: int = 0  # chunks that carried text
    text: str = ""
    finish: str | None = None
    done: bool = False  # `data: [DONE]` came
    usage: dict[str, Any] = field(default_factory=dict)  # the last chunk's that carried one
    timings: dict[str, Any] = field(default_factory=dict)  # llama-server's, or ours' if sent
    error: str | None = None

    @property
    def tokens(self) -> int:
        """The usage's completion_tokens; -1 when the stream carried no usage."""
        return int(self.usage.get("completion_tokens", -1))

    @property
    def prompt_tokens(self) -> int:
        return int(self.usage.get("prompt_tokens", -1))

    @property
    def cached_tokens(self) -> int:
        return int((self.usage.get("prompt_tokens_details") or {}).get("cached_tokens", -1))

    @property
    def evaluated(self) -> int:
        return self.prompt_tokens - self.cached_tokens

    @property
    def first_token_s(self) -> float:
        """To the first text chunk; to the end for an answer cut before it said anything."""
        return (self.first or self.ended) - self.sent

    @property
    def decode_rate(self) -> float:
        """Tokens per second after the first, as the client saw them come."""
        took = self.ended - self.first
        return (self.tokens - 1) / took if self.tokens > 1 and took > 0 else 0.0


def stream(
    client: httpx.Client, base: str, prompt: str | list[dict[str, str]], max_tokens: int
) -> Streamed:
    """One greedy (`temperature` 0, `seed` 1) chat completion of `prompt` (a user message, or
    the messages), streamed with usage, on a connection of its own (llama-server closes
    kept-alive connections after a few requests, and a request sent on one closing fails);
    failures are kept, not raised (`problem` reports them)."""
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
    body = {
        "model": "m",
        "messages": messages,
        "max_tokens": max_tokens,
        "temperature": 0,
        "seed": 1,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    url, close = f"{base}/v1/chat/completions", {"Connection": "close"}  # (see the docstring)
    got = Streamed(sent=time.perf_counter())
    try:
        with client.stream("POST", url, json=body, headers=close) as response:
            if response.status_code != 200:
                got.error = f"HTTP {response.status_code}: {response.read()[:300]!r}"
            else:
                for line in response.iter_lines():
                    take(got, line)
    except (httpx.HTTPError, ValueError) as exc:  # ValueError: a chunk that is not JSON
        got.error = f"{type(exc).__name__}: {exc}"
    got.ended = time.perf_counter()
    return got


def take(got: Streamed, line: str) -> None:
    """One line of the event stream into `got`: the text (content and reasoning), the finish
    reason, the usage, llama-server's `timings`, an error chunk."""
    if not line.startswith("data: "):
        return
    data = line.removeprefix("data: ")
    if data == "[DONE]":
        got.done = True
        return
    chunk = json.loads(data)
    if "error" in chunk:
        got.error = str(chunk["error"])[:300]
    got.usage = chunk.get("usage") or got.usage
    got.timings |= chunk.get("timings") or {}
    for choice in chunk.get("choices") or []:
        delta = choice.get("delta") or {}
        said = (delta.get("content") or "") + (delta.get("reasoning_content") or "")
        if said:
            got.first = got.first or time.perf_counter()
            got.chunks += 1
            got.text += said
        got.finish = choice.get("finish_reason") or got.finish


def problem(got: Streamed, max_tokens: int) -> str | None:
    """Why `got` is not a whole answer whose tokens were counted, or None."""
    if got.error:
        return f"failed: {got.error}"
    if not got.done or got.finish is None:
        return "the stream ended before its finish reason and [DONE]"
    if got.tokens < 1 or not got.first:
        return f"no tokens counted (usage {got.tokens}, {got.chunks} text chunks)"
    if got.tokens > max_tokens or (got.finish == "length" and got.tokens != max_tokens):
        return f"{got.tokens} tokens counted for a budget of {max_tokens} ({got.finish})"
    if got.chunks > got.tokens + 1:  # + 1: text held back (a stop's prefix) goes out at the end
        return f"{got.chunks} text chunks for {got.tokens} tokens counted"
    predicted = got.timings.get("predicted_n", got.tokens)
    if predicted != got.tokens:
        return f"the server's timings say {predicted} tokens, its usage {got.tokens}"
    return None


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank `q`-th percentile (0 < q <= 100) of `values`."""
    ranked = sorted(values)
    return ranked[max(1, math.ceil(len(ranked) * q / 100)) - 1]


def machine_note(sample_s: float = 1.0) -> str:
    """What else ran before the bench: the load average, and the processes busy over a second."""
    one, five, _ = os.getloadavg()
    before = _cpu_ticks()
    time.sleep(sample_s)
    hz = os.sysconf("SC_CLK_TCK")
    busy = sorted(
        ((ticks - before[pid][1]) * 100 / hz / sample_s, name)
        for pid, (name, ticks) in _cpu_ticks().items()
        if pid in before and pid != os.getpid()
    )
    named = ", ".join(f"{name} {pct:.0f}%" for pct, name in busy[::-1][:4] if pct >= 5)
    return (
        f"load average {one:.2f} (5 min {five:.2f}) on {os.cpu_count()} cores;"
        f" busy over {sample_s:.0f} s: {named or 'nothing'}"
    )


def _cpu_ticks() -> dict[int, tuple[str, int]]:
    """Each process's name and CPU time so far (user + system, clock ticks), from /proc."""
    ticks = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # it ended meanwhile
            continue
        fields = text[text.rindex(")") + 2 :].split()  # from the state, the 3rd field, on
        ticks[int(stat.parent.name)] = (
            text[text.index("(") + 1 : text.rindex(")")],
            int(fields[11]) + int(fields[12]),
        )
    return ticks


__all__ = [
    "CACHE",
    "ROOT",
    "STARTING_S",
    "Server",
    "Streamed",
    "Unavailable",
    "add_flash_attn",
    "free_port",
    "llama_server",
    "machine_note",
    "ours",
    "percentile",
    "problem",
    "running",
    "say",
    "stream",
    "take",
]
