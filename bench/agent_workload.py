"""The fixed workload of `bench/agent_replay.py`: what its agent clients send, and nothing else.

Guarantees:
- Deterministic: every text comes from the constants below and `random.Random` seeded by fixed
  values (0 for the system message's rules, `"{session}-{turn}"` for each user message); nothing
  reads the clock, the environment or a server, so every run sends the same bytes.
- The same for both servers: plain chat messages only. The 10 OpenAI-style function tools are JSON
  text inside the system message, not the request's `tools` field (which llama-server refuses with
  a built-in template), so each server reads the same text.
- Sizes: one system message shared by every session, about 12,400 characters (12 sections of 5
  rules, then the tools as indented JSON; about 3,000 tokens); a user message distinct for every
  (session, turn), about 250-470 characters (about 60-150 tokens) over the default 8 sessions x 6
  turns.
The assistant messages are not here: they are the servers' answers, which the runner appends
verbatim to each session's history.
"""

from __future__ import annotations

import json
import random
from typing import Any

TOOLS = (  # name, description, parameters (name: (type, description)), the required ones
    (
        "read_file",
        "Read a text file of the repository and return its lines with numbers.",
        {
            "path": ("string", "the file's path from the repository root"),
            "start": ("integer", "the first line to return, from 1"),
            "end": ("integer", "the last line to return"),
        },
        ("path",),
    ),
    (
        "write_file",
        "Replace a file's whole contents, creating its folders when missing.",
        {
            "path": ("string", "the file's path from the repository root"),
            "contents": ("string", "the new contents, UTF-8"),
        },
        ("path", "contents"),
    ),
    (
        "edit_file",
        "Replace one exact, unique passage of a file with another.",
        {
            "path": ("string", "the file's path"),
            "old": ("string", "the passage as it is now"),
            "new": ("string", "what replaces it"),
        },
        ("path", "old", "new"),
    ),
    (
        "list_directory",
        "List a folder's entries, folders first, with their sizes.",
        {
            "path": ("string", "the folder's path"),
            "depth": ("integer", "how many levels down to list, 1 to 3"),
        },
        ("path",),
    ),
    (
        "search_code",
        "Search the repository for a regular expression; matching lines with paths.",
        {
            "pattern": ("string", "a regular expression, Python syntax"),
            "glob": ("string", "only files whose path matches this glob"),
        },
        ("pattern",),
    ),
    (
        "run_command",
        "Run a shell command in the sandbox and return its exit status and output.",
        {
            "command": ("string", "the command line, for bash"),
            "timeout_s": ("integer", "seconds before it is stopped, at most 600"),
        },
        ("command",),
    ),
    (
        "run_tests",
        "Run the test suite, or some of it, and return the failures in full.",
        {
            "selection": ("string", "pytest node ids or a -k expression"),
            "verbose": ("boolean", "list every test, not only the failures"),
        },
        (),
    ),
    (
        "git_diff",
        "Show the uncommitted changes, or those between two revisions.",
        {
            "base": ("string", "a revision; default the last commit"),
            "paths": ("array", "only these paths"),
        },
        (),
    ),
    (
        "fetch_url",
        "Fetch a web page or a file over HTTPS and return it as text.",
        {
            "url": ("string", "an https address"),
            "max_chars": ("integer", "cut the text after this many characters"),
        },
        ("url",),
    ),
    (
        "ask_user",
        "Ask the user a question and wait for the answer; use it sparingly.",
        {
            "question": ("string", "one short, precise question"),
            "choices": ("array", "the answers to offer, when there are few"),
        },
        ("question",),
    ),
)

TOPICS = (  # the system message's sections; its rules are drawn from the phrases below
    "Reading the repository",
    "Editing files",
    "Running commands",
    "Writing tests",
    "Reviewing changes",
    "Talking to the user",
    "Handling secrets",
    "Using the network",
    "Working with data",
    "Planning the work",
    "Reporting results",
    "Recovering from errors",
)
VERBS = (
    "Check",
    "Prefer to keep",
    "Never change",
    "Always read",
    "Write down",
    "Compare",
    "Explain",
    "Verify",
    "Keep track of",
    "Look again at",
    "Quote",
    "Avoid touching",
)
THINGS = (
    "the files you were asked about",
    "the tests that cover the change",
    "the user's own words",
    "the public interface of a module",
    "the configuration of the build",
    "the error in full",
    "the log of the last run",
    "the version numbers that the project pins",
    "the exit status of every command",
    "the documentation beside the code",
    "the commit history of the file",
    "the names the codebase already uses",
)
WHENS = (
    "before you edit anything",
    "when a command fails",
    "after every change",
    "when the request is ambiguous",
    "before you report that the work is done",
    "when two sources disagree",
    "while a long command is running",
    "when the user asks for something risky",
    "whenever a test is skipped",
    "when the output is longer than a screen",
)
WHYS = (
    "so that nothing is lost between turns",
    "because a wrong guess costs more than a look",
    "since the user reads the summary first",
    "so that a reviewer can follow every step",
    "because the sandbox is reset between sessions",
    "so the next agent can pick it up",
    "since a quiet failure is the worst kind",
    "because the tests are the specification",
)
PROJECTS = (
    "billing service",
    "map renderer",
    "chess engine",
    "invoice parser",
    "weather bot",
    "photo archive",
    "recipe planner",
    "ticket tracker",
    "audio mixer",
    "budget app",
)
ASKS = (
    "The function {fn} in {path} returns {n} items where it should return {m}; find out why.",
    "Add a test for {fn} in {path} that covers an empty input and an input of {n} entries.",
    "Rename {fn} to {fn}_checked everywhere in {path} and in the tests that call it.",
    "The build fails on line {n} of {path} after the last merge; read it and propose a fix.",
    "Summarise what {path} does in {m} sentences, naming {fn} and the data it reads.",
    "Make {fn} in {path} log a warning when it retries more than {m} times.",
)
DETAILS = (
    "Keep the change small and do not touch unrelated files.",
    "The last person who worked on it said the bug appears only with {n} users at once.",
    "Use the helpers the module already has rather than writing new ones.",
    "Tell me which commands you ran and what each one printed.",
    "If the tests take longer than {m} minutes, run only the ones for {fn}.",
    "The customer reported it in ticket {ticket}, with a log of {n} lines.",
    "Please write the explanation for someone who has never seen the {project} code.",
    "Mind that {path} is also imported by the nightly report job.",
    "We release the {project} on Friday, so a safe fix matters more than a clever one.",
    "Do not commit; leave the changes in the working tree for me to review.",
)


def tools() -> list[dict[str, Any]]:
    """The 10 OpenAI-style function tools of the system message."""
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "required": list(required),
                    "properties": {
                        p: {"type": kind, "description": said} for p, (kind, said) in params.items()
                    },
                },
            },
        }
        for name, description, params, required in TOOLS
    ]


def system_prompt() -> str:
    """The shared system message: rules drawn by a fixed seed, then the tools as JSON."""
    pick = random.Random(0).choice
    lines = ["You are a careful software agent working in a user's repository. Follow these rules."]
    for topic in TOPICS:
        lines.append(f"\n## {topic}")
        for i in range(1, 6):
            lines.append(f"{i}. {pick(VERBS)} {pick(THINGS)} {pick(WHENS)}, {pick(WHYS)}.")
    lines.append("\n## Tools\nCall a tool by answering with its name and JSON arguments:")
    lines.append(json.dumps(tools(), indent=1))
    return "\n".join(lines)


def user_message(session: int, turn: int) -> str:
    """Session `session`'s message of turn `turn` (from 0): distinct for every pair."""
    rng = random.Random(f"{session}-{turn}")
    fill = {
        "fn": f"{rng.choice(('load', 'merge', 'parse', 'sync'))}_{rng.choice(('rows', 'items'))}",
        "path": f"src/{rng.choice(('core', 'api', 'jobs'))}/module_{session}_{turn}.py",
        "n": rng.randint(3, 900),
        "m": rng.randint(2, 9),
        "project": PROJECTS[session % len(PROJECTS)],
        "ticket": f"#{4000 + 97 * session + turn}",
    }
    head = f"Session {session + 1} on the {fill['project']}, step {turn + 1}. "
    said = [rng.choice(ASKS), *rng.sample(DETAILS, rng.randint(2, 4))]
    return head + " ".join(s.format(**fill) for s in said)


def system_message() -> dict[str, str]:
    """The system message every session's history opens with."""
    return {"role": "system", "content": system_prompt()}


def user_turn(session: int, turn: int) -> dict[str, str]:
    """Session `session`'s user message of turn `turn` (from 0), as its history holds it."""
    return {"role": "user", "content": user_message(session, turn)}
