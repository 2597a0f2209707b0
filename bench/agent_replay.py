"""Agent replay, measured: agent clients resending whole conversations through the app's server,
with a restart halfway, beside llama.cpp's own llama-server (the reference), in one run.

Usage: python bench/agent_replay.py [--models smollm2,gemma] [--threads 2] [--ctx 8192]
                                    [--sessions 8] [--turns 6] [--restart-after 3] [--quick]

Workload, per model and server: `--sessions` agent sessions of `--turns` turns. Every request
resends the session's whole history: one shared system message (deterministic agent rules, then
10 OpenAI-style function tools as JSON; about 3,000 tokens, printed as each server counted the
first request), then the session's turns: a user message distinct per session and turn (about
60-150 tokens) and the server's answer, appended verbatim as the assistant message. Greedy,
`max_tokens` 24, streamed with `stream_options.include_usage`. Gemma 3 270M base's GGUF has no
chat template: both servers are given Gemma's (ours `--template gemma`, llama-server `--no-jinja
--chat-template gemma`; left to itself ours picks `completion`, which drops the system message).
The tools are text in the system message, not the `tools` field, which llama-server refuses
with a built-in template; so both servers read the same text.
Rounds: in round r every session sends its turn r at once, from a pool of one thread per
session (8 clients on 4 slots, as agents side by side); a round starts when the last one's
answers have all ended. After round `--restart-after` (default half the turns) the server is
stopped cleanly and a new one started on the same model; the sessions carry on. Each start is
warmed by one short unrelated request (not counted), so time to first token is prompt work.
Servers, one after the other, never at once (2 cores), with the same model, `--threads` and
context per slot (`--ctx`, checked against the model's trained context):
- ours: `python -m app serve --parallel 4`, its cache folder (`HARMONY_DESK_CACHE`) a temporary
  folder both its starts share, so what it keeps on disk survives the restart;
- llama-server: `-np 4` with its defaults (its RAM prompt cache and context checkpoints on).
Measured per server and phase (before the restart, after it): prompt tokens evaluated, each
request's `usage.prompt_tokens - usage.prompt_tokens_details.cached_tokens` (both servers send
both; llama-server's own `timings.prompt_n` beside, as a check); time to first token (sent to
the first content chunk) p50 / p95; wall time (the rounds', each from its first request sent to
its last stream ended; starts and stops excluded).
Checked before printing (no figures otherwise, exit status 1): every request's stream ended with
its finish reason, [DONE] and a usage with prompt and cached tokens, its answer was non-empty or
cut by its length, every session did every turn, and both servers read the same workload (their
prompt tokens within 5 % in each phase).
The last line: `agent replay: evaluated X.XX× llama-server, wall X.XX× llama-server, after
restart X.XX×`: ours over llama-server in evaluated prompt tokens, all rounds (goal ≤ 1.00); in
wall time, all rounds (goal ≤ 1.00); in evaluated prompt tokens after the restart (goal ≤ 0.10);
each the worst model's.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2 as httpx

from app.library.bundled import default_model_path, gemma_model_path
from bench.agent_replay_reply import MAX_TOKENS, Reply, fault, send
from bench.agent_workload import system_message, user_turn
from bench.llama_server import (
    Server,
    Unavailable,
    llama_server,
    machine_note,
    ours,
    percentile,
    running,
    say,
)

SLOTS = 4
GOALS = {"evaluated": 1.00, "wall": 1.00, "after restart": 0.10}
MODELS: dict[str, Callable[[], Path]] = {"smollm2": default_model_path, "gemma": gemma_model_path}
TEMPLATES = {"gemma": "gemma"}  # both servers', for a GGUF without one (see the docstring)
SAME_PROMPTS = 0.05  # the servers' prompt tokens may differ this much (their answers differ)
PHASES = ("before restart", "after restart")


class Failed(Exception):
    """The run did not do what it reports."""


@dataclass
class Session:
    """One agent's conversation so far, and the replies its turns got."""

    index: int
    messages: list[dict[str, str]]
    replies: list[Reply] = field(default_factory=list)

    def turn(self, client: httpx.Client, base: str, turn: int) -> Reply:
        self.messages.append(user_turn(self.index, turn))
        got = send(client, base, self.messages)
        self.messages.append({"role": "assistant", "content": got.text})  # verbatim
        self.replies.append(got)
        return got


@dataclass(frozen=True)
class Phase:
    """One server's rounds on one start of it."""

    model: str
    server: str
    phase: str
    replies: tuple[Reply, ...]
    wall_s: float

    @property
    def evaluated(self) -> int:
        return sum(r.evaluated for r in self.replies)

    @property
    def prompt(self) -> int:
        return sum(r.prompt_tokens for r in self.replies)

    @property
    def prompt_n(self) -> int | None:
        """The server's own count of prompt tokens evaluated (llama-server's timings)."""
        counts = [r.timings.get("prompt_n") for r in self.replies]
        return None if None in counts else sum(int(c or 0) for c in counts)

    def first_token_ms(self, q: float) -> float:
        return percentile([r.first_token_s for r in self.replies], q) * 1000


def one_round(
    server: Server, sessions: list[Session], turn: int, pool: ThreadPoolExecutor
) -> float:
    """Every session's turn `turn`, sent at once; the round's wall time, every reply checked."""
    with httpx.Client(timeout=900) as client:

        def ask(session: Session) -> Reply:
            return session.turn(client, server.base, turn)

        got = list(pool.map(ask, sessions))
    faults = [
        f"session {s.index + 1}, turn {turn + 1}: {said}"
        for s, r in zip(sessions, got, strict=True)
        if (said := fault(r))
    ]
    if faults:
        raise Failed(f"{server.name}: " + "; ".join(faults))
    return max(r.ended for r in got) - min(r.sent for r in got)


def warm(server: Server) -> None:
    with httpx.Client(timeout=900) as client:
        said = fault(send(client, server.base, [{"role": "user", "content": "Hello!"}]))
    if said:
        raise Failed(f"{server.name}'s warm-up request: {said}")


def run_phase(
    model: str, start: Callable[[], Server], sessions: list[Session], turns: range, phase: str
) -> Phase:
    """`turns` rounds on a new start of the server."""
    server = start()
    with running(server), ThreadPoolExecutor(len(sessions)) as pool:
        warm(server)
        walls = []
        for turn in turns:
            walls.append(one_round(server, sessions, turn, pool))
            evaluated = sum(s.replies[turn].evaluated for s in sessions)
            say(
                f"  {model}, {server.name}, round {turn + 1}: {walls[-1]:.1f} s,"
                f" {evaluated} prompt tokens evaluated"
            )
    replies = tuple(s.replies[t] for t in turns for s in sessions)
    return Phase(model, server.name, phase, replies, sum(walls))


def starters(
    model: str, path: Path, args: argparse.Namespace, cache: str
) -> dict[str, Callable[[], Server]]:
    """Each server's start, as a function that makes a new one."""
    same, keep = {"threads": args.threads, "ctx": args.ctx}, {"HARMONY_DESK_CACHE": cache}
    template = TEMPLATES.get(model)
    named = ("--template", template) if template else ()
    return {
        "ours": lambda: replace(ours(path, parallel=SLOTS, extra=named, **same), env=keep),
        "llama-server": lambda: llama_server(path, slots=SLOTS, template=template, **same),
    }


def trained_context(path: Path) -> int:
    import gguf

    fields = gguf.GGUFReader(path).fields
    arch = fields["general.architecture"].contents()
    return int(fields[f"{arch}.context_length"].contents())


def measure(model: str, args: argparse.Namespace) -> list[Phase]:
    """Both servers' phases on `model`, one server after the other."""
    if model not in MODELS:
        raise Failed(f"unknown model {model!r}; expected some of {', '.join(MODELS)}")
    path = Path(MODELS[model]())
    if (trained := trained_context(path)) < args.ctx:
        raise Failed(f"{model} was trained on {trained} tokens of context, under --ctx {args.ctx}")
    rounds = (range(args.restart_after), range(args.restart_after, args.turns))
    phases: list[Phase] = []
    with tempfile.TemporaryDirectory(prefix="agent-replay-cache-") as cache:
        for name, start in starters(model, path, args, cache).items():
            system = system_message()
            sessions = [Session(i, [system]) for i in range(args.sessions)]
            for phase, turns in zip(PHASES, rounds, strict=True):
                phases.append(run_phase(model, start, sessions, turns, phase))
            if undone := [s.index + 1 for s in sessions if len(s.replies) != args.turns]:
                raise Failed(f"{name}, {model}: sessions {undone} did not do {args.turns} turns")
    same_prompts(phases)
    return phases


def same_prompts(phases: list[Phase]) -> None:
    """Both servers read the same workload: their prompt tokens agree in every phase."""
    for mine, theirs in zip(phases[: len(PHASES)], phases[len(PHASES) :], strict=True):
        if abs(mine.prompt - theirs.prompt) > SAME_PROMPTS * theirs.prompt:
            raise Failed(
                f"{mine.model}, {mine.phase}: ours read {mine.prompt} prompt tokens,"
                f" llama-server {theirs.prompt}: not the same workload"
            )


def ratio(mine: float, theirs: float) -> float:
    return mine / theirs if theirs else (float("inf") if mine else 0.0)


def figures(phases: list[Phase], model: str) -> dict[str, float]:
    """Ours over llama-server on `model`: the three figures of the last line."""

    def total(server: str, what: str, only: str | None = None) -> float:
        return float(
            sum(
                getattr(p, what)
                for p in phases
                if (p.model, p.server) == (model, server) and only in (None, p.phase)
            )
        )

    return {
        "evaluated": ratio(total("ours", "evaluated"), total("llama-server", "evaluated")),
        "wall": ratio(total("ours", "wall_s"), total("llama-server", "wall_s")),
        "after restart": ratio(
            total("ours", "evaluated", PHASES[1]), total("llama-server", "evaluated", PHASES[1])
        ),
    }


def table(phases: list[Phase], model: str) -> None:
    mine = [p for p in phases if p.model == model]
    first = {p.server: p.replies[0].prompt_tokens for p in mine if p.phase == PHASES[0]}
    print(
        f"\n{model}: the first request's prompt (the shared system message and tool list,"
        f" and one user message): " + ", ".join(f"{s} {n}" for s, n in first.items()) + " tokens"
    )
    print(
        "| server | phase | requests | prompt tokens | evaluated | evaluated % |"
        " server's prompt_n | first token p50 / p95 ms | wall s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for p in mine:
        own = "—" if p.prompt_n is None else str(p.prompt_n)
        print(
            f"| {p.server} | {p.phase} | {len(p.replies)} | {p.prompt} | {p.evaluated} |"
            f" {100 * ratio(p.evaluated, p.prompt):.1f} | {own} |"
            f" {p.first_token_ms(50):.0f} / {p.first_token_ms(95):.0f} | {p.wall_s:.1f} |"
        )
    said = ", ".join(
        f"{k} {v:.2f}× (goal ≤ {GOALS[k]:.2f})" for k, v in figures(phases, model).items()
    )
    print(f"ours / llama-server: {said}")


def last_line(phases: list[Phase], models: list[str]) -> str:
    """The worst model's figures (see the module docstring)."""
    worst = {k: max(figures(phases, m)[k] for m in models) for k in GOALS}
    return (
        f"agent replay: evaluated {worst['evaluated']:.2f}× llama-server,"
        f" wall {worst['wall']:.2f}× llama-server, after restart {worst['after restart']:.2f}×"
    )


def options(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", default="smollm2,gemma")
    parser.add_argument("--threads", type=int, default=2, help="in each server")
    parser.add_argument("--ctx", type=int, default=8192, help="context per slot")
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--restart-after", type=int, help="round (default half the turns)")
    parser.add_argument(
        "--quick", action="store_true", help="3 sessions × 3 turns, restart after 2"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.sessions, args.turns, args.restart_after = 3, 3, 2
    args.restart_after = args.restart_after or args.turns // 2
    if not 0 < args.restart_after < args.turns:
        parser.error(f"--restart-after must be between 1 and {args.turns - 1}")
    args.models = args.models.split(",")
    return args


def main() -> int:
    args = options()
    note = machine_note()
    say(f"before the bench: {note}")
    try:
        phases = [p for model in args.models for p in measure(model, args)]
    except (Failed, Unavailable) as exc:
        say(f"no figures: {exc}")
        return 1
    print(f"before the bench: {note}")
    print(
        f"{args.sessions} agent sessions × {args.turns} turns, restart after round"
        f" {args.restart_after}; {SLOTS} slots of {args.ctx} tokens, {args.threads} thread(s)"
        f" per server; greedy, at most {MAX_TOKENS} tokens per answer; evaluated = prompt"
        " tokens - cached tokens, from each response's usage"
    )
    for model in args.models:
        table(phases, model)
    worst = {k: max(args.models, key=lambda m: figures(phases, m)[k]) for k in GOALS}
    print("\ngoals: " + ", ".join(f"{k} ≤ {v:.2f}× (worst: {worst[k]})" for k, v in GOALS.items()))
    print(last_line(phases, args.models))
    return 0


if __name__ == "__main__":
    sys.exit(main())
