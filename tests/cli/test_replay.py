"""`harmony-desk replay`: the same model output shows the same thing through the window and the
terminal, by token ids and as text from a server — over the whole research catalogue and over
generated outputs. Answers never vanish in the window, hidden text never shows, every message
with a recipient is a tool call, and the terminal prints exactly what the reply builder shows."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.cli.replay import replay_terminal
from app.cli.replay_source import Source, source_of
from app.harmony import encoding as enc
from app.harmony.encoding import HarmonyEncoding
from app.harmony.parser import StreamParser
from tests.harmony.test_parser_catalogue import CASES

ROOT = Path(__file__).resolve().parents[2]
SPECIALS = [enc.START, enc.END, enc.MESSAGE, enc.CHANNEL, enc.CONSTRAIN, enc.RETURN, enc.CALL]
WORDS = ["assistant", "analysis", "final", "commentary", " to=functions.get_weather", " json", "Paris",
         " is", " the", " answer", ".", "\n", "{\"city\":\"Oslo\"}", "functions.f"]
# (ordinary text that spells a marker is left out: as text from a server it cannot stay ordinary)


def _replay(lines: list[dict[str, Any]], frontend: str, via: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "app", "replay", "--frontend", frontend, "--via", via],
        input="".join(json.dumps(line) + "\n" for line in lines), capture_output=True, text=True,
        timeout=600, cwd=ROOT, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(out) == len(lines) and not any("error" in o for o in out), out
    return out


def _random_outputs(encoding: HarmonyEncoding, count: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    words = [encoding.encode_ordinary(w) for w in WORDS]
    outputs = []
    for _ in range(count):
        ids: list[int] = []
        for _ in range(rng.randint(1, 24)):
            ids += [rng.choice(SPECIALS)] if rng.random() < 0.4 else rng.choice(words)
        outputs.append(ids)
    return outputs


def test_the_window_and_the_terminal_show_the_same_by_tokens_and_as_text(encoding: HarmonyEncoding) -> None:
    cases = [c for c in sorted(CASES) if "⟦" not in CASES[c].wild]  # text cannot say "not special"
    lines = [{"tokens": encoding.encode_with_specials(CASES[c].wild)} for c in cases]
    lines += [{"tokens": ids} for ids in _random_outputs(encoding, 40, seed=7)]
    runs = {(f, v): _replay(lines, f, v) for f in ("window", "terminal") for v in ("tokens", "remote-text")}
    names = cases + [f"generated-{i}" for i in range(40)]
    for i, name in enumerate(names):
        window = runs["window", "tokens"][i]
        for key, out in runs.items():
            assert out[i]["shown"] == window["shown"], (name, key, out[i]["shown"], window["shown"])
            assert out[i]["hidden"] == window["hidden"], (name, key)
        assert runs["terminal", "tokens"][i]["errors"] == window["errors"], name
        assert runs["terminal", "tokens"][i]["stop"] == window["stop"], name


def test_answers_decided_at_their_end_are_shown_in_the_window() -> None:
    """A header with no <|message|>, text with no header before <|return|>, an unknown channel
    word that turns out to be the answer: the window once showed nothing for these."""
    lines = [{"text": "<|channel|>zzzz<|message|>Forty-two.<|return|>"},
             {"text": "Just the answer.<|return|>"},
             {"text": "<|channel|>final Paris is the capital.<|return|>"}]
    for frontend in ("window", "terminal"):
        shown = [o["shown"] for o in _replay(lines, frontend, "tokens")]
        assert [[s["text"] for s in line if s["lane"] == "answer"] for line in shown] == [
            ["Forty-two."], ["Just the answer."], ["Paris is the capital."]], (frontend, shown)


pieces = st.lists(st.one_of(st.sampled_from(SPECIALS).map(lambda t: [t]), st.sampled_from(WORDS)), max_size=30)


@settings(max_examples=150, deadline=None)
@given(pieces)
@example([[200005], "final", [200008], " to=functions.get_weather"])  # a call spelt out: no space shown
def test_generated_outputs_keep_the_visibility_rules(parts: list[Any]) -> None:
    encoding = enc.load_encoding()
    ids = [t for p in parts for t in (p if isinstance(p, list) else encoding.encode_ordinary(p))]
    source = source_of({"tokens": ids}, encoding)
    terminal = replay_terminal(source, "tokens")
    remote = replay_terminal(Source(source.tokens, source.chunks), "remote-text")
    assert terminal["shown"] == remote["shown"] and terminal["hidden"] == remote["hidden"]
    visible = "".join(s["text"] + "\n" for s in terminal["shown"] if s["lane"] in ("answer", "preamble"))
    assert terminal["stdout"] == visible  # the terminal printed exactly what the builder shows
    stop = next((i + 1 for i, t in enumerate(ids) if t in (enc.RETURN, enc.CALL)), len(ids))
    parser = StreamParser(encoding)
    parser.parse(ids[:stop])  # where the generation stops
    shown_text = [s["text"] for s in terminal["shown"]]
    for message, lane in zip(parser.messages, parser.lanes, strict=True):
        if message.recipient and lane.value == "tool_call":
            assert {"lane": "tool_call", "text": message.text, "recipient": message.recipient} in terminal["shown"]
        # text shown anyway: an answer, a preamble, or a tool call's own arguments (shown on its card)
        visible_elsewhere = any(message.text in m.text for m, la in zip(parser.messages, parser.lanes, strict=True)
                                if la.value in ("answer", "preamble", "tool_call"))
        if lane.value == "analysis" and len(message.text) > 3 and not visible_elsewhere:
            assert not any(message.text in t for t in shown_text if t), (message, terminal["shown"])


@pytest.mark.parametrize("bad", ['{"tokens": "no"}', "[1, 2]", '{"chunks": [1]}', "not json"])
def test_a_bad_line_is_an_error_line_and_the_run_goes_on(bad: str) -> None:
    done = subprocess.run([sys.executable, "-m", "app", "replay"], input=bad + '\n{"text": "Hi.<|return|>"}\n',
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    first, second = [json.loads(line) for line in done.stdout.splitlines()]
    assert "error" in first and second["shown"] == [{"lane": "answer", "text": "Hi.", "recipient": None}]


def test_a_tool_call_written_as_text_never_streams_as_the_answer(encoding: HarmonyEncoding) -> None:
    """W34: gpt-oss spells a call out in ordinary tokens inside its answer. It is held back as it
    streams, never shown as the answer, and said in a notice — also when the stream is cut."""
    from tests.harmony.test_parser_catalogue import tokens_of

    spelt = '⟦to=functions.read <|constrain|>json<|message|>{"path":"a"}<|call|>⟧'
    whole = tokens_of(encoding, f"<|channel|>final<|message|>Let me look. {spelt}<|return|>")
    cut = tokens_of(encoding, f"<|channel|>final<|message|>Let me look. {spelt}")[:-3]
    for frontend in ("terminal", "window"):
        for ids in (whole, cut):
            (out,) = _replay([{"tokens": ids}], frontend, "tokens")
            lanes = [(s["lane"], s["text"][:40]) for s in out["shown"]]
            assert lanes[0] == ("answer", "Let me look."), (frontend, lanes)
            assert lanes[1][0] == "notice" and "tool call as ordinary text" in out["shown"][1]["text"]
            assert not any("to=functions" in s["text"] for s in out["shown"] if s["lane"] == "answer")
            if frontend == "terminal":
                assert "to=functions" not in out["stdout"] and out["stdout"].startswith("Let me look.")


def test_an_id_outside_the_vocabulary_shows_as_a_replacement_character_everywhere(encoding: HarmonyEncoding) -> None:
    """An out-of-vocabulary id once refused the whole line; it is U+FFFD in its message, through
    both frontends, by token ids and as a server's text."""
    ids = [*encoding.encode_with_specials("<|channel|>final<|message|>Hi "), 250_000]
    ids += encoding.encode_with_specials(" there.<|return|>")
    for frontend in ("terminal", "window"):
        for via in ("tokens", "remote-text"):
            (out,) = _replay([{"tokens": ids}], frontend, via)
            assert out["shown"] == [{"lane": "answer", "text": "Hi \ufffd there.", "recipient": None}], (frontend, via)
