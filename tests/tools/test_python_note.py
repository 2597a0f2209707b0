"""The window's note while the python tool's runtime is compiled ahead: it appears, says ready,
and clears itself; a runtime already compiled says nothing; a failure is said with its reason.

Real widgets offscreen, a real compile (a small WebAssembly module, `runtime_fixture.py`) in a
real child process; the tests wait on the controller's signal, never on a clock.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QMainWindow
from pytestqt.qtbot import QtBot

from app.controllers.runtime_note import READY_TEXT, RuntimePrep, RuntimeState
from app.tools.sandbox_runtime import WAIT_NOTE, CompiledCache, CompileSpec
from app.ui.window.python_note import PythonNote
from tests.tools.runtime_fixture import compile_greedy, compiles, small_spec


def _window(qtbot: QtBot, cache: CompiledCache) -> tuple[QMainWindow, PythonNote, RuntimePrep]:
    window = QMainWindow()
    qtbot.addWidget(window)
    prep = RuntimePrep(cache, window, clear_ms=100)
    note = PythonNote(window.statusBar(), prep)
    window.show()
    return window, note, prep


def test_the_note_appears_says_ready_and_clears(qtbot: QtBot, tmp_path: Path) -> None:
    window, note, prep = _window(qtbot, CompiledCache(small_spec(tmp_path)))
    assert not note.isVisible() and note.window() is window
    seen: list[tuple[object, str, bool, str]] = []  # each change as the window showed it
    prep.changed.connect(
        lambda state, text: seen.append((state, text, note.isVisible(), note.text()))
    )
    quiet = lambda state, _text: state is RuntimeState.QUIET  # noqa: E731
    with qtbot.waitSignal(prep.changed, timeout=60_000, check_params_cb=quiet):
        prep.start()
    compiling = f"{WAIT_NOTE}…"
    assert seen == [
        (RuntimeState.COMPILING, compiling, True, compiling),
        (RuntimeState.READY, READY_TEXT, True, READY_TEXT),
        (RuntimeState.QUIET, "", False, ""),
    ]
    assert compiling.startswith("Preparing the python tool")
    assert len(compiles(tmp_path)) == 1


def test_a_compiled_runtime_says_nothing(qtbot: QtBot, tmp_path: Path) -> None:
    cache = CompiledCache(small_spec(tmp_path))
    cache.prepare()
    window, note, prep = _window(qtbot, cache)
    said: list[object] = []
    prep.changed.connect(lambda state, text: said.append(state))
    with qtbot.waitSignal(prep.finished, timeout=60_000) as finished:
        prep.start()
    assert finished.args == [True]
    assert said == [] and not note.isVisible() and window.statusBar().currentMessage() == ""
    assert len(compiles(tmp_path)) == 1


def test_a_failure_is_said_with_its_reason(qtbot: QtBot, tmp_path: Path) -> None:
    spec = CompileSpec(tmp_path, {"module": "greedy"}, compile_greedy, 256 * 1024 * 1024)
    window, note, prep = _window(qtbot, CompiledCache(spec))
    failed = lambda state, _text: state is RuntimeState.FAILED  # noqa: E731
    with qtbot.waitSignal(prep.changed, timeout=60_000, check_params_cb=failed) as said:
        prep.start()
    assert "MemoryError" in said.args[1]
    assert note.isVisible() and "could not be prepared" in note.text()
    assert note.isEnabled() and window.isVisible()  # said in full colour


def test_the_window_prepares_the_python_tools_own_runtime(qtbot: QtBot) -> None:
    from app.tools.sandbox import runtime_folder, unavailable_reason
    from app.tools.sandbox_runtime import runtime_key

    window = QMainWindow()
    qtbot.addWidget(window)
    prep = RuntimePrep.for_this_install(window)
    if unavailable_reason() is not None:
        assert prep is None  # nothing to prepare, nothing said
        return
    assert prep is not None and prep.parent() is window
    assert prep.cache.spec.folder == runtime_folder()
    assert prep.cache.spec.key == runtime_key()
