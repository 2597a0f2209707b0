"""Instructions a client gives after its conversation began (Claude Code's environment block, a
`system` message after the first user message): each template renders them where the client put
them when it has a place for them, and gathers them into the opening instructions when it has
none (Harmony, Gemma, a Jinja template that refuses, drops or rewrites them). Templates from
llama.cpp's `models/templates/` (MIT, see tests/fixtures/llama_templates/LICENSE)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.domain.instructions import gathered, later_instructions
from app.domain.messages import (
    Conversation,
    DeveloperContent,
    Message,
    Role,
    SystemContent,
    ToolDescription,
)
from app.server.transcript import Transcript
from app.templates.harmony import HarmonyTemplate
from app.templates.jinja import GgufJinja
from app.templates.registry import get_template
from tests.templates.test_templates import WordTokenizer

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "llama_templates"
TOOL = ToolDescription(name="Bash", description="Run a command.", parameters={"type": "object", "properties": {}})


def _conversation(*, tools: bool = False) -> Conversation:
    """Claude Code's first request, in small: instructions, the task, then the environment."""
    t = Transcript()
    t.instruct("Be brief.")
    t.user(["List the files."])
    t.instruct("Environment: /work")
    return t.conversation([TOOL] if tools else [])


def _text(template: object, conversation: Conversation) -> str:
    tokenizer = WordTokenizer()
    ids = template.prompt_ids(conversation, tokenizer)  # type: ignore[attr-defined]
    return b"".join(tokenizer.special_bytes(ids)).decode()


def test_a_transcript_keeps_instructions_given_later_in_their_place() -> None:
    t = Transcript()
    t.instruct("One.")
    t.instruct("Two.")
    t.user(["Hi"])
    t.instruct("")  # empty text adds nothing, here as at the start
    t.assistant("Hello.")
    t.instruct("Three.")
    t.user(["Go on."])
    messages = t.conversation().messages
    assert [m.author.role for m in messages] == [Role.DEVELOPER, Role.USER, Role.ASSISTANT, Role.DEVELOPER,
                                                 Role.USER]
    assert messages[0].content[0] == DeveloperContent(instructions="One.\n\nTwo.")
    assert messages[3].text == "Three."
    assert later_instructions(t.conversation()) == [messages[3]]


def test_gathering_moves_later_instructions_to_the_end_of_the_opening_ones_in_order() -> None:
    t = Transcript()
    t.instruct("One.")
    t.user(["Hi"])
    t.instruct("Two.")
    t.assistant("Hello.")
    t.instruct("Three.")
    conversation = t.conversation([TOOL])
    moved = gathered(conversation)
    assert [m.author.role for m in moved.messages] == [Role.DEVELOPER, Role.USER, Role.ASSISTANT]
    header = moved.messages[0].content[0]
    assert isinstance(header, DeveloperContent) and header.instructions == "One.\n\nTwo.\n\nThree."
    assert header.tools == conversation.messages[0].content[0].tools  # type: ignore[union-attr]
    assert gathered(moved) is moved  # nothing later: the same conversation


def test_gathering_adds_a_developer_message_after_the_system_message_when_there_is_none() -> None:
    system = Message.of(Role.SYSTEM, SystemContent(conversation_start_date="2026-11-29"))
    conversation = Conversation(messages=(system, Message.of(Role.USER, "Hi"), Message.of(Role.DEVELOPER, "Later.")))
    moved = gathered(conversation)
    assert [m.author.role for m in moved.messages] == [Role.SYSTEM, Role.DEVELOPER, Role.USER]
    assert moved.messages[1].content[0] == DeveloperContent(instructions="Later.")
    empty = Conversation(messages=(Message.of(Role.USER, "Hi"), Message.of(Role.DEVELOPER, "")))
    assert gathered(empty).messages == (Message.of(Role.USER, "Hi"),)  # an empty one is only left out


@pytest.mark.parametrize("tools", [False, True], ids=["plain", "with-tools"])
def test_a_chatml_template_writes_them_as_a_system_turn_in_their_place(tools: bool) -> None:
    text = _text(get_template("smollm2"), _conversation(tools=tools))
    assert text.startswith("<|im_start|>system\nBe brief.")
    assert text.endswith("<|im_start|>user\nList the files.<|im_end|>\n"
                         "<|im_start|>system\nEnvironment: /work<|im_end|>\n<|im_start|>assistant\n")
    assert text.count("Environment: /work") == 1


def test_a_later_turn_of_a_chatml_conversation_keeps_the_first_turns_prompt_as_its_prefix() -> None:
    """What lets a server restore a client's prefix: the next request, which repeats the
    environment in its place and adds the answer and a new message, renders the first prompt
    (less its generation prompt) unchanged at its head."""
    template = get_template("smollm2")
    first = _text(template, _conversation(tools=True))
    t = Transcript()
    t.instruct("Be brief.")
    t.user(["List the files."])
    t.instruct("Environment: /work")
    t.assistant("Done.")
    t.user(["Thanks."])
    second = _text(template, t.conversation([TOOL]))
    assert second.startswith(first)


def test_gemma_has_no_system_turn_and_gathers_them_into_the_first_user_turn() -> None:
    text = _text(get_template("gemma"), _conversation())
    assert text == ("<bos><start_of_turn>user\nBe brief.\n\nEnvironment: /work\n\nList the files.<end_of_turn>\n"
                    "<start_of_turn>model\n")


def test_harmony_gathers_them_into_its_developer_message() -> None:
    template = HarmonyTemplate()
    conversation = _conversation(tools=True)
    tokenizer = WordTokenizer()
    assert template.prompt_ids(conversation, tokenizer) == template.prompt_ids(gathered(conversation), tokenizer)
    assert later_instructions(conversation)


def _jinja(name: str) -> GgufJinja:
    return GgufJinja((TEMPLATES / f"{name}.jinja").read_text(encoding="utf-8"))


def test_a_jinja_template_that_renders_system_messages_anywhere_gets_them_in_place() -> None:
    text = _text(_jinja("Qwen-Qwen2.5-7B-Instruct"), _conversation(tools=True))
    assert "<|im_start|>user\nList the files.<|im_end|>\n<|im_start|>system\nEnvironment: /work<|im_end|>\n" in text
    assert text.count("Environment: /work") == 1


def test_a_jinja_template_that_refuses_them_gets_them_gathered() -> None:
    """Mistral NeMo's template raises for a system message after the first: the instructions
    lead, as they would have been sent at the start."""
    text = _text(_jinja("mistralai-Mistral-Nemo-Instruct-2407"), _conversation())
    assert "Be brief.\n\nEnvironment: /work\n\nList the files.[/INST]" in text
    assert text.count("Environment: /work") == 1


DROPS = ("{% if messages[0].role == 'system' %}<|im_start|>system\n{{ messages[0].content }}<|im_end|>\n{% endif %}"
         "{% for m in messages %}{% if m.role in ('user', 'assistant') %}"
         "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endif %}{% endfor %}<|im_start|>assistant\n")


def test_a_jinja_template_that_would_drop_them_gets_them_gathered() -> None:
    text = _text(GgufJinja(DROPS), _conversation())
    assert text == ("<|im_start|>system\nBe brief.\n\nEnvironment: /work<|im_end|>\n"
                    "<|im_start|>user\nList the files.<|im_end|>\n<|im_start|>assistant")  # Jinja drops the last newline
