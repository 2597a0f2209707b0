"""A form a person fills in for an MCP server's request for input (elicitation), and the
address it may ask them to open: plain values shared by the tool host, the window's dialog
and the terminal's prompts.

Guarantees: a form is a flat list of fields, each text (with its `format`: email, uri, date,
date-time, and length limits, never more than `MAX_TEXT_CHARS`), a number or an integer (with
its minimum and maximum), yes/no, one choice or several (each option a value and its label),
each with the server's `default` where it gave one that fits the field (SEP-1034);
`problem` says in one sentence what is wrong with a value (a required field left empty, a
number out of range, an address that is no email address, a date that is not YYYY-MM-DD, a
date-time without its time) and `settle` is the one place an answer is made ready to send:
only the form's own fields, in its order, each omitted optional field that has a default
filled with it, then every value checked (`problems`) — the dialog, the terminal and the
host all settle the same way, and nothing is sent while a field is wrong. A form asked again
carries what was answered (`given`) and what was wrong with it (`wrong`, field by field), so
the person can fix it. `parse` turns typed text into a field's value (a choice also
by its number or label); `shown` gives the values fit to show again: the value of a field
whose name, title or description says it is secret (password, token, key, PIN…), or of any
value shaped like a secret, as `HIDDEN` (the audit log keeps no value at all, only the names
of the fields answered: `app/tools/mcp/elicit.py`). A URL-mode request holds its address read
once (`app.domain.links.Link`).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal
from urllib.parse import urlparse

from app.domain.links import Link
from app.domain.redact import SECRET_NAME, looks_secret

MAX_TEXT_CHARS = 10_000  # a text field's value, whatever its schema allows
HIDDEN = "[hidden]"
Kind = Literal["text", "number", "integer", "boolean", "choice", "choices"]
Action = Literal["accept", "decline", "cancel"]
FORMATS = ("email", "uri", "date", "date-time")
_SECRETISH = re.compile(r"pass(?:code|phrase)|\bpin\b|\botp\b|one[- ]time|\bcvv\b|2fa", re.I)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_SPACE = re.compile(r"\s")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")  # RFC 3339 full-date
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")  # a date and its time, at least


@dataclass(frozen=True)
class FormField:
    """One property of a form (see the module guarantees)."""

    name: str
    kind: Kind
    title: str = ""
    description: str = ""
    required: bool = False
    default: Any = None
    format: str = ""
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    options: tuple[tuple[str, str], ...] = ()  # (value, label) of a choice
    min_items: int | None = None
    max_items: int | None = None

    @property
    def label(self) -> str:
        return self.title or self.name

    @property
    def secret(self) -> bool:
        """Its name, title or description says its value is secret."""
        said = " ".join((self.name, self.title, self.description))
        return bool(SECRET_NAME.search(said) or _SECRETISH.search(said))

    def hint(self) -> str:
        """What it takes, in words ("a whole number from 1 to 5", "an email address")."""
        match self.kind:
            case "boolean":
                return "yes or no"
            case "choice":
                return "one of: " + ", ".join(label for _, label in self.options)
            case "choices":
                return "any of: " + ", ".join(label for _, label in self.options)
            case "number" | "integer":
                what = "a whole number" if self.kind == "integer" else "a number"
                return what + _range(self.minimum, self.maximum)
        named = {
            "email": "an email address",
            "uri": "a web address",
            "date": "a date (YYYY-MM-DD)",
            "date-time": "a date and time (YYYY-MM-DDTHH:MM)",
        }
        return named.get(self.format, "text")


@dataclass(frozen=True)
class Form:
    """A form to fill; asked again, it carries the answer given and what was wrong with it."""

    server: str
    message: str
    fields: tuple[FormField, ...]
    given: Mapping[str, Any] | None = None  # the answer that did not fit, to fix
    wrong: tuple[tuple[str, str], ...] = ()  # (field name, the sentence that says why)


@dataclass(frozen=True)
class Settled:
    """An answer made ready to send (`settle`): `content` the form's fields only, in its
    order, defaults filled; `wrong` each field that does not fit and why (empty: it fits)."""

    content: dict[str, Any]
    wrong: dict[str, str]


@dataclass(frozen=True)
class UrlAsk:
    """A URL-mode request: the person is asked to open `link` (nothing travels back); its
    canonical `url` is both what is shown and what is opened (`app.domain.links`)."""

    server: str
    message: str
    link: Link

    @property
    def url(self) -> str:
        return self.link.url


@dataclass(frozen=True)
class Reply:
    """The person's answer; `why` says who answered where no person did ("--yes")."""

    action: Action
    content: dict[str, Any] | None = None
    why: str = ""


def _range(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f" from {low:g} to {high:g}"
    if low is not None:
        return f" of at least {low:g}"
    return f" of at most {high:g}" if high is not None else ""


def _amount(low: int | None, high: int | None, noun: str) -> str:
    """How many of `noun` a field takes ("from 3 to 20 characters", "at most 2 choices")."""
    if low is not None and high is not None:
        return f"from {low} to {high} {noun}"
    return f"at least {low} {noun}" if low is not None else f"at most {high} {noun}"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def problem(field: FormField, value: Any) -> str:
    """What is wrong with `value` for `field` ("" when nothing; None is "not given")."""
    if value is None or value == "" or value == []:
        return f"“{field.label}” is required." if field.required else ""
    wrong = f"“{field.label}” takes {field.hint()}."
    match field.kind:
        case "boolean":
            return "" if isinstance(value, bool) else wrong
        case "choice":
            return "" if value in [v for v, _ in field.options] else wrong
        case "choices":
            return _choices_problem(field, value)
        case "number" | "integer":
            number = _number(value)
            if number is None or (field.kind == "integer" and not number.is_integer()):
                return wrong
            low, high = field.minimum, field.maximum
            outside = (low is not None and number < low) or (high is not None and number > high)
            return wrong if outside else ""
    return _text_problem(field, value)


def _choices_problem(field: FormField, value: Any) -> str:
    known = [v for v, _ in field.options]
    if not isinstance(value, list) or any(v not in known for v in value):
        return f"“{field.label}” takes {field.hint()}."
    low, high = field.min_items, field.max_items
    if (low is not None and len(value) < low) or (high is not None and len(value) > high):
        return f"“{field.label}” takes {_amount(low, high, 'choices')}."
    return ""


def _text_problem(field: FormField, value: Any) -> str:
    if not isinstance(value, str):
        return f"“{field.label}” takes text."
    low, high = field.min_length, field.max_length
    if len(value) > MAX_TEXT_CHARS and (high is None or high > MAX_TEXT_CHARS):
        high = MAX_TEXT_CHARS  # the most this host takes, whatever the schema allows
    if (low is not None and len(value) < low) or (high is not None and len(value) > high):
        return f"“{field.label}” takes {_amount(low, high, 'characters')}."
    if field.format and not _formatted(field.format, value):
        return f"“{field.label}” takes {field.hint()}."
    return ""


def _formatted(fmt: str, value: str) -> bool:
    try:
        if fmt == "date":
            return bool(_DATE.match(value)) and bool(dt.date.fromisoformat(value))
        if fmt == "date-time":
            return bool(_DATE_TIME.match(value)) and bool(dt.datetime.fromisoformat(value))
    except ValueError:
        return False
    if fmt == "email":
        return bool(_EMAIL.match(value))
    if fmt == "uri":
        parts = urlparse(value)
        return bool(parts.scheme and (parts.netloc or parts.path)) and not _SPACE.search(value)
    return True


def problems(form: Form, values: Mapping[str, Any]) -> dict[str, str]:
    """Each field whose value does not fit, with the sentence that says why."""
    found = {f.name: problem(f, values.get(f.name)) for f in form.fields}
    return {name: said for name, said in found.items() if said}


def fitting_default(field: FormField) -> Any:
    """The field's `default` if it is a value the field takes (an integer's 2.0 as 2), else
    None: a default that does not fit is neither shown nor filled in."""
    value = field.default
    if field.kind == "integer" and isinstance(value, float) and value.is_integer():
        value = int(value)
    if value is None or problem(replace(field, required=True), value):
        return None
    return list(value) if isinstance(value, list) else value


def _omitted(value: Any) -> bool:
    return value is None or value == ""


def settle(form: Form, content: Mapping[str, Any]) -> Settled:
    """`content` ready to send, or what is wrong with it (see the module guarantees); an
    empty multiple choice is an answer (nothing chosen), not an omission."""
    values: dict[str, Any] = {}
    for field in form.fields:
        value = content.get(field.name)
        if _omitted(value) and not field.required and field.default is not None:
            value = list(field.default) if isinstance(field.default, list) else field.default
        if not _omitted(value):
            values[field.name] = value
    return Settled(values, problems(form, values))


def parse(field: FormField, text: str) -> Any:
    """Typed text as the field's value (None for nothing); text that is no such value stays
    text, and `problem` says what is wrong with it."""
    text = text.strip() if field.kind != "text" else text
    if text == "":
        return None
    if field.kind in ("number", "integer"):
        try:
            number = float(text)
        except ValueError:
            return text
        return int(number) if field.kind == "integer" and number.is_integer() else number
    if field.kind == "boolean":
        words = {
            "y": True,
            "yes": True,
            "true": True,
            "1": True,
            "n": False,
            "no": False,
            "false": False,
            "0": False,
        }
        return words.get(text.lower(), text)
    if field.kind == "choice":
        return _choose(field, text)
    if field.kind == "choices":
        return [_choose(field, part.strip()) for part in text.split(",") if part.strip()]
    return text


def _choose(field: FormField, text: str) -> str:
    """A choice by its number (from 1), its value or its label."""
    if text.isdigit() and 1 <= int(text) <= len(field.options):
        return field.options[int(text) - 1][0]
    for value, label in field.options:
        if text in (value, label) or text.lower() == label.lower():
            return value
    return text


def shown(form: Form, content: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The values fit to show again: a secret-looking field's (or value's) as `HIDDEN`."""
    if content is None:
        return None
    secret = {f.name for f in form.fields if f.secret}
    return {
        k: HIDDEN if k in secret or (isinstance(v, str) and looks_secret(v)) else v
        for k, v in content.items()
    }


__all__ = [
    "FORMATS",
    "HIDDEN",
    "MAX_TEXT_CHARS",
    "Action",
    "Form",
    "FormField",
    "Kind",
    "Reply",
    "Settled",
    "UrlAsk",
    "fitting_default",
    "parse",
    "problem",
    "problems",
    "settle",
    "shown",
]
