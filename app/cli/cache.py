"""`harmony-desk cache list|clear`: the KV states on disk (`app/kvcache.py`): conversations'
snapshots and the prompt cache of clients no conversation owns.

Guarantees: `list` shows each state's owner — a conversation (its title when the history holds
it) or a prompt cache (the desktop's user's, or a server key's, named by a hash, never the key) —
the tokens it holds, its size and when it was last used, most recent first, then the totals of
each kind against the cap in Settings; `clear` removes every state (or one conversation's with
`--conversation ID`, or only the prompt caches with `--prompts`) and says how much it freed.
Both see only this install's key's folder (`kvcache.own_root`): another install sharing the
cache folder keeps its own. Neither touches the history: a snapshot is a cache of what the
model read, and a conversation without one is read again when it is reopened.
"""

from __future__ import annotations

import argparse
import time

from app.kvcache import clear, forget, is_prompt_tag, kv_root, listing, own_root, prompt_tag
from app.settings import load_settings
from app.store.history import HistoryStore


def add_arguments(cache: argparse.ArgumentParser) -> None:
    verbs = cache.add_subparsers(dest="verb", required=True)
    verbs.add_parser("list", help="the snapshots kept, most recently used first")
    drop = verbs.add_parser("clear", help="remove the snapshots (the conversations stay)")
    drop.add_argument("--conversation", metavar="ID", help="only this conversation's")
    drop.add_argument("--prompts", action="store_true", help="only the prompt caches")


def _size(n: int) -> str:
    return f"{n / (1 << 20):,.1f} MiB" if n < 1 << 30 else f"{n / (1 << 30):,.2f} GiB"


def _list() -> int:
    root = own_root()
    found = listing(root) if root is not None else []
    store = HistoryStore()
    try:
        titles = {d.id: d.title for d in store.listed("")}
    finally:
        store.close()
    for s in found:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.used))
        if is_prompt_tag(s.tag):
            title = "prompt cache" + (" (this desktop)" if s.tag == prompt_tag("") else "")
        else:
            title = titles.get(s.tag, "(not in the history)")
        print(f"{s.tag}  {when}  {s.n_tokens:7,d} tokens  {_size(s.size):>10}  {title}")
    cap = load_settings().kv_cache_gib
    prompts = [s for s in found if is_prompt_tag(s.tag)]
    chats = len(found) - len(prompts)
    total = sum(s.size for s in found)
    print(
        f"{chats} conversation snapshots, {len(prompts)} cached prompts:"
        f" {_size(total)} of {cap} GiB in {root or kv_root()}"
    )
    return 0


def run(args: argparse.Namespace) -> int:
    if args.verb == "list":
        return _list()
    root = own_root()
    if root is None:
        freed = 0  # without a key nothing is kept on disk
    elif args.conversation:
        freed = sum(s.size for s in listing(root) if s.tag == args.conversation)
        forget(root, args.conversation)
    elif args.prompts:
        tags = {s.tag for s in listing(root) if is_prompt_tag(s.tag)}
        freed = sum(s.size for s in listing(root) if s.tag in tags)
        for tag in tags:
            forget(root, tag)
    else:
        freed = clear(root)
    print(f"Freed {_size(freed)}.")
    return 0


__all__ = ["add_arguments", "run"]
