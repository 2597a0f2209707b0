"""Running approved tool calls: concurrently, each with its deadline, every failure a value.

Guarantees: calls run at the same time and come back matched by call id; a call past its
deadline is E-TOOL-TIMEOUT and one the user cancels is E-TOOL-CANCELLED (the turn goes on
without waiting for it); a denied call never runs; a tool that raises, or returns something
that is not JSON-serialisable, becomes an error outcome and a log line, never a crash.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import json
import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

from app.domain.events import CallOutcome
from app.errors import ErrorCode
from app.tools.api import ToolContext, ToolError, ValidationError
from app.tools.calls import Approve, Decision, PendingCall, allow_all

log = logging.getLogger("tools")


def _invoke(call: PendingCall, arguments: dict[str, Any], context: ToolContext) -> Any:
    tool = call.tool
    values = tool.parse_arguments(arguments).model_dump()
    if tool.wants_context:
        values["ctx"] = dataclasses.replace(context, call_id=call.call_id)
    result = tool.function(**values)
    json.dumps(result)  # a result the model cannot read is the tool's error
    return result


def _outcome(call: PendingCall, future: cf.Future[Any], arguments: dict[str, Any]) -> CallOutcome:
    try:
        return CallOutcome(call.call_id, True, future.result(timeout=0), arguments=arguments)
    except ToolError as exc:
        return CallOutcome(
            call.call_id, False, error_code=exc.code, error=exc.message, arguments=arguments
        )
    except ValidationError as exc:
        return CallOutcome(
            call.call_id,
            False,
            error_code=ErrorCode.CALL_SCHEMA.value,
            error=f"the edited arguments are invalid: {exc}",
            arguments=arguments,
        )
    except (TypeError, ValueError) as exc:  # includes results json cannot serialise
        log.warning("tool %s failed: %s", call.tool.qualified_name, exc)
        return CallOutcome(
            call.call_id,
            False,
            error_code="E-TOOL-ERROR",
            error=f"{type(exc).__name__}: {exc}",
            arguments=arguments,
        )
    except Exception as exc:
        log.exception("tool %s raised", call.tool.qualified_name)
        return CallOutcome(
            call.call_id,
            False,
            error_code="E-TOOL-ERROR",
            error=f"the tool failed: {type(exc).__name__}: {exc}",
            arguments=arguments,
        )


def described(decision: Decision, call: PendingCall) -> str:
    """What the audit record says of the approval ("asked: allowed, arguments edited", …)."""
    verdict = decision.how or ("allowed" if decision.allow else "denied")
    if decision.allow and decision.arguments is not None and decision.arguments != call.arguments:
        verdict += ", arguments edited"
    return verdict


def _settled(
    call: PendingCall,
    future: cf.Future[Any],
    arguments: dict[str, Any],
    deadline: float,
    cancel: threading.Event | None,
) -> CallOutcome | None:
    """The call's outcome once it is settled (done, cancelled, past its deadline), else None."""
    if future.done():
        return _outcome(call, future, arguments)
    if cancel is not None and cancel.is_set():
        code, error = ErrorCode.TOOL_CANCELLED, "the user cancelled the call"
    elif time.monotonic() > deadline:
        code, error = ErrorCode.TOOL_TIMEOUT, f"no result within {call.tool.deadline_ms} ms"
    else:
        return None
    return CallOutcome(call.call_id, False, error_code=code.value, error=error, arguments=arguments)


def run_calls(
    calls: Sequence[PendingCall],
    *,
    approve: Approve = allow_all,
    cancel: threading.Event | None = None,
    context: ToolContext | None = None,
) -> list[CallOutcome]:
    """Ask, then run the allowed calls concurrently; one outcome per call, in call order."""
    return run_decided(calls, [approve(c) for c in calls], cancel=cancel, context=context)


def run_decided(
    calls: Sequence[PendingCall],
    decisions: Sequence[Decision],
    *,
    cancel: threading.Event | None = None,
    context: ToolContext | None = None,
) -> list[CallOutcome]:
    """Run the calls their decisions allow, concurrently; one outcome per call, in call order.

    Each outcome carries the approval decision and, for calls that ran, their duration."""
    context = dataclasses.replace(context or ToolContext(call_id=""), cancel=cancel)
    decided: dict[str, CallOutcome] = {}
    running: dict[str, tuple[PendingCall, cf.Future[Any], dict[str, Any], float]] = {}
    started: dict[str, float] = {}
    how = {c.call_id: described(d, c) for c, d in zip(calls, decisions, strict=True)}
    pool = cf.ThreadPoolExecutor(max_workers=max(1, len(calls)), thread_name_prefix="tool")
    for call, decision in zip(calls, decisions, strict=True):
        if not decision.allow:
            decided[call.call_id] = CallOutcome(
                call.call_id,
                False,
                error_code="E-TOOL-DENIED",
                error="the user did not allow this call",
            )
            continue
        arguments = decision.arguments if decision.arguments is not None else call.arguments
        started[call.call_id] = time.monotonic()
        deadline = started[call.call_id] + call.tool.deadline_ms / 1000
        future = pool.submit(_invoke, call, arguments, context)
        running[call.call_id] = (call, future, arguments, deadline)
    while running:
        for call_id, (call, future, arguments, deadline) in list(running.items()):
            outcome = _settled(call, future, arguments, deadline, cancel)
            if outcome is None:
                continue
            elapsed = (time.monotonic() - started[call_id]) * 1000
            decided[call_id] = dataclasses.replace(outcome, duration_ms=elapsed)
            del running[call_id]
        if running:
            cf.wait(
                [f for _, f, _, _ in running.values()], timeout=0.01, return_when=cf.FIRST_COMPLETED
            )
    pool.shutdown(wait=False, cancel_futures=True)
    return [dataclasses.replace(decided[c.call_id], decision=how[c.call_id]) for c in calls]
