"""`harmony-desk tools list|plugins|call|audit|approvals|prepare`: tools, trust, one call, the
audit log, the python tool's runtime compiled ahead (`tools_prepare.py`).

Guarantees: `list` shows every tool a conversation may enable (built-ins `python` and
`browser` included) with its plugin, risk and deadline, and reports plugins that could not
load or were shadowed by an installed one; `audit` exports the tool audit log (all of it, or one
conversation's) as JSON, JSON Lines or Markdown — the writer the window's Tool calls view
exports with (`app/tools/audit_export.py`) — and says how many damaged lines it skipped;
`approvals` lists the saved "always allow" / "deny" choices, and `--reset` forgets one or all
of them. `plugins` lists every plugin found with its kind, path, content hash and trust
(shipped, trusted, new, changed); `--trust NAME` trusts one as it is now, `--revoke NAME`
forgets it. `call TOOL JSON` runs one call through the real tool host (python's sandbox, the
plugin host, the browser's limits) as the model would, and prints the result envelope the
model would read; exit 0 when the tool succeeded, 1 when it returned an error, 2 for a call
that cannot be made.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.cli.tools_prepare import prepare, tell_terminal
from app.engine.turn.loop import envelope
from app.tools.api import Tool
from app.tools.approval import ApprovalStore
from app.tools.audit import AuditLog
from app.tools.audit_export import FORMATS, export_calls, markdown
from app.tools.audit_rows import configured_servers
from app.tools.calls import Decision, PendingCall
from app.tools.discovery import discover, is_shipped
from app.tools.runner import run_calls
from app.tools.session import ConversationTools, ToolOptions, UnknownToolError
from app.tools.trust import TrustStore


def add_arguments(tools: argparse.ArgumentParser) -> None:
    verbs = tools.add_subparsers(dest="verb", required=True)
    verbs.add_parser("list", help="discovered tools, their plugin and risk")
    verbs.add_parser("prepare", help="compile the python tool's runtime now (once, cached)")
    audit = verbs.add_parser("audit", help="export the tool audit log")
    audit.add_argument("--conversation", help="only this conversation's calls")
    audit.add_argument(
        "--format", choices=FORMATS, default="json", help="md: Markdown, for a person to read"
    )
    audit.add_argument("--out", default="-", help="a file, or - for stdout (default)")
    plugins = verbs.add_parser("plugins", help="plugins found, their hash and trust")
    plugins.add_argument("--trust", metavar="NAME", help="trust this plugin as it is now")
    plugins.add_argument("--revoke", metavar="NAME", help="stop trusting this plugin")
    call = verbs.add_parser("call", help="run one tool call as the model would")
    call.add_argument("tool", help="python, browser.open, functions.word_count, …")
    call.add_argument("arguments", help='the call\'s arguments as JSON, e.g. \'{"code": "1+1"}\'')
    call.add_argument("--offline", action="store_true", help="no network for the browser")
    call.add_argument("--grant", action="append", default=[], metavar="DIR")
    call.add_argument("--grant-writable", action="append", default=[], metavar="DIR")
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
        elif args.format == "md":
            sys.stdout.write(markdown(read.entries, configured_servers()))
        else:
            for entry in read.entries:
                print(json.dumps(entry, ensure_ascii=False))
    else:
        servers = configured_servers() if args.format == "md" else ()
        read = export_calls(
            Path(args.out),
            log=log,
            conversation_id=args.conversation,
            fmt=args.format,
            servers=servers,
        )
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


def _plugins(args: argparse.Namespace) -> int:
    found = discover()
    found.close()
    store = TrustStore()
    everything = {**found.trusted, **found.pending}
    for name in (args.trust, args.revoke):
        if name and name not in everything:
            print(
                f"no plugin called {name}; found: {', '.join(sorted(everything))}", file=sys.stderr
            )
            return 2
    if args.trust:
        store.trust(everything[args.trust])
    if args.revoke:
        store.revoke(args.revoke)
    for name, identity in sorted(everything.items()):
        status = "shipped" if is_shipped(identity) else store.status(identity)
        print(f"{name:24} {identity.kind:12} {status:8} {identity.sha256[:16]}  {identity.path}")
    return 0


def _call(args: argparse.Namespace) -> int:
    try:
        arguments = json.loads(args.arguments)
        if not isinstance(arguments, dict):
            raise ValueError("the arguments must be a JSON object")
    except ValueError as exc:
        print(f"the arguments are not a JSON object: {exc}", file=sys.stderr)
        return 2
    options = ToolOptions(
        enabled=(args.tool,),
        offline=args.offline,
        granted_folders=tuple(args.grant),
        writable_folders=tuple(args.grant_writable),
    )
    try:
        tools = ConversationTools(options)
    except UnknownToolError as exc:
        print(exc.message, file=sys.stderr)
        return 2
    with tools:
        tell_terminal(tools)  # a first call that waits for the python runtime's compile says so
        chosen = tools.registry.get(args.tool)
        if chosen is None:
            print(f"{args.tool} is a plugin or namespace: name one tool", file=sys.stderr)
            return 2
        how = Decision(True, how="run from the command line")
        call = PendingCall("cli-1", chosen, arguments)
        (outcome,) = run_calls([call], approve=lambda _c: how)
    print(envelope(outcome))
    return 0 if outcome.ok else 1


def run(args: argparse.Namespace) -> int:
    if args.verb == "plugins":
        return _plugins(args)
    if args.verb == "call":
        return _call(args)
    if args.verb == "audit":
        return _audit(args)
    if args.verb == "approvals":
        return _approvals(args)
    if args.verb == "prepare":
        return prepare()
    return _list()
