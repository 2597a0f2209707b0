"""A model with its image projector in the library and the window: pairing (the one in the
folder, the best name of several, none, the one chosen, none chosen, a chosen file gone), the
scan never listing a projector as a model, real loads through the worker (a projector that
fits, one for another model, a damaged one), the window loading text-only when the projector
cannot be used, the models page's mark and memory, and Model settings' projector row — on
the tiny random-weight pair of tests/tiny_vision.py, real llama.cpp, real widgets offscreen."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.controllers.bridge import EngineBridge
from app.controllers.library_host import LibraryHost
from app.controllers.model_host import ModelHost
from app.engine.local.client import WorkerClient
from app.engine.local.scripted import ScriptedClient
from app.errors import InvalidInputError, LoadProblem, ModelLoadError
from app.library.projectors import Projectors, is_projector, projector_for
from app.library.scan import ScanCache, listing, scan
from app.templates.choices import ChoiceStore, ModelChoice
from app.ui.models.page import COLUMNS, ModelsPage
from app.ui.models.picker import ModelPicker
from app.ui.settings.model_settings import ModelSettings
from app.ui.settings.projector_row import CHOOSE
from tests import tiny_vision

WRONG = {"n_embd_text": 128}  # a projector for a wider model: llama.cpp refuses it
DAMAGED = {"drop": ("mm.0.weight",)}  # a projector without a tensor: llama.cpp stops on it


@pytest.fixture(scope="module")
def text() -> Path:
    return tiny_vision.build_text()


@pytest.fixture(scope="module")
def projector() -> Path:
    return tiny_vision.build_projector()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("CONFIG", "DATA"):
        (tmp_path / name.lower()).mkdir()
        monkeypatch.setenv(f"HARMONY_DESK_{name}", str(tmp_path / name.lower()))
    return tmp_path


def folder_with(folder: Path, **files: Path) -> Path:
    """`folder` holding a link to each file under its name (the keyword, with `.gguf`)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, target in files.items():
        (folder / f"{name}.gguf").symlink_to(target)
    return folder


# --- pairing ----------------------------------------------------------------------------------


def test_the_one_projector_in_the_folder_pairs_with_the_model(
    tmp_path: Path, text: Path, projector: Path
) -> None:
    folder = folder_with(tmp_path / "m", **{"Tiny-Q4_K_M": text, "mmproj-F16": projector})
    assert is_projector(folder / "mmproj-F16.gguf") and not is_projector(folder / "Tiny-Q4_K_M.gguf")
    assert projector_for(folder / "Tiny-Q4_K_M.gguf") == folder / "mmproj-F16.gguf"
    assert projector_for(tmp_path / "m" / "nothing-else.gguf") == folder / "mmproj-F16.gguf"


def test_of_several_the_name_nearest_the_model_s_wins(
    tmp_path: Path, text: Path, projector: Path
) -> None:
    folder = folder_with(
        tmp_path / "m",
        **{"Llava-7B-Q4_K_M": text, "Qwen-VL-7B-Q4_K_M": text, "mmproj-Llava-7B-f16": projector,
           "mmproj-Qwen-VL-7B-f16": projector},
    )  # fmt: skip
    assert projector_for(folder / "Qwen-VL-7B-Q4_K_M.gguf").name == "mmproj-Qwen-VL-7B-f16.gguf"
    assert projector_for(folder / "Llava-7B-Q4_K_M.gguf").name == "mmproj-Llava-7B-f16.gguf"
    pairs = Projectors()  # the library's many-at-once pairing says the same
    assert pairs.pair(folder / "Qwen-VL-7B-Q4_K_M.gguf").name == "mmproj-Qwen-VL-7B-f16.gguf"


def test_no_projector_in_the_folder_is_none_and_a_model_named_mmproj_is_not_one(
    tmp_path: Path, text: Path
) -> None:
    folder = folder_with(tmp_path / "m", **{"Tiny": text, "mmproj-but-a-model": text})
    assert not is_projector(folder / "mmproj-but-a-model.gguf")  # its header says llama
    assert projector_for(folder / "Tiny.gguf") is None


def converted_projector(path: Path, width: int) -> Path:
    """A projector's header as llama.cpp's converter writes it (`general.type` "mmproj", the
    text model's width as `clip.vision.projection_dim`); no tensors: pairing reads headers."""
    import gguf

    w = gguf.GGUFWriter(str(path), arch="clip")
    w.add_type("mmproj")
    w.add_uint32("clip.vision.projection_dim", width)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_a_projector_made_for_another_width_is_not_paired_but_can_be_chosen(
    tmp_path: Path, text: Path
) -> None:
    folder = folder_with(tmp_path / "m", Tiny=text)
    wide = converted_projector(folder / "mmproj-Tiny-F16.gguf", tiny_vision.N_EMBD * 2)
    assert is_projector(wide) and projector_for(folder / "Tiny.gguf") is None
    assert projector_for(folder / "Tiny.gguf", str(wide)) == wide  # the user's choice stands
    made = converted_projector(folder / "mmproj-Other-F16.gguf", tiny_vision.N_EMBD)
    assert projector_for(folder / "Tiny.gguf") == made  # the width that fits, whatever its name


def test_the_chosen_projector_wins_none_chosen_is_none_and_a_gone_one_says_so(
    tmp_path: Path, text: Path, projector: Path
) -> None:
    folder = folder_with(tmp_path / "m", **{"Tiny": text, "mmproj-here": projector})
    elsewhere = folder_with(tmp_path / "other", **{"mmproj-chosen": projector})
    model = folder / "Tiny.gguf"
    assert projector_for(model, str(elsewhere / "mmproj-chosen.gguf")) == elsewhere / "mmproj-chosen.gguf"
    assert projector_for(model, "") is None  # the user chose none: the folder's is not taken
    with pytest.raises(InvalidInputError) as gone:
        projector_for(model, str(tmp_path / "mmproj-deleted.gguf"))
    assert "mmproj-deleted.gguf" in gone.value.message and "gone" in gone.value.message


# --- the scan ----------------------------------------------------------------------------------


def test_the_scan_lists_the_model_with_its_projector_never_the_projector_alone(
    tmp_path: Path, text: Path, projector: Path
) -> None:
    models = tmp_path / "models"
    folder_with(models / "seeing", **{"Tiny-Vision": text, "mmproj-Tiny-Vision-F16": projector})
    folder_with(models / "plain", **{"Tiny-Text": text})
    cache = ScanCache(tmp_path / "scan.json")
    listed = {Path(f.entry.path).name: f for f in listing([models], cache=cache)}
    assert set(listed) == {"Tiny-Vision.gguf", "Tiny-Text.gguf"}
    seeing, plain = listed["Tiny-Vision.gguf"], listed["Tiny-Text.gguf"]
    assert Path(seeing.projector).name == "mmproj-Tiny-Vision-F16.gguf" and seeing.card.vision
    assert plain.projector == "" and not plain.card.vision and "vision" not in plain.card.badges()
    names = [Path(e.path).name for e in scan([models], cache=cache)]  # `models list`
    assert sorted(names) == ["Tiny-Text.gguf", "Tiny-Vision.gguf"]


def test_the_scan_follows_the_choice_none_or_a_file_gone(
    tmp_path: Path, text: Path, projector: Path
) -> None:
    models = folder_with(tmp_path / "models", **{"A": text, "B": text, "mmproj-F16": projector})
    chosen = {str(models / "A.gguf"): "", str(models / "B.gguf"): str(tmp_path / "mmproj-gone.gguf")}
    found = listing([models], cache=ScanCache(tmp_path / "scan.json"), chosen=chosen.get)
    by_name = {Path(f.entry.path).name: f for f in found}
    assert set(by_name) == {"A.gguf", "B.gguf"}
    assert by_name["A.gguf"].projector == "" and not by_name["A.gguf"].card.vision
    gone = by_name["B.gguf"]
    assert gone.projector == "" and not gone.card.vision and gone.entry.usable
    assert "mmproj-gone.gguf" in gone.unpaired and "gone" in gone.unpaired


# --- real loads through the worker --------------------------------------------------------------


@pytest.fixture(scope="module")
def client() -> Iterator[WorkerClient]:
    worker = WorkerClient()
    yield worker
    worker.close()


def test_a_projector_that_fits_loads_and_the_model_sees_images(
    client: WorkerClient, text: Path, projector: Path
) -> None:
    info = client.load(text, n_ctx=512, n_threads=1, projector=projector)
    assert info.projector == str(projector)


def test_a_projector_for_another_model_is_refused_naming_it(
    client: WorkerClient, text: Path
) -> None:
    wrong = tiny_vision.build_projector(**WRONG)
    with pytest.raises(ModelLoadError) as caught:
        client.load(text, n_ctx=512, n_threads=1, projector=wrong)
    assert caught.value.problem is LoadProblem.LOAD_FAILED
    assert f"the projector {wrong.name} cannot be used with this model" in caught.value.message


def test_a_damaged_projector_says_llama_cpp_stopped_and_the_client_loads_again(
    client: WorkerClient, text: Path, projector: Path
) -> None:
    damaged = tiny_vision.build_projector(**DAMAGED)
    with pytest.raises(ModelLoadError) as caught:
        client.load(text, n_ctx=512, n_threads=1, projector=damaged)
    said = caught.value.message
    assert f"llama.cpp stopped while loading its projector {damaged.name}" in said
    assert client.load(text, n_ctx=512, n_threads=1, projector=projector).projector


# --- the window's load ------------------------------------------------------------------------


def load_in_host(qtbot: Any, host: ModelHost, path: Path) -> list[tuple[str, ...]]:
    """Load `path` in `host`; what it said, in order: ("loaded", name), ("failed", text)."""
    heard: list[tuple[str, ...]] = []
    host.loaded.connect(lambda name: heard.append(("loaded", name)))
    host.loadFailed.connect(lambda text, _details: heard.append(("failed", text)))
    task = asyncio.ensure_future(host.load(str(path), n_ctx=512, threads=1))
    qtbot.waitUntil(task.done, timeout=120_000)
    assert task.result()
    return heard


@pytest.mark.parametrize("broken", [WRONG, DAMAGED], ids=["another-model", "damaged"])
def test_a_projector_that_cannot_be_used_loads_the_model_text_only_and_says_why(
    qtbot: Any, qloop: Any, home: Path, text: Path, broken: dict[str, Any]
) -> None:
    bad = tiny_vision.build_projector(**broken)
    folder = folder_with(home / "models", **{"Tiny": text, "mmproj-Tiny": bad})
    ChoiceStore().remember(folder / "Tiny.gguf", ModelChoice(projector=str(folder / "mmproj-Tiny.gguf")))
    host = ModelHost(EngineBridge())
    try:
        heard = load_in_host(qtbot, host, folder / "Tiny.gguf")
        assert [kind for kind, _ in heard] == ["loaded", "failed"]  # the model, then why
        said = heard[1][1]
        assert "mmproj-Tiny.gguf" in said and "text only" in said and "images are off" in said
        assert host.ready and host.projector == "" and host.images_off == said
        picker = ModelPicker(host, lambda _p: None, lambda: None)
        qtbot.addWidget(picker)
        picker.set_loaded(host.name)
        assert picker.itemIcon(0).isNull() and "images are off" in picker.toolTip()
    finally:
        host.close()


def test_the_window_loads_the_folder_s_projector_and_its_picker_shows_the_eye(
    qtbot: Any, qloop: Any, home: Path, text: Path, projector: Path
) -> None:
    folder = folder_with(home / "models", **{"Tiny": text, "mmproj-Tiny": projector})
    host = ModelHost(EngineBridge())
    try:
        assert [k for k, _ in load_in_host(qtbot, host, folder / "Tiny.gguf")] == ["loaded"]
        assert host.projector == str(folder / "mmproj-Tiny.gguf") and not host.images_off
        picker = ModelPicker(host, lambda _p: None, lambda: None)
        qtbot.addWidget(picker)
        picker.set_loaded(host.name)
        assert not picker.itemIcon(0).isNull() and "Sees images (projector mmproj-Tiny.gguf)" in picker.toolTip()
    finally:
        host.close()


class Loading(ScriptedClient):
    """A scripted source that records each load's projector and may refuse loads."""

    def __init__(self, refuse: int = 0) -> None:
        super().__init__([])
        self.projectors: list[Any] = []
        self.refuse = refuse  # how many loads to refuse, as llama.cpp would the weights

    def load(self, path: str, **options: Any) -> Any:
        self.projectors.append(options.get("projector"))
        if len(self.projectors) <= self.refuse:
            raise ModelLoadError(LoadProblem.LOAD_FAILED, path, "its weights are damaged")
        return dataclasses.replace(self.info, projector=str(options.get("projector") or ""))


def test_a_chosen_projector_gone_loads_text_only_and_says_so(
    qtbot: Any, qloop: Any, home: Path, text: Path
) -> None:
    model = folder_with(home / "models", Tiny=text) / "Tiny.gguf"
    ChoiceStore().remember(model, ModelChoice(projector=str(home / "mmproj-gone.gguf")))
    host, source = ModelHost(EngineBridge()), Loading()
    host.use(source, "smollm2", loader=source)
    heard = load_in_host(qtbot, host, model)
    assert source.projectors == [None]
    assert heard[-1][0] == "failed" and "mmproj-gone.gguf" in heard[-1][1]
    assert "is gone" in heard[-1][1] and "text only" in heard[-1][1]


def test_a_model_failing_before_its_projector_is_not_loaded_again(
    qtbot: Any, qloop: Any, home: Path, text: Path, projector: Path
) -> None:
    model = folder_with(home / "models", Tiny=text, **{"mmproj-Tiny": projector}) / "Tiny.gguf"
    host, source = ModelHost(EngineBridge()), Loading(refuse=1)
    host.use(source, "smollm2", loader=source)
    failed: list[str] = []
    host.loadFailed.connect(lambda text, _details: failed.append(text))
    task = asyncio.ensure_future(host.load(str(model), n_ctx=512))
    qtbot.waitUntil(task.done, timeout=10_000)
    assert not task.result() and len(source.projectors) == 1  # no progress: the weights failed
    assert "its weights are damaged" in failed[0]


# --- the models page and Model settings -------------------------------------------------------


def test_the_models_page_marks_a_model_that_sees_images_and_counts_its_projector(
    qtbot: Any, home: Path, text: Path, projector: Path
) -> None:
    models = home / "data" / "models"
    folder_with(models / "seeing", **{"Tiny-Vision": text, "mmproj-Tiny-Vision": projector})
    folder_with(models / "plain", **{"Tiny-Text": text})
    host = LibraryHost()
    with qtbot.waitSignal(host.listed, timeout=30_000):
        page = ModelsPage(host)
        qtbot.addWidget(page)
        page.show()
    files = [Path(r.entry.path).name for r in page.rows]
    assert "mmproj-Tiny-Vision.gguf" not in files
    seeing, plain = files.index("Tiny-Vision.gguf"), files.index("Tiny-Text.gguf")
    name = page.table.item(seeing, 0)
    assert not name.icon().isNull() and "mmproj-Tiny-Vision.gguf" in name.toolTip()
    assert page.table.item(plain, 0).icon().isNull()
    assert "vision" in page.table.item(seeing, COLUMNS.index("Abilities")).text()
    assert "projector" in page.table.item(seeing, COLUMNS.index("Size")).text()
    row, other = page.rows[seeing], page.rows[plain]
    size = projector.stat().st_size
    assert row.memory.weights == row.entry.weights_bytes + size  # counted with the weights
    assert other.memory.weights == other.entry.weights_bytes
    page.table.selectRow(seeing)
    assert "Sees images with its projector mmproj-Tiny-Vision.gguf" in page.detail.text()


def settings_on(qtbot: Any, model: Path) -> ModelSettings:
    host = ModelHost(EngineBridge())
    host.use(ScriptedClient([]), "smollm2")
    host.path = str(model)
    dialog = ModelSettings(host)
    qtbot.addWidget(dialog)
    return dialog


def test_model_settings_projector_row_offers_the_folder_s_and_saves_the_choice(
    qtbot: Any, home: Path, text: Path, projector: Path
) -> None:
    model = folder_with(home / "models", Tiny=text, **{"mmproj-Tiny": projector}) / "Tiny.gguf"
    dialog = settings_on(qtbot, model)
    row = dialog.projector
    assert row.box.itemText(0) == "Automatic (mmproj-Tiny.gguf)" and row.value() is None
    assert not dialog.reload.isEnabled()  # nothing changed yet
    row.box.setCurrentIndex(row.box.findData(""))
    row.box.activated.emit(row.box.currentIndex())
    assert row.value() == "" and "text only" in row.said.text() and dialog.reload.isEnabled()
    dialog.accept()
    assert ChoiceStore().get(model).projector == "" and dialog.load_changed
    again = settings_on(qtbot, model)  # it opens with what was saved
    assert again.projector.value() == "" and again.projector.box.currentText() == "None (text only)"


def test_a_chosen_file_must_be_a_projector_and_is_saved_with_its_path(
    qtbot: Any, home: Path, text: Path, projector: Path
) -> None:
    model = folder_with(home / "models", Tiny=text) / "Tiny.gguf"
    dialog = settings_on(qtbot, model)
    row = dialog.projector
    assert row.box.itemText(0) == "Automatic (none found)"
    assert not row.choose_file(text)  # a model, not a projector
    assert row.value() is None and "not a projector" in row.said.text()
    assert row.said.property("role") == "error" and text.name in row.said.text()
    assert row.choose_file(projector) and row.value() == str(projector.resolve())
    assert row.box.itemData(row.box.count() - 1) == CHOOSE  # "Choose file…" stays last
    dialog.accept()
    saved = json.loads((home / "config" / "models.json").read_text())
    assert saved[str(model.resolve())]["projector"] == str(projector.resolve())
    assert settings_on(qtbot, model).projector.value() == str(projector.resolve())
