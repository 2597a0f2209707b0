"""The checks at the HTTP boundary (`app/server/intake.py`) against a real server on loopback:
a body at the size limit is parsed off the event loop, so another client's `/health` is answered
meanwhile; the raw-text check that decides whether the parsed value is walked never disagrees
with the walk (escapes written every way a client may write them); the depth measured on the
raw text, a chunk at a time, is the parsed value's; the walk names the first refused string in
document order."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from typing import Any
from unittest import mock

import httpx2 as httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.messages import IMAGE_MARKER
from app.engine.local.scripted import ScriptedClient
from app.server import intake
from app.server.errors import ApiError
from app.server.intake import depth_of, depth_of_raw, parsed, unsaid_in_raw
from app.server.options import ServeOptions
from tests.server.in_process import scripted_server
from tests.server.test_server import _free_port

JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, ServeOptions]]:
    """A server on a scripted source, in this process, on loopback."""
    options = ServeOptions(port=_free_port(), max_tokens=16)
    with scripted_server(ScriptedClient([]), options) as base:
        yield base, options


def _strings_at_the_limit(limit: int) -> tuple[bytes, int]:
    """A JSON array of one-letter strings as long as the server takes, a lone surrogate at its
    middle (the worst case for a walk over the strings); and where that one is."""
    count = (limit - 2) // 4
    middle = count // 2
    items = [b'"a"'] * count
    items[middle] = b'"\\ud800"'  # 8 bytes for 3: keep within the limit
    del items[-2:]
    raw = b"[" + b",".join(items) + b"]"
    assert len(raw) <= limit
    return raw, middle


def test_a_body_at_the_size_limit_does_not_hold_up_other_clients(served: tuple[str, ServeOptions]) -> None:
    base, options = served
    raw, middle = _strings_at_the_limit(options.max_body)
    began = time.perf_counter()
    with pytest.raises(ApiError):
        parsed(raw)
    inline_s = time.perf_counter() - began  # what the loop would be held for, were it parsed there
    answered: dict[str, httpx.Response] = {}
    posting = threading.Thread(target=lambda: answered.update(
        post=httpx.post(f"{base}/v1/chat/completions", content=raw, headers=JSON, timeout=60)))
    waits: list[float] = []
    with httpx.Client(timeout=30) as probe:
        probe.get(f"{base}/health")  # connected before
        posting.start()
        while posting.is_alive():
            asked = time.perf_counter()
            assert probe.get(f"{base}/health").status_code == 200
            waits.append(time.perf_counter() - asked)
            time.sleep(0.01)
    posting.join()
    error = answered["post"].json()["error"]
    assert answered["post"].status_code == 400 and error["code"] == "invalid_text", error
    assert error["param"] == str(middle)  # still refused, and named
    bound = max(0.25, inline_s / 4)
    assert len(waits) >= 3 and max(waits) < bound, (max(waits), bound, inline_s, len(waits))


# Strings as clients write them: raw, as escapes (ensure_ascii), pairs and lone halves, the
# marker, and the characters escapes are made of.
_PIECES = st.sampled_from(["a", "\\", "u", "d", "8", "0", "e", "f", "c", '"', "/", "\n", "é", "😀",
                           "\ud800", "\udbff", "\udc00", "\udfff", "\ud83d\ude00", IMAGE_MARKER])
_TEXT = st.lists(_PIECES, max_size=8).map("".join)
_VALUES = st.recursive(_TEXT | st.integers() | st.none(),
                       lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
                       max_leaves=12)


def _written(value: Any, ascii_only: bool, upper: bool) -> bytes | None:
    """`value` as a client's JSON text (None where it is not UTF-8: refused before the check)."""
    text = json.dumps(value, ensure_ascii=ascii_only)
    if upper:
        text = re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m.group(1).upper(), text)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return None


@settings(max_examples=400, deadline=None)
@given(_VALUES, st.booleans(), st.booleans())
def test_the_raw_check_agrees_with_the_walk(value: Any, ascii_only: bool, upper: bool) -> None:
    raw = _written(value, ascii_only, upper)
    if raw is None:
        return
    walked = intake._unsaid_at(json.loads(raw))
    assert unsaid_in_raw(raw) == (walked is not None), (raw, walked)


# JSON strings written escape by escape, so escapes meet in every order.
_ESCAPES = st.sampled_from(["a", "\\\\", "\\\"", "\\n", "\\u0041", "\\ud800", "\\uDBFF", "\\udc00",
                            "\\uDFFF", "\\ud83d", "\\uDE00", "\\ue0f0", "\\uE0F0", IMAGE_MARKER, "u", "d83d"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(_ESCAPES, max_size=8).map("".join), min_size=1, max_size=3))
def test_the_raw_check_agrees_with_the_walk_on_escapes_as_written(strings: list[str]) -> None:
    raw = ("[" + ",".join(f'"{s}"' for s in strings) + "]").encode()
    walked = intake._unsaid_at(json.loads(raw))
    assert unsaid_in_raw(raw) == (walked is not None), (raw, walked)


@pytest.mark.parametrize(("raw", "refused"), [
    (rb'["\\ud800"]', False),  # an escaped backslash, then text
    (rb'["\\\ud800"]', True),  # an escaped backslash, then a lone surrogate
    (rb'["\ud83d\\\ude00"]', True),  # two halves an escaped backslash keeps apart
    (rb'["\uD83D\uDE00"]', False),  # a pair, in capitals
    (rb'["\ud83d\ud83d\ude00"]', True),
    (rb'["\ud83d\ude00\ude00"]', True),
    (rb'["\uE0f0"]', True),
    (('["' + IMAGE_MARKER + '"]').encode(), True),
])
def test_the_raw_check_reads_escapes_as_a_parser_does(raw: bytes, refused: bool) -> None:
    assert unsaid_in_raw(raw) is refused
    assert (intake._unsaid_at(json.loads(raw)) is not None) is refused


_DEEP = st.recursive(st.text(alphabet='[]{}"\\ab', max_size=6) | st.integers(),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text('[{"\\', max_size=3), inner,
                                                                                max_size=3),
                     max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(_DEEP, st.integers(1, 40))
def test_the_depth_of_the_raw_text_is_the_depth_of_its_value(value: Any, chunk: int) -> None:
    raw = json.dumps(value).encode()
    with mock.patch.object(intake, "_CHUNK", chunk), mock.patch.object(intake, "MAX_DEPTH", 0):
        assert depth_of_raw(raw) == depth_of(value)  # measured, not bounded by the opens; chunk
        # edges fall inside strings and escapes


def test_the_walk_names_the_first_refused_string_in_document_order() -> None:
    assert intake._unsaid_at({"a": ["ok", {"b": "x" + IMAGE_MARKER}], "c": "\ud800"}) == ("a.1.b", IMAGE_MARKER)
    assert intake._unsaid_at({"m": [{"k": 1, "\udfff": 2}]}) == ("m.0", "\udfff")  # a key: its object
    assert intake._unsaid_at("\ud800") == ("body", "\ud800")
    assert intake._unsaid_at([[[]], {"a": [1, None, True]}]) is None
    deep: Any = "\ud800"
    for _ in range(intake.MAX_DEPTH):
        deep = [deep]
    assert intake._unsaid_at(deep) == (".".join(["0"] * intake.MAX_DEPTH), "\ud800")


def test_a_body_of_too_many_arrays_is_refused_before_it_is_parsed(served: tuple[str, ServeOptions]) -> None:
    base, _ = served
    many = b'{"model": "m", "messages": [' + b",".join([b"[]"] * (intake.MAX_CONTAINERS + 1)) + b"]}"
    began = time.perf_counter()
    never = mock.patch.object(intake.json, "loads", side_effect=AssertionError("parsed"))
    with never, pytest.raises(ApiError) as refused:
        parsed(many)
    assert refused.value.status == 400 and "100,003 arrays and objects" in str(refused.value)
    assert time.perf_counter() - began < 2
    answer = httpx.post(f"{base}/v1/chat/completions", content=many, headers=JSON, timeout=60)
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "too_many_values"
    fits = b'{"model": "m", "messages": [' + b",".join([b"[]"] * 1000) + b"]}"
    assert json.loads(fits) == intake.parsed(fits)  # a body under the cap is read as it was
