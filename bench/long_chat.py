"""Long chat, measured: a scripted 200-turn conversation on SmolLM2 under each overflow policy
(stop, drop-middle, rolling, summarise), one policy after the other, in one run.

Usage: python bench/long_chat.py [--turns 200] [--ctx 4096] [--threads 2]
                                 [--policies stop,drop-middle,rolling,summarise] [--quick]

Workload, per policy: the bundled SmolLM2 (135M) in a fresh worker (`WorkerClient`: a
`--ctx`-token context, the app's load settings, its KV snapshots in a folder of its own, blank
at the start, so no state of an earlier run or policy is restored), one `ChatSession` (the
smollm2 template and its system message) and `--turns` turns through `run_turn`, as the
terminal chat drives them. The user's messages are the same on every run and policy
(`messages`): a greeting; a fact to remember in each of turns 3, 5, 7, 9 and 11 (turn 3: "My
locker code is 4-7-1-9."); questions, sums, small writing tasks and remarks about the day
(stating nothing a probe asks) in rotation; the last five turns ask the facts back, one each,
the last one turn 3's. Greedy (`temperature=0, seed=1`), answers of at most 48 tokens kept as
the model wrote them. Under summarise the last `Compacted` event's compaction is carried into
every later turn's request, as the window does, and each turn is asked to compact ahead
(`compact_ahead`, as the window and the terminal chat ask; `--no-ahead` leaves it out): a
compaction the next turn would need is made after the answer, and its prompt read once.
`--quick`: 30 turns, a 1,024-token context.
Measured per policy:
- turns completed (answered); a `TurnFailed` ends the policy's run. Stop by design fails once
  the conversation outgrows the context: its count is reported and left out of the goal;
- time to first token, p50 / p95 (nearest rank) over the last 50 turns answered: wall time
  from the turn's start (`run_turn` called) to its first visible answer text (to its end for
  an answer with none), alike for every policy, so a compacting turn includes the summary's
  generation; the worker's own `first_token_ms` of the answer is printed beside it. The time a
  turn took after its answer ended (a compaction made ahead, and its prompt read) is in no
  TTFT: it is printed apart (mean and longest), the wait of a person who sends the next message
  before it ends;
- prompt tokens evaluated (`Timings.prompt_evaluated`; not those reused from the live cache or
  restored from a snapshot), mean per turn and total, counted at the worker for every
  generation: under summarise the summaries' prompts and the compacted prompts read ahead too
  (also said apart);
- under summarise, compactions made and failed (a `Compacting` with no `Compacted`);
- recall: of the five facts asked back, how many answers say them (one of the fact's spellings,
  case-insensitive), and whether the last said turn 3's. Reported, never asserted: a 135M
  model's recall is weak, and only a summary can keep turn 3 in the prompt by turn 200.
Checked before printing (no figures otherwise, exit status 1): every turn a policy reports
yielded exactly one `GenerationDone`, the worker was asked one generation per turn, one per
compaction tried and one per compacted prompt read ahead, and every answer was non-empty or
cut by its length.
The thread count is printed with the load average before the run; what else shares the CPU
during it cannot be known here: the figures mean something on a quiet machine only.
The last line: `long chat: summarise TTFT p95 X.XX× rolling, evaluated X.XX× rolling, N/M
turns` (summarise over rolling, same run: p95; total prompt tokens evaluated; N: the fewest
turns a policy other than stop completed, of M asked; goals: ≤ 1.50×, M/M).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.domain.budget import Overflow
from app.domain.compaction import Compaction
from app.domain.events import (
    Compacted,
    Compacting,
    ContentDelta,
    FinishReason,
    GenerationDone,
    GenerationEvent,
    ParseIssue,
    Timings,
    TurnFailed,
)
from app.domain.messages import user_message
from app.domain.visibility import shows_text
from app.engine.local.client import WorkerClient
from app.engine.local.session import ChatSession
from app.engine.protocol import SnapshotSettings, Specials
from app.engine.request import GenerationRequest, SamplingAsk
from app.engine.turn.run import TurnRequest, run_turn
from app.library.bundled import default_model_path
from app.templates.registry import get_template
from bench.llama_server import machine_note, percentile, say
from bench.long_chat_script import FACT_TURNS, FACTS, messages, probe_of, recalled

MAX_TOKENS = 48
GREEDY = SamplingAsk(temperature=0.0, seed=1)
LAST = 50  # the turns time to first token is taken over
GOAL_P95 = 1.50
POLICIES = {p.value: p for p in Overflow}


# --- the run -----------------------------------------------------------------------------------


class Failed(Exception):
    """The run did not do what it reports."""


class Metered:
    """The worker, with every generation asked of it kept (its timings; None: it failed): the
    summaries' too, whose events the turn does not pass on."""

    def __init__(self, client: WorkerClient) -> None:
        self.client, self.info = client, client.info  # loaded already
        self.done: list[Timings | None] = []

    def generate(self, prompt_ids: Sequence[int], **asked: Any) -> Iterator[GenerationEvent]:
        self.done.append(None)
        for event in self.client.generate(prompt_ids, **asked):
            if isinstance(event, GenerationDone):
                self.done[-1] = event.timings
            yield event

    def tokenize(self, text: str, special: bool) -> list[int]:
        return self.client.tokenize(text, special)

    def token_table(self) -> list[bytes]:
        return self.client.token_table()

    def special_bytes(self, ids: Sequence[int]) -> list[bytes]:
        return self.client.special_bytes(ids)

    def specials(self) -> Specials:
        return self.client.specials()


@dataclass
class Turn:
    """One answered turn, as measured."""

    wall_ms: float  # the turn's start to its first visible answer text
    after_ms: float  # the answer's end to the turn's end (a compaction made ahead)
    engine_ms: float  # the answer's first_token_ms, as the worker timed it
    evaluated: int  # prompt tokens the worker evaluated for the turn (its summary's included)
    summary_evaluated: int  # of those, the summaries' and the compacted prompt read ahead
    answers: int  # GenerationDone events the turn yielded
    generations: int  # generations asked of the worker for it (a summary's that failed too)
    compacting: int  # compactions tried
    warmed: int  # compacted prompts read ahead
    ahead: bool  # the compaction was tried after the answer
    compacted: Compaction | None
    not_compacted: str  # why a compaction tried made none
    answer: str
    reason: FinishReason


@dataclass
class Run:
    """One policy's conversation."""

    policy: Overflow
    asked: int
    turns: list[Turn] = field(default_factory=list)
    failed: str = ""  # why the run ended early

    def ttft(self, q: float, engine: bool = False) -> float:
        """The `q`th percentile over the last `LAST` turns."""
        return percentile([t.engine_ms if engine else t.wall_ms for t in self.turns[-LAST:]], q)

    @property
    def evaluated(self) -> int:
        return sum(t.evaluated for t in self.turns)

    @property
    def recall(self) -> list[bool]:
        """Whether each probe turn answered said its fact (probes not reached left out)."""
        return [
            recalled(fact, t.answer)
            for n, t in enumerate(self.turns, 1)
            if (fact := probe_of(n, self.asked)) is not None
        ]


def one_turn(
    session: ChatSession, metered: Metered, asked: GenerationRequest, text: str
) -> Turn | TurnFailed:
    """One user message answered through `run_turn`, measured."""
    before = len(metered.done)
    start = time.perf_counter()
    first, said, done = 0.0, [], []
    compacting, made, why, answered, answer_at, later = 0, None, "", 0.0, -1, False
    for event in run_turn(session, TurnRequest(asked, message=user_message(text))):
        if isinstance(event, ContentDelta) and shows_text(event.lane) and event.text:
            first = first or time.perf_counter()
            said.append(event.text)
        elif isinstance(event, GenerationDone):
            done.append(event)
            answered, answer_at = time.perf_counter(), len(metered.done) - 1
        elif isinstance(event, Compacting):
            compacting, later = compacting + 1, later or bool(done)
        elif isinstance(event, Compacted):
            made = event.compaction
        elif isinstance(event, ParseIssue) and compacting and made is None:
            why = why or event.message  # the compaction's: it says why it made none
        elif isinstance(event, TurnFailed):
            return event
    if not done:
        raise Failed(f"a turn yielded no GenerationDone: {text!r}")
    ended = time.perf_counter()
    kept = metered.done[before:]
    others = [t for n, t in enumerate(kept, before) if n != answer_at and t is not None]
    warmed = 1 if later and made is not None and session.capabilities.keeps_prompt else 0
    return Turn(
        wall_ms=((first or ended) - start) * 1000,
        after_ms=(ended - answered) * 1000,
        engine_ms=done[-1].timings.first_token_ms,
        evaluated=sum(t.prompt_evaluated for t in [*others, done[-1].timings]),
        summary_evaluated=sum(t.prompt_evaluated for t in others),
        answers=len(done),
        generations=len(kept),
        compacting=compacting,
        warmed=warmed,
        ahead=later,
        compacted=made,
        not_compacted=why,
        answer="".join(said),
        reason=done[-1].reason,
    )


def converse(policy: Overflow, args: argparse.Namespace, script: list[str]) -> Run:
    """`script` asked in one chat under `policy`, in a worker of its own."""
    run = Run(policy, len(script))
    with WorkerClient() as client, tempfile.TemporaryDirectory() as kept:
        snapshots = replace(SnapshotSettings.of(2), folder=kept)  # the app's, in a blank folder
        client.load(
            default_model_path(), n_ctx=args.ctx, n_threads=args.threads, snapshots=snapshots
        )
        metered = Metered(client)
        session = ChatSession(metered, get_template("smollm2"), max_tokens=MAX_TOKENS)
        compaction: Compaction | None = None
        for n, text in enumerate(script, 1):
            asked = GenerationRequest(
                max_tokens=MAX_TOKENS,
                overflow=policy,
                sampling=GREEDY,
                compaction=compaction,
                compact_ahead=args.ahead,
            )
            got = one_turn(session, metered, asked, text)
            if isinstance(got, TurnFailed):
                run.failed = f"turn {n} failed ({got.code.value}): {got.reason}"
                break
            run.turns.append(got)
            compaction = got.compacted or compaction
            if n % 25 == 0:
                say(f"  {policy.value}: {n}/{len(script)} turns")
    return run


def check(run: Run) -> None:
    """Raise `Failed` unless `run` did what it reports (see the module docstring)."""
    for n, t in enumerate(run.turns, 1):
        where = f"{run.policy.value}, turn {n}"
        if t.answers != 1:
            raise Failed(f"{where}: {t.answers} GenerationDone events for one answer")
        if t.generations != 1 + t.compacting + t.warmed:
            said = f"{t.compacting} compactions and {t.warmed} read ahead"
            raise Failed(f"{where}: {t.generations} generations for {said}")
        if not t.answer.strip() and t.reason is not FinishReason.LENGTH:
            raise Failed(f"{where}: an empty answer ended by {t.reason.value}")


def row(run: Run) -> str:
    """One policy's figures in one line."""
    n = len(run.turns)
    said = f"{run.policy.value:11} {n}/{run.asked} turns"
    if run.failed:
        said += f" (then {run.failed[:120]})"
    if not n:
        return said
    first = max(1, n - LAST + 1)
    said += (
        f"; TTFT turns {first}-{n} p50 {run.ttft(50):.0f} ms p95 {run.ttft(95):.0f} ms"
        f" (worker {run.ttft(50, True):.0f} / {run.ttft(95, True):.0f} ms)"
        f"; evaluated {run.evaluated / n:,.0f}/turn, {run.evaluated:,} in all"
    )
    if run.policy is Overflow.SUMMARISE:
        made = sum(t.compacted is not None for t in run.turns)
        tried = sum(t.compacting for t in run.turns)
        summaries = sum(t.summary_evaluated for t in run.turns)
        after = [t.after_ms for t in run.turns if t.ahead]
        said += f" (summaries and read ahead {summaries:,})"
        said += f"; {made} compactions, {tried - made} failed"
        if after:
            said += (
                f"; {len(after)} made after the answer, {sum(after) / len(after) / 1000:.1f} s"
                f" each, longest {max(after) / 1000:.1f} s (in no TTFT)"
            )
        said += next(
            (f" (first: {t.not_compacted[:160]})" for t in run.turns if t.not_compacted), ""
        )
    return said + f"; recall {recall(run)}"


def recall(run: Run) -> str:
    """The probes' answers that said their facts, in words."""
    got = run.recall
    if len(run.turns) < run.asked:  # the last probe not reached
        return f"{sum(got)}/{len(got)} probes reached" if got else "n/a (no probe reached)"
    return f"{sum(got)}/{len(FACTS)} facts (turn 3's, asked last: {'yes' if got[-1] else 'no'})"


def goal_line(runs: dict[Overflow, Run], asked: int) -> str:
    """The last line (see the module docstring)."""
    rolling, summarise = runs.get(Overflow.ROLLING), runs.get(Overflow.SUMMARISE)
    p95 = evaluated = "n/a"
    if rolling and summarise and rolling.turns and summarise.turns:
        p95 = f"{summarise.ttft(95) / rolling.ttft(95):.2f}×"
        evaluated = f"{summarise.evaluated / rolling.evaluated:.2f}×"
    goal = [len(r.turns) for p, r in runs.items() if p is not Overflow.STOP]
    fewest = min(goal) if goal else 0
    return (
        f"long chat: summarise TTFT p95 {p95} rolling, evaluated {evaluated} rolling,"
        f" {fewest}/{asked} turns (goals: p95 ≤ {GOAL_P95:.2f}×, {asked}/{asked}; stop left out)"
    )


def options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--quick", action="store_true", help="30 turns, a 1,024-token context")
    parser.add_argument(
        "--no-ahead", dest="ahead", action="store_false", help="compact only before answers"
    )
    args = parser.parse_args()
    if args.quick:
        args.turns, args.ctx = 30, 1024
    if args.turns < FACT_TURNS[-1] + len(FACTS):
        parser.error(f"the script needs at least {FACT_TURNS[-1] + len(FACTS)} turns")
    unknown = [p for p in args.policies.split(",") if p not in POLICIES]
    if unknown:
        parser.error(f"unknown policies {unknown}; choose among {', '.join(POLICIES)}")
    return args


def main() -> int:
    args = options()
    script = messages(args.turns)
    note = machine_note()
    runs: dict[Overflow, Run] = {}
    try:
        for name in args.policies.split(","):
            say(f"long chat: {name}, {args.turns} turns")
            runs[POLICIES[name]] = run = converse(POLICIES[name], args, script)
            check(run)
    except Failed as exc:
        print(f"no figures: {exc}")
        return 1
    print(
        f"SmolLM2 135M, {args.turns} turns, {args.ctx:,}-token context, {args.threads} thread(s),"
        f" answers ≤ {MAX_TOKENS} tokens, greedy; before the run: {note}."
        " The CPU is shared with whatever else ran: figures mean something on a quiet machine only."
    )
    print(
        "TTFT: wall time from the turn's start to its first visible answer text (a compacting"
        f" turn's summary included), over the last {LAST} turns answered; evaluated: prompt"
        " tokens the worker evaluated, every generation counted"
    )
    for run in runs.values():
        print(row(run))
    print(goal_line(runs, args.turns))
    return 0


if __name__ == "__main__":
    sys.exit(main())
