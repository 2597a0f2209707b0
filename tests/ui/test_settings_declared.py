"""Settings declared once: a field without its declaration is refused, a subscription to a name
the settings do not have raises when it is made, a subscriber is applied when its own setting
changes and never for another one, and the dialog, the per-model rows and the loader read the
declaration (no second table to keep in step)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pytest
from pydantic import Field

from app.controllers import preferences
from app.domain.declared import (
    Declared,
    SettingsPage,
    Shown,
    UndeclaredSettingError,
    UnknownSettingError,
    changed,
    setting,
    settings_of,
)
from app.settings import PAGES, Settings
from app.templates.base import TemplateDefaults
from app.templates.choices import ModelChoice

PAGE = SettingsPage("Tests", ("Knobs",))


@pytest.fixture(autouse=True)
def own_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "config"
    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(config))
    return config


def test_a_setting_with_no_declaration_is_refused_when_its_model_is_defined() -> None:
    with pytest.raises(UndeclaredSettingError, match="loose_knob"):

        class Loose(Declared):
            shown_knob: Annotated[int, Shown("Shown knob", PAGE, "Knobs")] = 0
            loose_knob: int = Field(0, ge=0, description="Says nothing of how it is shown.")


def test_a_setting_placed_in_a_section_its_page_lacks_is_refused() -> None:
    with pytest.raises(ValueError, match="no section 'Dials'"):
        Shown("Knob", PAGE, "Dials")


def test_every_setting_is_declared_and_every_shown_one_is_on_a_dialog_page() -> None:
    declared = settings_of(Settings)
    assert [s.name for s in declared] == list(Settings.model_fields)
    shown = [s for s in declared if s.shown.page is not None]
    assert {s.shown.page for s in shown} <= set(PAGES)
    assert {s.name for s in declared if s.shown.page is None} == {
        "endpoints",
        "model_folders",
        "default_model",
        "server_aliases",  # `serve --alias` and the settings file (README: Model names)
    }
    fields = preferences.fields()
    assert [f.name for f in fields] and {f.name for f in fields} == {s.name for s in shown}
    for field in fields:  # the dialog's label, bounds and help are the declaration's
        one = setting(Settings, field.name)
        assert (field.label, field.description, field.shown) == (
            one.shown.label,
            one.description,
            one.shown,
        )


def test_an_unknown_name_is_refused_when_it_is_subscribed_to_not_when_it_changes() -> None:
    watch = preferences.SettingsWatch(Settings())
    applied: list[Settings] = []
    with pytest.raises(UnknownSettingError, match="max_token"):
        watch.subscribe(applied.append, "max_tokens", "max_token")
    assert applied == []  # refused whole: nothing applied, nothing kept
    watch.update(Settings(max_tokens=2048))
    assert applied == []
    with pytest.raises(UnknownSettingError):
        setting(ModelChoice, "temprature")


def test_a_subscriber_is_applied_at_once_then_only_when_its_own_setting_changes() -> None:
    watch = preferences.SettingsWatch(Settings())
    tokens: list[int] = []
    looks: list[tuple[str, int]] = []
    watch.subscribe(lambda s: tokens.append(s.max_tokens), "max_tokens")
    watch.subscribe(lambda s: looks.append((s.theme, s.font_size)), "theme", "font_size")
    assert tokens == [1024] and looks == [("system", 0)]
    assert watch.update(Settings(theme="dark", font_size=14)) == {"theme", "font_size"}
    assert tokens == [1024] and looks == [("system", 0), ("dark", 14)]  # once for both
    assert watch.update(Settings(theme="dark", font_size=14, max_tokens=512)) == {"max_tokens"}
    assert tokens == [1024, 512] and len(looks) == 2
    assert watch.update(watch.settings) == frozenset()
    assert changed(Settings(), Settings(threads=3)) == {"threads"}


def test_the_window_follows_its_settings_by_name(qtbot: object, tmp_path: Path) -> None:
    from tests.ui.test_window import make_window

    window, _ = make_window(qtbot, tmp_path, [])
    window.threads = 7  # as a load with its own threads would leave it
    window.settings_watch.update(
        window.settings_watch.settings.model_copy(update={"max_tokens": 333})
    )
    assert window.controller.max_tokens == 333 and window.threads == 7  # threads did not change
    window.settings_watch.update(window.settings_watch.settings.model_copy(update={"threads": 2}))
    assert window.threads == 2


def test_per_model_choices_say_which_apply_at_the_next_load() -> None:
    reload = {s.name for s in settings_of(ModelChoice) if s.shown.reload}
    assert reload == {
        "gpu_layers",
        "flash_attn",
        "kv_type",
        "context_length",
        "speculative",
        "draft_model",
        "projector",
    }
    choice = ModelChoice(temperature=0.3, context_length=2048, kv_type="q8_0")
    applied = choice.apply(TemplateDefaults())
    assert applied.temperature == 0.3 and applied.session_len == TemplateDefaults().session_len
    sampling = [s.name for s in settings_of(ModelChoice) if s.shown.section == "Sampling"]
    assert sampling == ["temperature", "top_p", "top_k", "repetition_penalty"]
    assert all(name in TemplateDefaults.model_fields for name in sampling)  # the rows' defaults
