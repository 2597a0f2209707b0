"""Built-in templates of families whose tool calls have their own markup: `mistral` (Mistral
NeMo's `[INST]` turns) and `qwen3-coder` (ChatML with Qwen3-Coder's XML calls).

Guarantees: each writes what its official chat template writes for the same conversation
(`mistralai-Mistral-Nemo-Instruct-2407.jinja`, `Qwen3-Coder.jinja`; the tests compare), apart
from what each class says; markers are markup, message text, tool declarations, calls'
arguments and results are content, never parsed for control tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.domain.instructions import turn_text
from app.domain.messages import Conversation, Role, ToolDescription
from app.templates.base import TemplateDefaults
from app.templates.builtin import ChatML, Qwen, _Marked
from app.templates.calls.format import (
    CallFormat,
    Piece,
    ToolCall,
    calls_in,
    declared_tools,
    name_of,
)
from app.templates.calls.mistral import Mistral as MistralCalls
from app.templates.calls.mistral import call_id
from app.templates.calls.turns import is_system

QWEN_CODER_SYSTEM = (
    "You are Qwen, a helpful AI assistant that can interact with a computer to solve tasks."
)


@dataclass
class _Turn:
    """One Mistral turn: a user message, an assistant's text and calls, or a result."""

    kind: str  # "user", "assistant" or "result"
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    name: str = ""


class Mistral(_Marked):
    """Mistral NeMo: `[INST]…[/INST]` user turns, an assistant turn ends with `</s>`, no
    generation prompt. As its template does, the tools are declared before the last user turn
    and the instructions lead that turn's text. Two differences: the template drops the
    instructions unless the conversation ends on a user turn (here they always lead the last
    one, as mistral-common writes them), and an assistant's text before its calls is written
    before `[TOOL_CALLS]` in the same turn (the template writes calls only), as the model
    wrote it."""

    name = "mistral"
    tool_calls = "mistral"
    defaults = TemplateDefaults(
        session_len=8192, temperature=0.3, top_p=0.95, top_k=40, stop_words=("</s>",)
    )
    bos = "<s>"
    stop_markers = ("</s>",)

    def head(self, role: str) -> str:
        return ""

    def segments(self, conversation: Conversation) -> list[Piece]:
        fmt = MistralCalls()
        tools = declared_tools(conversation)
        texts = (turn_text(m) for m in conversation.messages if is_system(m))
        system = "\n\n".join(t for t in texts if t)
        turns = _mistral_turns(conversation)
        last_user = max((i for i, t in enumerate(turns) if t.kind == "user"), default=-1)
        out = [Piece(self.bos, True)]
        pending: list[tuple[str, str]] = []  # (name, id) of calls not answered yet
        made = 0
        for i, turn in enumerate(turns):
            if turn.kind == "user":
                lead = system + "\n\n" if i == last_user and system else ""
                out += fmt.declare_pieces(tools) if i == last_user and tools else []
                out += [Piece("[INST]", True), Piece(lead + turn.text), Piece("[/INST]", True)]
            elif turn.kind == "assistant":
                out += [Piece(turn.text)] if turn.text else []
                if turn.calls:
                    ids = [call_id(made + k) for k in range(len(turn.calls))]
                    made += len(ids)
                    pending += [(c.name, ident) for c, ident in zip(turn.calls, ids, strict=True)]
                    out += fmt.write_ids(turn.calls, ids)
                out.append(Piece("</s>", True))
            else:
                ident, made = _answered(pending, turn.name, made)
                out += fmt.result_id(turn.text, ident)
        return out


def _mistral_turns(conversation: Conversation) -> list[_Turn]:
    """The conversation as Mistral turns (instructions and hidden reasoning left out)."""
    turns: list[_Turn] = []
    for m in conversation.messages:
        call = calls_in(m)
        if call is not None:
            if not turns or turns[-1].kind != "assistant":
                turns.append(_Turn("assistant"))
            turns[-1].calls.append(call)
        elif m.author.role is Role.TOOL:
            turns.append(_Turn("result", m.text, name=name_of(m.author.name or "")))
        elif m.channel in (None, "final") and not is_system(m):
            kind = "assistant" if m.author.role is Role.ASSISTANT else "user"
            turns.append(_Turn(kind, turn_text(m)))
    return turns


def _answered(pending: list[tuple[str, str]], name: str, made: int) -> tuple[str, int]:
    """The id of the call a result of `name` answers (the first open call to it, else the first
    open call), taken off `pending`; a result with no open call gets a fresh id."""
    at = next((k for k, (n, _) in enumerate(pending) if n == name), 0 if pending else -1)
    if at < 0:
        return call_id(made), made + 1
    return pending.pop(at)[1], made


class Qwen3Coder(ChatML):
    """ChatML with Qwen3-Coder's XML calls; with tools and no instructions, the template's own
    system text. (An assistant's text before its calls is followed by one newline here, two
    in the template, which also trims that text.)"""

    name = "qwen3-coder"
    tool_calls = "qwen3-coder"
    defaults = Qwen.defaults

    def declaration(
        self, fmt: CallFormat, tools: list[ToolDescription], instructions: str
    ) -> tuple[str, str]:
        return super().declaration(fmt, tools, instructions or QWEN_CODER_SYSTEM)
