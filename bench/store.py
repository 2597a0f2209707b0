"""The history store against plain JSON files, measured in the same run.

    python bench/store.py [--messages 10000] [--search-messages 100000]

Printed, ours (SQLite: WAL, FTS5) next to the reference (one JSON file per conversation, written
atomically; search reads every file), with ratios:
- checkpoints per second while an answer streams in a long conversation (each one saves the
  growing answer);
- time to open a conversation of 10,000 messages (goal < 200 ms): read from the store, and in
  the real window (offscreen) from the click to its transcript shown, with the longest stall of
  the GUI thread meanwhile (a 5 ms heartbeat);
- search latency over 100,000 messages (goal < 100 ms).
Checked before printing (no figures otherwise, exit status 1): the store gives back the whole
conversation with the last checkpoint's answer, the window opened the whole conversation each
time, and both searches found the needle.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HARMONY_DESK_CONFIG", tempfile.mkdtemp(prefix="harmony-desk-bench-"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.domain.history import ChatDoc, Reply, Segment, Turn, Version
from app.domain.messages import Message, Role
from app.fileio import write_atomic
from app.store.history import HistoryStore
from app.store.rows import all_rows

WORDS = [
    "tea",
    "kettle",
    "leaf",
    "water",
    "cup",
    "steam",
    "green",
    "black",
    "oolong",
    "brew",
    "pot",
    "sugar",
    "lemon",
    "honey",
    "milk",
    "mountain",
    "river",
    "forest",
    "stone",
    "cloud",
]


def conversation(turns: int, seed: int) -> ChatDoc:
    """A conversation of `turns` turns (two messages each: the user's and the answer)."""
    doc = ChatDoc(title=f"conversation {seed}")
    for i in range(turns):
        words = [WORDS[(seed * 7 + i * 3 + k) % len(WORDS)] for k in range(40)]
        text = " ".join(words) + f" marker{seed}x{i}"
        reply = Reply(state="done", segments=[Segment("answer", text, complete=True)])
        reply.messages = (Message.of(Role.ASSISTANT, text, channel="final"),)
        doc.turns.append(Turn([Version(f"question {i} about {words[0]}", replies=[reply])]))
    return doc


class JsonFiles:
    """The reference: one JSON file per conversation."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def save(self, doc: ChatDoc) -> None:
        rows = all_rows(doc)
        data = {
            "conversation": rows.conversation,
            "turns": rows.turns,
            "versions": rows.versions,
            "replies": rows.replies,
            "messages": rows.messages,
        }
        write_atomic(self.folder / f"{doc.id}.json", json.dumps(data))

    def load(self, doc_id: str) -> dict[str, object]:
        loaded: dict[str, object] = json.loads((self.folder / f"{doc_id}.json").read_text())
        return loaded

    def search(self, text: str) -> list[str]:
        hits = []
        for path in self.folder.glob("*.json"):
            if text in path.read_text():
                hits.append(path.stem)
        return hits


def timed(fn, repeat: int = 5) -> float:  # type: ignore[no-untyped-def]
    """Median seconds of `fn()` over `repeat` runs."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def window_open(
    path: Path, doc_id: str, small_id: str, turns: int, repeat: int = 5
) -> tuple[float, float]:
    """Median seconds from selecting `doc_id` in the window to its transcript shown (switching
    from a small conversation each time), and the longest GUI-thread stall (s) meanwhile."""
    from PySide6.QtCore import QEventLoop, QTimer

    from app.controllers.bridge import EngineBridge
    from app.controllers.chat import ChatController
    from app.controllers.model_host import ModelHost
    from app.ui.app import application
    from app.ui.window.main_window import MainWindow

    app = application()
    controller = ChatController(ModelHost(EngineBridge()), HistoryStore(path))
    window = MainWindow(controller)
    window.show()
    controller.settle()
    beats = [time.perf_counter(), 0.0]  # last beat, longest gap

    def beat() -> None:
        now = time.perf_counter()
        beats[1] = max(beats[1], now - beats[0] - 0.005)
        beats[0] = now

    heart = QTimer()
    heart.setInterval(5)
    heart.timeout.connect(beat)
    opened = []
    for _ in range(repeat):
        controller.select(small_id)
        controller.settle()
        app.processEvents()
        heart.start()
        beats[0] = start = time.perf_counter()
        waiting = QEventLoop()
        controller.docChanged.connect(waiting.quit)  # after the transcript's own slot
        controller.select(doc_id)
        waiting.exec()
        controller.docChanged.disconnect(waiting.quit)
        opened.append(time.perf_counter() - start)
        if controller.doc.id != doc_id or len(controller.doc.turns) != turns:
            raise SystemExit(f"no figures: the window opened {len(controller.doc.turns)} turns")
        heart.stop()
    window.close()
    controller.close()
    return statistics.median(opened), beats[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000, help="in the conversation opened")
    parser.add_argument("--search-messages", type=int, default=100_000, help="in the whole store")
    parser.add_argument("--checkpoints", type=int, default=200)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="harmony-desk-store-bench-"))
    store = HistoryStore(root / "history.db")
    files = JsonFiles(root / "json")
    big = conversation(args.messages // 2, 0)
    store.save(big)
    files.save(big)
    # checkpoints while an answer streams at the end of the big conversation
    version = Version("write a long answer")
    big.turns.append(Turn([version]))
    streaming = Reply(segments=[Segment("answer", "")])
    version.replies.append(streaming)

    def checkpoints(save) -> float:  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        for i in range(args.checkpoints):
            streaming.segments[0].text += f" token{i}" * 10
            save()
        return args.checkpoints / (time.perf_counter() - start)

    ours_cp = checkpoints(lambda: store.checkpoint(big, version, streaming))
    saved = streaming.segments[0].text  # what the store's last checkpoint holds
    ref_cp = checkpoints(lambda: files.save(big))
    ours_open = timed(lambda: store.load(big.id))
    loaded = store.load(big.id)
    answer = loaded.turns[-1].version.reply if loaded and loaded.turns else None
    if (
        loaded is None
        or len(loaded.turns) != len(big.turns)
        or answer is None
        or answer.segments[0].text != saved
    ):
        raise SystemExit("no figures: the store gave back another conversation than it was given")
    ref_open = timed(lambda: files.load(big.id))
    small = conversation(2, 99)
    store.save(small)
    shown, stall = window_open(root / "history.db", big.id, small.id, len(big.turns))
    per = max(1, args.messages // 2)
    made = args.messages
    seed = 1
    while made < args.search_messages:
        doc = conversation(min(per, (args.search_messages - made) // 2 or 1), seed)
        store.save(doc)
        files.save(doc)
        made += 2 * len(doc.turns)
        seed += 1
    needle = f"marker{seed - 1}x3"
    ours_search = timed(lambda: store.search(needle))
    ref_search = timed(lambda: files.search(needle), repeat=3)
    if not (store.search(needle) and files.search(needle)):
        raise SystemExit(f"no figures: a search did not find {needle}")
    size = os.path.getsize(root / "history.db") / 2**20
    print(
        f"store bench ({made} messages in {seed} conversations; SQLite {size:.0f} MiB;"
        " 2-core machine)"
    )
    print("                                     ours (SQLite)     reference (JSON files)   ratio")
    print(
        f"checkpoints per second (10k conv.)  {ours_cp:10.0f}         {ref_cp:10.0f}             "
        f"{ours_cp / ref_cp:6.1f}x"
    )
    print(
        f"open a {args.messages}-message conversation {ours_open * 1000:7.1f} ms       "
        f"{ref_open * 1000:7.1f} ms (parse only)  {ref_open / ours_open:6.1f}x   (goal < 200 ms)"
    )
    print(
        f"  in the window, click to transcript {shown * 1000:7.1f} ms       "
        f"{ref_open * 1000:7.1f} ms (parse only)  {ref_open / shown:6.1f}x   (goal < 200 ms;"
        f" longest GUI stall {stall * 1000:.0f} ms)"
    )
    print(
        f"search over {made} messages       {ours_search * 1000:7.1f} ms       "
        f"{ref_search * 1000:7.1f} ms             {ref_search / ours_search:6.1f}x"
        "   (goal < 100 ms)"
    )
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
