"""The window's `harmony-desk connect`: a coding agent's configuration pointed at the window's
server, shown, or undone, by `app.clients.connecting` (the code the command runs).

Guarantees: no method raises for an expected failure: a file that cannot be read or written
comes back as the outcome's `error`, and then nothing was written; the key written is the
placeholder, since the window's server answers only this computer and takes any key; the model
and its context are the served model's, answers capped as `serve` caps them; the files are
those of the user whose `env` and `home` were given (the process's own when none were).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from app.clients import CLIENTS, PLACEHOLDER_KEY, Target, client, connecting
from app.errors import HarmonyDeskError


@dataclass(frozen=True)
class Outcome:
    """What a client's button did: `text` says what changed and how to undo it (or shows the
    files as they would be written); `error` says why nothing was done ("" when it worked)."""

    text: str = ""
    error: str = ""


@dataclass(frozen=True)
class Served:
    """The server a client is pointed at: its address (its root or its `/v1`), the model's name
    and the context it was loaded with."""

    address: str
    model: str
    context: int


class ClientConfigs:
    """See the module guarantees."""

    KEY = PLACEHOLDER_KEY  # what connect writes as the key

    def __init__(self, env: Mapping[str, str] | None = None, home: Path | None = None) -> None:
        self.env, self.home = env, home

    @staticmethod
    def names() -> dict[str, str]:
        """Each client's command-line name and its title ("claude-code": "Claude Code")."""
        return {name: client(name).TITLE for name in CLIENTS}

    def connect(self, name: str, served: Served) -> Outcome:
        def run() -> str:
            report = connecting.connect(name, _target(served), *self._user())
            undo = f"Undo: the Undo button, or `harmony-desk connect {name} --undo`."
            return "\n".join([report.text, report.note, undo])

        return _outcome(run)

    def show(self, name: str, served: Served) -> Outcome:
        return _outcome(lambda: connecting.preview(name, _target(served), *self._user()).text)

    def undo(self, name: str) -> Outcome:
        return _outcome(lambda: connecting.undo(name, *self._user()).text)

    def _user(self) -> tuple[Mapping[str, str], Path]:
        return (os.environ if self.env is None else self.env), self.home or Path.home()


def _target(served: Served) -> Target:
    from app.server.options import ServeOptions

    cap = ServeOptions().max_tokens
    return connecting.target_for(served.address, PLACEHOLDER_KEY, served.model, served.context, cap)


def _outcome(run: Callable[[], str]) -> Outcome:
    try:
        return Outcome(text=run())
    except HarmonyDeskError as exc:
        return Outcome(error=exc.message)


__all__ = ["ClientConfigs", "Outcome", "Served"]
