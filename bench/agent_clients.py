"""Agent clients, measured: real coding agents talking to the app's server and to llama.cpp's own
llama-server on the same GGUF, three turns each, in one run.

Usage: python bench/agent_clients.py [--clients claude-code,codex,...] [--quick] [--record]
                                     [--threads 2] [--turn-timeout SECONDS] [--keep DIR]
                                     [--servers ours|llama-server]

Clients (`bench/agent_clients_kit.py`, installed from npm and PyPI into
`~/.cache/harmony-desk-bench/clients/` when missing): Claude Code (Anthropic Messages API),
Codex (Responses API), OpenCode, Qwen Code, aider and llm (chat completions). Each runs, on each
server in turn (never both at once; a fresh server per client), a session of three turns:
"Read hello.py and tell me what it prints.", "Add a docstring to hello.py.", "What did you
change?", in a scratch git repository, each later turn continuing the session (the client's
own `--continue`, `resume --last`, `-c`, `--restore-chat-history`), each under
`--turn-timeout` seconds of wall time (by default the model's `TURN_SECONDS`: 600 for SmolLM2,
which on 2 shared cores reads a first prompt of 21,000 tokens at 50-100 tokens/s; 2,400 for
Qwen2.5-Coder-1.5B, at about 20). Codex, OpenCode and Qwen Code send prompts of 9,000-23,000
tokens and run on SmolLM2-135M extended by YaRN x4 to 32,768 tokens of context (`smollm2-32k`:
ours `--rope-scale 4`, llama-server `--rope-scaling yarn --rope-scale 4 --yarn-orig-ctx 8192`),
not on Gemma 3 270M: the registry's only model trained for 32k is a base model that never ends
its turns, so no agent's turn could be judged on it, while SmolLM2 so extended reads such
prompts and ends Codex's, OpenCode's and Qwen Code's turns. Claude Code runs on
Qwen2.5-Coder-1.5B-Instruct from PyPI (`qwen2.5-coder-1.5b`, `bench/registry_models.py`; its
trained 32,768 tokens, its own template on both servers): on Claude Code's prompt SmolLM2
repeats itself to the cap on both servers at the model card's sampling, as it does on ours with
that prompt cut to 3,200 tokens by `--tools Read,Edit,Bash --disable-slash-commands`, so on it
Claude Code failed on both servers alike, for the model's sake, not a server's; the Qwen model
follows the prompt, ends its answers and calls Claude Code's tools. aider and llm run on SmolLM2
with its trained 8,192 (`bench/agent_clients_servers.py`); answers are capped at
128 tokens by both servers alike (the clients that ask for a cap of their own are set to ask
for that one), 1,024 for Claude Code and Codex, which fail a turn whose answer a cap cut, as
their APIs define a cut (`agent_clients_kit.CUT_IS_AN_ERROR`). The model is tiny: what counts
is that requests are taken and answered and that the prefix is reused, not the answers.

Measured: between client and server sits a recording proxy (`bench/agent_clients_proxy.py`)
that passes every byte through and reads each response's usage. Prompt tokens of a request,
in all and evaluated (= in all - read from the cache), as each API says them, the same way for
both servers (both send these fields; checked on llama.cpp's `server-task.cpp` and ours):
chat completions `usage.prompt_tokens` and `usage.prompt_tokens_details.cached_tokens`;
Responses `usage.input_tokens` and `usage.input_tokens_details.cached_tokens`; Messages
`usage.input_tokens` (+ `cache_creation_input_tokens`) evaluated, plus
`cache_read_input_tokens` in all. A chat stream asked without `stream_options.include_usage`
(aider's) carries no usage: then llama-server's `timings` (`prompt_n` evaluated, `cache_n`
cached) and ours' request log line (`prompt N (evaluated E, ...)`, paired with the requests in
the order they ended) say it. A turn's figures are its answered requests' sums (`?` after
them: one had none, as a request cut off by a time-out); its seconds the client process's
wall time. A turn is completed when the client exits 0 in time having had at least one model
request answered 200, and, for Codex, none of its answers reached the cap (`CUT_IS_AN_ERROR`;
counted from each answer's usage, the same on both servers): Codex fails a turn whose answer
the server says was cut, and llama-server's Responses API says `completed` for every answer
(`server-task.cpp`), so Codex takes a cut answer there that it refuses from ours, which says
`incomplete` as OpenAI's API does (both servers' Messages API say `max_tokens`, and Claude
Code continues a cut answer itself, up to three times).
An HTTP error: a POST answered 400 or over (or a stream that ended in an
error event), or any 5xx; a GET or HEAD answered 4xx (a probe, such as Claude Code's `HEAD /`)
is listed, not counted. A client's first error is its first HTTP error, else why its first
unfinished turn stopped (time-out, exit status, with the end of its output); a session stops
at a turn that did not complete.
Checked before printing (exit status 1 and no figures otherwise): every session ran its turns
or recorded its first error, and every completed turn's model requests were seen by the proxy,
read to their end, each with its prompt figures.
The last line: `agent clients: K/N clients work (llama-server K'/N), turn-3 evaluated X of Y
tokens (llama-server X'), seconds per turn X.XX× llama-server`: K clients did every turn on
ours without an HTTP error (K' on llama-server); X and Y are ours' evaluated and total prompt
tokens of the last turn, X' llama-server's evaluated, summed over the clients that did that
turn on both; the seconds ratio is ours' over llama-server's turn seconds, summed over the
turns both completed (goals: K = N, X ≤ X', ratio ≤ 1.0).
`--keep DIR` writes every exchange of every session to `DIR/<client>-<server>.jsonl` (turn,
method, path, status, seconds to the answer's end, the proxy's error, the request's body and the
response's text), to read side by side what each server answered, and ours' log (each
request's figures and duration) beside it as `DIR/<client>-ours.log`.
`--servers NAME` runs the clients on that server alone, to look into one (the table, no last
line: the last line compares the two).
`--model NAME` runs every client chosen on that model instead of its own (`MODELS` of
`bench/agent_clients_servers.py`), each turn under that model's `TURN_SECONDS` unless
`--turn-timeout` is given.
`--record` writes each client's first request on ours (`bench/agent_clients_record.py`) to
`tests/fixtures/agent_requests/`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.agent_clients_kit import (
    AGENTS,
    CUT_IS_AN_ERROR,
    TURNS,
    Agent,
    Unusable,
    cap_answers,
    configure,
    environment,
    install,
    run_turn,
    scratch_repo,
)
from bench.agent_clients_proxy import Recorder, proxying
from bench.agent_clients_servers import (
    CONTEXTS,
    MAX_TOKENS,
    MODELS,
    SERVERS,
    TURN_SECONDS,
    fill_from_log,
    model_path,
    starter,
)
from bench.agent_clients_session import Failed, Session, Turn
from bench.llama_server import Unavailable, machine_note, running, say


def run_session(agent: Agent, server_name: str, args: argparse.Namespace) -> Session:
    """`agent`'s turns against a fresh `server_name` on its model, through a recording proxy."""
    session = Session(agent.name, server_name)
    with tempfile.TemporaryDirectory(prefix=f"agent-{agent.name}-") as tmp:
        folder = Path(tmp)
        server = starter(server_name, agent.model, args.threads, folder, agent.answers)()
        recorder = Recorder()
        with running(server), proxying(server.base, recorder) as base:
            env = environment(agent, folder / "home")
            try:
                configure(agent, env, base, model_path(agent.model), CONTEXTS[agent.model])
                cap_answers(agent, Path(env["HOME"]), agent.answers or MAX_TOKENS)
            except Unusable as exc:
                session.setup_error = str(exc)
                return session
            repo = scratch_repo(folder / "repo", env)
            limit = args.turn_timeout or TURN_SECONDS[agent.model]
            for index, prompt in enumerate(TURNS[: args.turns]):
                start = len(recorder)
                ran = run_turn(agent.argv(index, prompt), repo, env, limit)
                turn = Turn.ended(index, ran, recorder.since(start), agent.answers)
                session.turns.append(turn)
                say(
                    f"  {agent.name} on {server_name}, turn {index + 1}: {ran.seconds:.1f} s,"
                    f" {len(turn.exchanges)} requests, evaluated/total {turn.said()},"
                    f" {'done' if turn.completed else turn.stopped}"
                )
                if not turn.completed:
                    break
        if server_name == "ours":
            fill_from_log(folder, recorder.since(0))
        if args.keep is not None:
            keep(session, args.keep, folder / "data" / "logs" / "harmony-desk.log")
        if args.record and server_name == "ours" and session.turns:
            from bench.agent_clients_record import record

            record(agent, session.turns[0].exchanges, folder, base)
    return session


def keep(session: Session, folder: Path, log: Path) -> None:
    """Every exchange of `session` as JSON lines in `folder`, and the server's `log` beside
    them when it wrote one (see `--keep`)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(
            {
                "turn": t.index + 1,
                "method": x.method,
                "path": x.path,
                "status": x.status,
                "seconds": round(x.finished - x.started, 1) if x.finished else None,
                "error": x.error,
                "request": x.json_body(),
                "answer": x.answer,
            }
        )
        for t in session.turns
        for x in t.exchanges
    ]
    name = f"{session.client}-{session.server}"
    (folder / f"{name}.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    if log.exists():
        shutil.copyfile(log, folder / f"{name}.log")


def check(sessions: list[Session], turns: int) -> None:
    """The run did what it reports (see the module docstring), or `Failed`."""
    for s in sessions:
        who = f"{s.client} on {s.server}"
        if len(s.turns) != turns and s.first_error is None:
            raise Failed(f"{who}: {len(s.turns)} of {turns} turns and no error recorded")
        for t in s.turns:
            if not t.completed:
                continue
            for x in t.answered:
                if not x.whole:
                    raise Failed(f"{who}, turn {t.index + 1}: {x.path}'s answer was cut off")
                if x.prompt() is None:
                    said = f"usage {x.usage or 'none'}"
                    raise Failed(f"{who}, turn {t.index + 1}: {x.path}: no prompt figures ({said})")


def _cell(s: Session, what: str) -> str:
    if what == "seconds":
        return ", ".join(f"{t.ran.seconds:.1f}" for t in s.turns) or "—"
    return ", ".join(t.said() for t in s.turns) or "—"


def table(sessions: list[Session], turns: int, models: dict[str, str]) -> None:
    print(
        "| client | server | model | turns completed | first error | seconds per turn |"
        " prompt tokens evaluated/total per turn | requests per turn |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for s in sessions:
        done = sum(t.completed for t in s.turns)
        error = (s.first_error or "—").replace("|", "/").replace("\n", " ")
        short = error if len(error) <= 90 else error[:87] + "..."
        requests = ", ".join(str(len(t.exchanges)) for t in s.turns) or "—"
        print(
            f"| {s.client} | {s.server} | {models[s.client]} | {done}/{turns} | {short} |"
            f" {_cell(s, 'seconds')} | {_cell(s, 'tokens')} | {requests} |"
        )
    print("\nfirst errors, verbatim:")
    for s in sessions:
        if s.first_error:
            print(f"- {s.client} on {s.server}: {s.first_error}")
        if s.probes():
            print(f"- {s.client} on {s.server}, probes refused (not counted): {s.probes()}")


def last_line(sessions: list[Session], clients: list[str], turns: int) -> str:
    """The figures of the last line (see the module docstring)."""
    by = {(one.client, one.server): one for one in sessions}
    works = {name: sum(by[(c, name)].works(turns) for c in clients) for name in SERVERS}
    last = {"x": 0, "y": 0, "x2": 0}
    seconds = {name: 0.0 for name in SERVERS}
    for c in clients:
        mine, theirs = by[(c, "ours")], by[(c, "llama-server")]
        for a, b in zip(mine.turns, theirs.turns, strict=False):
            if a.completed and b.completed:
                seconds["ours"] += a.ran.seconds
                seconds["llama-server"] += b.ran.seconds
                if a.index == turns - 1:
                    last["y"] += a.prompt[0]
                    last["x"] += a.prompt[1]
                    last["x2"] += b.prompt[1]
    ratio = seconds["ours"] / seconds["llama-server"] if seconds["llama-server"] else float("nan")
    n, k2 = len(clients), works["llama-server"]
    return (
        f"agent clients: {works['ours']}/{n} clients work (llama-server {k2}/{n}),"
        f" turn-{turns} evaluated {last['x']} of {last['y']} tokens (llama-server {last['x2']}),"
        f" seconds per turn {ratio:.2f}× llama-server"
    )


def _limits(agents: list[Agent], given: float | None) -> str:
    """The turns' time limits, as the run applies them (see `--turn-timeout`)."""
    if given:
        return f"{given:.0f} s"
    by_model = {a.model: TURN_SECONDS[a.model] for a in agents}
    return ", ".join(f"{seconds:.0f} s on {model}" for model, seconds in by_model.items())


def options(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", default=",".join(AGENTS), help="a subset, comma-separated")
    parser.add_argument("--quick", action="store_true", help="one turn per client")
    parser.add_argument(
        "--servers", default=",".join(SERVERS), help="one of them alone: no last line"
    )
    parser.add_argument("--record", action="store_true", help="write the fixtures (see above)")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="write every exchange there")
    parser.add_argument("--threads", type=int, default=2, help="in each server")
    parser.add_argument(
        "--turn-timeout", type=float, help="seconds per turn (default: the model's TURN_SECONDS)"
    )
    parser.add_argument("--model", choices=sorted(MODELS), help="every client on this model")
    args = parser.parse_args(argv)
    args.clients = [c for c in args.clients.split(",") if c]
    if unknown := [c for c in args.clients if c not in AGENTS]:
        parser.error(f"unknown clients {unknown}; expected some of {', '.join(AGENTS)}")
    args.servers = [name for name in args.servers.split(",") if name]
    if not args.servers or [name for name in args.servers if name not in SERVERS]:
        parser.error(f"--servers takes some of {', '.join(SERVERS)}")
    args.turns = 1 if args.quick else len(TURNS)
    return args


def main() -> int:
    args = options()
    note = machine_note()
    say(f"before the bench: {note}")
    agents = [AGENTS[c] for c in args.clients]
    if args.model:
        agents = [dataclasses.replace(a, model=args.model) for a in agents]
    try:
        versions = install(agents)
        sessions = []
        for agent in agents:
            for name in args.servers:
                say(f"{agent.name} {versions[agent.name]} on {name} ({agent.model})")
                sessions.append(run_session(agent, name, args))
        check(sessions, args.turns)
    except (Failed, Unavailable, Unusable) as exc:
        say(f"no figures: {exc}")
        return 1
    print(f"before the bench: {note}")
    print("clients: " + ", ".join(f"{a.name} {versions[a.name]}" for a in agents))
    print(
        f"{args.turns} turn(s) per client and server, each at most"
        f" {_limits(agents, args.turn_timeout)};"
        f" contexts {CONTEXTS}, one slot, {args.threads} thread(s), answers capped at"
        f" {MAX_TOKENS} tokens ({CUT_IS_AN_ERROR} for claude-code and codex);"
        " evaluated = prompt tokens - cached, from each response's usage\n"
    )
    table(sessions, args.turns, {a.name: a.model for a in agents})
    if len(args.servers) == len(SERVERS):
        print()
        print(last_line(sessions, args.clients, args.turns))
    return 0


if __name__ == "__main__":
    sys.exit(main())
