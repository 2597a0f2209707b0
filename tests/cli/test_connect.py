"""`harmony-desk connect CLIENT`: each client's file, read back with the parser the client uses
(json, tomllib, PyYAML), holds the base URL, key and model where that client reads them; a
user's own settings survive, the original is backed up once and `--undo` puts it back; `--print`
writes nothing; no key is ever printed. Every run is a real `python -m app` with HOME, the XDG
folders, the keyring and the app's own folders pointed into tmp_path (no network)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from keyring.backend import KeyringBackend

from app.clients import CLIENTS, PLACEHOLDER_KEY, Default, Upsert, Whole
from app.clients.formats import dump_toml, load
from app.clients.merge import MISSING, merge, unmerge
from app.errors import InvalidInputError

ROOT = Path(__file__).resolve().parents[2]
URL = "http://127.0.0.1:8080"
TOKEN = "tok-5f1c2a9e7d3b4c6a"
USER_SECRET = "sk-user-0d9e8f7a6b5c"
CLIENT_HOMES = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "QWEN_HOME", "CONTINUE_GLOBAL_DIR", "LLM_USER_PATH")


class TokenKeyring(KeyringBackend):
    """A keyring holding the server's token (`TEST_SERVER_TOKEN`) and nothing else; read-only."""

    priority = 1

    def get_password(self, service: str, username: str) -> str | None:
        return os.environ.get("TEST_SERVER_TOKEN") if username == "server.token" else None

    def set_password(self, service: str, username: str, password: str) -> None:
        raise AssertionError("connect must never make a token")

    def delete_password(self, service: str, username: str) -> None:
        raise AssertionError("connect must never delete a token")


def app(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)  # fmt: skip


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in CLIENT_HOMES}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        DBUS_SESSION_BUS_ADDRESS=f"unix:path={tmp_path}/no-bus",
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",  # no token: the placeholder
        HARMONY_DESK_CONFIG=str(tmp_path / "app-config"),
        HARMONY_DESK_DATA=str(tmp_path / "app-data"),
    )
    return env


def with_token(env: dict[str, str]) -> dict[str, str]:
    return {**env, "PYTHON_KEYRING_BACKEND": f"{__name__}.TokenKeyring", "TEST_SERVER_TOKEN": TOKEN}


def connect(client: str, env: dict[str, str], *more: str) -> subprocess.CompletedProcess[str]:
    done = app(["connect", client, *more], env)
    assert done.returncode == 0, done.stderr
    assert TOKEN not in done.stdout + done.stderr and USER_SECRET not in done.stdout + done.stderr
    return done


# --- where each client reads the base URL, the key and the model (as the client resolves them)


def json_file(path: Path) -> Any:
    return json.loads(path.read_text())


def yaml_file(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def read_claude_code(home: Path) -> tuple[str, str | None, str]:
    found = json_file(home / ".claude" / "settings.json")["env"]
    return found["ANTHROPIC_BASE_URL"], found["ANTHROPIC_AUTH_TOKEN"], found["ANTHROPIC_MODEL"]


def read_codex(home: Path) -> tuple[str, str | None, str]:
    config = tomllib.loads((home / ".codex" / "config.toml").read_text())
    provider = config["model_providers"][config["model_provider"]]
    assert provider["wire_api"] == "responses"
    return provider["base_url"], provider.get("experimental_bearer_token"), config["model"]


def read_opencode(home: Path) -> tuple[str, str | None, str]:
    config = json_file(home / ".config" / "opencode" / "opencode.json")
    provider_id, model = config["model"].split("/", 1)
    provider = config["provider"][provider_id]
    assert provider["npm"] == "@ai-sdk/openai-compatible" and model in provider["models"]
    return provider["options"]["baseURL"], provider["options"].get("apiKey"), model


def read_qwen_code(home: Path) -> tuple[str, str | None, str]:
    settings = json_file(home / ".qwen" / "settings.json")
    kind, model = settings["security"]["auth"]["selectedType"], settings["model"]["name"]
    [entry] = [e for e in settings["modelProviders"][kind] if e["id"] == model]
    return entry["baseUrl"], settings["env"].get(entry["envKey"]), model


def read_aider(home: Path) -> tuple[str, str | None, str]:
    config = yaml_file(home / ".aider.conf.yml")
    assert config["model"] in json_file(home / ".aider.model.metadata.json")
    provider, model = config["model"].split("/", 1)
    assert provider == "openai"
    return config["openai-api-base"], config["openai-api-key"], model


def read_continue(home: Path) -> tuple[str, str | None, str]:
    config = yaml_file(home / ".continue" / "config.yaml")
    assert {"name", "version", "schema"} <= set(config)
    [entry] = [m for m in config["models"] if m.get("apiBase", "").startswith("http://127.0.0.1")]
    assert entry["provider"] == "openai"
    return entry["apiBase"], entry["apiKey"], entry["model"]


def read_llm(home: Path) -> tuple[str, str | None, str]:
    folder = home / ".config" / "io.datasette.llm"
    [entry] = [m for m in yaml_file(folder / "extra-openai-models.yaml") if m["model_id"] == "harmony-desk"]
    key = json_file(folder / "keys.json")[entry["api_key_name"]] if "api_key_name" in entry else None
    return entry["api_base"], key, entry["model_name"]


READ: dict[str, Callable[[Path], tuple[str, str | None, str]]] = {
    "claude-code": read_claude_code, "codex": read_codex, "opencode": read_opencode,
    "qwen-code": read_qwen_code, "aider": read_aider, "continue": read_continue, "llm": read_llm,
}  # fmt: skip
ANTHROPIC = {"claude-code"}


def expected_url(client: str, root: str = URL) -> str:
    return root if client in ANTHROPIC else f"{root}/v1"


def default_model_name() -> str:
    from app.library.bundled import CHAT_FILE, assembled_default_model

    return (assembled_default_model() or Path(CHAT_FILE)).stem


def test_every_client_has_a_reader() -> None:
    assert set(READ) == set(CLIENTS)


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_the_client_reads_the_server_the_placeholder_key_and_the_default_model(client: str, env: dict[str, str]) -> None:
    done = connect(client, env)
    home = Path(env["HOME"])
    base, key, model = READ[client](home)
    assert base == expected_url(client)
    assert key in (PLACEHOLDER_KEY, None)  # llm sends its own dummy key when none is named
    assert model == default_model_name()  # the model `serve` loads, named as the server names it
    assert f"connect {client} --undo" in done.stdout and "added" in done.stdout
    assert not list(home.rglob("*.harmony-desk.bak"))  # nothing of the user's was there


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_the_servers_token_from_the_keyring_is_the_key_and_is_never_printed(client: str, env: dict[str, str]) -> None:
    done = connect(client, with_token(env), "--model", "my-model", "--base-url", "http://127.0.0.1:9000/v1/")
    base, key, model = READ[client](Path(env["HOME"]))
    assert (base, key, model) == (expected_url(client, "http://127.0.0.1:9000"), TOKEN, "my-model")
    assert "the server's token, from the keyring" in done.stdout


def test_an_answer_leaves_the_prompt_most_of_the_context(env: dict[str, str]) -> None:
    connect("continue", env, "--model", "known-by-name-only")  # Continue refuses maxTokens >= contextLength
    [model] = yaml_file(Path(env["HOME"]) / ".continue" / "config.yaml")["models"]
    options = model["defaultCompletionOptions"]
    assert options == {"contextLength": 4096, "maxTokens": 1024}


# --- a user's own settings: kept, backed up once, restored by --undo

SEEDS: dict[str, tuple[str, str]] = {
    "claude-code": (".claude/settings.json", json.dumps({
        "permissions": {"allow": ["Bash(ls)"]}, "env": {"FOO": "bar", "ANTHROPIC_MODEL": "claude-x"}})),
    "codex": (".codex/config.toml", '# mine\nmodel = "gpt-5"\napproval_policy = "on-request"\n\n'
              '[model_providers.other]\nname = "Other"\nbase_url = "https://example.com/v1"\n'
              f'experimental_bearer_token = "{USER_SECRET}"\n\n[profiles.fast]\nmodel = "o4"\n'),
    "opencode": (".config/opencode/opencode.json", json.dumps({
        "theme": "tokyonight", "provider": {"anthropic": {"options": {"apiKey": USER_SECRET}}}})),
    "qwen-code": (".qwen/settings.json", json.dumps({
        "modelProviders": {"openai": [{"id": "qwen3", "name": "Qwen", "baseUrl": "https://example.com/v1",
                                       "envKey": "DASHSCOPE_API_KEY"}]},
        "env": {"DASHSCOPE_API_KEY": USER_SECRET}, "ui": {"theme": "dark"}})),
    "aider": (".aider.conf.yml", "# mine\ndark-mode: true\nmodel: gpt-4o\n"),
    "continue": (".continue/config.yaml", "name: Mine\nversion: 0.0.1\nschema: v1\nmodels:\n"
                 f"  - name: GPT\n    provider: openai\n    model: gpt-4o\n    apiKey: {USER_SECRET}\n"),
    "llm": (".config/io.datasette.llm/extra-openai-models.yaml",
            "- model_id: other\n  model_name: m\n  api_base: http://example.com/v1\n"),
}  # fmt: skip


def theirs(client: str, path: Path) -> Any:
    """What the seed put there that must survive."""
    kind = {".toml": "toml", ".yml": "yaml", ".yaml": "yaml"}.get(path.suffix, "json")
    data = load(kind, path.read_text(), path)  # type: ignore[arg-type]
    return {
        "claude-code": lambda: (data["permissions"], data["env"]["FOO"]),
        "codex": lambda: (data["approval_policy"], data["model_providers"]["other"], data["profiles"]),
        "opencode": lambda: (data["theme"], data["provider"]["anthropic"]),
        "qwen-code": lambda: (data["modelProviders"]["openai"][0], data["env"]["DASHSCOPE_API_KEY"], data["ui"]),
        "aider": lambda: data["dark-mode"],
        "continue": lambda: (data["name"], data["version"], data["models"][0]),
        "llm": lambda: data[0],
    }[client]()


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_users_settings_survive_are_backed_up_once_and_undo_restores_them(client: str, env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    relative, text = SEEDS[client]
    path = home / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, 0o644)
    kept = theirs(client, path)

    done = connect(client, with_token(env))
    backup = path.with_name(path.name + ".harmony-desk.bak")
    assert backup.read_text() == text and backup.stat().st_mode & 0o777 == 0o644
    assert str(backup) in done.stdout
    assert theirs(client, path) == kept
    assert READ[client](home)[1] == TOKEN

    connect(client, env, "--model", "another")  # a second run: the first backup stays
    assert backup.read_text() == text and READ[client](home)[2] == "another"

    undone = connect(client, env, "--undo")
    assert path.read_text() == text and path.stat().st_mode & 0o777 == 0o644
    assert not backup.exists() and "restored" in undone.stdout
    assert not [p for p in home.rglob("*") if p.is_file() and p != path]  # all it made is gone


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_print_writes_nothing(client: str, env: dict[str, str]) -> None:
    done = connect(client, with_token(env), "--print")
    assert not [p for p in Path(env["HOME"]).rglob("*") if p.is_file()]
    assert expected_url(client) in done.stdout and "<the server's token, from the keyring>" in done.stdout
    assert "Nothing was written" in done.stderr


def test_undo_of_a_file_connect_made_keeps_what_the_user_added_since(env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    connect("codex", env)
    path = home / ".codex" / "config.toml"
    connect("codex", env, "--model", "another")  # a file of ours only: still no backup
    assert not path.with_name("config.toml.harmony-desk.bak").exists()
    path.write_text('approval_policy = "never"\n' + path.read_text())  # the user adds a key
    undone = connect("codex", env, "--undo")
    assert tomllib.loads(path.read_text()) == {"approval_policy": "never"}
    assert "model_providers.harmony-desk: removed" in undone.stdout
    connect("claude-code", env)
    connect("claude-code", env, "--undo")
    assert not (home / ".claude" / "settings.json").exists()  # nothing else was in it


def test_a_file_that_cannot_be_read_stops_the_whole_run_and_changes_nothing(env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    (home / ".aider.model.metadata.json").write_text('{"openai/x": ')  # aider's second file
    done = app(["connect", "aider"], env)
    assert done.returncode == 2 and ".aider.model.metadata.json" in done.stderr
    assert not (home / ".aider.conf.yml").exists()  # its first file was not written either
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text('{"env": "not a table"}')
    done = app(["connect", "claude-code"], env)
    assert done.returncode == 2 and "env holds a string where a table must be" in done.stderr
    assert (home / ".claude" / "settings.json").read_text() == '{"env": "not a table"}'


def test_a_linked_file_is_written_where_the_link_points_and_stays_a_link(env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    real = home / "dotfiles" / "claude.json"
    real.parent.mkdir()
    real.write_text('{"theme": "dark"}')
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").symlink_to(real)
    connect("claude-code", env)
    assert (home / ".claude" / "settings.json").is_symlink()
    assert json_file(real)["theme"] == "dark" and READ["claude-code"](home)[0] == URL
    assert (real.parent / "claude.json.harmony-desk.bak").read_text() == '{"theme": "dark"}'
    connect("claude-code", env, "--undo")
    assert real.read_text() == '{"theme": "dark"}' and (home / ".claude" / "settings.json").is_symlink()


def test_each_clients_own_folder_variable_wins_over_home(env: dict[str, str], tmp_path: Path) -> None:
    moved = {name: tmp_path / name.lower() for name in CLIENT_HOMES}
    env = {**env, **{name: str(path) for name, path in moved.items()}}
    for client in ("claude-code", "codex", "qwen-code", "continue", "llm"):
        connect(client, env)
    assert (moved["CLAUDE_CONFIG_DIR"] / "settings.json").is_file()
    assert (moved["CODEX_HOME"] / "config.toml").is_file()
    assert (moved["QWEN_HOME"] / "settings.json").is_file()
    assert (moved["CONTINUE_GLOBAL_DIR"] / "config.yaml").is_file()
    assert (moved["LLM_USER_PATH"] / "extra-openai-models.yaml").is_file()
    assert not [p for p in Path(env["HOME"]).rglob("*") if p.is_file()]


def test_llm_itself_lists_the_model(env: dict[str, str]) -> None:
    """The one client whose package can run here without a model: `llm models list`."""
    llm = shutil.which("llm")
    if llm is None:
        pytest.skip("the llm tool is not installed (pip install llm)")
    connect("llm", with_token(env), "--model", "my-model")
    listed = subprocess.run([llm, "models", "list"], capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "harmony-desk" in listed.stdout


# --- the pieces under the command: TOML out, merging in and out


def test_toml_written_reads_back_equal() -> None:
    doc = {
        "model": "m", "n": 3, "f": 1.5, "on": True, "list": [1, "two", {"x": 1}], "odd key": "q\"\n",
        "empty": {}, "a": {"b": {"c": 1}, "d": "e"}, "arr": [{"x": 1}, {"x": 2, "y": {"z": 3}}],
    }  # fmt: skip
    assert tomllib.loads(dump_toml(doc)) == doc


def test_merge_is_idempotent_and_unmerge_takes_out_only_what_it_named() -> None:
    changes = {
        "name": Default("Mine"),
        "env": {"A": "1"},
        "providers": {"ours": Whole({"url": "u"})},
        "models": Upsert("name", {"name": "ours", "model": "m"}),
    }
    user = {"name": "Theirs", "env": {"B": "2"}, "models": [{"name": "gpt"}], "providers": {"ours": {"old": 1}}}
    merged, made = merge(user, changes)
    assert merged["name"] == "Theirs" and merged["env"] == {"B": "2", "A": "1"}
    assert merged["providers"]["ours"] == {"url": "u"} and merged["models"][0] == {"name": "gpt"}
    assert [c.where for c in made] == ["env.A", "providers.ours", "models[name=ours]"]
    assert made[0].old is MISSING
    assert merge(merged, changes)[1] == []
    left, removed = unmerge(merged, changes)
    assert left == {"name": "Theirs", "env": {"B": "2"}, "models": [{"name": "gpt"}]}
    assert len(removed) == 3
    assert unmerge(merge({}, changes)[0], changes)[0] is None  # only ours (and defaults) in it


def test_merge_refuses_to_write_over_a_value_of_another_kind() -> None:
    with pytest.raises(InvalidInputError, match="models holds a table where a list must be"):
        merge({"models": {}}, {"models": Upsert("name", {"name": "x"})})
    assert merge({"on": 1}, {"on": True})[1][0].old == 1  # true is not 1
