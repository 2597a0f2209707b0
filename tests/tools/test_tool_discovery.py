"""Plugin discovery: the example plugin installed from plugins/ and loaded by its entry point;
a plugin that fails to import is reported and skipped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.tools.discovery import Discovered, discover
from app.tools.registry import DuplicateToolError, ToolRegistry
from app.tools.trust import TrustStore

ROOT = Path(__file__).resolve().parents[2]


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


def trusted(**kwargs: object) -> Discovered:
    """Discover, trust everything pending (as a user answering the dialog would), discover again."""
    first = discover(**kwargs)  # type: ignore[arg-type]
    first.close()
    store = TrustStore()
    for identity in first.pending.values():
        store.trust(identity)
    return discover(**kwargs)  # type: ignore[arg-type]


def test_the_example_plugin_loads_and_a_broken_one_is_reported(installed: Path) -> None:
    found = trusted()
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


def test_plugin_folders_load_without_installing(tmp_path: Path) -> None:
    packaged = tmp_path / "weather-tools"
    (packaged / "src" / "weather_tools_pkg").mkdir(parents=True)
    (packaged / "pyproject.toml").write_text(
        '[project]\nname = "weather-tools"\nversion = "0.1"\n'
        '[project.entry-points."harmony_desk.tools"]\nweather = "weather_tools_pkg:plugin"\n'
    )
    (packaged / "src" / "weather_tools_pkg" / "__init__.py").write_text(
        "from app.tools.api import Risk, hookimpl, tool\n"
        "@tool(risk=Risk.NETWORK)\ndef forecast(city: str) -> str:\n    '''The forecast.'''\n    return 'sun in ' + city\n"
        "class plugin:\n    @staticmethod\n    @hookimpl\n    def harmony_desk_tools():\n        return [forecast]\n"
    )
    (tmp_path / "dice.py").write_text(
        "from app.tools.api import hookimpl, tool\n"
        "@tool(namespace='games')\ndef roll(sides: int) -> int:\n    '''Roll a die.'''\n    return sides\n"
        "@hookimpl\ndef harmony_desk_tools():\n    return [roll]\n"
    )
    (tmp_path / "halfdone.py").write_text("import no_such_module_either\n")
    bad = tmp_path / "bad-toml"
    bad.mkdir()
    (bad / "pyproject.toml").write_text("[project\n")
    found = trusted(folders=[tmp_path, ROOT / "plugins"])
    assert [t.qualified_name for t in found.tools["weather"]] == ["functions.forecast"]
    assert found.tools["weather"][0].function("Oslo") == "sun in Oslo" and found.tools["weather"][0].plugin == "weather"
    assert [t.qualified_name for t in found.tools["dice"]] == ["games.roll"]
    assert "no_such_module_either" in found.failures["halfdone"] and "not readable TOML" in found.failures["bad-toml"]
    assert {t.name for t in found.tools["example-tools"]} == {"word_count", "reverse_text"}
    again = discover(folders=[ROOT / "plugins", ROOT / "plugins"])
    assert again.shadowed == {"example-tools": str(ROOT / "plugins" / "example-tools")}


def test_plugins_are_enabled_per_conversation() -> None:
    from app.tools.session import ConversationTools, ToolOptions, UnknownToolError

    found = trusted(folders=[ROOT / "plugins"])
    with ConversationTools(ToolOptions(enabled=("example-tools",)), found) as one:
        assert sorted(t.qualified_name for t in one.registry) == ["functions.reverse_text", "functions.word_count"]
    with ConversationTools(ToolOptions(enabled=("calculate", "functions.word_count")), found) as other:
        assert sorted(t.qualified_name for t in other.registry) == ["functions.calculate", "functions.word_count"]
        assert other.sandbox is None and other.browser is None  # built-ins only when enabled
    with pytest.raises(UnknownToolError, match=r"teleport.*available: browser, built-in, calculate"):
        ConversationTools(ToolOptions(enabled=("teleport",)), found)
