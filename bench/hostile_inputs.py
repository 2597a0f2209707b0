"""Hostile imports in linear time: ours at 1x and 10x the size, next to the old code.

    python bench/hostile_inputs.py

Printed for each case that the security review found quadratic, the time at n and at 10n and
their ratio (linear: about 10), and the old algorithm at a small n and 2n, measured in the same
run (quadratic: about 4 for twice the size; its 10x would take a hundred times longer):
- Open WebUI `<details>` blocks that are never closed (the old regex rescanned to the end for
  each opener: 1.1 MB ran past 120 s);
- one LM Studio reply with many thinking steps (the old code copied the reply's messages on
  each step: 100,000 took 90 s).
Then the refusals of the second review (`bench/hostile_refusals.py`): for each class of
hostile input, the time to its clear refusal and the peak memory over the idle process.
Checked before printing (no figures otherwise, exit status 1): each of our timed imports read
the one conversation it was given, from the right source, with its one turn.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.store.importers import import_any
from bench.hostile_refusals import main as refusals

OPENER = '<details type="reasoning">'
OLD_DETAILS = re.compile(r'<details\s+type="(?P<kind>[^"]+)"[^>]*>(?P<body>.*?)</details>', re.S)


def _webui(size: int) -> str:
    content = "Answer. " + OPENER * (size // len(OPENER))
    chat = {
        "chat": {
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": content},
            ]
        }
    }
    return json.dumps(chat)


def _lm_studio(steps: int) -> str:
    step = {
        "type": "contentBlock",
        "style": {"type": "thinking"},
        "content": [{"type": "text", "text": "x"}],
    }
    data = {
        "name": "big",
        "messages": [
            {"versions": [{"role": "user", "content": [{"type": "text", "text": "q"}]}]},
            {"versions": [{"role": "assistant", "type": "multiStep", "steps": [step] * steps}]},
        ],
    }
    return json.dumps(data)


def _imported(text: str, source: str) -> None:
    """Import `text`; no figures unless it read one conversation of one turn from `source`."""
    found = import_any(text)
    if found.source != source or len(found.docs) != 1 or len(found.docs[0].turns) != 1:
        turns = [len(d.turns) for d in found.docs]
        raise SystemExit(f"no figures: the {source} import read {found.source}, turns {turns}")


def _old_steps(steps: int) -> None:
    messages: tuple[int, ...] = ()
    for i in range(steps):
        messages = (*messages, i)  # what each thinking step did to the reply


def _time(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def _case(
    name: str, ours: Callable[[int], object], old: Callable[[int], object], n: int, old_n: int
) -> None:
    one, ten = _time(lambda: ours(n)), _time(lambda: ours(10 * n))
    old_one, old_two = _time(lambda: old(old_n)), _time(lambda: old(2 * old_n))
    ours_text = f"ours n={n:>9,}: {one:7.3f} s  10n: {ten:7.3f} s  ratio {ten / one:5.1f}"
    old_ratio = old_two / old_one
    old_text = f"old n={old_n:>7,}: {old_one:7.3f} s  2n: {old_two:7.3f} s  ratio {old_ratio:4.1f}"
    print(f"{name:30} {ours_text} | {old_text}")


def main() -> None:
    _case(
        "Open WebUI unclosed <details>",
        lambda n: _imported(_webui(n), "open-webui"),
        lambda n: OLD_DETAILS.sub("", "Answer. " + OPENER * (n // len(OPENER))),
        1_100_000,
        40_000,
    )
    _case(
        "one reply, many messages",
        lambda n: _imported(_lm_studio(n), "lm-studio"),
        _old_steps,
        100_000,
        20_000,
    )
    print()
    refusals()


if __name__ == "__main__":
    main()
