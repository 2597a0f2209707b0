"""A server's sampling request answered by a session: the one generation an MCP server may ask
of the conversation's model (`app/tools/mcp/sampling.py` approves and bounds it first).

Guarantees: the session is a fresh one over the conversation's backend (the caller's): it
starts from its template's first messages, then the request's system prompt as the
instructions and its messages as they were said; one generation of at most the request's
`max_tokens`, at the request's temperature (else the model's own); only the
answer's visible text comes back (no reasoning), cut before the first stop sequence it holds
(which ends the generation); `cancel` ends it early; a generation that fails — the prompt
does not fit, the worker died, `cancel` — is a `Refusal` with the reason, never an exception.
"""

from __future__ import annotations

import threading

from app.domain.events import ContentDelta, TurnFailed
from app.domain.messages import Conversation, DeveloperContent, Message, Role, user_message
from app.domain.visibility import Lane
from app.engine.request import GenerationRequest, SamplingAsk
from app.engine.session import Generation, Session
from app.tools.mcp.asks import Refusal
from app.tools.mcp.sampling import SampleAnswer, SampleRequest


def conversation_of(session: Session, request: SampleRequest) -> Conversation:
    """What the model is shown: its first messages, the instructions, the request's messages."""
    conversation = session.conversation
    if request.system_prompt.strip():
        instructions = DeveloperContent(instructions=request.system_prompt)
        conversation = conversation.with_message(Message.of(Role.DEVELOPER, instructions))
    for said in request.messages:
        if said.role == "assistant":
            message = Message.of(Role.ASSISTANT, said.text).with_channel("final")
        else:
            message = user_message(said.text)
        conversation = conversation.with_message(message)
    return conversation


def answer(
    session: Session, request: SampleRequest, model: str, cancel: threading.Event
) -> SampleAnswer | Refusal:
    """The model's answer to `request` (see the module guarantees); `model` names it. At the
    request's temperature (the model's own when it names none)."""
    stop = threading.Event()
    text: list[str] = []
    stopped_by = ""
    asked = GenerationRequest(
        max_tokens=request.max_tokens, sampling=SamplingAsk(temperature=request.temperature)
    )
    generation = session.generate(conversation_of(session, request), asked, stop)
    failed = ""
    while True:
        if cancel.is_set():
            stop.set()
        try:
            event = next(generation)
        except StopIteration as done:
            out: Generation = done.value
            break
        if isinstance(event, TurnFailed):
            failed = event.reason
        elif isinstance(event, ContentDelta) and event.lane is Lane.ANSWER and not stopped_by:
            text.append(event.text)
            stopped_by = _stop_at(request.stop, "".join(text))
            if stopped_by:
                stop.set()
    return _said(request, model, "".join(text), stopped_by, out, failed, cancel)


def _stop_at(stops: tuple[str, ...], text: str) -> str:
    return next((s for s in stops if s in text), "")


def _said(
    request: SampleRequest,
    model: str,
    text: str,
    stopped_by: str,
    out: Generation,
    failed: str,
    cancel: threading.Event,
) -> SampleAnswer | Refusal:
    if stopped_by:
        return SampleAnswer(text[: text.index(stopped_by)].strip(), model, "stopSequence")
    if cancel.is_set():
        return Refusal(f"The answer to the sampling request of “{request.server}” was stopped.")
    if failed or out.failed:
        said = (failed or out.failed or "").rstrip(".")
        return Refusal(f"The model could not answer the sampling request: {said}.")
    return SampleAnswer(text.strip(), model, "endTurn" if out.finished else "maxTokens")


__all__ = ["answer", "conversation_of"]
