"""The lazy grammar of a learned call format (`derived_call_rest`): one turn's calls after the
trigger, in the markup the template writes (`Markup`).

Guarantees: the markup is written as its samples, each piece a literal of its own (so a marker
that is one control token is written as that token), a hole as a short run of text on one
line; each call's name is one of the tools; JSON arguments are held to the tool's schema; per-key
arguments take a tool's declared names (any name when it declares none), in any order, a
string value as text that cannot hold its closing markup (a close that begins with a `<|…|>`
unit may also follow the text as that unit's control token: Kimi-K3's `<|close|>argument…`),
any other typed value as JSON held to its schema. Every call the learned reader takes with
simple values is a sentence of it, written the way the template writes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from app.constrain.constraint import json_body
from app.templates.calls.markup import HOLE, KEY, UNITS, Lit, Markup

_TEXT = "(.|\\n)*"


def derived_call_rest(
    m: Markup,
    trigger: str,
    tools: Mapping[str, Mapping[str, Any] | None],
    opening: str = "",
    answer: str = "",
) -> str:
    """Lark rules defining `call_rest` for the learned markup `m` after `trigger`; where the
    generation prompt ends with `opening` (lone calls only), `call_first` (the first call,
    after it) and `answer_first` (`answer`: how answer text begins after it) as well."""
    rules: list[str] = []
    names = []
    for i, (name, schema) in enumerate(tools.items()):
        names.append(f"d_t_{i}")
        arguments = _keyed(m, i, schema, rules) if m.per_key else _json(schema)
        rules.append(f"d_t_{i}: {json.dumps(name)} {lit(m.call_mid, name)} {arguments}")
    call_close = m.call_close if m.sectioned else Lit.of(m.call_close.text.rstrip())
    rules.append(f"d_call: ({' | '.join(names) or json.dumps('')}) {lit(call_close)}")
    head = _after_trigger(m.opening, trigger)
    close = lit(Lit.of(m.section_close.text.rstrip()))
    if m.sectioned:
        more = f"({lit(m.call_sep)} {lit(m.call_open)} d_call)*"
        return "\n".join([f"call_rest: {head} {lit(m.call_open)} d_call {more} {close}", *rules])
    # the markup that closes the turn's calls may follow (it is often a stop token)
    after = f" ({close})?" if close != '""' else ""
    lines = [f"call_rest: {head} d_call{after}"]
    if opening:  # the prompt wrote the opening: the first call, or the answer, continues it
        lines.append(f"call_first: {_after_trigger(m.opening, opening)} d_call{after}")
        lines.append(f"answer_first: {lit(Lit.of(answer))}")
    return "\n".join([*lines, *rules])


def lit(markup: Lit, key: str = "") -> str:
    """`markup` as Lark: its literal pieces, a hole as a short run of text on one line that
    stops where the next piece begins."""
    parts = [p.replace(KEY, key) for p in markup.parts]
    out: list[str] = []
    for i, part in enumerate(parts):
        if i:
            out.append(f"/[^\\n{_in_class(part[:1])}]{{0,40}}/")
        out += [json.dumps(unit) for unit in UNITS.split(part) if unit]
    return " ".join(out) or '""'


def _after_trigger(opening: Lit, trigger: str) -> str:
    """The opening markup after its trigger."""
    first = opening.parts[0]
    rest = first[first.index(trigger) + len(trigger) :] if trigger in first else ""
    return lit(Lit((rest, *opening.parts[1:])))


def _json(schema: Mapping[str, Any] | None) -> str:
    return json_body(dict(schema) if schema else {"type": "object"})


def _keyed(m: Markup, i: int, schema: Mapping[str, Any] | None, rules: list[str]) -> str:
    """The rule of tool `i`'s per-key arguments (adding the rules it needs to `rules`)."""
    properties = (schema or {}).get("properties")
    params = []
    if isinstance(properties, Mapping) and properties:
        for j, (key, fields) in enumerate(properties.items()):
            value = _value(m, key, fields if isinstance(fields, Mapping) else {}, rules)
            rules.append(f"d_p_{i}_{j}: {_param(m, json.dumps(key), key)} {value}")
            params.append(f"d_p_{i}_{j}")
    elif schema is None or properties is None:
        rules.append(f"d_p_{i}_any: {_param(m, 'D_ARG_NAME', '')} {_value(m, '', {}, rules)}")
        rules.append("D_ARG_NAME: /[A-Za-z0-9_.\\-]+/")
        params.append(f"d_p_{i}_any")
    if not params:
        return ""
    one = f"({' | '.join(params)})"
    return f"({one} ({lit(m.param_sep)} {one})*)?"


def _param(m: Markup, name: str, key: str) -> str:
    return f"{lit(m.param_open)} {name} {lit(m.param_mid, key)}"


def _value(m: Markup, key: str, fields: Mapping[str, Any], rules: list[str]) -> str:
    """A value and its closing markup: text for a string (or an untyped value), else JSON."""
    close = lit(m.param_close, key)
    kinds = fields.get("type")
    types = {kinds} if isinstance(kinds, str) else set(kinds or ())
    if types and "string" not in types:
        return f"{json_body(dict(fields))} {close}"
    if m.quote_open:
        return f"{json.dumps(m.quote_open)} {_up_to(m.quote_close, rules)} {close}"
    first, *rest = (p.replace(KEY, key) for p in m.param_close.parts)
    if first.strip():  # the text runs up to the close, which ends it
        upto = _up_to(first, rules)
        if UNITS.match(first):  # or, the close's first unit a control token, up to that token
            upto = f"({upto} | {_before(UNITS.split(first)[1], rules)} {lit(Lit((first,)))})"
        return f"{upto} {lit(Lit(('', *rest))) if rest else ''}".strip()
    stops = "".join(_in_class(t[:1]) for t in (m.param_sep.lead(), m.call_close.lead()))
    return f"/[^\\n{stops}]*/ {close}"


def _up_to(close: str, rules: list[str]) -> str:
    """A terminal (added to `rules` once) for text that ends with `close`, its first."""
    name = f"D_UP_TO_{close.encode().hex().upper()}"
    end = _regex(close)
    rule = f"{name}: /{_TEXT}{end}/ & ~/{_TEXT}{end}(.|\\n)+/"
    if rule not in rules:
        rules.append(rule)
    return name


def _before(unit: str, rules: list[str]) -> str:
    """A terminal (added to `rules` once) for text that cannot hold `unit`: where the unit is
    one control token the text ends at it; spelled out, the lexeme dies at it (`_up_to` then
    takes the text)."""
    name = f"D_BEFORE_{unit.encode().hex().upper()}"
    rule = f"{name}: /{_TEXT}/ & ~/{_TEXT}{_regex(unit)}{_TEXT}/"
    if rule not in rules:
        rules.append(rule)
    return name


def _in_class(text: str) -> str:
    """`text` as characters inside a Lark regular expression's `[…]`."""
    return "".join(f"\\{c}" if c in "]\\^-/[" else _char(c) for c in text)


def _regex(text: str) -> str:
    """`text` as a literal inside a Lark regular expression."""
    text = text.split(HOLE, 1)[0]
    return "".join(f"\\{c}" if c in ".^$*+?()[]{}|\\/" else _char(c) for c in text)


def _char(c: str) -> str:
    return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(c, c)


__all__ = ["derived_call_rest", "lit"]
