"""`harmony-desk tools list|audit|approvals`: the discovered tools, the audit log, saved approvals.

Guarantees: `list` shows every tool a conversation may enable (built-ins `python` and
`browser` included) with its plugin, risk and deadline, and reports plugins that could not
load or were shadowed by an installed one; `audit` exports the tool audit log (all of it, or one
conversation's) and says how many damaged lines it skipped; `approvals` lists the saved
"always allow" / "deny" choices, and `--reset` forgets one or all of them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.engine.approval import ApprovalStore
from app.engine.audit import AuditLog
from app.tools.api import Tool
from app.tools.discovery import discover
from app.tools.session import ConversationTools, ToolOptions


def add_arguments(tools: argparse.ArgumentParser) -> None:
    verbs = tools.add_subparsers(dest="verb", required=True)
    verbs.add_parser("list", help="discovered tools, their plugin and risk")
    audit = verbs.add_parser("audit", help="export the tool audit log")
    audit.add_argument("--conversation", help="only this conversation's calls")
    audit.add_argument("--format", choices=["json", "jsonl"], default="json")
    audit.add_argument("--out", default="-", help="a file, or - for stdout (default)")
    approvals = verbs.add_parser("approvals", help="saved 'always allow' and 'deny' choices")
    approvals.add_argument(
        "--reset", nargs="?", const="*", metavar="TOOL", help="forget one tool's choice, or all"
    )


def _row(t: Tool, plugin: str) -> str:
    return f"{t.qualified_name:32} {plugin:20} {t.risk.value:14} deadline {t.deadline_ms} ms"


def _list() -> int:
    found = discover()
    with ConversationTools(ToolOptions(enabled=("python", "browser")), found) as builtins:
        for t in builtins.registry:
            print(_row(t, "built-in"))
    for plugin, tools in sorted(found.tools.items()):
        for t in tools:
            print(_row(t, plugin))
    for plugin, reason in sorted(found.failures.items()):
        print(f"plugin {plugin} could not be loaded: {reason}", file=sys.stderr)
    for plugin, folder in sorted(found.shadowed.items()):
        print(
            f"plugin {plugin} in {folder} is skipped: an installed one has its name",
            file=sys.stderr,
        )
    return 0


def _audit(args: argparse.Namespace) -> int:
    log = AuditLog()
    if args.out == "-":
        read = log.read(args.conversation)
        if args.format == "json":
            print(json.dumps(read.entries, ensure_ascii=False, indent=1))
        else:
            for entry in read.entries:
                print(json.dumps(entry, ensure_ascii=False))
    else:
        read = log.export(Path(args.out), conversation_id=args.conversation, fmt=args.format)
        print(f"{len(read.entries)} calls written to {args.out}", file=sys.stderr)
    if read.damaged_lines:
        print(f"{read.damaged_lines} damaged lines in {log.path} were skipped", file=sys.stderr)
    return 0


def _approvals(args: argparse.Namespace) -> int:
    store = ApprovalStore()
    if args.reset:
        store.forget(None if args.reset == "*" else args.reset)
    for name, mode in sorted(store.load().items()):
        print(f"{name:32} {mode.value}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.verb == "audit":
        return _audit(args)
    if args.verb == "approvals":
        return _approvals(args)
    return _list()
