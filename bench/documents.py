"""Documents benchmark: extraction, indexing and search, measured in one run.

Usage: python bench/documents.py [--chunks 10000] [--pages 200]

Prints:
- PDF pages extracted per second (`pypdf`, a PDF of `--pages` pages this bench writes);
- chunks indexed per second (chunking, WordLlama embeddings, SQLite FTS5 insert), for a
  Markdown file of about `--chunks` chunks;
- query latency over that index (median and p95 of 40 queries), BM25 alone and hybrid, against
  the goal of 50 ms;
- recall@5 of BM25 alone vs hybrid (BM25 + embeddings, reciprocal rank fusion) on a labelled
  set built here: 24 facts hidden among the filler, each asked in other words (a paraphrase
  shares few of its words), as one ratio over the other.
Nothing else should run meanwhile: the figures are wall-clock on this machine. Checked before
printing (no figures otherwise, exit status 1): every page of the PDF was extracted, the corpus
was indexed (its chunks are in the index) and every query was answered.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.documents.extract import extract
from app.documents.index import DocumentIndex
from tests.pdf_fixture import make_pdf

FACTS = [
    (
        "The lantern festival in the harbour town of Vell is held every October.",
        "When does Vell celebrate with lanterns each year?",
    ),
    (
        "Copper kettles should be cleaned with lemon juice and coarse salt.",
        "How do I polish a copper pot?",
    ),
    (
        "The observatory dome opens only when the humidity is below sixty percent.",
        "Under what damp conditions does the telescope roof stay shut?",
    ),
    (
        "Ferries to the northern islands are cancelled when waves exceed four metres.",
        "Which sea conditions stop boats to the north isles?",
    ),
    (
        "Sourdough starter needs feeding with flour and water every twelve hours.",
        "How often should the bread culture be fed?",
    ),
    (
        "The museum waives its entrance fee on the first Sunday of every month.",
        "Is there a free day to visit the gallery?",
    ),
    (
        "Bees become sluggish and stay in the hive when it drops below ten degrees.",
        "What happens to honeybee activity in cold weather?",
    ),
    (
        "Library books may be renewed twice unless someone else has reserved them.",
        "Can I extend my borrowing period?",
    ),
    (
        "The night train to the capital departs at eleven forty from platform nine.",
        "What time is the overnight rail service to the city?",
    ),
    (
        "Tomato seedlings must be hardened off outdoors for a week before planting.",
        "How do I prepare young tomato plants for the garden?",
    ),
    (
        "Helmets are mandatory for all riders on the mountain bike trails.",
        "Do cyclists need head protection on the off-road paths?",
    ),
    (
        "The bakery sells day-old bread at half price after four in the afternoon.",
        "When are yesterday's loaves discounted?",
    ),
    (
        "Passports must be valid for six months beyond the date of arrival.",
        "How long must travel documents remain current when entering?",
    ),
    (
        "The swimming pool closes for maintenance during the second week of August.",
        "When is the pool shut for repairs in summer?",
    ),
    (
        "Violin strings are best replaced every three to six months of regular playing.",
        "How frequently should I change the fiddle's strings?",
    ),
    (
        "The town council meets on the last Thursday of each month at seven.",
        "When do the local representatives hold their monthly meeting?",
    ),
    (
        "Olive oil keeps longest in a dark cupboard away from the stove.",
        "Where should I store cooking oil so it lasts?",
    ),
    (
        "Snow chains are required on the pass road from November to March.",
        "When do drivers need tyre chains over the mountain route?",
    ),
    (
        "Recycled glass must be rinsed and sorted by colour before collection.",
        "How should bottles be prepared for the recycling pickup?",
    ),
    (
        "The choir rehearses in the old chapel every Tuesday evening.",
        "Where and when does the singing group practise?",
    ),
    (
        "Houseplants need less water in winter because they grow more slowly.",
        "Should indoor greenery be watered differently in the cold months?",
    ),
    (
        "Kayak rentals include a life jacket and a waterproof bag.",
        "What comes with hiring a canoe?",
    ),
    (
        "The clock tower chimes every quarter hour between eight and ten at night.",
        "How often does the bell ring in the evening?",
    ),
    (
        "Wool sweaters should be washed by hand in cold water and dried flat.",
        "What is the right way to launder knitwear?",
    ),
]
FILLER = [
    "ledger",
    "archive",
    "record",
    "entry",
    "page",
    "volume",
    "section",
    "register",
    "catalogue",
    "index",
    "item",
    "account",
    "note",
    "file",
    "clause",
    "paragraph",
    "article",
    "table",
    "column",
    "figure",
    "summary",
]


def _filler(rng: random.Random, words: int = 120) -> str:
    return " ".join(rng.choice(FILLER) for _ in range(words)) + "."


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--pages", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        pdf = make_pdf(
            folder / "long.pdf",
            [[f"Page {i}.", _filler(rng, 60)[:90]] * 20 for i in range(args.pages)],
        )
        began = time.perf_counter()
        pages = len(extract(pdf).pages)
        pdf_rate = pages / (time.perf_counter() - began)
        paragraphs = [_filler(rng) for _ in range(args.chunks)]
        where = rng.sample(range(args.chunks), len(FACTS))
        for (fact, _question), at in zip(FACTS, where, strict=True):
            paragraphs[at] = fact + " " + _filler(rng, 60)
        (folder / "corpus.md").write_text("\n".join(paragraphs))
        index = DocumentIndex(folder / "index.sqlite3")
        began = time.perf_counter()
        added = index.add(folder / "corpus.md")
        index_rate = added.chunks / (time.perf_counter() - began)
        index.search("warm up", k=5)  # the vectors are read into memory once
        timings: dict[bool, list[float]] = {False: [], True: []}
        hits: dict[bool, int] = {False: 0, True: 0}
        for hybrid in (False, True):
            for fact, question in FACTS:
                t = time.perf_counter()
                found = index.search(question, k=5, hybrid=hybrid)
                timings[hybrid].append((time.perf_counter() - t) * 1000)
                hits[hybrid] += any(fact in h.text for h in found)
            for _ in range(16):
                t = time.perf_counter()
                index.search(_filler(rng, 6), k=5, hybrid=hybrid)
                timings[hybrid].append((time.perf_counter() - t) * 1000)
        indexed = sum(int(str(d["chunks"])) for d in index.documents())
        index.close()
    asked = 2 * (len(FACTS) + 16)
    if pages != args.pages:
        raise SystemExit(f"no figures: {pages} of the PDF's {args.pages} pages were extracted")
    if not added.chunks or indexed != added.chunks or added.notice:
        raise SystemExit(
            f"no figures: the index holds {indexed} chunks, the corpus made {added.chunks}"
            f" ({added.notice or 'no notice'})"
        )
    if sum(map(len, timings.values())) != asked:
        raise SystemExit(f"no figures: {sum(map(len, timings.values()))} of {asked} queries ran")
    print(f"{added.chunks} chunks indexed; {pages} PDF pages; {len(FACTS)} labelled questions")
    print("| measure | value | reference | ratio |")
    print("|---|---|---|---|")
    print(f"| PDF pages extracted / s (pypdf) | {pdf_rate:.0f} | — | — |")
    print(f"| chunks indexed / s (chunk, embed, FTS5) | {index_rate:.0f} | — | — |")
    for hybrid, name in ((False, "BM25 alone"), (True, "hybrid")):
        ms = sorted(timings[hybrid])
        p95 = ms[int(len(ms) * 0.95) - 1]
        print(
            f"| query ms over {added.chunks} chunks, {name} (median / p95) |"
            f" {statistics.median(ms):.1f} / {p95:.1f} | goal 50 | {p95 / 50:.2f} |"
        )
    words, both = hits[False] / len(FACTS), hits[True] / len(FACTS)
    print(
        f"| recall@5, hybrid vs BM25 alone | {both:.2f} | {words:.2f} |"
        f" {both / words if words else float('inf'):.2f} |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
