"""A call the model wrote that is no valid call, as a server client gets it: a real server on
loopback over a scripted source writing Qwen's (Hermes) turns, asked through the `openai` and
`anthropic` SDKs with the tool declared. The markup comes back as the text the model wrote, in
its place, with the text around it joined as written (as llama-server and vLLM give it), never
as a call and never dropped; a valid call beside it is still a call; the window's reply keeps
the same markup on its notice."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import anthropic
import openai
import pytest

from app.domain.history import Reply
from app.domain.reply import ReplyBuilder
from app.engine.local.scripted import ScriptedClient
from app.engine.protocol import Specials
from app.server.options import ServeOptions
from app.templates.registry import get_template
from app.templates.text_output import TextOutputParser
from tests.server.in_process import scripted_server
from tests.server.test_server import _free_port
from tests.templates.test_call_formats import CharTokenizer
from tests.templates.test_fenced_calls import BROKEN

CHARS = CharTokenizer()
END = "<|im_end|>"
PROSE = "I'll write it.\n"
AFTER = "\nDone."
WRITTEN = PROSE + BROKEN + AFTER  # a fenced call to the declared Write whose JSON is broken
TAGGED = 'On it.\n<tool_call>\n{"name": "Write", "arguments": {"file_path": "a.py", "content": "x"}}\n</tool_call>'
WRITE: dict[str, Any] = {"type": "object", "properties": {"file_path": {"type": "string"},
                                                         "content": {"type": "string"}}}
ASK = "Add a docstring to hello.py."


class CharClient(ScriptedClient):
    """The scripted source over `CharTokenizer`'s ids: each character a token, each marker one."""

    def __init__(self, scripts: Sequence[str]) -> None:
        super().__init__([CHARS.tokenize(s, special=True) for s in scripts])

    def specials(self) -> Specials:
        return Specials(bos=None, eos=CHARS.tokenize(END, special=True)[0], add_bos=False)

    def special_bytes(self, ids: Sequence[int]) -> list[bytes]:
        return CHARS.special_bytes(ids)

    def tokenize(self, text: str, special: bool) -> list[int]:
        return CHARS.tokenize(text, special=special)

    def token_table(self) -> list[bytes]:
        return list(CHARS.token_table())


@pytest.fixture
def served(request: pytest.FixtureRequest) -> Iterator[str]:
    """A server whose model writes `WRITTEN` to every request (or the text a test gives it)."""
    said = getattr(request, "param", WRITTEN)
    with scripted_server(CharClient([said + END] * 2), ServeOptions(port=_free_port()), get_template("qwen")) as base:
        yield base


def test_an_openai_client_gets_the_markup_as_the_text_the_model_wrote(served: str) -> None:
    client = openai.OpenAI(base_url=f"{served}/v1", api_key="k", max_retries=0)
    tools: list[Any] = [{"type": "function", "function": {"name": "Write", "parameters": WRITE}}]
    whole = client.chat.completions.create(model="m", messages=[{"role": "user", "content": ASK}], tools=tools)
    choice = whole.choices[0]
    assert choice.message.content == WRITTEN and not choice.message.tool_calls
    assert choice.finish_reason == "stop"
    chunks = list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": ASK}],
                                                 tools=tools, stream=True))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == WRITTEN
    assert not [c for c in chunks if c.choices and c.choices[0].delta.tool_calls]


def test_an_anthropic_client_gets_the_same_text_and_no_tool_use(served: str) -> None:
    client = anthropic.Anthropic(base_url=served, api_key="k", max_retries=0)
    tools: list[Any] = [{"name": "Write", "input_schema": WRITE}]
    said = client.messages.create(model="m", max_tokens=2048, tools=tools,
                                  messages=[{"role": "user", "content": ASK}])
    assert [b.type for b in said.content] == ["text"] and said.stop_reason == "end_turn"
    assert said.content[0].text == WRITTEN  # type: ignore[union-attr]
    with client.messages.stream(model="m", max_tokens=2048, tools=tools,
                                messages=[{"role": "user", "content": ASK}]) as stream:
        final = stream.get_final_message()
    assert "".join(b.text for b in final.content if b.type == "text") == WRITTEN


@pytest.mark.parametrize("served", [TAGGED], indirect=True)
def test_a_valid_call_is_still_a_call(served: str) -> None:
    client = openai.OpenAI(base_url=f"{served}/v1", api_key="k", max_retries=0)
    tools: list[Any] = [{"type": "function", "function": {"name": "Write", "parameters": WRITE}}]
    said = client.chat.completions.create(model="m", messages=[{"role": "user", "content": ASK}], tools=tools)
    choice = said.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content == "On it.\n"
    call: Any = choice.message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "Write"


def test_the_windows_reply_says_it_on_a_notice_that_keeps_the_markup() -> None:
    parser = get_template("qwen").output_parser(CHARS, ("Write",))
    assert isinstance(parser, TextOutputParser)
    builder = ReplyBuilder(Reply())
    for event in [e for i in CHARS.tokenize(WRITTEN, special=True) for e in parser.feed(i)] + parser.finish():
        builder.apply(event)
    segments = builder.reply.segments
    assert [s.kind for s in segments] == ["answer", "notice", "answer"]
    assert (segments[0].text, segments[2].text) == (PROSE, AFTER.lstrip())  # blank space after markup is no text
    assert segments[1].data == {"raw": BROKEN} and "Write" in segments[1].text
