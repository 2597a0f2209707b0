"""The window's answers to tool calls: one approval policy per conversation, and the calls
waiting on their cards.

Guarantees: a conversation keeps its policy ("allow in this chat" lasts as long as it), saved
choices ("always", "deny") come from and go to the approvals file; a waiting call is answered
once, by the user's decision on its card or by Stop (denied, "stopped by the user"); a call
asked for after Stop is denied at once; a decision made on a card before the engine thread's
question has reached the loop (the card shows as soon as the call's event arrives) is kept and
answers the question when it comes. An MCP server's own request (sampling) is decided under the
conversation's choices too (`server_request`), asked through its own dialog.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from app.tools.approval import ApprovalPolicy, ApprovalStore, Mode
from app.tools.calls import Decision, PendingCall

Answer = tuple[Mode | None, Decision]
STOPPED = Decision(False, how="stopped by the user")


class WindowApprovals:
    """See the module guarantees."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[Answer]] = {}
        self._early: dict[str, Answer] = {}  # decided before the question arrived
        self._policies: dict[str, ApprovalPolicy] = {}

    def policy(self, doc_id: str, ask: Callable[[PendingCall], Answer]) -> ApprovalPolicy:
        """The conversation's policy, asking through `ask` (from the engine thread)."""
        policy = self._of(doc_id)
        policy.ask = ask
        return policy

    def _of(self, doc_id: str) -> ApprovalPolicy:
        policy = self._policies.get(doc_id)
        if policy is None:
            new = ApprovalPolicy(lambda c: (None, Decision(False)), store=ApprovalStore())
            policy = self._policies.setdefault(doc_id, new)
        return policy

    def server_request(
        self, doc_id: str, call: PendingCall, ask: Callable[[PendingCall], Answer]
    ) -> Decision:
        """The conversation's decision on an MCP server's own request (sampling), asked through
        `ask` (from any thread): its choices are the conversation's, the tool calls' `ask`
        stays as it is."""
        chosen = self._of(doc_id)
        policy = ApprovalPolicy(ask)
        policy.store, policy.modes = chosen.store, chosen.modes  # the same choices, shared
        return policy(call)

    async def wait(self, call: PendingCall, stopped: bool) -> Answer:
        """The user's answer for `call` (on the loop); denied at once when `stopped`."""
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiting[call.call_id] = future
        early = self._early.pop(call.call_id, None)
        if stopped:
            future.set_result((None, STOPPED))
        elif early is not None:
            future.set_result(early)
        try:
            return await future
        finally:
            self._waiting.pop(call.call_id, None)

    def decide(
        self,
        call_id: str,
        allow: bool,
        arguments: dict[str, Any] | None = None,
        remember: Mode | None = None,
    ) -> None:
        answer = (remember, Decision(allow, arguments))
        future = self._waiting.get(call_id)
        if future is None:
            self._early[call_id] = answer
        elif not future.done():
            future.set_result(answer)

    def stop(self) -> None:
        """Deny every call still waiting."""
        self._early.clear()
        for future in list(self._waiting.values()):
            if not future.done():
                future.set_result((None, STOPPED))


__all__ = ["Answer", "WindowApprovals"]
