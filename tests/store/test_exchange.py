"""Export and import: OpenChatML and JSON round trips, Markdown, LM Studio, Open WebUI, bad files."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.history import ChatDoc, Reply, Segment, Turn, Version
from app.domain.messages import Author, Message, Role, TextContent
from app.errors import TranscriptError
from app.store.exchange import export, from_domain, import_text, to_domain
from app.store.history import HistoryStore
from app.store.importers import import_any


def tool_chat() -> ChatDoc:
    doc = ChatDoc(title="Weather", instructions="Answer briefly.")
    reply = Reply(state="done")
    reply.messages = (
        Message.of(Role.ASSISTANT, "Need the tool.", channel="analysis"),
        Message.of(Role.ASSISTANT, "Checking the time.", channel="commentary"),
        Message.of(Role.ASSISTANT, '{"timezone":"UTC"}', channel="commentary",
                   recipient="functions.current_time", content_type="<|constrain|>json"),
        Message(author=Author(role=Role.TOOL, name="functions.current_time"),
                content=(TextContent(text='{"ok": true, "content": "12:00"}'),), channel="commentary",
                recipient="assistant"),
        Message.of(Role.ASSISTANT, "It is **noon**.", channel="final"),
    )
    reply.segments = [Segment("preamble", "Checking the time."),
                      Segment("tool", data={"tool": "functions.current_time", "state": "ok"}),
                      Segment("answer", "It is **noon**.")]
    doc.turns.append(Turn([Version("What time is it?", replies=[reply])]))
    return doc


@pytest.mark.parametrize("fmt", ["ocm", "json"])
def test_our_formats_round_trip_every_message(fmt: str) -> None:
    doc = tool_chat()
    back = import_text(export(doc, fmt))
    assert back.title == "Weather" and back.instructions == "Answer briefly."
    assert to_domain(back) == to_domain(doc)
    reply = back.turns[0].version.reply
    assert reply is not None and [s.kind for s in reply.segments] == ["preamble", "tool", "answer"]
    assert reply.segments[1].data["state"] == "ok" and "Need the tool." in reply.debug.analysis


def test_markdown_is_visible_text_only() -> None:
    md = export(tool_chat(), "md")
    assert "# Weather" in md and "What time is it?" in md and "It is **noon**." in md
    assert "*Checking the time.*" in md and "tool call: `functions.current_time` (ok)" in md
    assert "Need the tool." not in md


LM_STUDIO = {
    "name": "Capitals",
    "createdAt": 1700000000000,
    "systemPrompt": "You are terse.",
    "messages": [
        {"versions": [{"type": "singleStep", "role": "user", "content": [{"type": "text", "text": "Capital of France?"}]}],
         "currentlySelected": 0},
        {"versions": [
            {"type": "multiStep", "role": "assistant", "steps": [
                {"type": "contentBlock", "style": {"type": "thinking"}, "content": [{"type": "text", "text": "Easy one."}]},
                {"type": "contentBlock", "content": [{"type": "text", "text": "Paris."}]},
                {"type": "debugInfoBlock", "content": []}]},
            {"type": "multiStep", "role": "assistant", "steps": [
                {"type": "contentBlock", "content": [{"type": "text", "text": "It is Paris."}]}]}],
         "currentlySelected": 1},
    ],
}

OPEN_WEBUI = [{
    "id": "c1", "title": "Colours",
    "chat": {"title": "Colours", "history": {"currentId": "m3", "messages": {
        "m1": {"id": "m1", "parentId": None, "role": "user", "content": "Sky colour?", "childrenIds": ["m2", "m3"]},
        "m2": {"id": "m2", "parentId": "m1", "role": "assistant", "content": "Green.", "childrenIds": []},
        "m3": {"id": "m3", "parentId": "m1", "role": "assistant", "childrenIds": [],
               "content": '<details type="reasoning" done="true"><summary>Thought</summary>\n> Rayleigh scattering.\n</details>\nBlue.'},
    }}},
}]


def test_lm_studio_conversations_map_reasoning_to_analysis_and_keep_alternatives() -> None:
    result = import_any(json.dumps(LM_STUDIO))
    assert result.source == "lm-studio" and len(result.docs) == 1
    doc = result.docs[0]
    assert doc.title == "Capitals" and doc.instructions == "You are terse."
    version = doc.turns[0].version
    assert version.user_text == "Capital of France?" and version.chosen == 1
    assert [r.visible_text() for r in version.replies] == ["Paris.", "It is Paris."]
    assert version.replies[0].debug.analysis.strip() == "Easy one." and "Easy one." not in version.replies[0].visible_text()
    assert result.unmapped == ["messages[1].versions[0].steps[2]: a 'debugInfoBlock' step"]


def test_open_webui_exports_import_the_shown_branch() -> None:
    result = import_any(json.dumps(OPEN_WEBUI))
    assert result.source == "open-webui"
    doc = result.docs[0]
    reply = doc.turns[0].version.reply
    assert doc.title == "Colours" and reply is not None and reply.visible_text() == "Blue."
    assert reply.debug.analysis == "Rayleigh scattering."
    assert result.unmapped == ["[0]: 1 messages on branches not shown"]


def test_a_malformed_file_reports_where_and_imports_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"messages": [ {"role": "user", ')
    env = {**os.environ, "HARMONY_DESK_DATA": str(tmp_path / "data")}
    run = subprocess.run([sys.executable, "-m", "app", "history", "import", str(bad)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 2 and "E-INPUT-JSON" in run.stderr and "1:" in run.stderr
    store = HistoryStore(tmp_path / "data" / "history.db")
    assert store.listed() == []
    broken_lm = {**LM_STUDIO, "messages": [*LM_STUDIO["messages"], {"versions": "nope"}]}
    with pytest.raises(TranscriptError, match=r"messages\[2\]"):
        import_any(json.dumps(broken_lm))


def test_the_history_commands(tmp_path: Path) -> None:
    env = {**os.environ, "HARMONY_DESK_DATA": str(tmp_path / "data")}
    run = lambda *a: subprocess.run([sys.executable, "-m", "app", "history", *a], capture_output=True, text=True,  # noqa: E731
                                    env=env, timeout=120)
    (tmp_path / "lm.conversation.json").write_text(json.dumps(LM_STUDIO))
    (tmp_path / "webui.json").write_text(json.dumps(OPEN_WEBUI))
    imported = run("import", str(tmp_path / "lm.conversation.json"))
    assert imported.returncode == 0 and "1 conversations imported" in imported.stderr and "debugInfoBlock" in imported.stderr
    assert run("import", str(tmp_path / "webui.json")).returncode == 0
    listed = run("list").stdout.splitlines()
    assert len(listed) == 2 and any("Capitals" in line for line in listed)
    assert [line for line in run("list", "--search", "rayleigh").stdout.splitlines()] == []  # analysis is not searched
    found = run("list", "--search", "paris").stdout.splitlines()
    assert len(found) == 1 and "Capitals" in found[0]
    doc_id = found[0].split()[0]
    assert run("export", doc_id, "--format", "ocm", str(tmp_path / "out.ocm")).returncode == 0
    again = import_text((tmp_path / "out.ocm").read_text())
    assert again.turns[0].version.reply is not None and again.turns[0].version.reply.visible_text() == "It is Paris."
    assert run("export", "--all", "--format", "md", str(tmp_path / "all")).returncode == 0
    assert len(list((tmp_path / "all").glob("*.md"))) == 2


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["messages", "versions", "role", "content", "steps", "type", "chat", "history",
                         "currentId", "parentId", "text", "name", "title", "style", "currentlySelected"]),
        children, max_size=5),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_json_imports_or_fails_cleanly(value: Any) -> None:
    try:
        result = import_any(json.dumps(value))
    except TranscriptError:
        return
    for doc in result.docs:
        doc.messages()  # a usable conversation


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_text_imports_or_fails_cleanly(text: str) -> None:
    with contextlib.suppress(TranscriptError):  # any other exception fails the test
        import_any(text)


def test_headless_messages_become_turns() -> None:
    from app.domain.messages import Conversation

    conversation = Conversation(messages=(Message.of(Role.USER, "a"), Message.of(Role.ASSISTANT, "b", channel="final"),
                                          Message.of(Role.USER, "c")))
    doc = from_domain(conversation)
    assert [t.version.user_text for t in doc.turns] == ["a", "c"] and doc.turns[1].version.reply is None
