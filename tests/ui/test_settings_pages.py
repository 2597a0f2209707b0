"""Settings that explain themselves: the Settings dialog's pages (inline help under every
setting, "Automatic" for 0, readable labels, a refused value named and nothing written), and
Model settings (context length bounded by the trained context and remembered per model, GPU
rows only where llama.cpp can offload, the memory a context takes for each answer at once,
speculative decoding and its draft model's file), Answers at once and the window's load with
it — real widgets offscreen."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QLabel, QSpinBox

from app.controllers import preferences
from app.controllers.bridge import EngineBridge
from app.controllers.model_host import ModelHost
from app.domain.placement import Placement
from app.engine.local.scripted import ScriptedClient
from app.settings import Settings
from app.templates.choices import ChoiceStore
from app.ui.settings import pages as settings_pages
from app.ui.settings.dialog import SettingsDialog
from app.ui.settings.model_settings import ModelSettings


@pytest.fixture(autouse=True)
def own_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "config"
    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(config))
    return config


def host_on(*, gpu: bool = False, trained: int = 131072, path: str = "") -> ModelHost:
    """A host on the scripted source, as if llama.cpp had reported these facts at load."""
    client = ScriptedClient([])
    assert client.info is not None
    placement = Placement(True, 24, 24, False, "f16", False, 0) if gpu else None
    client.info = dataclasses.replace(client.info, n_ctx_train=trained, placement=placement)
    host = ModelHost(EngineBridge())
    host.use(client, "harmony")
    host.path = path
    return host


def test_every_setting_has_its_help_written_under_it_on_a_page(qtbot: Any) -> None:
    dialog = SettingsDialog()
    qtbot.addWidget(dialog)
    fields = preferences.fields()
    assert set(dialog.rows) == {f.name for f in fields}
    for field in fields:
        row = dialog.rows[field.name]
        assert isinstance(row.help, QLabel) and row.help.wordWrap() and row.help.property("role") == "muted"
        assert row.help.text().strip() and row.control.toolTip() == field.description
        page = dialog.stack.widget(dialog.page_of[field.name])
        assert page.isAncestorOf(row.help) and page.isAncestorOf(row.control)  # on its page, once
    titles = [dialog.page_list.item(i).text() for i in range(dialog.page_list.count())]
    assert titles == ["Appearance", "Chat", "Model & performance", "Privacy & data"]
    assert dialog.rows["gpu_layers"].label.text() == "GPU layers"
    assert dialog.rows["font_size"].label.text() == "Text size"


def test_zero_reads_automatic_and_the_help_says_it_the_same_way(qtbot: Any) -> None:
    dialog = SettingsDialog()
    qtbot.addWidget(dialog)
    threads, font = dialog.inputs["threads"], dialog.inputs["font_size"]
    assert isinstance(threads, QSpinBox) and isinstance(font, QSpinBox)
    assert threads.value() == 0 and threads.text() == "Automatic"
    assert font.value() == 0 and font.text() == "System default"
    assert "(Automatic: the physical cores less one)" in dialog.rows["threads"].help.text()
    threads.setValue(4)
    assert threads.text() == "4"
    gpu = dialog.inputs["gpu_layers"]
    assert gpu.currentText() == "automatic" and dialog.values()["gpu_layers"] == "auto"  # the value stays


def test_a_refused_value_is_named_its_page_shown_and_nothing_written(qtbot: Any, own_config: Path) -> None:
    dialog = SettingsDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    threads = dialog.inputs["threads"]
    assert isinstance(threads, QSpinBox)
    threads.setMinimum(-5)  # past the model's bound, as a value from elsewhere could be
    threads.setValue(-1)
    dialog.accept()
    assert dialog.isVisible() and dialog.saved is None
    assert "“Threads”" in dialog.problem.text() and "nothing was saved" in dialog.problem.text()
    assert dialog.stack.currentIndex() == dialog.page_of["threads"]
    assert not (own_config / "settings.json").exists()
    threads.setValue(3)
    with qtbot.waitSignal(dialog.accepted, timeout=2000):
        dialog.accept()
    assert json.loads((own_config / "settings.json").read_text())["threads"] == 3


def test_the_data_folder_is_shown_whole_with_open_and_copy(qtbot: Any) -> None:
    from PySide6.QtGui import QGuiApplication

    dialog = SettingsDialog()
    qtbot.addWidget(dialog)
    folder = str(preferences.data_folder())
    assert dialog.data_folder.text() == folder and dialog.data_folder.toolTip() == folder
    assert dialog.data_folder.isReadOnly() and dialog.data_folder.cursorPosition() == 0
    dialog.copy_folder.click()
    assert QGuiApplication.clipboard().text() == folder
    page = dialog.stack.widget(dialog.page_list.count() - 1)
    assert page.isAncestorOf(dialog.data_folder) and page.isAncestorOf(dialog.open_folder)


def test_a_setting_the_table_does_not_place_still_appears_with_a_readable_label() -> None:
    new = preferences.Field("kv_cache_budget", "", "Bytes the cache may take (0: no limit).", "number", 0)
    pages = settings_pages.pages([*preferences.fields(), new])
    assert pages[-1].title == "More" and pages[-1].sections[0].names == ("kv_cache_budget",)
    placed = [n for p in pages for s in p.sections for n in s.names]
    assert sorted(placed) == sorted({*(f.name for f in preferences.fields()), "kv_cache_budget"})  # each exactly once
    assert settings_pages.label("kv_cache_budget") == "KV cache budget"
    assert settings_pages.label("gpu_split") == "GPU split"


def test_a_cpu_only_llama_cpp_is_said_beside_the_gpu_setting(qtbot: Any) -> None:
    dialog = SettingsDialog(gpu=False)
    qtbot.addWidget(dialog)
    assert "no GPU backend" in dialog.rows["gpu_layers"].help.text()
    unknown = SettingsDialog()
    qtbot.addWidget(unknown)
    assert "no GPU backend" not in unknown.rows["gpu_layers"].help.text()


# --- Model settings --------------------------------------------------------------------------


def test_model_settings_hide_the_gpu_rows_without_gpu_offload(qtbot: Any) -> None:
    cpu = ModelSettings(host_on(gpu=False))
    qtbot.addWidget(cpu)
    assert not cpu.gpu.isVisibleTo(cpu) and not cpu.gpu_layers.isVisibleTo(cpu)
    assert cpu.kv.isVisibleTo(cpu) and cpu.flash.isVisibleTo(cpu)
    gpu = ModelSettings(host_on(gpu=True))
    qtbot.addWidget(gpu)
    assert gpu.gpu.isVisibleTo(gpu) and gpu.gpu_layers.isVisibleTo(gpu)


def test_the_context_length_is_bounded_by_the_trained_context_and_remembered_per_model(
    qtbot: Any, tmp_path: Path
) -> None:
    model = tmp_path / "model.gguf"
    host = host_on(trained=2048, path=str(model))
    dialog = ModelSettings(host)
    qtbot.addWidget(dialog)
    assert dialog.context.maximum() == 2048 and dialog.context.minimum() == 256
    assert dialog.context.value() == 2048  # the settings' 4,096, as far as this model goes
    assert dialog.context_origin.text() == "from Settings" and "trained for 2,048" in dialog.context_help.text()
    dialog.context.setValue(10**6)
    assert dialog.context.value() == 2048
    dialog.context.setValue(1024)
    assert dialog.context_origin.text() == "yours (Settings: 4,096)"
    assert dialog.reload.isEnabled() and "loads again" in dialog.reload_note.text()
    dialog.reload.setChecked(False)
    assert "next time the model loads" in dialog.reload_note.text()
    dialog.accept()
    assert not dialog.load_changed  # Reload now was off: it applies at the next load
    assert ChoiceStore().get(model).context_length == 1024
    again = ModelSettings(host)
    qtbot.addWidget(again)
    assert again.context.value() == 1024 and not again.reload.isEnabled()  # nothing changed yet
    again.context.setValue(2048)  # the settings' value again: nothing of its own remembered
    again.accept()
    assert again.load_changed and ChoiceStore().get(model).context_length is None


def test_a_model_loads_with_its_own_context_unless_more_is_asked_of_it(tmp_path: Path) -> None:
    host = host_on()
    a, b = str(tmp_path / "a.gguf"), str(tmp_path / "b.gguf")
    assert host.context_for(a, 4096, None) == 4096  # none of its own: the settings'
    assert host.context_for(a, 4096, 2048) == 2048
    host.path, host.n_ctx = a, 2048
    assert host.context_for(a, 8192, 2048) == 8192  # "use a larger context" for a message
    assert host.context_for(b, 8192, 2048) == 2048  # another model: its own


def test_the_memory_a_context_takes_is_said_and_follows_the_value(qtbot: Any, tiny_model: Any) -> None:
    dialog = ModelSettings(host_on(path=str(tiny_model)))
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: "needs about" in dialog.memory.text(), timeout=10_000)
    dialog.context.setValue(1024)
    assert "at 1,024 tokens of context" in dialog.memory.text()
    dialog.context.setValue(4096)
    assert "at 4,096 tokens of context" in dialog.memory.text()


def test_reload_now_loads_the_model_with_its_own_context_and_others_keep_theirs(
    qtbot: Any, qloop: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.ui.window import dialogs
    from tests.ui.test_window import make_window

    window, _ = make_window(qtbot, tmp_path, [])
    window.host.path = str(tmp_path / "model.gguf")
    loads: list[tuple[str | None, int | None]] = []
    monkeypatch.setattr(window, "load_model", lambda path=None, *, n_ctx=None, threads=None: loads.append((path, n_ctx)))

    def chosen(dialog: ModelSettings) -> int:
        dialog.context.setValue(2048)
        dialog.accept()
        return 1

    monkeypatch.setattr(ModelSettings, "exec", chosen)
    before = window.context_length
    dialogs.edit_model_settings(window)
    assert loads == [(window.host.path, 2048)] and window.context_length == before


# --- Answers at once and speculative decoding -----------------------------------------------


def test_answers_at_once_sits_with_the_context_length_and_says_what_it_costs(qtbot: Any, own_config: Path) -> None:
    dialog = SettingsDialog()
    qtbot.addWidget(dialog)
    row = dialog.rows["parallel"]
    assert row.label.text() == "Answers at once" and row.control.accessibleName() == "Answers at once"
    assert isinstance(row.control, QSpinBox) and row.control.value() == 4
    assert (row.control.minimum(), row.control.maximum()) == (1, 16)
    assert row.control.toolTip() == Settings.model_fields["parallel"].description
    said = row.help.text()
    assert "one is kept for this window" in said and "local server's clients" in said and "grows with it" in said
    page = dialog.stack.widget(dialog.page_of["parallel"])
    assert page is dialog.stack.widget(dialog.page_of["context_length"])  # Model & performance
    loading = settings_pages.pages(preferences.fields())[2].sections[0]
    assert loading.heading == "Loading a model" and "parallel" in loading.names
    row.control.setValue(2)
    with qtbot.waitSignal(dialog.accepted, timeout=2000):
        dialog.accept()
    assert json.loads((own_config / "settings.json").read_text())["parallel"] == 2


def test_speculative_decoding_is_chosen_per_model_with_a_draft_models_file(
    qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from PySide6.QtWidgets import QFileDialog

    model, draft = tmp_path / "model.gguf", tmp_path / "draft.gguf"
    draft.write_bytes(b"GGUF")
    host = host_on(path=str(model))
    dialog = ModelSettings(host)
    qtbot.addWidget(dialog)
    spec = dialog.speculative
    assert spec.mode.currentText() == "Prompt lookup" and [spec.mode.itemText(i) for i in range(3)] == [
        "Off", "Prompt lookup", "Draft model"]
    assert "already in the conversation" in spec.said.text() and "not slowed down" in spec.said.text()
    assert not spec.path.isVisibleTo(dialog) and not spec.browse.isVisibleTo(dialog)  # no draft model: no file row
    assert not dialog.reload.isEnabled() and dialog.ok.isEnabled()
    spec.mode.setCurrentText("Off")
    assert spec.said.text() == "Every token is worked out one at a time." and dialog.reload.isEnabled()
    spec.mode.setCurrentText("Draft model")
    assert "smaller model with this model's vocabulary" in spec.said.text()
    assert spec.path.isVisibleTo(dialog) and spec.browse.isVisibleTo(dialog)
    assert not dialog.ok.isEnabled() and "Choose the draft model" in spec.file_note.text()  # no file yet
    spec.path.setText(str(tmp_path / "gone.gguf"))
    assert not dialog.ok.isEnabled() and spec.file_note.text() == "There is no file at that path."
    asked: list[str] = []

    def chosen(_parent: Any, _title: str, start: str, _filter: str) -> tuple[str, str]:
        asked.append(start)
        return str(draft), ""

    monkeypatch.setattr(QFileDialog, "getOpenFileName", chosen)
    spec.path.clear()
    spec.browse.click()
    assert asked == [str(tmp_path)] and spec.path.text() == str(draft)  # it opened in the model's folder
    assert dialog.ok.isEnabled() and "share this model's vocabulary" in spec.file_note.text()
    assert "loads again" in dialog.reload_note.text()
    dialog.accept()
    remembered = ChoiceStore().get(model)
    assert (remembered.speculative, remembered.draft_model) == ("draft", str(draft))
    assert remembered.load_settings().speculative == "draft" and dialog.load_changed
    again = ModelSettings(host)
    qtbot.addWidget(again)
    assert again.speculative.mode.currentText() == "Draft model" and again.speculative.path.text() == str(draft)
    again.speculative.mode.setCurrentText("Prompt lookup")  # the default: nothing of its own remembered
    again.accept()
    remembered = ChoiceStore().get(model)
    assert (remembered.speculative, remembered.draft_model) == (None, None)
    assert remembered.load_settings().speculative == "lookup"


def test_the_window_loads_with_the_settings_answers_at_once_one_kept_for_itself(
    qtbot: Any, qloop: Any, own_config: Path, tmp_path: Path
) -> None:
    import asyncio

    loads: list[dict[str, Any]] = []

    class Loading(ScriptedClient):
        def load(self, path: str, **options: Any) -> Any:
            loads.append(options)
            return self.info

    for parallel, reserved in ((4, 1), (1, 0)):
        own_config.mkdir(exist_ok=True)
        (own_config / "settings.json").write_text(json.dumps({"parallel": parallel}))
        host = ModelHost(EngineBridge())
        loader = Loading([])
        host.use(loader, "harmony", loader=loader)
        task = asyncio.ensure_future(host.load(str(tmp_path / "model.gguf"), n_ctx=2048))
        qtbot.waitUntil(task.done, timeout=10_000)
        assert task.result()
        assert (loads[-1]["sequences"], loads[-1]["reserved"]) == (parallel, reserved)


def test_the_memory_line_counts_a_cache_for_each_answer_at_once(
    qtbot: Any, tiny_model: Any, own_config: Path
) -> None:
    own_config.mkdir(exist_ok=True)
    (own_config / "settings.json").write_text(json.dumps({"parallel": 3}))
    dialog = ModelSettings(host_on(path=str(tiny_model)))
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: "needs about" in dialog.memory.text(), timeout=10_000)
    assert "for 3 answers at once" in dialog.memory.text()
