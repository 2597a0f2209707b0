"""What starting the window loads: a fresh process builds and shows the window (offscreen),
and the modules it imported are compared with two lists a reviewer reads here.

- `FORBIDDEN`: heavy packages the start path must never pay for (JSON mode's validator and
  grammar compiler, the server, MCP, documents, numpy, llama.cpp, the tokenizer, templates'
  Jinja, the keyring). Each loads in the function that needs it.
- `ALLOWED`: every module of the app itself the start path imports. A module not listed fails
  the test: if it is light (no heavy import, nothing done at import time), add it here; if not,
  import it lazily, inside the function that uses it.

The same holds for the command line's way to the window (`harmony-desk` with no subcommand),
which also must not import any subcommand's module; and every subcommand keeps its `--help`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.cli import GROUPS, _build_parser, _command

ROOT = Path(__file__).resolve().parents[2]

FORBIDDEN = (
    "jsonschema", "referencing", "lark", "llguidance", "rfc3987_syntax",  # JSON mode
    "starlette", "uvicorn",  # the server
    "mcp",  # MCP servers
    "pypdf", "docx", "wordllama", "numpy",  # documents
    "llama_cpp",  # local models
    "openai", "openai_harmony", "wasmtime", "tiktoken", "keyring", "jinja2",
)

ALLOWED = (
    "app",
    "app.constrain", "app.constrain.constraint", "app.constrain.guidance",
    "app.controllers", "app.controllers.approvals", "app.controllers.attachments",
    "app.controllers.background", "app.controllers.bridge", "app.controllers.chat",
    "app.controllers.conversations", "app.controllers.fit", "app.controllers.history_host",
    "app.controllers.library_host", "app.controllers.mcp_host", "app.controllers.model_host",
    "app.controllers.preferences", "app.controllers.remote_host",
    "app.controllers.reply_painter", "app.controllers.serve_host", "app.controllers.tool_host",
    "app.controllers.turn_inputs", "app.controllers.turn_source", "app.controllers.ui_state",
    "app.controllers.exchange_host", "app.controllers.library_files", "app.controllers.model_context",
    "app.documents", "app.documents.kept",
    "app.domain", "app.domain.instructions", "app.domain.attachments", "app.domain.builtin_tools", "app.domain.citations",
    "app.domain.declared", "app.domain.endpoint", "app.domain.events", "app.domain.progress", "app.domain.figures", "app.domain.history", "app.domain.library", "app.domain.listing",
    "app.domain.messages", "app.domain.placement", "app.domain.redact", "app.domain.reply",
    "app.domain.reply.builder", "app.domain.reply.cards", "app.domain.reply.changes",
    "app.domain.reply.debug", "app.domain.sampling", "app.domain.textual_call",
    "app.domain.visibility", "app.domain.images", "app.domain.echoed_markup", "app.domain.tool_names", "app.store.images", "app.ui.composer.image_chips",
    "app.tools.mcp.hooks", "app.tools.mcp.answers", "app.controllers.mcp_asks", "app.controllers.mcp_context",
    "app.domain.elicit_form", "app.tools.mcp.asks", "app.tools.mcp.elicit", "app.tools.mcp.sampling",
    "app.ui.composer.mcp_offers", "app.ui.mcp.elicit_dialog", "app.ui.mcp.sign_in", "app.ui.composer.prompt_form",
    "app.ui.mcp.sampling_dialog", "app.domain.inert", "app.domain.links", "app.tools.mcp.caps", "app.ui.mcp.plain",
    "app.domain.budget", "app.domain.compaction", "app.engine.overflow", "app.engine.turn.compaction", "app.ui.window.budget_bar", "app.ui.composer.overflow_menu",
    "app.controllers.compactions", "app.ui.transcript.compaction_marker", "app.ui.window.compaction_controls",
    "app.controllers.answerer", "app.domain.model_names", "app.domain.interrupted",
    "app.ui.debug.vocabulary", "app.ui.window.status_follow",
    "app.controllers.send_queue", "app.controllers.queued_actions", "app.controllers.stale_chats", "app.controllers.turn_fold", "app.ui.composer.queue_panel", "app.ui.composer.send_button",
    "app.engine.turn.tool_results", "app.tools.result_parts", "app.controllers.tool_results", "app.ui.transcript.whole_result",
    "app.engine", "app.engine.backend", "app.engine.local", "app.engine.local.memory", "app.engine.protocol",
    "app.engine.remote", "app.engine.remote.context", "app.engine.remote.reply", "app.engine.remote.retry",
    "app.engine.remote.session", "app.engine.remote.wire", "app.engine.request", "app.engine.session",
    "app.engine.turn", "app.engine.turn.loop", "app.engine.turn.run", "app.engine.turn.tools",
    "app.errors",
    "app.fileio",
    "app.gguf", "app.gguf.cursor", "app.gguf.info", "app.gguf.magic",
    "app.harmony", "app.harmony.body", "app.harmony.encoding", "app.harmony.header",
    "app.harmony.parser", "app.harmony.renderer", "app.harmony.schema_ts", "app.harmony.stream",
    "app.harmony.strict", "app.harmony.text_stream",
    "app.inputs",
    "app.kvcache",  # the history deletes a conversation's KV snapshots: stdlib and root modules only
    "app.library", "app.library.bundled", "app.library.catalog", "app.library.download",
    "app.library.folders", "app.library.http_get", "app.library.queue",
    "app.paths",
    "app.readback",  # the app's own files read back: stdlib and app.inputs only
    "app.resources",
    "app.secrets",
    "app.settings",
    "app.store", "app.store.database", "app.store.history", "app.store.rows", "app.store.search",
    "app.templates", "app.templates.base", "app.templates.builtin", "app.templates.calls",
    "app.templates.calls.format", "app.templates.calls.formats", "app.templates.calls.gemma",
    "app.templates.calls.grammar", "app.templates.calls.hermes", "app.templates.calls.llama3",
    "app.templates.calls.mistral", "app.templates.calls.scanner", "app.templates.calls.turns",
    "app.templates.calls.xml_calls", "app.templates.calls.gemma4", "app.templates.calls.gemma4_values",
    "app.templates.calls.nemotron", "app.templates.calls.pythonic", "app.templates.calls.pythonic_fast", "app.templates.calls.pythonic_grammar",
    "app.templates.calls.functionary", "app.templates.calls.gigachat", "app.templates.calls.minimax",
    "app.templates.calls.minimax_grammar", "app.templates.calls.muse", "app.templates.calls.muse_grammar",
    "app.ui.debug.analysis_note", "app.ui.debug.events", "app.ui.start_folder",
    "app.ui.transcript.interrupted_notice", "app.ui.transcript.user_message", "app.ui.sidebar.empty_chats",
    "app.templates.calls.reading",
    "app.templates.choices", "app.templates.files",
    "app.templates.layout", "app.templates.text_output",
    "app.tools", "app.tools.api", "app.tools.approval", "app.tools.audit", "app.tools.builtin",
    "app.tools.builtin.everyday", "app.tools.calls", "app.tools.child", "app.tools.discovery",
    "app.tools.mcp", "app.tools.mcp.client", "app.tools.mcp.config", "app.tools.mcp.env", "app.tools.mcp.guard",
    "app.tools.mcp.results", "app.tools.mcp.stderr", "app.tools.mcp.tools", "app.tools.mcp.oauth_client",
    "app.tools.mcp.apps", "app.tools.mcp.apps_csp",
    "app.tools.mcp.words", "app.tools.places", "app.tools.plugin_child",
    "app.tools.plugin_host", "app.tools.plugin_load", "app.tools.registry", "app.tools.runner",
    "app.tools.trust",
    "app.ui", "app.ui.app", "app.ui.appearance", "app.ui.column", "app.ui.icons",
    "app.ui.problem_banner", "app.ui.theme",
    "app.ui.composer", "app.ui.composer.composer", "app.ui.composer.field",
    "app.ui.composer.file_chips", "app.ui.composer.fit_bar", "app.ui.composer.mention_picker",
    "app.ui.composer.mentions", "app.ui.composer.message_box", "app.ui.composer.tools_menu",
    "app.ui.debug", "app.ui.debug.pane", "app.ui.debug.point_tips", "app.ui.debug.prompt",
    "app.ui.debug.run", "app.ui.debug.timeline", "app.ui.debug.token_strip",
    "app.ui.markdown", "app.ui.markdown.blocks", "app.ui.markdown.code_highlight",
    "app.ui.markdown.copying", "app.ui.markdown.math_render", "app.ui.markdown.math_spans",
    "app.ui.markdown.source", "app.ui.markdown.tables", "app.ui.markdown.view",
    "app.ui.mcp", "app.ui.mcp.page", "app.ui.mcp.client_box", "app.ui.mcp.page_jobs",
    "app.ui.models", "app.ui.models.downloads", "app.ui.models.page", "app.ui.models.picker",
    "app.ui.models.rows",
    "app.ui.settings", "app.ui.settings.dialog", "app.ui.settings.model_settings",
    "app.ui.settings.pages", "app.ui.settings.speculative_rows",
    "app.ui.sidebar", "app.ui.sidebar.delegate", "app.ui.sidebar.fold", "app.ui.sidebar.groups",
    "app.ui.sidebar.sidebar",
    "app.ui.transcript", "app.ui.transcript.answer_footer", "app.ui.transcript.cards",
    "app.ui.transcript.empty_state", "app.ui.transcript.sources", "app.ui.transcript.turn_parts",
    "app.ui.transcript.turn_widget", "app.ui.transcript.view",
    "app.ui.window", "app.ui.window.about", "app.ui.window.dialogs", "app.ui.window.endpoints",
    "app.ui.window.exchange_dialogs", "app.ui.window.file_menus", "app.ui.window.fitted_status", "app.ui.window.header",
    "app.ui.window.instructions_fold", "app.ui.window.main_window", "app.ui.window.menus",
    "app.ui.window.serve_switch", "app.ui.window.status_line", "app.ui.window.screen_fit",
    "app.ui.composer.drafts", "app.tools.mcp.interpreter",
    "app.ui.transcript.reading", "app.ui.window.context_ways",  # a long prompt read; ways on
)

# the command line's own, on its way to the window
CLI_ALLOWED = ("app.cli", "app.domain.terminal", "app.startup")

WINDOW = """
import json, os, sys
from app.ui.app import application, build_window
app = application()
window = build_window()
window.show()
app.processEvents()
print(json.dumps(sorted(sys.modules)), flush=True)
os._exit(0)
"""

CLI = """
import json, os, sys
from app.cli import main
status = main([])
print(json.dumps([status, sorted(sys.modules)]), flush=True)
os._exit(0)
"""

HELP = """
import contextlib, io, json, os, sys
from app.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main(["--help"])
    except SystemExit as exc:
        code = exc.code
print(json.dumps([code, out.getvalue(), sorted(sys.modules)]), flush=True)
os._exit(0)
"""


def fresh(code: str, tmp_path: Path) -> Any:
    """What `code` prints (JSON) in a fresh Python, with its own empty settings and folders."""
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "HARMONY_DESK_CONFIG": str(tmp_path / "config"),
        "HARMONY_DESK_DATA": str(tmp_path / "data"),
        "HARMONY_DESK_CACHE": str(tmp_path / "cache"),
        "HARMONY_DESK_QUIT_AFTER_SHOWN": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def heavy(modules: list[str]) -> list[str]:
    return sorted({m.split(".")[0] for m in modules} & set(FORBIDDEN))


def not_allowed(modules: list[str], allowed: tuple[str, ...]) -> list[str]:
    return [m for m in modules if (m == "app" or m.startswith("app.")) and m not in allowed]


def why(extra: list[str]) -> str:
    return (
        f"the start path now imports {extra}: if light, add to ALLOWED in"
        " tests/architecture/test_start_imports.py; else import it inside the function that needs it"
    )


def test_building_and_showing_the_window_imports_only_the_listed(tmp_path: Path) -> None:
    modules = fresh(WINDOW, tmp_path)
    assert heavy(modules) == []
    extra = not_allowed(modules, ALLOWED)
    assert extra == [], why(extra)


def test_the_command_line_to_the_window_imports_no_subcommand(tmp_path: Path) -> None:
    status, modules = fresh(CLI, tmp_path)
    assert status == 0  # the window was shown, then the process quit (no model loaded)
    assert heavy(modules) == []
    assert [m for m in modules if m.startswith("app.cli.")] == []
    extra = not_allowed(modules, ALLOWED + CLI_ALLOWED)
    assert extra == [], why(extra)


def test_the_top_level_help_lists_every_command_and_imports_none(tmp_path: Path) -> None:
    code, text, modules = fresh(HELP, tmp_path)
    assert code == 0
    for name, (_, help_text) in GROUPS.items():
        assert name in text and help_text in text
    assert [m for m in modules if m.startswith("app.cli.")] == []


def test_no_subcommand_is_the_window() -> None:
    assert _command([]) is None
    assert _command(["--model", "chat", "--theme", "dark"]) is None  # a value is not a command
    assert _command(["--model", "x.gguf", "history", "list"]) == "history"


@pytest.mark.parametrize("name", sorted(GROUPS))
def test_every_subcommand_keeps_its_full_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    words = [name, "--help"]
    with pytest.raises(SystemExit) as done:
        _build_parser(_command(words)).parse_known_args(words)
    assert done.value.code == 0
    reference = argparse.ArgumentParser(prog=f"harmony-desk {name}")
    importlib.import_module(f"app.cli.{GROUPS[name][0]}").add_arguments(reference)
    assert capsys.readouterr().out == reference.format_help()


def test_a_subcommand_help_through_the_real_entry_point() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "app", "serve", "--help"], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: harmony-desk serve") and "--port" in done.stdout
