"""The agent clients `bench/agent_clients.py` drives: installed, configured and run, each turn in
a private home.

Guarantees: clients are installed from their registries into a folder the bench owns
(`~/.cache/harmony-desk-bench/clients/`: npm packages with `npm install --prefix …/npm`, PyPI
ones each in a venv of its own, `…/venv-NAME`), only when missing, never into the project or
the user's folders. Each session gets a new temporary folder holding a private `HOME` (with
`XDG_*`, `CODEX_HOME`, `LLM_USER_PATH` and `TMPDIR` inside it) and a scratch git repository
with `hello.py`; the client is pointed at the server by `python -m app connect CLIENT
--base-url URL --model GGUF` run in that home (with a null keyring and temporary app folders,
so nothing of the user's is read or written), the same for both servers but for the URL. A
turn is the client's own non-interactive command, run in the scratch repository with no
input, under a wall-clock limit: on time-out its whole process group is killed, and so is
what a finished turn left behind in its group.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.llama_server import CACHE, ROOT, say
from bench.registry_models import CODER

CLIENTS_DIR = CACHE / "clients"
NPM_DIR = CLIENTS_DIR / "npm"
PROMPT = "{prompt}"  # where a turn's prompt goes in a client's arguments
TURNS = (
    "Read hello.py and tell me what it prints.",
    "Add a docstring to hello.py.",
    "What did you change?",
)
HELLO = 'print("Hello, world!")\n'
OUTPUT_KEPT = 2000  # characters of a turn's output kept (its end)


class Unusable(Exception):
    """A client could not be installed or configured."""


@dataclass(frozen=True)
class Agent:
    """One client: its package, the model it is measured on (`smollm2-32k` where its prompts
    need 32k tokens, else `smollm2`; Claude Code's `qwen2.5-coder-1.5b`, the one model here that
    follows its prompt; `bench/agent_clients_servers.py`), its command's arguments
    for the first turn and for the later ones (`PROMPT` marks the prompt), the variables it
    needs besides the private home's, and, for a client that asks for as many tokens as its
    configuration says, that file (JSON, relative to the home) and how to set the cap in it."""

    name: str  # as `harmony-desk connect` names it
    package: str
    registry: str  # "npm" or "pypi"
    model: str
    command: str
    first: tuple[str, ...]
    later: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    config: str = ""
    cap: Callable[[Any, int], None] | None = None
    answers: int = 0  # the cap on an answer on both servers (0: the bench's, `MAX_TOKENS`)

    @property
    def bin(self) -> Path:
        if self.registry == "npm":
            return NPM_DIR / "node_modules" / ".bin"
        return CLIENTS_DIR / f"venv-{self.name}" / "bin"

    def argv(self, turn: int, prompt: str) -> list[str]:
        given = self.first if turn == 0 else self.later
        return [str(self.bin / self.command), *(prompt if a == PROMPT else a for a in given)]


def _claude_cap(settings: Any, tokens: int) -> None:
    settings["env"]["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(tokens)


def _opencode_cap(config: Any, tokens: int) -> None:
    for model in config["provider"]["harmony-desk"]["models"].values():
        model["limit"]["output"] = tokens


def _qwen_cap(settings: Any, tokens: int) -> None:
    for provider in settings["modelProviders"]["openai"]:
        provider["generationConfig"]["samplingParams"]["max_tokens"] = tokens


_CLAUDE = ("-p", PROMPT, "--permission-mode", "acceptEdits")
_CODEX = ("-c", 'sandbox_mode="workspace-write"', "-c", 'approval_policy="never"', PROMPT)
_QWEN = ("--approval-mode", "auto-edit")
_AIDER = (
    "--no-git",
    "--yes-always",
    "--no-suggest-shell-commands",
    "--no-show-model-warnings",
    "--no-pretty",
    "--no-fancy-input",
    "--no-detect-urls",
)
_OPENCODE_ENV = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
}
# Claude Code and Codex end a turn whose answer a cap cut as failed, as their APIs define a cut
# (Messages `stop_reason: max_tokens`, Responses `incomplete`): they get room for the model to
# end its answer itself, on both servers alike.
CUT_IS_AN_ERROR = 1024
AGENTS = {
    a.name: a
    for a in (
        Agent(
            "claude-code",
            "@anthropic-ai/claude-code",
            "npm",
            CODER,  # SmolLM2 does not follow its prompt (see `bench/agent_clients.py`)
            "claude",
            _CLAUDE,
            (*_CLAUDE, "--continue"),
            {},
            ".claude/settings.json",
            _claude_cap,
            CUT_IS_AN_ERROR,
        ),
        Agent(
            "codex",
            "@openai/codex",
            "npm",
            "smollm2-32k",
            "codex",
            ("exec", *_CODEX),
            ("exec", "resume", "--last", *_CODEX),
            answers=CUT_IS_AN_ERROR,
        ),
        Agent(
            "opencode",
            "opencode-ai",
            "npm",
            "smollm2-32k",
            "opencode",
            ("run", PROMPT),
            ("run", "--continue", PROMPT),
            _OPENCODE_ENV,
            ".config/opencode/opencode.json",
            _opencode_cap,
        ),
        Agent(
            "qwen-code",
            "@qwen-code/qwen-code",
            "npm",
            "smollm2-32k",
            "qwen",
            (*_QWEN, PROMPT),
            (*_QWEN, "--continue", PROMPT),
            {},
            ".qwen/settings.json",
            _qwen_cap,
        ),
        Agent(
            "aider",
            "aider-chat",
            "pypi",
            "smollm2",
            "aider",
            (*_AIDER, "--message", PROMPT, "hello.py"),
            (*_AIDER, "--restore-chat-history", "--message", PROMPT, "hello.py"),
        ),
        Agent(
            "llm",
            "llm",
            "pypi",
            "smollm2",
            "llm",
            ("-m", "harmony-desk", "-f", "hello.py", PROMPT),
            ("-c", PROMPT),
        ),
    )
}


def install(agents: list[Agent]) -> dict[str, str]:
    """Each agent installed where missing (see the module guarantees): its version by name."""
    CLIENTS_DIR.mkdir(parents=True, exist_ok=True)
    npm = [a.package for a in agents if a.registry == "npm" and not (a.bin / a.command).exists()]
    if npm:
        say(f"installing {', '.join(npm)} from npm into {NPM_DIR}")
        _run(["npm", "install", "--prefix", str(NPM_DIR), "--no-audit", "--no-fund", *npm])
    for agent in agents:
        if agent.registry == "pypi" and not (agent.bin / agent.command).exists():
            venv = agent.bin.parent
            say(f"installing {agent.package} from PyPI into {venv}")
            _run([sys.executable, "-m", "venv", str(venv)])
            _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", agent.package])
    return {a.name: version(a) for a in agents}


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode:
        raise Unusable(f"{' '.join(argv[:4])} … failed ({done.returncode}): {done.stderr[-800:]}")


def version(agent: Agent) -> str:
    """The installed package's version."""
    if agent.registry == "npm":
        meta = NPM_DIR / "node_modules" / agent.package / "package.json"
        return str(json.loads(meta.read_text())["version"])
    python = str(agent.bin / "python")
    ask = f"import importlib.metadata as m; print(m.version({agent.package!r}))"
    done = subprocess.run([python, "-c", ask], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def app_version() -> str:
    try:
        return importlib.metadata.version("harmony-desk")
    except importlib.metadata.PackageNotFoundError:
        return "this checkout"


def environment(agent: Agent, home: Path) -> dict[str, str]:
    """The client's whole environment: the private home's folders, the bin folders first on
    the PATH (then the user's, for node and git), no proxy for loopback, a dumb terminal."""
    path = os.pathsep.join([str(agent.bin), os.environ.get("PATH", "/usr/bin:/bin")])
    folders = {
        "HOME": home,
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_DATA_HOME": home / ".local/share",
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_STATE_HOME": home / ".local/state",
        "TMPDIR": home / "tmp",
        "CODEX_HOME": home / ".codex",
        "LLM_USER_PATH": home / "llm",
    }
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    loopback = "127.0.0.1,localhost"
    return {
        "PATH": path,
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "NO_PROXY": loopback,
        "no_proxy": loopback,
        **{k: str(v) for k, v in folders.items()},
        **agent.env,
    }


def configure(agent: Agent, env: Mapping[str, str], base: str, model: Path, context: int) -> str:
    """`harmony-desk connect` run for `agent` in its private home, pointed at `base`, with the
    context both servers give the model (`--ctx`: a client that compacts or trims by the
    context it is told, as Codex does, is told the same on both; llama-server lists no
    context connect could read): what it printed."""
    home = Path(env["HOME"])
    app = {
        "HARMONY_DESK_CONFIG": str(home / "harmony-desk" / "config"),
        "HARMONY_DESK_DATA": str(home / "harmony-desk" / "data"),
        "HARMONY_DESK_CACHE": str(home / "harmony-desk" / "cache"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
    }
    argv = [
        sys.executable,
        "-m",
        "app",
        "connect",
        agent.name,
        "--base-url",
        base,
        "--model",
        str(model),
        "--ctx",
        str(context),
    ]
    done = subprocess.run(argv, cwd=ROOT, env={**env, **app}, capture_output=True, text=True)
    if done.returncode:
        raise Unusable(f"harmony-desk connect {agent.name} failed: {done.stderr[-800:]}")
    return done.stdout


def cap_answers(agent: Agent, home: Path, tokens: int) -> None:
    """The most tokens `agent` asks for in an answer set to `tokens` in the file connect wrote
    (llama-server takes a request's `max_tokens` over its own `-n`, so both servers cap
    answers alike only when the client asks for the cap); a client that asks for none is
    capped by each server's own limit, the same."""
    if agent.cap is None:
        return
    path = home / agent.config
    data = json.loads(path.read_text(encoding="utf-8"))
    agent.cap(data, tokens)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def scratch_repo(folder: Path, env: Mapping[str, str]) -> Path:
    """A git repository holding `hello.py`, committed."""
    folder.mkdir(parents=True)
    (folder / "hello.py").write_text(HELLO)
    who = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    for argv in (["init", "-q"], ["add", "hello.py"], [*who, "commit", "-qm", "hello"]):
        subprocess.run(["git", *argv], cwd=folder, env=dict(env), check=True)
    return folder


@dataclass(frozen=True)
class Ran:
    """One turn's command: its wall time, exit status (None: killed at the time limit) and
    the end of what it printed."""

    seconds: float
    status: int | None
    output: str


def run_turn(argv: list[str], repo: Path, env: Mapping[str, str], limit_s: float) -> Ran:
    """`argv` in `repo`, in a process group of its own, killed at `limit_s`."""
    started = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=repo,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    status: int | None
    try:
        out, _ = proc.communicate(timeout=limit_s)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        status = None
    seconds = time.monotonic() - started
    _kill_group(proc.pid, signal.SIGKILL)  # what the turn left running in its group
    return Ran(seconds, status, out.decode("utf-8", errors="replace")[-OUTPUT_KEPT:])


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


__all__ = [
    "AGENTS",
    "CUT_IS_AN_ERROR",
    "TURNS",
    "Agent",
    "Ran",
    "Unusable",
    "app_version",
    "cap_answers",
    "configure",
    "environment",
    "install",
    "run_turn",
    "scratch_repo",
    "version",
]
