"""Settings declared once: each field of a settings model says, beside its type, default, bounds
and description, how people see it (`Shown`: its label, unit, page and section, what 0 means,
whether it applies when the model is next loaded), and everything else reads that declaration.

Guarantees: a model built on `Declared` is refused when it is defined if one of its fields has
no `Shown` (`UndeclaredSettingError`), and a `Shown` that names a section its page does not have
is refused when it is made; `setting` and `checked` refuse a name the model has no field for
(`UnknownSettingError`, which lists the names it has), so a consumer that subscribes to a
setting by name learns of a typo when it subscribes, not when the setting changes; `settings_of`
gives the fields in their declared order, with their choices (a `Literal`'s values) and bounds
read from the field itself; `changed` names the fields whose values differ. Pure: no I/O.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from app.errors import HarmonyDeskError


class UnknownSettingError(HarmonyDeskError, LookupError):
    """A bug: a setting's name that its model has no field for."""


class UndeclaredSettingError(HarmonyDeskError, TypeError):
    """A bug: a settings model's field that does not say how it is shown."""


@dataclass(frozen=True)
class SettingsPage:
    """A page of a settings dialog: its title, the headings of its sections in the order they
    are shown, and its icon in the dialog's list of pages (a Material Design icon name; "" for
    a dialog of one page)."""

    title: str
    sections: tuple[str, ...]
    icon: str = ""


@dataclass(frozen=True)
class Shown:
    """How people see one setting (put it in the field's `Annotated[...]`).

    `page` None: on no page of the dialog (edited where it belongs, or kept by the app);
    `zero`: what 0 means, as the control says it ("Automatic"; "" when 0 is just a number);
    `words`: how each choice is said ("auto" → "automatic"); `high`: the control's top for a
    field with no upper bound; `reload`: it applies when the model is next loaded."""

    label: str
    page: SettingsPage | None
    section: str = ""
    unit: str = ""
    zero: str = ""
    step: float = 1
    words: tuple[tuple[str, str], ...] = ()
    high: float | None = None
    reload: bool = False

    def __post_init__(self) -> None:
        if self.page is not None and self.section not in self.page.sections:
            raise ValueError(
                f"the setting {self.label!r} is on the page {self.page.title!r}, which has no"
                f" section {self.section!r} (its sections: {', '.join(self.page.sections)})"
            )

    def said(self, choice: str) -> str:
        """A choice as the control says it."""
        return dict(self.words).get(choice, choice)


@dataclass(frozen=True)
class Setting:
    """One field of a declared model, as declared: `low` is exclusive when `above`."""

    name: str
    shown: Shown
    description: str
    choices: tuple[str, ...] = ()  # a Literal's values, in order
    low: float | None = None
    high: float | None = None
    above: bool = False
    whole: bool = False  # a number that is an int (not a float)


class Declared(BaseModel):
    """A pydantic model whose every field says how it is shown (see the module guarantees)."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        loose = [name for name, info in cls.model_fields.items() if _shown(info) is None]
        if loose:
            raise UndeclaredSettingError(
                f"{cls.__name__} has settings that do not say how they are shown:"
                f" {', '.join(loose)}; declare each as `name: Annotated[type, Shown(...)]`"
            )


M = TypeVar("M", bound=Declared)


def _shown(info: FieldInfo) -> Shown | None:
    return next((m for m in info.metadata if isinstance(m, Shown)), None)


def _choices(annotation: object) -> tuple[str, ...]:
    """The values of the `Literal`s in `annotation` (itself, or members of a union)."""
    if typing.get_origin(annotation) is typing.Literal:
        return tuple(str(c) for c in typing.get_args(annotation))
    return tuple(c for member in typing.get_args(annotation) for c in _choices(member))


def _members(annotation: object) -> set[object]:
    """`annotation` itself, or the members of its union (and theirs)."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return {t for member in args for t in _members(member)}
    if typing.get_origin(annotation) is typing.Annotated:
        return _members(args[0])
    return {annotation}


def _number(bound: object) -> float:
    assert isinstance(bound, int | float), bound  # the settings' bounds are numbers
    return float(bound)


def _setting(name: str, info: FieldInfo) -> Setting:
    shown = _shown(info)
    assert shown is not None  # `Declared` refused the model otherwise
    low = high = None
    above = False
    for m in info.metadata:
        if isinstance(m, Ge | Gt):
            above = isinstance(m, Gt)
            low = _number(m.gt if isinstance(m, Gt) else m.ge)
        elif isinstance(m, Le | Lt):
            high = _number(m.lt if isinstance(m, Lt) else m.le)
    found = _members(info.annotation)
    whole = int in found and float not in found
    return Setting(
        name, shown, info.description or "", _choices(info.annotation), low, high, above, whole
    )


@cache
def settings_of(model: type[Declared]) -> tuple[Setting, ...]:
    """Every field of `model`, as declared, in the order it declares them."""
    return tuple(_setting(name, info) for name, info in model.model_fields.items())


def setting(model: type[Declared], name: str) -> Setting:
    """The field `name` of `model`, as declared; a name it has no field for is refused."""
    found = next((s for s in settings_of(model) if s.name == name), None)
    if found is None:
        known = ", ".join(s.name for s in settings_of(model))
        raise UnknownSettingError(
            f"{model.__name__} has no setting {name!r} (its settings: {known})"
        )
    return found


def checked(model: type[Declared], names: Iterable[str]) -> frozenset[str]:
    """`names`, each checked to be a setting of `model` (see `setting`)."""
    return frozenset(setting(model, name).name for name in names)


def changed(old: M, new: M) -> frozenset[str]:
    """The names of the settings whose values differ between `old` and `new`."""
    return frozenset(
        s.name for s in settings_of(type(new)) if getattr(old, s.name) != getattr(new, s.name)
    )


__all__ = [
    "Declared",
    "Setting",
    "SettingsPage",
    "Shown",
    "UndeclaredSettingError",
    "UnknownSettingError",
    "changed",
    "checked",
    "setting",
    "settings_of",
]
