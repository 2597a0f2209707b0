"""What a local MCP server is started with: its environment and its guarded command line.

Guarantees: the server never sees the app's environment (whose API keys are the user's, not the
server's): it starts with a minimal one — `PATH` (the app's, with the user's login-shell `PATH`
merged in after its own entries: an app started from a desktop launcher or a bundle gets a
minimal `PATH`, and `npx`, `uvx` or `docker` would not be found), `HOME`, the user's name,
shell, terminal, temporary folder, time zone and locale variables (and on Windows the few the
system needs) — then the plain values from `mcp.json`; then its secrets, read from the keyring
at start and never from a file. A command that is not on that `PATH` is an error whose sentence
names the command (a clause: "the command “uvx” was not found") and whose `details` say where it
was looked for (`PATH`'s folders, each once, the home folder as `~`, at most `SHOWN`); a bare
`python` is the app's own interpreter (`app/tools/mcp/interpreter.py`). The
command runs under the guard (`app/tools/mcp/guard.py`), so the server stops when the app does.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys

from app.errors import InvalidInputError
from app.secrets import Secrets
from app.tools.mcp.config import McpServer, secret_name
from app.tools.mcp.interpreter import resolve

LOGIN_SHELL_S = 5.0
KEPT = ("HOME", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR", "TZ", "LANG", "LANGUAGE")
KEPT_WINDOWS = (
    "APPDATA",
    "LOCALAPPDATA",
    "PATHEXT",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
    "COMSPEC",
    "WINDIR",
)
GUARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "guard.py")
SHOWN = 12  # PATH folders named in a "not found" error's details


@functools.cache
def login_path() -> str:
    """The `PATH` of the user's login shell ("" where there is none or it does not answer)."""
    if sys.platform == "win32":
        return ""
    shell = os.environ.get("SHELL") or "/bin/sh"
    try:
        done = subprocess.run(  # `env` prints PATH with its separators whatever the shell
            [shell, "-l", "-c", "env"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=LOGIN_SHELL_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    found = [line[5:] for line in done.stdout.splitlines() if line.startswith("PATH=")]
    return found[-1] if done.returncode == 0 and found else ""  # a profile may print too


def merged_path(own: str, login: str) -> str:
    """`own`'s entries, then `login`'s that `own` lacks (order kept, nothing repeated)."""
    entries = [p for p in own.split(os.pathsep) if p]
    entries += [p for p in dict.fromkeys(login.split(os.pathsep)) if p and p not in entries]
    return os.pathsep.join(entries)


def environment(name: str, server: McpServer, secrets: Secrets) -> dict[str, str]:
    """The server's environment (see the module guarantees)."""
    kept = KEPT + (KEPT_WINDOWS if sys.platform == "win32" else ())
    env = {k: v for k, v in os.environ.items() if k.upper() in kept or k.startswith("LC_")}
    env["PATH"] = merged_path(os.environ.get("PATH", ""), login_path())
    env.update(server.env)
    for key in server.secret_env:
        value = secrets.get(secret_name(name, key))
        if value is None:
            raise InvalidInputError(
                f"it needs the secret {key}, which is not in the keyring",
                f"Give {key} a value in File ▸ MCP servers… (the Secrets box) or with"
                f" `harmony-desk mcp add {name}` and its secret options.",
            )
        env[key] = value
    return env


def guarded(name: str, server: McpServer, env: dict[str, str]) -> tuple[str, list[str]]:
    """(program, arguments) that run the server under the guard."""
    command = str(server.command)
    found = resolve(command, env.get("PATH"))
    if found is None:
        raise InvalidInputError(
            f"the command “{command}” was not found", looked_in(env.get("PATH", ""))
        )
    if getattr(sys, "frozen", False):  # a bundle: the app's own executable is the guard
        return sys.executable, ["--mcp-guard", str(os.getpid()), found, *server.args]
    # by its path, isolated: the guard needs neither the app's import path nor its environment
    return sys.executable, ["-I", GUARD, str(os.getpid()), found, *server.args]


def looked_in(path: str) -> str:
    """Where a command was looked for, for an error's details (see the module guarantees)."""
    home = os.path.expanduser("~")
    folders = list(dict.fromkeys(p for p in path.split(os.pathsep) if p))
    shown = [
        "~" + p[len(home) :] if home not in ("", "/") and p.startswith(home) else p
        for p in folders[:SHOWN]
    ]
    more = f" and {len(folders) - SHOWN} more" if len(folders) > SHOWN else ""
    if not shown:
        return "The PATH it was looked for in is empty."
    return f"Looked in {len(folders)} folders of the PATH: {', '.join(shown)}{more}."


__all__ = ["environment", "guarded", "login_path", "looked_in", "merged_path"]
