"""The user's side of `bench/long_chat.py`: the same messages on every run and under every
overflow policy, and the facts asked back.

Guarantees: `messages(turns)` is the same list for the same `turns` (no randomness): a greeting;
a fact to remember in each of turns 3, 5, 7, 9 and 11; questions, sums, small writing tasks and
remarks about the day (stating nothing a probe asks) in rotation; the last five turns ask the
facts back, one each, the last one turn 3's (`probe_of`). `recalled` says whether an answer
says a fact, in any of its spellings, ignoring case.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fact:
    """A fact stated once, the probe that asks it back, and the answers that count."""

    stated: str
    asked: str
    answers: tuple[str, ...]


FACTS = (
    Fact("My locker code is 4-7-1-9.", "What is my locker code?", ("4-7-1-9", "4719", "4 7 1 9")),
    Fact("My cat is named Pixel.", "What is my cat's name?", ("pixel",)),
    Fact("My sister lives in Tromsø.", "In which town does my sister live?", ("tromsø", "tromso")),
    Fact("My boat is called Marisol.", "What is my boat called?", ("marisol",)),
    Fact("My favourite fruit is the quince.", "What is my favourite fruit?", ("quince",)),
)
FACT_TURNS = (3, 5, 7, 9, 11)  # 1-based; FACTS[i] is stated in FACT_TURNS[i]

QUESTIONS = (
    "Why is the sky blue? One sentence, please.",
    "What is the capital of Japan?",
    "How many legs does a spider have?",
    "What does a barometer measure?",
    "Which planet is closest to the sun?",
    "What is the largest ocean on Earth?",
    "What is the boiling point of water at sea level, in Celsius?",
    "Who wrote the play Romeo and Juliet?",
    "What is photosynthesis, in a few words?",
    "How many days are there in a leap year?",
    "What gas do people breathe out?",
    "Why do leaves change colour in autumn? Keep it short.",
)
TOPICS = (
    "rain",
    "a lighthouse",
    "morning coffee",
    "an old bicycle",
    "the first snow",
    "a busy market",
    "a quiet library",
    "the sea at night",
    "a mountain path",
    "a kitchen garden",
    "a train station",
)
TASKS = (
    "Write one sentence about {topic}.",
    "Give me two words that rhyme with '{word}'.",
    "Write a haiku about {topic}.",
    "Translate '{phrase}' into French.",
    "Describe {topic} in two or three sentences.",
    "Spell the word '{word}' backwards.",
    "Suggest a short title for a story about {topic}.",
)
WORDS = ("cat", "light", "stone", "river", "cloud", "green", "table", "bread", "night", "song")
PHRASES = (
    "good morning",
    "thank you very much",
    "where is the station",
    "see you tomorrow",
    "the weather is nice",
    "I would like some tea",
)
REMARKS = (
    "By the way, I had {dish} for lunch today and it was quite good.",
    "It has been raining all afternoon here, so I stayed in and read for a while.",
    "I went for a walk of {km} kilometres this morning before work.",
    "Today I tidied the garage; it took longer than I expected.",
    "I am thinking of trying {dish} for dinner tonight.",
    "The neighbours painted their fence.",
)
DISHES = ("lentil soup", "a cheese sandwich", "fried rice", "a Greek salad", "pancakes", "ramen")


def messages(turns: int) -> list[str]:
    """The user's message of each turn, 1 to `turns` (see the module docstring)."""
    stated = dict(zip(FACT_TURNS, FACTS, strict=True))
    out = []
    for n in range(1, turns + 1):
        probe = probe_of(n, turns)
        if probe is not None:
            out.append(f"Going back to what I told you earlier. {probe.asked}")
        elif n in stated:
            out.append(f"Please remember this for later: {stated[n].stated}")
        elif n == 1:
            out.append("Hello! We will chat for a long while today.")
        else:
            out.append(_filler(n))
    return out


def probe_of(n: int, turns: int) -> Fact | None:
    """The fact turn `n` of `turns` asks back (None: it is no probe); the last turn asks
    the first fact."""
    back = turns - n
    return FACTS[back] if 0 <= back < len(FACTS) else None


def recalled(fact: Fact, answer: str) -> bool:
    """Whether `answer` says the fact (any of its spellings, ignoring case)."""
    said = answer.casefold()
    return any(a.casefold() in said for a in fact.answers)


def _filler(n: int) -> str:
    """Turn `n`'s message of one of the four kinds in rotation."""
    kind, k = n % 4, n // 4
    if kind == 0:
        return QUESTIONS[k % len(QUESTIONS)]
    if kind == 1:
        return f"What is {12 + (7 * n) % 83} plus {5 + (13 * n) % 61}? Just the number."
    if kind == 2:
        task = TASKS[k % len(TASKS)]
        return task.format(
            topic=TOPICS[(k + n) % len(TOPICS)],
            word=WORDS[k % len(WORDS)],
            phrase=PHRASES[k % len(PHRASES)],
        )
    remark = REMARKS[k % len(REMARKS)]
    return remark.format(dish=DISHES[k % len(DISHES)], km=3 + k % 9)


__all__ = ["FACTS", "FACT_TURNS", "Fact", "messages", "probe_of", "recalled"]
