"""Elicitation: an MCP server's `elicitation/create`, a request for the user's input, answered
by a person through a form built from its schema.

Guarantees: a form request is read into plain values first (`read_form`): a flat object of at
most `MAX_FIELDS` properties, each text (with its `format`: email, uri, date, date-time, and
length limits), a number or integer (with its minimum and maximum), yes/no, one choice
(`enum`, with `enumNames`, or `oneOf` consts with titles) or several (an array of such);
anything else (a nested object, a field of no known type) is refused with a sentence that
names the field; a field's `default` (SEP-1034) is kept where it is a value the field takes,
else dropped (`fitting_default`). The person's answer is `accept` with the values, `decline`
or `cancel`, as the protocol defines; a decline or a cancel goes back as it is, with no
content. An accepted answer is settled here, the one place every frontend's answer passes
(`app.domain.elicit_form.settle`, the check the dialog and the terminal also make): only the
form's own fields, each omitted optional field that has a default filled with it, every value
checked against the schema (type, choice, range, length, format). An answer that does not fit
is never sent: the form is asked again (`Form.wrong`: which field, and why; `Form.given`: what
was answered), at most `ROUNDS` times, then the request is answered `cancel`. A URL request
(`mode: url`) is read once (`app.domain.links.read_link`: https, or http to this computer,
only): its canonical address is what the person is shown, with its real host set apart, and
the very string that opens, only if the person accepts; any other address is refused with the
sentence that says why. Where no person is asked (a `--yes` run) the host answers `decline`
and says why (nothing is filled in for a person who was not asked). At most 5 requests in one
call, 10 from all servers together in one chat turn and 20 in a server's session are asked
(`caps.py`, `--yes` included): later ones are refused before anything is shown. The whole
answer is bounded by `ELICIT_S` (then the server gets an error that says so, and the dialog
goes); every request is one audit record — what was asked (the message, the fields' names,
the address shown), the action and the names of the fields answered, never a value the person
typed — and one line of the server's log (past a cap, only the first refused is recorded).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from app.domain.elicit_form import FORMATS, Form, FormField, Reply, UrlAsk, fitting_default, settle
from app.domain.links import read_link
from app.tools.audit import AuditLog
from app.tools.mcp.asks import (
    INVALID_PARAMS,
    REQUEST_TIMEOUT,
    Audited,
    Refusal,
    audit,
    bounded,
    over_cap,
)
from app.tools.mcp.caps import Caps

ELICIT_S = 300.0
MAX_FIELDS = 20
MAX_MESSAGE_CHARS = 2000
ROUNDS = 3  # a form asked again this many times at most while its answer does not fit


class ElicitHost(Protocol):
    """What asks the person: the window's dialog or the terminal's prompts. Each method blocks
    and runs on a thread of its own; `cancel` is set at the deadline. `fill` may be called
    again for the same request with a form that carries what was wrong (`Form.wrong`)."""

    def conversation(self) -> str: ...

    def fill(self, form: Form, cancel: threading.Event) -> Reply: ...

    def visit(self, ask: UrlAsk, cancel: threading.Event) -> Reply: ...


def _options(schema: Mapping[str, Any]) -> tuple[tuple[str, str], ...] | None:
    """A choice's (value, label) pairs: `enum` (with `enumNames`), or `oneOf`/`anyOf` consts."""
    if isinstance(schema.get("enum"), list):
        values = [str(v) for v in schema["enum"]]
        names = schema.get("enumNames")
        labels = [str(n) for n in names] if isinstance(names, list) else values
        return tuple(zip(values, labels + values[len(labels) :], strict=False))
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list):
            items = [i for i in schema[key] if isinstance(i, dict) and "const" in i]
            return tuple((str(i["const"]), str(i.get("title") or i["const"])) for i in items)
    return None


def _bound(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _field(name: str, schema: Any, required: bool) -> FormField | str:
    """One property as a field (its default kept only if it fits), or why it cannot be one."""
    field = _kind(name, schema, required)
    return field if isinstance(field, str) else replace(field, default=fitting_default(field))


def _kind(name: str, schema: Any, required: bool) -> FormField | str:
    if not isinstance(schema, dict):
        return f"the field “{name}” has no schema"
    kind = schema.get("type")
    base: dict[str, Any] = {
        "name": name,
        "title": str(schema.get("title") or ""),
        "required": required,
        "description": str(schema.get("description") or ""),
        "default": schema.get("default"),
    }
    options = _options(schema)
    if kind == "string" and options is not None:
        return FormField(kind="choice", options=options, **base)
    if kind == "string":
        fmt = str(schema.get("format") or "")
        return FormField(
            kind="text",
            format=fmt if fmt in FORMATS else "",
            min_length=schema.get("minLength"),
            max_length=schema.get("maxLength"),
            **base,
        )
    if kind in ("number", "integer"):
        low, high = _bound(schema.get("minimum")), _bound(schema.get("maximum"))
        return FormField(kind=kind, minimum=low, maximum=high, **base)
    if kind == "boolean":
        return FormField(kind="boolean", **base)
    items = schema.get("items")
    if kind == "array" and isinstance(items, dict) and (choices := _options(items)):
        return FormField(
            kind="choices",
            options=choices,
            min_items=schema.get("minItems"),
            max_items=schema.get("maxItems"),
            **base,
        )
    return (
        f"the field “{name}” is {kind or 'of no type'}, which a form here cannot hold (text,"
        " numbers, yes/no and choices only)"
    )


def read_form(server: str, message: str, schema: Any) -> Form | Refusal:
    """A form request as plain values, or why it is refused (see the module guarantees)."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or schema.get("type", "object") != "object":
        return Refusal("The form's schema is not an object with properties.", INVALID_PARAMS)
    if len(properties) > MAX_FIELDS:
        said = f"The form has {len(properties)} fields; at most {MAX_FIELDS} are shown."
        return Refusal(said, INVALID_PARAMS)
    required = set(schema.get("required") or ())
    fields = []
    for name, spec in properties.items():
        field = _field(str(name), spec, name in required)
        if isinstance(field, str):
            return Refusal(f"The form cannot be shown: {field}.", INVALID_PARAMS)
        fields.append(field)
    text = message if len(message) <= MAX_MESSAGE_CHARS else message[:MAX_MESSAGE_CHARS] + "…"
    return Form(server, text, tuple(fields))


class Elicitor:
    """The `McpHooks.elicitation` hook (see the module guarantees)."""

    def __init__(
        self,
        host: ElicitHost,
        *,
        deadline_s: float = ELICIT_S,
        audit_log: AuditLog | None = None,
        note: Callable[[str, str], None] | None = None,
        caps: Caps | None = None,
    ) -> None:
        self.host, self.deadline_s, self.audit_log, self.note = host, deadline_s, audit_log, note
        self.caps = caps

    async def __call__(self, server: str, params: Any) -> Any:
        entry = Audited(f"elicit-{uuid.uuid4().hex[:12]}", f"mcp:{server}.elicitation", {})
        over = self.caps.admit(server, "input") if self.caps is not None else None
        if over is not None:
            return await over_cap(self.host, server, entry, over, self._refused)
        message = str(getattr(params, "message", ""))[:MAX_MESSAGE_CHARS]
        if getattr(params, "mode", "form") == "url":
            url = str(getattr(params, "url", ""))
            entry.sent = {"mode": "url", "message": message, "url": url}
            link = read_link(url)
            if isinstance(link, str):
                said = f"The address is not opened: {link}"
                return self._refused(server, entry, Refusal(said, INVALID_PARAMS))
            entry.sent["url"] = link.url  # what the person is shown, and what opens
            ask: Form | UrlAsk = UrlAsk(server, message, link)
        else:
            form = read_form(server, message, getattr(params, "requested_schema", None))
            entry.sent = {"mode": "form", "message": message, "fields": _names(params)}
            if isinstance(form, Refusal):
                return self._refused(server, entry, form)
            ask = form
        what = f"The request for input of “{server}”"
        reply = await bounded(lambda cancel: self._ask(ask, entry, cancel), self.deadline_s, what)
        if isinstance(reply, Refusal):
            return self._refused(server, entry, reply)
        return self._replied(server, entry, ask, reply)

    def _ask(self, ask: Form | UrlAsk, entry: Audited, cancel: threading.Event) -> Reply:
        entry.conversation = self.host.conversation()
        return self._fill(ask, cancel) if isinstance(ask, Form) else self.host.visit(ask, cancel)

    def _fill(self, form: Form, cancel: threading.Event) -> Reply:
        """The person's answer, settled; asked again while it does not fit (see the module
        guarantees)."""
        asked = form
        for _ in range(ROUNDS):
            reply = self.host.fill(asked, cancel)
            if reply.action != "accept":
                return Reply(reply.action, why=reply.why)  # declined or cancelled, as it was
            settled = settle(form, reply.content or {})
            if not settled.wrong:
                return Reply("accept", settled.content, reply.why)
            if cancel.is_set():
                break
            asked = replace(form, given=settled.content, wrong=tuple(settled.wrong.items()))
        return Reply("cancel", why=f"the answer did not fit the form after {ROUNDS} tries")

    def _replied(self, server: str, entry: Audited, ask: Form | UrlAsk, reply: Reply) -> Any:
        from mcp import types

        is_form = reply.action == "accept" and isinstance(ask, Form)
        content = (reply.content or {}) if is_form else None  # settled in `_fill`
        entry.decision = reply.action + (f" ({reply.why})" if reply.why else "")
        kept: dict[str, Any] = {"action": reply.action}
        if content is not None:
            kept["answered"] = list(content)  # the fields' names: never what was typed
        audit(self.audit_log, entry, entry.record(True, kept))
        self._note(server, f"elicitation: {entry.decision}")
        return types.ElicitResult(action=reply.action, content=content)

    def _refused(self, server: str, entry: Audited, refusal: Refusal) -> Any:
        timed_out = refusal.code == REQUEST_TIMEOUT
        entry.decision = entry.decision or ("not answered in time" if timed_out else "refused")
        audit(self.audit_log, entry, entry.record(False, error=refusal))
        self._note(server, f"elicitation: refused: {refusal.message}")
        return refusal.error_data()

    def _note(self, server: str, line: str) -> None:
        if self.note is not None:
            self.note(server, line)


def _names(params: Any) -> list[str]:
    schema = getattr(params, "requested_schema", None)
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return [str(k) for k in properties] if isinstance(properties, dict) else []


__all__ = ["ELICIT_S", "MAX_FIELDS", "ROUNDS", "ElicitHost", "Elicitor", "read_form"]
