"""Sampling: an MCP server's `sampling/createMessage`, answered by the conversation's model
after the user approves it.

Guarantees: a request is read into plain values first (`read_request`): text messages only
(an image, audio or tool content is refused, said to the server), at most `MAX_REQUEST_CHARS`
of text with the system prompt, an answer of at most the host's cap (`MAX_TOKENS`, or the
server's `maxTokens` when smaller), a temperature within the app's range, at most
`MAX_STOPS` stop sequences; `includeContext` is never honoured (no other conversation's text
reaches a server). Then it is approved under the conversation's tool-approval policy — ask,
allow for this chat, always, deny — as the call of a tool `mcp:SERVER.sampling` whose choices
are keyed by the server's identity (`approval_key`), the request shown whole to the person;
only then does the host's model answer it (`SamplingHost.complete`: a fresh session over the
conversation's backend). A denial, a missing model, a failed generation or the deadline
(`SAMPLING_S` for the whole, the person's wait included) is an `ErrorData` for the server
with one sentence; the answer is a `CreateMessageResult` (assistant, text of at most
`MAX_ANSWER_CHARS`, the model's name, its stop reason). Every request is one audit record
and one line of the server's log — but past a cap (`caps.py`: at most 10 in one call, 20 from
all servers together in one chat turn and 50 in the server's session, whoever answers, `--yes`
included) a request is refused before it is read, shown or answered, and only the first
refused is recorded.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from app.errors import HarmonyDeskError
from app.tools.api import Risk, Tool
from app.tools.audit import AuditLog
from app.tools.calls import Decision, PendingCall
from app.tools.mcp.asks import (
    DENIED,
    INVALID_PARAMS,
    REQUEST_TIMEOUT,
    Audited,
    Refusal,
    audit,
    bounded,
    over_cap,
)
from app.tools.mcp.caps import Caps

MAX_TOKENS = 1024  # the host's cap on an answer, whatever the server asks
MAX_REQUEST_CHARS = 32_000
MAX_ANSWER_CHARS = 16_000
MAX_STOPS = 8
SAMPLING_S = 300.0


@dataclass(frozen=True)
class Said:
    """One message of a sampling request: "user" or "assistant", and its text."""

    role: str
    text: str


@dataclass(frozen=True)
class SampleRequest:
    """A server's sampling request, read and bounded (see the module guarantees)."""

    server: str
    messages: tuple[Said, ...]
    system_prompt: str
    max_tokens: int  # what the model may write: the server's ask, within the host's cap
    asked_tokens: int  # what the server asked for
    temperature: float | None
    stop: tuple[str, ...] = ()

    def shown(self) -> dict[str, Any]:
        """What the person approves and the audit log keeps."""
        return {
            "system_prompt": self.system_prompt,
            "messages": [{"role": m.role, "text": m.text} for m in self.messages],
            "max_tokens": self.max_tokens,
            "asked_tokens": self.asked_tokens,
        }


@dataclass(frozen=True)
class SampleAnswer:
    text: str
    model: str
    stop_reason: str  # "endTurn", "maxTokens", "stopSequence"


class SamplingHost(Protocol):
    """What answers a sampling request: the window or the terminal chat. Each method blocks
    and is called on a thread of its own; `cancel` is set at the deadline."""

    def conversation(self) -> str:
        """The conversation a server's request belongs to now: its policy, its audit records."""
        ...

    def approve(self, conversation: str, call: PendingCall, cancel: threading.Event) -> Decision:
        """The conversation's approval policy's decision on `call` (asking the person)."""
        ...

    def complete(
        self, conversation: str, request: SampleRequest, cancel: threading.Event
    ) -> SampleAnswer | Refusal:
        """The conversation's model's answer, or why there is none (no model loaded)."""
        ...


class _NoArguments(BaseModel):
    pass


class _Identity:
    """The sampling "tool"'s function: never run, it carries the server's identity."""

    def __init__(self, identity: str) -> None:
        self.approval_identity = identity

    def __call__(self) -> None:  # pragma: no cover - approval only
        raise NotImplementedError


def sampling_tool(server: str, identity: str) -> Tool:
    """The tool a sampling request is approved as (`mcp:SERVER.sampling`)."""
    return Tool(
        name="sampling",
        namespace=f"mcp:{server}",
        description=f"The MCP server “{server}” asks the conversation's model for a completion.",
        arguments=_NoArguments,
        function=_Identity(identity),
        risk=Risk.READ_ONLY,
        plugin=f"MCP {server}",
    )


def read_request(server: str, params: Any, cap: int = MAX_TOKENS) -> SampleRequest | Refusal:
    """The request as plain, bounded values, or why it is refused (see the guarantees)."""
    if getattr(params, "tools", None):
        return Refusal("Sampling with tools is not offered by this host.", INVALID_PARAMS)
    messages = []
    for message in params.messages:
        for block in message.content_as_list:
            kind = str(getattr(block, "type", "unknown"))
            if kind != "text":
                said = f"Only text is answered in sampling; a message holds {kind} content."
                return Refusal(said, INVALID_PARAMS)
            messages.append(Said(str(message.role), str(block.text)))
    if not messages:
        return Refusal("The sampling request holds no message.", INVALID_PARAMS)
    system = str(params.system_prompt or "")
    size = len(system) + sum(len(m.text) for m in messages)
    if size > MAX_REQUEST_CHARS:
        said = (
            f"The sampling request is {size:,} characters; at most {MAX_REQUEST_CHARS:,} are read."
        )
        return Refusal(said, INVALID_PARAMS)
    asked = int(params.max_tokens)
    temperature = params.temperature
    stops = [str(s)[:200] for s in params.stop_sequences or () if s]
    return SampleRequest(
        server=server,
        messages=tuple(messages),
        system_prompt=system,
        max_tokens=max(1, min(asked, cap)),
        asked_tokens=asked,
        temperature=None if temperature is None else min(2.0, max(0.0, float(temperature))),
        stop=tuple(stops[:MAX_STOPS]),
    )


class Sampler:
    """The `McpHooks.sampling` hook (see the module guarantees)."""

    def __init__(
        self,
        host: SamplingHost,
        identity: Callable[[str], str],
        *,
        cap: int = MAX_TOKENS,
        deadline_s: float = SAMPLING_S,
        audit_log: AuditLog | None = None,
        note: Callable[[str, str], None] | None = None,
        caps: Caps | None = None,
    ) -> None:
        self.host, self.identity, self.cap, self.deadline_s = host, identity, cap, deadline_s
        self.audit_log, self.note, self.caps = audit_log, note, caps

    async def __call__(self, server: str, params: Any) -> Any:
        entry = Audited(f"sampling-{uuid.uuid4().hex[:12]}", f"mcp:{server}.sampling", {})
        over = self.caps.admit(server, "sampling") if self.caps is not None else None
        if over is not None:
            return await over_cap(self.host, server, entry, over, self._refused)
        request = read_request(server, params, self.cap)
        if isinstance(request, Refusal):
            entry.sent = {"messages": len(getattr(params, "messages", ()) or ())}
            return self._refused(server, entry, request)
        entry.sent = request.shown()
        what = f"The sampling request of “{server}”"
        answer = await bounded(
            lambda cancel: self._answer(request, entry, cancel), self.deadline_s, what
        )
        if isinstance(answer, Refusal):
            return self._refused(server, entry, answer)
        shown = {"model": answer.model, "stop_reason": answer.stop_reason, "text": answer.text}
        audit(self.audit_log, entry, entry.record(True, shown))
        self._note(server, f"sampling: answered by {answer.model} ({len(answer.text)} characters)")
        from mcp import types

        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=answer.text),
            model=answer.model,
            stop_reason=answer.stop_reason,
        )

    def _answer(
        self, request: SampleRequest, entry: Audited, cancel: threading.Event
    ) -> SampleAnswer | Refusal:
        entry.conversation = self.host.conversation()
        try:
            identity = self.identity(request.server)
        except HarmonyDeskError:  # its configuration went meanwhile: its choices are not known
            identity = ""
        tool = sampling_tool(request.server, identity)
        call = PendingCall(entry.call_id, tool, request.shown())
        decision = self.host.approve(entry.conversation, call, cancel)
        entry.decision = decision.how or ("allowed" if decision.allow else "denied")
        if not decision.allow:
            said = f"The sampling request of “{request.server}” was declined ({entry.decision})."
            return Refusal(said, DENIED)
        answer = self.host.complete(entry.conversation, request, cancel)
        if isinstance(answer, SampleAnswer) and len(answer.text) > MAX_ANSWER_CHARS:
            answer = SampleAnswer(answer.text[:MAX_ANSWER_CHARS], answer.model, "maxTokens")
        return answer

    def _refused(self, server: str, entry: Audited, refusal: Refusal) -> Any:
        if refusal.code == REQUEST_TIMEOUT and not entry.decision:
            entry.decision = "not answered in time"
        audit(self.audit_log, entry, entry.record(False, error=refusal))
        self._note(server, f"sampling: refused: {refusal.message}")
        return refusal.error_data()

    def _note(self, server: str, line: str) -> None:
        if self.note is not None:
            self.note(server, line)


__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_REQUEST_CHARS",
    "MAX_TOKENS",
    "SAMPLING_S",
    "Said",
    "SampleAnswer",
    "SampleRequest",
    "Sampler",
    "SamplingHost",
    "read_request",
    "sampling_tool",
]
