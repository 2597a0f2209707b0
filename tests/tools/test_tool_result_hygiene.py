"""Tool results kept in bounds, on real models with a real MCP server (the SDK's own server over
stdio, tests/fixtures/mcp_hygiene_server.py): a 5 MB result on SmolLM2 is cut to its share of
the context with a marker the model reads, the whole kept in the audit under the marker's key;
an image from a tool reaches the tiny vision model as an image (through its projector) and
SmolLM2 as a notice that names it."""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.domain.events import (
    CallOutcome,
    GenerationDone,
    ParseIssue,
    PromptRendered,
    ToolsRan,
    TurnFailed,
    TurnResult,
)
from app.domain.messages import Conversation, ImageContent, Message, Role
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.local.session import ChatSession
from app.engine.protocol import IMAGE_ID
from app.engine.turn.loop import Generate, Generated, RunCalls, turn_loop
from app.engine.turn.tool_results import CHAR_SHARE, SHARE, fit
from app.errors import ErrorCode
from app.templates.registry import get_template
from app.tools.api import tool
from app.tools.audit import AuditLog, cut_key, whole_of
from app.tools.mcp.config import McpServer
from app.tools.mcp.tools import McpPool
from app.tools.registry import ToolRegistry
from tests import tiny_vision
from tests.fixtures.mcp_hygiene_server import DUMP_MB, dump_text, png
from tests.turns import tool_turn

SERVER = str(Path(__file__).resolve().parents[1] / "fixtures" / "mcp_hygiene_server.py")
GREEDY = Sampling(temperature=0.0)
CALLS = 4  # a model may call a tool more than once in one go: up to this many run


@pytest.fixture(scope="module")
def pool() -> Iterator[McpPool]:
    pool = McpPool(lambda: {"hyg": McpServer(command=sys.executable, args=(SERVER,), timeout=60)})
    yield pool
    pool.close()


def offered(pool: McpPool, name: str) -> ToolRegistry:
    return ToolRegistry([t for t in pool.tools("hyg") if t.name == f"hyg__{name}"])


def prompts(session: ChatSession, events: list[Any]) -> list[str]:
    """Each generation's prompt as text (an image's place as <IMAGE>)."""
    table = session.token_table()
    return [
        b"".join(b"<IMAGE>" if i == IMAGE_ID else table[i] for i in e.ids).decode(errors="replace")
        for e in events
        if isinstance(e, PromptRendered)
    ]


def tool_messages(session: ChatSession) -> list[Message]:
    return [m for m in session.conversation.messages if m.author.role is Role.TOOL]


def ran(events: list[Any]) -> list[CallOutcome]:
    return [o for e in events if isinstance(e, ToolsRan) for o in e.outcomes]


def answered(events: list[Any]) -> TurnResult:
    failed = [e for e in events if isinstance(e, TurnFailed)]
    assert not failed, failed
    result = events[-1]
    assert isinstance(result, TurnResult) and result.records, events[-3:]
    return result


def test_a_5_mb_result_is_cut_to_its_share_with_a_marker_and_kept_whole_in_the_audit(
    smollm_client: Any, pool: McpPool, tmp_path: Path
) -> None:
    session = ChatSession(smollm_client, get_template("smollm2"), max_tokens=64, sampling=GREEDY)
    audit = AuditLog(tmp_path / "tool-audit.jsonl")
    events = list(tool_turn(session, "Dump the server's log.", offered(pool, "dump"), audit=audit,
                            tool_choice="required", max_calls=CALLS))  # fmt: skip
    answered(events)
    outcomes = ran(events)  # SmolLM2 calls it twice at once: the batch shares the room
    whole = dump_text(DUMP_MB)
    first, second = prompts(session, events)[:2]
    assert "[cut here: " not in first and "THE END OF THE DUMP" not in second
    share = session.n_ctx // SHARE
    for read in outcomes:
        assert read.ok and isinstance(read.content, str)
        key = cut_key(read.content)
        assert key is not None, read.content[-400:]
        kept = read.content[: read.content.index("\n[cut here: ")]
        assert f"{len(whole) - len(kept):,} left out" in read.content[-400:]  # says how much
        assert 0 < session.count(kept) <= share  # measured with the model's own tokenizer
        assert f"kept in the tool audit as result {key}]" in second and kept[:60] in second
        entry = audit.find(key)
        assert entry is not None and entry["tool"] == "functions.hyg__dump"
        assert whole_of(entry) == whole  # the whole 5 MB, as the server sent it
    generated = [e for e in events if isinstance(e, PromptRendered)]
    assert len(generated[1].ids) < session.n_ctx - session.max_tokens  # it fit: the turn went on
    messages = tool_messages(session)
    assert len(messages) == len(outcomes) and all(len(m.text) < 20_000 for m in messages)
    notices = [e for e in events if isinstance(e, ParseIssue) and e.code is ErrorCode.CONTEXT]
    assert len(notices) == len(outcomes)
    assert all(str(audit.path) in n.message and "tools audit" in n.message for n in notices)


def test_an_image_from_a_tool_reaches_smollm2_as_a_notice_that_names_it(
    smollm_client: Any, pool: McpPool, tmp_path: Path
) -> None:
    session = ChatSession(smollm_client, get_template("smollm2"), max_tokens=64, sampling=GREEDY)
    audit = AuditLog(tmp_path / "tool-audit.jsonl")
    events = list(tool_turn(session, "Attach the dot.", offered(pool, "attached"), audit=audit,
                            tool_choice="required", max_calls=CALLS))  # fmt: skip
    answered(events)
    said = "[image 1: pics://dot.png (image/png, 3.1 KiB) left out: this model reads text only]"
    second = prompts(session, events)[1]
    assert said in second and "<IMAGE>" not in second
    for message in tool_messages(session):
        assert message.images == ()
        assert said in message.text and "The dot is attached." in message.text
    for entry in audit.read().entries:  # the audit names the image it could not show
        assert entry["images"] == [{"name": "pics://dot.png", "mime": "image/png",
                                    "bytes": len(png(8)), "sha256": hashlib.sha256(png(8)).hexdigest()}]  # fmt: skip


@pytest.fixture(scope="module")
def vision() -> Iterator[WorkerClient]:
    client = WorkerClient()
    text, projector = tiny_vision.build_text(), tiny_vision.build_projector()
    client.load(text, n_ctx=1024, n_threads=1, projector=projector)
    yield client
    client.close()


@pytest.mark.parametrize("name", ["picture", "attached"])
def test_an_image_from_a_tool_reaches_the_vision_model_as_an_image(
    vision: WorkerClient, pool: McpPool, tmp_path: Path, name: str
) -> None:
    session = ChatSession(vision, get_template("smollm2"), max_tokens=48, sampling=GREEDY)
    assert session.capabilities.images
    events = list(tool_turn(session, "Show me.", offered(pool, name), audit=AuditLog(tmp_path / "a.jsonl"),
                            tool_choice="required", max_calls=CALLS))  # fmt: skip
    answered(events)
    messages = tool_messages(session)
    assert messages
    for message in messages:
        [image] = message.images
        assert isinstance(image, ImageContent) and (image.width, image.height) == (32, 32)
        assert image.sha256 == hashlib.sha256(png(7 if name == "picture" else 8)).hexdigest()
    second = prompts(session, events)[1]
    assert second.count("<IMAGE>") == len(messages) and "left out" not in second
    assert second.index("[image 1") < second.index("<IMAGE>")  # named, then shown after its text
    timings = [e.timings for e in events if isinstance(e, GenerationDone)]
    assert timings[0].image_tokens == ()
    assert timings[1].image_tokens == (16,) * len(messages)  # through the projector


def test_an_image_that_is_not_one_is_named_with_the_reason_never_shown(
    vision: WorkerClient, pool: McpPool, tmp_path: Path
) -> None:
    session = ChatSession(vision, get_template("smollm2"), max_tokens=48, sampling=GREEDY)
    events = list(tool_turn(session, "Show me.", offered(pool, "broken"), audit=AuditLog(tmp_path / "a.jsonl"),
                            tool_choice="required", max_calls=CALLS))  # fmt: skip
    answered(events)
    for message in tool_messages(session):
        assert message.images == () and "[image 1 could not be shown: " in message.text


def test_a_loop_driven_without_a_session_reads_results_within_a_share_of_characters() -> None:
    @tool
    def echo(size: int) -> str:
        """Echo a long text."""
        return "z" * size

    registry = ToolRegistry([echo])
    call = Message.of(
        Role.ASSISTANT, '{"size": 100000}', recipient="functions.echo", channel="commentary"
    )
    loop = turn_loop(Conversation(messages=(Message.of(Role.USER, "Go"),)), registry)
    action = next(loop)
    assert isinstance(action, Generate)
    action = loop.send(Generated((call,), called=True))
    assert isinstance(action, RunCalls)
    [pending] = action.calls
    action = loop.send([CallOutcome(pending.call_id, True, echo.function(size=100_000))])
    assert isinstance(action, Generate)
    reply = action.conversation.messages[-1]
    said = re.search(r"the first ([\d,]+) of the result's 100,000 characters were read", reply.text)
    assert reply.author.role is Role.TOOL and said is not None, reply.text[-400:]
    assert 0.9 * CHAR_SHARE < int(said.group(1).replace(",", "")) <= CHAR_SHARE
    assert len(reply.text) < CHAR_SHARE + 400


def test_fit_measures_only_a_few_starts_of_a_long_text(smollm_client: Any) -> None:
    session = ChatSession(smollm_client, get_template("smollm2"))
    text = dump_text(DUMP_MB)
    measured: list[int] = []

    def count(part: str) -> int:
        measured.append(len(part))
        return session.count(part)

    kept, used = fit(text, 300, count)
    assert 0 < used <= 300 and session.count(text[:kept]) <= 300
    assert session.count(text[: kept + 200]) > 300 * 0.95  # close to the limit, not far below it
    assert text[kept - 1] == "\n" and len(measured) <= 8 and max(measured) <= 300 * 8
