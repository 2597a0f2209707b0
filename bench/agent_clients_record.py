"""Each client's first request, kept as a test fixture (`python bench/agent_clients.py --record`).

Guarantees: the request kept is the client's first model request of its first turn that
carries `tools` (its agent request; a client's small side requests, such as OpenCode's title,
may come first), else its first model request; it is written to
`tests/fixtures/agent_requests/<client>.json` as {client, version, api, method, path, headers,
body}: the headers less those that carry a key or belong to one connection (`authorization`,
`x-api-key`, `cookie`, `host`, `content-length`, `accept-encoding`, `connection`), the body
verbatim but for machine-specific values, replaced everywhere they occur: the session's
temporary folder (→ `/tmp/agent-clients`; `-tmp-agent-clients` where a client names a folder
after it with dashes), the proxy's URL (→ `http://127.0.0.1:8080`), the user's home folder
as a path's start (→ `/home/user/`) and user name (→ `user`, where it is not `root`). NOTE.md
beside them is rewritten from the fixtures there, one line per client with its version.
"""

from __future__ import annotations

import getpass
import json
import re
from pathlib import Path
from typing import Any

from bench.agent_clients_kit import Agent, app_version, version
from bench.agent_clients_proxy import Exchange
from bench.llama_server import ROOT, say

FIXTURES = ROOT / "tests" / "fixtures" / "agent_requests"
DROPPED = frozenset(
    {
        "authorization",
        "x-api-key",
        "cookie",
        "host",
        "content-length",
        "accept-encoding",
        "connection",
    }
)
MODEL_APIS = ("messages", "responses", "chat")
PLACEHOLDER = "/tmp/agent-clients"
NOTE_HEAD = """# Agent clients' first requests

Each file is one client's first agent request (the first model request of its first turn that
carries `tools`, else its first model request), captured by a recording proxy between the
client and `python -m app serve` with `python bench/agent_clients.py --record` (a private home,
a scratch git repository holding `hello.py`, the prompt "Read hello.py and tell me what it
prints."; the client configured by `harmony-desk connect`). Headers that carry a key or belong
to one connection are left out; the body is verbatim but for the session's temporary folder
(`/tmp/agent-clients`, or `-tmp-agent-clients` in a folder's name), the proxy's URL
(`http://127.0.0.1:8080`), the home folder at a path's start (`/home/user/`) and the user name
(`user`). `tests/server/test_recorded_client_requests.py` posts each one to the server.

"""


def first_request(exchanges: list[Exchange]) -> Exchange | None:
    asked = [x for x in exchanges if x.method == "POST" and x.api in MODEL_APIS]
    with_tools = [x for x in asked if isinstance(b := x.json_body(), dict) and b.get("tools")]
    chosen = with_tools or asked
    return chosen[0] if chosen else None


def scrub(text: str, folder: Path, base: str) -> str:
    """`text` with the machine-specific values replaced (see the module guarantees)."""
    for real in {str(folder.resolve()), str(folder)}:
        text = text.replace(real, PLACEHOLDER)
        text = text.replace(real.replace("/", "-"), PLACEHOLDER.replace("/", "-"))  # as a name
    text = text.replace(base, "http://127.0.0.1:8080")
    text = text.replace(f"{Path.home()}/", "/home/user/")  # a path in it, not the word
    user = getpass.getuser()
    if user != "root" and len(user) > 2:
        text = re.sub(rf"\b{re.escape(user)}\b", "user", text)
    return text


def record(agent: Agent, exchanges: list[Exchange], folder: Path, base: str) -> Path | None:
    """`agent`'s first request among `exchanges` written as its fixture; its path, or None
    when it made none."""
    chosen = first_request(exchanges)
    if chosen is None:
        say(f"  {agent.name}: no model request to record")
        return None
    body = json.loads(scrub(chosen.body.decode("utf-8"), folder, base))
    headers = {
        k.lower(): scrub(v, folder, base)
        for k, v in chosen.headers.items()
        if k.lower() not in DROPPED
    }
    fixture: dict[str, Any] = {
        "client": agent.name,
        "version": version(agent),
        "api": chosen.api,
        "method": chosen.method,
        "path": chosen.path,
        "headers": headers,
        "body": body,
    }
    FIXTURES.mkdir(parents=True, exist_ok=True)
    path = FIXTURES / f"{agent.name}.json"
    path.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    write_note()
    say(f"  recorded {agent.name}'s first request ({chosen.path}, {len(chosen.body):,} bytes)")
    return path


def write_note() -> None:
    """NOTE.md from the fixtures present: one line per client and its version."""
    lines = []
    for path in sorted(FIXTURES.glob("*.json")):
        held = json.loads(path.read_text(encoding="utf-8"))
        lines.append(
            f"- `{path.name}`: {held['client']} {held['version']},"
            f" {held['method']} {held['path']} ({held['api']} API)"
        )
    text = NOTE_HEAD + "\n".join(lines) + f"\n\nCaptured against Harmony Desk {app_version()}.\n"
    (FIXTURES / "NOTE.md").write_text(text, encoding="utf-8")


__all__ = ["FIXTURES", "first_request", "record", "scrub", "write_note"]
