"""The Settings dialog's side: the settings as the dialog shows them, saving, and the consumers
that apply a setting when it changes.

Guarantees: the dialog is built from the settings model's declaration alone (each field's
description, choices or bounds, and its `Shown`: label, unit, page and section, what 0 means),
so a new setting is declared once, in `app/settings.py`, and appears without dialog code; the
fields come in the order the dialog shows them (page by page, section by section, then as
declared), and a field declared on no page is not shown; values are validated by the same model
before anything is written (an invalid value is refused with the field's name and the file is
untouched); saving is the settings store's atomic write; the data folder is shown, never
edited. A consumer subscribes to settings by name (`SettingsWatch.subscribe`): a name the
settings have no field for raises `UnknownSettingError` when it subscribes; it is applied at
once, then again each time one of its settings changes, never for a change to another one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from app.domain.declared import (
    Setting,
    SettingsPage,
    Shown,
    UnknownSettingError,
    changed,
    checked,
    setting,
    settings_of,
)
from app.paths import data_dir
from app.settings import PAGES, PRIVACY, Settings, load_settings, save_settings

DATA_PAGE = PRIVACY  # the page the data folder is shown on
Apply = Callable[[Settings], None]  # a consumer: applies the settings it subscribed to


@dataclass(frozen=True)
class Field:
    """One setting as the dialog shows it (`shown` None: declared nowhere, a last page's)."""

    name: str
    label: str
    description: str
    kind: Literal["choice", "number"]
    value: int | str
    choices: tuple[str, ...] = ()
    low: int = 0
    high: int = 0
    shown: Shown | None = None


def _field(declared: Setting, value: int | str) -> Field:
    shown = declared.shown
    if declared.choices:
        kind: Literal["choice", "number"] = "choice"
        low, high = 0, 0
    else:
        kind = "number"
        low = int(declared.low) if declared.low is not None else 0
        high = int(declared.high) if declared.high is not None else 1_000_000
    return Field(
        declared.name,
        shown.label,
        declared.description,
        kind,
        value,
        declared.choices,
        low,
        high,
        shown,
    )


def _place(declared: Setting) -> tuple[int, int]:
    page = declared.shown.page
    assert page is not None
    return PAGES.index(page), page.sections.index(declared.shown.section)


def fields(settings: Settings | None = None) -> list[Field]:
    """The shown settings, with their current values, in the order the dialog shows them."""
    settings = settings or load_settings()
    shown = [s for s in settings_of(Settings) if s.shown.page is not None]
    return [_field(s, getattr(settings, s.name)) for s in sorted(shown, key=_place)]


def pages() -> tuple[SettingsPage, ...]:
    """The Settings dialog's pages, in order."""
    return PAGES


def declared_label(name: str) -> str | None:
    """The label `name` is declared with (None: the settings have no such field)."""
    try:
        return checked_setting(name).shown.label
    except UnknownSettingError:
        return None


def checked_setting(name: str) -> Setting:
    """The setting `name`, as declared (`UnknownSettingError` when there is none)."""
    return setting(Settings, name)


def save(values: dict[str, object]) -> Settings:
    """Validate and save `values` over the current settings (a `ValueError` names what is wrong)."""
    current = load_settings()
    try:
        updated = Settings.model_validate({**current.model_dump(), **values})
    except ValidationError as exc:
        wrong = ", ".join(".".join(str(p) for p in e["loc"]) for e in exc.errors())
        raise ValueError(f"not saved: {wrong} is not a valid value") from None
    save_settings(updated)
    return updated


def data_folder() -> Path:
    return data_dir()


def current() -> Settings:
    return load_settings()


class SettingsWatch:
    """The settings as a consumer last took them, and who applies which (see the module
    guarantees)."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or load_settings()
        self._applies: list[tuple[frozenset[str], Apply]] = []

    def subscribe(self, apply: Apply, *names: str) -> None:
        """Apply the settings now, and again whenever one of `names` changes (each name is
        checked now: `UnknownSettingError`)."""
        if not names:
            raise ValueError("subscribe to at least one setting")
        self._applies.append((checked(Settings, names), apply))
        apply(self.settings)

    def update(self, new: Settings) -> frozenset[str]:
        """Take `new`: each consumer of a changed setting applies it, once; the names of the
        settings that changed."""
        names = changed(self.settings, new)
        self.settings = new
        for wanted, apply in self._applies:
            if wanted & names:
                apply(new)
        return names


__all__ = [
    "DATA_PAGE",
    "Apply",
    "Field",
    "Settings",
    "SettingsWatch",
    "Shown",
    "UnknownSettingError",
    "checked_setting",
    "current",
    "data_folder",
    "declared_label",
    "fields",
    "pages",
    "save",
]
