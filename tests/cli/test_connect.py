"""`harmony-desk connect CLIENT`: each client's file, read back with the parser the client uses
(json, tomllib, PyYAML), holds the base URL, key and model where that client reads them; a
user's own settings and comments survive, the original is backed up once, and `--undo` takes
out what connect set and puts back what it replaced, keeping what the user changed since (the
file comes back byte for byte when nothing was) and the backup; `--print` writes nothing; no
key is ever printed. Every run is a real `python -m app` with HOME, the XDG folders, the keyring
and the app's own folders pointed into tmp_path (no network)."""

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
from app.clients.formats import dump, load, start
from app.clients.merge import MISSING, merge, only_defaults, unmerge
from app.clients.nodes import append, drop, plain, pop, put
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
    return client_env(tmp_path)


def client_env(tmp_path: Path) -> dict[str, str]:
    """The variables every run gets: HOME, the XDG folders, the keyring and the app's folders
    in `tmp_path`, no client's own folder variable, no token."""
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


def test_claude_code_waits_for_a_local_model_to_read_its_first_prompt(env: dict[str, str]) -> None:
    """Its stream watchdogs give up after 300 s without an event by default, sooner than a CPU
    reads its 20,000-token first prompt; both waits are set to the most its byte watchdog takes."""
    connect("claude-code", env)
    found = json_file(Path(env["HOME"]) / ".claude" / "settings.json")["env"]
    assert (found["API_TIMEOUT_MS"], found["CLAUDE_STREAM_IDLE_TIMEOUT_MS"]) == ("1800000", "1800000")


# --- a user's own settings and comments: kept, backed up once; --undo takes out only connect's

SEEDS: dict[str, tuple[str, str]] = {
    "claude-code": (".claude/settings.json", json.dumps({
        "permissions": {"allow": ["Bash(ls)"]}, "env": {"FOO": "bar", "ANTHROPIC_MODEL": "claude-x"}})),
    "codex": (".codex/config.toml", '# mine\nmodel = "gpt-5"  # the best\napproval_policy = "on-request"\n\n'
              '[model_providers.other]\nname = "Other"\nbase_url = "https://example.com/v1"\n'
              f'experimental_bearer_token = "{USER_SECRET}"\n\n[profiles.fast]\nmodel = "o4"\n'),
    "opencode": (".config/opencode/opencode.json", json.dumps({
        "theme": "tokyonight", "provider": {"anthropic": {"options": {"apiKey": USER_SECRET}}}})),
    "qwen-code": (".qwen/settings.json", json.dumps({
        "modelProviders": {"openai": [{"id": "qwen3", "name": "Qwen", "baseUrl": "https://example.com/v1",
                                       "envKey": "DASHSCOPE_API_KEY"}]},
        "env": {"DASHSCOPE_API_KEY": USER_SECRET}, "ui": {"theme": "dark"}})),
    "aider": (".aider.conf.yml", "# mine\ndark-mode: true\nmodel: gpt-4o  # the usual\n\n# the end\n"),
    "continue": (".continue/config.yaml", "name: Mine  # mine\nversion: 0.0.1\nschema: v1\nmodels:\n"
                 f"  # my models\n  - name: GPT\n    provider: openai\n    model: 'gpt-4o'\n    apiKey: {USER_SECRET}\n"
                 "\n# the end\n"),
    "llm": (".config/io.datasette.llm/extra-openai-models.yaml",
            "# mine\n- model_id: other  # the other one\n  model_name: m\n  api_base: http://example.com/v1\n"),
}  # fmt: skip


def theirs(client: str, path: Path) -> Any:
    """What the seed put there that must survive."""
    kind = {".toml": "toml", ".yml": "yaml", ".yaml": "yaml"}.get(path.suffix, "json")
    data = plain(load(kind, path.read_text(), path))  # type: ignore[arg-type]
    return {
        "claude-code": lambda: (data["permissions"], data["env"]["FOO"]),
        "codex": lambda: (data["approval_policy"], data["model_providers"]["other"], data["profiles"]),
        "opencode": lambda: (data["theme"], data["provider"]["anthropic"]),
        "qwen-code": lambda: (data["modelProviders"]["openai"][0], data["env"]["DASHSCOPE_API_KEY"], data["ui"]),
        "aider": lambda: data["dark-mode"],
        "continue": lambda: (data["name"], data["version"], data["models"][0]),
        "llm": lambda: data[0],
    }[client]()


def seed(client: str, home: Path) -> tuple[Path, str]:
    relative, text = SEEDS[client]
    path = home / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, 0o644)
    return path, text


def comments(text: str) -> list[str]:
    return [line.split("#", 1)[1] for line in text.splitlines() if "#" in line]


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_users_settings_and_comments_survive_are_backed_up_once_and_undo_gives_the_file_back(client: str, env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    path, text = seed(client, home)
    kept = theirs(client, path)

    done = connect(client, with_token(env))
    backup = path.with_name(path.name + ".harmony-desk.bak")
    assert backup.read_text() == text and backup.stat().st_mode & 0o777 == 0o644
    assert str(backup) in done.stdout and "comments were not kept" not in done.stdout
    assert theirs(client, path) == kept and READ[client](home)[1] == TOKEN
    assert set(comments(text)) <= set(comments(path.read_text()))  # every comment is still there

    connect(client, env, "--model", "another")  # a second run: the first backup stays
    assert backup.read_text() == text and READ[client](home)[2] == "another"

    undone = connect(client, env, "--undo")
    assert path.read_text() == text and path.stat().st_mode & 0o777 == 0o644  # byte for byte
    old = path.with_name(path.name + ".harmony-desk.old")
    assert not backup.exists() and old.read_text() == text  # the backup, kept as a safety copy
    assert "what connect added taken out" in undone.stdout and str(old) in undone.stdout
    assert not [p for p in home.rglob("*") if p.is_file() and p not in (path, old)]  # all it made is gone
    connect(client, env, "--undo")  # a second undo changes nothing
    assert path.read_text() == text


# an edit a user makes after connect: (text before, text after) for a file of comments, else data
EDITS: dict[str, Callable[[str], str]] = {
    "claude-code": lambda t: json.dumps({**json.loads(t), "model": "opus"}),
    "codex": lambda t: '# added since\nsandbox_mode = "read-only"\n' + t,
    "opencode": lambda t: json.dumps({**json.loads(t), "username": "me"}),
    "qwen-code": lambda t: json.dumps({**json.loads(t), "vimMode": True}),
    "aider": lambda t: t.replace("dark-mode: true\n", "dark-mode: true\n# added since\nauto-commits: false\n"),
    "continue": lambda t: t.replace("schema: v1\n", "schema: v1\n# added since\nrules:\n  - Be brief\n"),
    "llm": lambda t: t.replace("# mine\n", "# mine\n# added since\n- model_id: third\n  model_name: t\n"),
}  # fmt: skip


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_undo_keeps_what_the_user_changed_after_connect(client: str, env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    path, text = seed(client, home)
    connect(client, env)
    path.write_text(EDITS[client](path.read_text()))
    connect(client, env, "--undo")
    if path.suffix == ".json":
        assert json.loads(path.read_text()) == json.loads(EDITS[client](text))
    else:
        assert path.read_text() == EDITS[client](text)  # comments and layout too


def test_connect_after_an_undo_backs_up_the_file_as_it_is_then(env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    path, text = seed("codex", home)
    connect("codex", env)
    connect("codex", env, "--undo")
    path.write_text(path.read_text().replace('model = "gpt-5"', 'model = "gpt-6"'))
    connect("codex", env)  # a fresh backup: the one from before the first connect is old now
    assert path.with_name("config.toml.harmony-desk.bak").read_text() == text.replace("gpt-5", "gpt-6")
    connect("codex", env, "--undo")
    assert path.read_text() == text.replace("gpt-5", "gpt-6")


def test_a_file_with_only_one_of_connects_keys_is_the_users_and_comes_back(env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    path = home / ".aider.conf.yml"
    path.write_text("model: gpt-4o\n")  # the user's own choice, one of the keys connect sets
    connect("aider", env)
    assert path.with_name(".aider.conf.yml.harmony-desk.bak").read_text() == "model: gpt-4o\n"
    connect("aider", env, "--undo")
    assert path.read_text() == "model: gpt-4o\n"


def test_a_layout_the_round_trip_writer_gets_wrong_is_written_anew_with_the_right_settings(tmp_path: Path) -> None:
    from app.clients import connecting

    home = tmp_path / "home"
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    text = 'model_providers.other.name = "x"  # dotted keys\nmodel_providers.other.base_url = "u"\n'
    path.write_text(text)
    target = connecting.target_for(URL, PLACEHOLDER_KEY, "m", 8192, 4096)
    report = connecting.connect("codex", target, {}, home)
    written = tomllib.loads(path.read_text())
    assert written["model_providers"]["other"] == {"name": "x", "base_url": "u"}
    assert written["model_providers"]["harmony-desk"]["base_url"] == f"{URL}/v1" and written["model"] == "m"
    assert "its comments and layout could not be kept: the file as it was is in" in report.text
    connecting.undo("codex", {}, home)
    assert tomllib.loads(path.read_text()) == tomllib.loads(text)


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
    assert tomllib.loads(dump("toml", doc)) == doc
    merged = merge(start("toml", "table"), doc)[0]
    assert tomllib.loads(dump("toml", merged)) == doc


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
    assert only_defaults(unmerge(merge({}, changes)[0], changes)[0], changes)  # only ours in it
    assert not only_defaults(left, changes)


def test_unmerge_puts_back_what_the_original_had_and_keeps_later_edits() -> None:
    changes = {
        "model": "ours",
        "env": {"A": "1"},
        "providers": {"ours": Whole({"url": "u"}, ours=lambda v: isinstance(v, dict) and v.get("url") == "u")},
        "models": Upsert("name", {"name": "ours", "model": "m"}),
    }
    original = {"model": "theirs", "models": [{"name": "ours", "model": "their own"}], "providers": {"x": {"url": "u"}}}
    merged = merge(original, changes)[0]
    merged["later"] = True  # the user's edit after connect
    merged["providers"]["y"] = {"url": "u"}  # an entry `ours` accepts that the original lacked
    left, done = unmerge(merged, changes, original)
    assert left == {**original, "later": True}
    assert [(c.where, c.new) for c in done] == [
        ("model", "theirs"), ("env.A", MISSING), ("providers.ours", MISSING), ("providers.y", MISSING),
        ("models[name=ours]", {"name": "ours", "model": "their own"}),
    ]  # fmt: skip
    assert merged["model"] == "ours"  # neither mutates what it is given


YAML_FILE = """\
# my settings
name: Mine  # the name
models:
  - name: GPT   # the usual
    roles: [chat]

# the end
"""


def test_yaml_items_added_and_taken_out_leave_the_text_as_it_was() -> None:
    path = Path("config.yaml")
    doc = load("yaml", YAML_FILE, path)
    append(doc["models"], {"name": "ours", "roles": ["chat", "edit"], "on": "yes", "n": "1.0"})
    put(doc, "added", {"deep": {"er": 1}})
    put(doc, "name", "Ours")
    text = dump("yaml", doc, YAML_FILE)
    assert yaml.safe_load(text)["models"][1] == {"name": "ours", "roles": ["chat", "edit"], "on": "yes", "n": "1.0"}
    assert text.endswith("added:\n  deep:\n    er: 1\n\n# the end\n") and "name: Ours  # the name" in text
    assert "  - name: ours\n    roles:\n      - chat\n" in text  # the file's own indentation
    again = load("yaml", text, path)
    pop(again["models"], 1)
    drop(again, "added")
    put(again, "name", "Mine")
    assert dump("yaml", again, text) == YAML_FILE


def test_toml_tables_added_and_taken_out_leave_the_text_as_it_was() -> None:
    text = '# top\nmodel = "m"  # mine\n\n[providers.a]\nurl = "a"\n\n[other]\nx = 1\n'
    path = Path("config.toml")
    doc = merge(load("toml", text, path), {"providers": {"ours": Whole({"url": "u"})}, "new": {"on": True}, "k": 1})[0]
    written = dump("toml", doc, text)
    assert '[providers.ours]\nurl = "u"\n\n[other]' in written and written.startswith('# top\nmodel = "m"  # mine\nk = 1\n')
    left = unmerge(load("toml", written, path), {"providers": {"ours": Whole({})}, "new": {"on": True}, "k": 1})[0]
    assert dump("toml", left, written) == text


def test_a_comment_only_file_keeps_its_comments_and_json_keeps_its_indentation() -> None:
    doc = merge(start("yaml", "list", "# models\n"), Upsert("id", {"id": "x"}))[0]
    assert dump("yaml", doc, "# models\n") == "# models\n- id: x\n"
    assert dump("json", {"a": [1]}, '{\n    "b": 2\n}\n') == '{\n    "a": [\n        1\n    ]\n}\n'
    assert dump("json", {"a": 1}, '{"b": 2}') == '{"a": 1}'
    assert dump("json", {"a": 1}) == '{\n  "a": 1\n}\n'  # a new file


def test_merge_refuses_to_write_over_a_value_of_another_kind() -> None:
    with pytest.raises(InvalidInputError, match="models holds a table where a list must be"):
        merge({"models": {}}, {"models": Upsert("name", {"name": "x"})})
    assert merge({"on": 1}, {"on": True})[1][0].old == 1  # true is not 1
