"""Model names clients ask for, mapped to the models the server has: the aliases.

Guarantees: an alias is `PATTERN=MODEL`, the pattern a shell-style glob matched against the
name a request gives, case-insensitively (`claude-*`, `gpt-4o*`, `*`), the model a name the
server serves, or empty for the server's default model; aliases are tried in the order given
and the first that matches answers (`target`; None when none does); `DEFAULT` sends every name
the server does not serve to its default model, as a one-model server always did (coding agents
send `claude-…` and `gpt-…` names they cannot be told to change); removing it (an alias list
without `*`) makes an unknown name a 404. A malformed alias is an `InvalidInputError` naming it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass

from app.errors import InvalidInputError

DEFAULT = ("*=",)  # every other name: the default model


@dataclass(frozen=True)
class Alias:
    pattern: str
    model: str  # "" → the server's default model

    @classmethod
    def parse(cls, text: str) -> Alias:
        pattern, equals, model = text.partition("=")
        if not equals or not pattern.strip():
            raise InvalidInputError(
                f"the alias {text!r} is not PATTERN=MODEL (MODEL empty for the default model)"
            )
        return cls(pattern.strip(), model.strip())

    def said(self) -> str:
        return f"{self.pattern} → {self.model or 'the default model'}"


class Aliases:
    """See the module guarantees."""

    def __init__(self, aliases: Iterable[Alias]) -> None:
        self.aliases = tuple(aliases)

    @classmethod
    def of(cls, texts: Iterable[str]) -> Aliases:
        return cls(Alias.parse(t) for t in texts)

    def target(self, name: str) -> str | None:
        """The model `name` stands for ("" the default), or None when no alias matches."""
        lowered = name.lower()
        for alias in self.aliases:
            if fnmatch.fnmatchcase(lowered, alias.pattern.lower()):
                return alias.model
        return None

    def said(self) -> list[str]:
        return [a.said() for a in self.aliases]


__all__ = ["DEFAULT", "Alias", "Aliases"]
