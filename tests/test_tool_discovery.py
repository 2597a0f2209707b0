"""Plugin discovery: the example plugin installed from plugins/ and loaded by its entry point;
a plugin that fails to import is reported and skipped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.tools.discovery import discover
from app.tools.registry import DuplicateToolError, ToolRegistry

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("plugins")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--target", str(target), str(ROOT / "plugins" / "example-tools")],
        check=True, capture_output=True, timeout=300,
    )
    broken = target / "broken_plugin-0.1.dist-info"
    broken.mkdir()
    (broken / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (broken / "entry_points.txt").write_text("[harmony_desk.tools]\nbroken = no_such_module_here\n")
    sys.path.insert(0, str(target))
    yield target
    sys.path.remove(str(target))


def test_the_example_plugin_loads_and_a_broken_one_is_reported(installed: Path) -> None:
    found = discover()
    assert {t.name for t in found.tools["example-tools"]} == {"word_count", "reverse_text"}
    assert all(t.plugin == "example-tools" for t in found.tools["example-tools"])
    assert "broken" in found.failures and "no_such_module_here" in found.failures["broken"]
    assert {t.name for t in found.tools["built-in"]} == {"calculate", "current_time"}
    registry = ToolRegistry(t for tools in found.tools.values() for t in tools)
    assert registry.get("functions.word_count") is not None
    with pytest.raises(DuplicateToolError, match="example-tools"):
        registry.add(found.tools["example-tools"][0])
    word_count = registry.get("functions.word_count")
    assert word_count is not None and word_count.function("two words") == {"words": 2, "characters": 9}
