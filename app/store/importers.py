"""Importing conversations from files: ours (OpenChatML, JSON projection) and other apps'.

- LM Studio `*.conversation.json`: `messages[].versions[currentlySelected]` with `role`; user
  text in `content[]` text parts; assistant `steps[]` of `contentBlock`s, where a block styled
  `thinking` is reasoning; other versions (regenerations) become alternative replies; the system
  prompt (`systemPrompt` or the `llm.prediction.systemPrompt` field) becomes the instructions.
- Open WebUI JSON export: a list of chats (or one chat) whose `chat.history.messages` is a tree
  (`parentId`, `childrenIds`, `currentId`); the branch shown in Open WebUI is imported, with
  `<details type="reasoning">` blocks as analysis; tool-call blocks are kept as a note.

Guarantees: reasoning becomes analysis (never visible text); anything that cannot be mapped is
listed in `unmapped` (what, and where); a file that is not one of these formats, or is malformed,
raises `TranscriptError` (code and place) and yields nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.domain.history import ChatDoc, Reply, Segment, Turn, Version
from app.domain.messages import Message, Role
from app.errors import ErrorCode, InvalidInputError, TranscriptError
from app.inputs import load_json, read_text_file
from app.store.exchange import import_carrying


@dataclass
class ImportResult:
    docs: list[ChatDoc]
    source: str  # "ocm", "json", "lm-studio", "open-webui"
    unmapped: list[str] = field(default_factory=list)
    attachments: dict[str, Any] = field(default_factory=dict)  # doc id → the list its file carried


def import_file(path: Path) -> ImportResult:
    try:
        text = read_text_file(path)
    except InvalidInputError as exc:
        raise TranscriptError(ErrorCode.INPUT_INVALID, exc.message) from exc
    return import_any(text)


def import_any(text: str) -> ImportResult:
    """Whatever `text` is (see the module docstring)."""
    try:
        return _import_any(text)
    except TranscriptError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
        raise TranscriptError(
            ErrorCode.INPUT_INVALID,
            f"the file has an unexpected shape ({type(exc).__name__}: {exc})",
        ) from exc


def _import_any(text: str) -> ImportResult:
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return _ours(text, "ocm")
    try:
        data = load_json(text)
    except InvalidInputError as exc:
        raise TranscriptError(ErrorCode.INPUT_INVALID, exc.message) from exc
    except json.JSONDecodeError as exc:
        raise TranscriptError(
            ErrorCode.INPUT_JSON, f"not JSON: {exc.msg}", line=exc.lineno, column=exc.colno
        ) from exc
    if _is_lm_studio(data):
        return _lm_studio(data)
    if _is_open_webui(data):
        return _open_webui(data)
    return _ours(text, "json")


def _ours(text: str, fmt: str) -> ImportResult:
    doc, attachments = import_carrying(text, fmt)
    listed = {doc.id: attachments} if attachments is not None else {}
    return ImportResult([doc], fmt, attachments=listed)


# --- LM Studio -----------------------------------------------------------------------------


def _is_lm_studio(data: Any) -> bool:
    messages = data.get("messages") if isinstance(data, dict) else None
    return (
        isinstance(messages, list)
        and bool(messages)
        and all(isinstance(m, dict) and "versions" in m for m in messages)
    )


def _texts(parts: Any, where: str) -> str:
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, list):
        raise TranscriptError(ErrorCode.INPUT_INVALID, f"{where}: content must be a list")
    return "\n".join(
        str(p.get("text", "")) for p in parts if isinstance(p, dict) and p.get("type") == "text"
    )


def _lm_reply(version: dict[str, Any], where: str, unmapped: list[str]) -> Reply:
    reply = Reply(state="done")
    answer: list[str] = []
    thinking: list[Message] = []
    steps = version.get("steps") if version.get("type") == "multiStep" else None
    if steps is None:
        answer.append(_texts(version.get("content", []), where))
    else:
        if not isinstance(steps, list):
            raise TranscriptError(ErrorCode.INPUT_INVALID, f"{where}: steps must be a list")
        for j, step in enumerate(steps):
            if not isinstance(step, dict):
                raise TranscriptError(
                    ErrorCode.INPUT_INVALID, f"{where}.steps[{j}] is not an object"
                )
            if step.get("type") != "contentBlock":
                unmapped.append(f"{where}.steps[{j}]: a {step.get('type')!r} step")
                continue
            text = _texts(step.get("content", []), f"{where}.steps[{j}]")
            style = step["style"] if isinstance(step.get("style"), dict) else {}
            if style.get("type") == "thinking":
                thinking.append(Message.of(Role.ASSISTANT, text, channel="analysis"))
            else:
                answer.append(text)
    final = "\n\n".join(a for a in answer if a)
    reply.debug.analysis = "".join(f"{m.text}\n" for m in thinking)
    reply.messages = (*thinking, Message.of(Role.ASSISTANT, final, channel="final"))
    reply.segments.append(Segment("answer", final, complete=True))
    return reply


def _lm_studio(data: dict[str, Any]) -> ImportResult:
    unmapped: list[str] = []
    doc = ChatDoc(title=str(data.get("name") or "LM Studio chat"))
    system = data.get("systemPrompt") or ""
    config = data.get("perChatPredictionConfig")
    fields = config.get("fields", []) if isinstance(config, dict) else []
    for f in fields if isinstance(fields, list) else []:
        if isinstance(f, dict) and f.get("key") == "llm.prediction.systemPrompt" and f.get("value"):
            system = str(f["value"])
    doc.instructions = str(system)
    for i, message in enumerate(data["messages"]):
        where = f"messages[{i}]"
        versions = message.get("versions")
        if not isinstance(versions, list) or not versions:
            raise TranscriptError(
                ErrorCode.INPUT_INVALID, f"{where}: versions must be a non-empty list"
            )
        chosen = message.get("currentlySelected", 0)
        chosen = chosen if isinstance(chosen, int) and 0 <= chosen < len(versions) else 0
        role = versions[chosen].get("role") if isinstance(versions[chosen], dict) else None
        if role == "user":
            doc.turns.append(Turn([Version(_texts(versions[chosen].get("content", []), where))]))
        elif role == "assistant":
            if not doc.turns:
                doc.turns.append(Turn([Version("")]))
            version = doc.turns[-1].version
            for k, v in enumerate(versions):
                if isinstance(v, dict):
                    version.replies.append(_lm_reply(v, f"{where}.versions[{k}]", unmapped))
            version.chosen = min(chosen, len(version.replies) - 1)
        elif role == "system":
            doc.instructions = _texts(versions[chosen].get("content", []), where)
        else:
            unmapped.append(f"{where}: a message with role {role!r}")
    return ImportResult([doc], "lm-studio", unmapped)


# --- Open WebUI ----------------------------------------------------------------------------

_DETAILS_OPEN = re.compile(r'<details\s{1,100}type="(?P<kind>[^"<>]{1,200})"[^>]{0,2000}>')
_CLOSE = "</details>"


def _without_summaries(body: str) -> str:
    """`body` with each `<summary>…</summary>` removed, in one pass."""
    kept: list[str] = []
    position = 0
    while (start := body.find("<summary>", position)) >= 0:
        end = body.find("</summary>", start)
        if end < 0:
            break
        kept.append(body[position:start])
        position = end + len("</summary>")
    kept.append(body[position:])
    return "".join(kept)


def _details(content: str) -> Iterator[tuple[int, int, str, str]]:
    """(start, end, kind, body) of each `<details type=…>` block, in one pass: a block opened
    after the last `</details>` ends the scan, so no text is searched twice."""
    position = 0
    while True:
        opened = _DETAILS_OPEN.search(content, position)
        if opened is None:
            return
        close = content.find(_CLOSE, opened.end())
        if close < 0:
            return
        yield opened.start(), close + len(_CLOSE), opened["kind"], content[opened.end() : close]
        position = close + len(_CLOSE)


def _is_open_webui(data: Any) -> bool:
    chats = data if isinstance(data, list) else [data]
    return bool(chats) and all(
        isinstance(c, dict) and isinstance(c.get("chat"), dict) for c in chats
    )


def _split_reasoning(content: str) -> tuple[str, str, list[str]]:
    """(visible text, reasoning, other detail kinds) of an Open WebUI message."""
    reasoning: list[str] = []
    other: list[str] = []
    visible: list[str] = []
    position = 0
    for start, end, kind, body in _details(content):
        visible.append(content[position:start])
        position = end
        if kind == "reasoning":
            text = _without_summaries(body).strip()
            reasoning.append(re.sub(r"^> ?", "", text, flags=re.M))
        else:
            other.append(kind)
    visible.append(content[position:])
    return "".join(visible).strip(), "\n".join(reasoning), other


def _webui_chat(chat: dict[str, Any], where: str, unmapped: list[str]) -> ChatDoc:
    body = chat["chat"]
    doc = ChatDoc(title=str(chat.get("title") or body.get("title") or "Open WebUI chat"))
    history = body.get("history") if isinstance(body.get("history"), dict) else {}
    nodes = history.get("messages") if isinstance(history.get("messages"), dict) else None
    if nodes:
        chain: list[dict[str, Any]] = []
        current = history.get("currentId")
        seen: set[str] = set()
        while isinstance(current, str) and current in nodes and current not in seen:
            seen.add(current)
            chain.append(nodes[current])
            current = nodes[current].get("parentId")
        chain.reverse()
        if len(nodes) > len(chain):
            unmapped.append(f"{where}: {len(nodes) - len(chain)} messages on branches not shown")
    else:
        chain = body.get("messages") if isinstance(body.get("messages"), list) else []
    for j, node in enumerate(chain):
        if not isinstance(node, dict):
            raise TranscriptError(
                ErrorCode.INPUT_INVALID, f"{where}.messages[{j}] is not an object"
            )
        role, content = node.get("role"), node.get("content", "")
        if not isinstance(content, str):
            raise TranscriptError(
                ErrorCode.INPUT_INVALID, f"{where}.messages[{j}]: content must be text"
            )
        if role == "user":
            doc.turns.append(Turn([Version(content)]))
        elif role == "assistant":
            if not doc.turns:
                doc.turns.append(Turn([Version("")]))
            visible, reasoning, other = _split_reasoning(content)
            reply = Reply(state="done")
            if reasoning:
                reply.debug.analysis = reasoning
                reply.messages = (Message.of(Role.ASSISTANT, reasoning, channel="analysis"),)
            reply.messages = (*reply.messages, Message.of(Role.ASSISTANT, visible, channel="final"))
            reply.segments.append(Segment("answer", visible, complete=True))
            unmapped.extend(f"{where}.messages[{j}]: a {kind!r} block" for kind in other)
            doc.turns[-1].version.replies.append(reply)
        elif role == "system":
            doc.instructions = content
        else:
            unmapped.append(f"{where}.messages[{j}]: a message with role {role!r}")
    return doc


def _open_webui(data: Any) -> ImportResult:
    chats = data if isinstance(data, list) else [data]
    unmapped: list[str] = []
    docs = [_webui_chat(c, f"[{i}]", unmapped) for i, c in enumerate(chats)]
    return ImportResult(docs, "open-webui", unmapped)


__all__ = ["ImportResult", "import_any", "import_file"]
