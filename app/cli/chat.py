"""`harmony-desk chat`: a conversation in the terminal, on the same engine the window uses.

The visible answer (and preambles) stream to stdout; analysis goes to stderr only with
`--show-analysis`; progress, timings, problems and the reply's notices go to stderr. A load
error exits with status 2 and says what is wrong; a failed turn exits 1 with `--prompt`, and
the interactive loop goes on after it. With `--json-schema` or `--json-object`, stdout holds
only a valid JSON answer, printed once checked: a cut or invalid one prints nothing there and
exits 1 (the verdict is on stderr).

Images: `--image FILE` (repeatable) goes with the first message, `/image FILE` in the loop with
the next; each is checked first (`app/cli/attachments.py`), and a saved conversation keeps
them (`Version.images`) and their bytes with the message, as the window does.

What an MCP server asks beside tool calls — the model's answer (sampling), the user's input
(elicitation) — is asked at the terminal (`app/cli/mcp_asks.py`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from pydantic import ValidationError

from app.cli.attachments import add_image, checked, prepare, save_images, sources
from app.cli.chat_compaction import TerminalCompactions
from app.cli.chat_tools import close_tools, conversation_tools, local_sessions, remote_sessions
from app.cli.checkpoints import ChatCheckpoints, saved_chat
from app.cli.local_model import add_model_arguments, load_model
from app.cli.mcp_asks import TerminalAsks
from app.cli.terminal_notices import TerminalNotices
from app.cli.terminal_reply import TerminalReply
from app.constrain.constraint import JsonSchemaFormat, ResponseFormat, check_schema
from app.documents.kept import keep_files
from app.domain.budget import Overflow
from app.domain.endpoint import Endpoint
from app.domain.events import TurnEvent, TurnFailed
from app.domain.history import Reply
from app.domain.messages import ReasoningEffort, user_message
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.local.session import ChatSession
from app.engine.remote.session import RemoteSession
from app.engine.request import GenerationRequest
from app.engine.turn.run import TurnRequest, run_turn
from app.errors import InvalidInputError, validation_problems
from app.images.decode import Picture
from app.settings import load_settings
from app.tools.api import ToolContext
from app.tools.approval import ApprovalPolicy, ApprovalStore, terminal_ask
from app.tools.calls import allow_all
from app.tools.session import ConversationTools


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    _turn_arguments(parser)
    _tool_arguments(parser)
    _document_arguments(parser)
    _answer_arguments(parser)
    _endpoint_arguments(parser)


def _turn_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reasoning-effort", choices=[e.value for e in ReasoningEffort])
    parser.add_argument("--show-analysis", action="store_true", help="print reasoning to stderr")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--prompt", help="one message; without it, an interactive loop")
    parser.add_argument(
        "--save", action="store_true", help="keep the conversation in the history the window shows"
    )
    parser.add_argument(
        "--overflow",
        choices=[o.value for o in Overflow],
        help="once the conversation outgrows the context: stop and say so, drop the middle (keep"
        " the instructions and the first exchange) or a rolling window (default: the settings')",
    )


def _tool_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tools",
        help="comma-separated tools or plugins the model may call, `python` and `browser` for"
        " the built-ins (see `tools list`)",
    )
    parser.add_argument(
        "--offline", action="store_true", help="no tool may use the network (browser refused)"
    )
    parser.add_argument(
        "--grant", action="append", default=[], metavar="DIR", help="a folder python may read"
    )
    parser.add_argument(
        "--grant-writable",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder python may read and write (never the app's own folders)",
    )
    parser.add_argument("--search", choices=["duckduckgo", "searxng", "none"], default="duckduckgo")
    parser.add_argument("--searxng-url", default="", help="a SearXNG instance for --search searxng")
    parser.add_argument(
        "--allow-local-addresses",
        action="store_true",
        help="let the browser open addresses on this machine or the local network",
    )
    parser.add_argument(
        "--mcp",
        metavar="NAME[,NAME...]",
        help="MCP servers whose tools the model may call (see `mcp list`); each call is"
        " approved like any tool's",
    )
    parser.add_argument("--max-tool-calls", type=int, default=8, help="calls per turn at most")
    parser.add_argument(
        "--yes",
        action="store_true",
        help="allow every tool call (and an MCP server's sampling) without asking; a server's"
        " request for input is declined",
    )
    parser.add_argument(
        "--tool-choice", default="auto", help="auto, none, required, or a tool name"
    )


def _document_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--attach",
        action="append",
        default=[],
        metavar="FILE",
        help="a file the (first) message carries: text, Markdown, code, HTML, PDF, DOCX",
    )
    parser.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="FILE",
        help="an image the (first) message carries: PNG, JPEG, WebP, GIF or BMP, for a model"
        " that sees images (loaded with its projector, or a remote endpoint's); in the"
        " conversation, `/image FILE` adds one to the next message",
    )
    parser.add_argument(
        "--library",
        action="store_true",
        help="every message also carries the documents library's most relevant passages"
        " (`documents add`), cited as [n]",
    )


def _answer_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--thinking-budget",
        type=int,
        default=None,
        help="gpt-oss with tools or JSON: at most this many tokens per reasoning message",
    )
    parser.add_argument("--json-schema", metavar="FILE", help="answer in JSON matching this schema")
    parser.add_argument("--json-object", action="store_true", help="answer with any JSON object")


def _endpoint_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--endpoint", help="chat with a remote endpoint: a configured name or a base URL"
    )
    parser.add_argument(
        "--resume",
        metavar="ID|last",
        help="go on with a saved conversation (its id from `history list`, or the last one);"
        " what is said is saved to it",
    )
    parser.add_argument("--remote-model", help="the served model (with --endpoint URL)")
    parser.add_argument("--key-name", help="the keyring entry of the endpoint's API key")


def _read_line(prompt: str) -> str:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    return sys.stdin.readline()


def _response_format(args: argparse.Namespace) -> ResponseFormat | None:
    """JSON mode from `--json-schema FILE` or `--json-object`, checked before generation."""
    if args.json_schema:
        try:
            with open(args.json_schema, encoding="utf-8") as f:
                schema = json.load(f)
        except (OSError, ValueError) as exc:
            raise InvalidInputError(f"cannot read the schema {args.json_schema}: {exc}") from exc
        if not isinstance(schema, dict):
            raise InvalidInputError(f"the schema {args.json_schema} is not a JSON object")
        check_schema(schema)
        return ResponseFormat(type="json_schema", json_schema=JsonSchemaFormat(schema=schema))
    if args.json_object:
        return ResponseFormat(type="json_object")
    return None


def _remote(args: argparse.Namespace) -> RemoteSession:
    """The remote session `--endpoint` names (a configured endpoint, or a base URL)."""
    from app.secrets import Secrets

    if args.offline:
        raise InvalidInputError("an offline conversation never uses a remote endpoint")
    endpoint = load_settings().endpoint(args.endpoint)
    try:
        if endpoint is None:
            if not args.remote_model:
                raise InvalidInputError(
                    f"{args.endpoint!r} is not a configured endpoint; with a base URL, name the"
                    " model with --remote-model (`harmony-desk endpoints list` shows the others)"
                )
            endpoint = Endpoint(
                name="command-line",
                base_url=args.endpoint,
                model=args.remote_model,
                key_name=args.key_name,
            )
        else:
            chosen = {"model": args.remote_model, "key_name": args.key_name}
            endpoint = Endpoint.model_validate(
                endpoint.model_dump() | {k: v for k, v in chosen.items() if v}
            )
    except ValidationError as exc:
        raise InvalidInputError(f"the endpoint is not valid: {validation_problems(exc)}") from None
    key = Secrets().key_for(endpoint)  # a clear error when it is not set
    sampling = Sampling(
        temperature=1.0 if args.temperature is None else args.temperature,
        top_p=args.top_p or 1.0,
        top_k=args.top_k or 0,
        seed=args.seed,
    )
    sys.stderr.write(f"Remote endpoint {endpoint.name}: {endpoint.base_url} ({endpoint.model}).\n")
    return RemoteSession(endpoint, key, sampling=sampling, max_tokens=args.max_tokens)


def run_chat(args: argparse.Namespace) -> int:
    """Run the chat command; returns the exit status."""
    pictures = checked(args.image, sys.stderr)  # a bad image fails before the model loads
    response_format = _response_format(args)  # a bad schema too
    remote = _remote(args) if args.endpoint else None
    asks = TerminalAsks(args.yes)  # what an MCP server asks beside tool calls
    tools = conversation_tools(args, asks)
    if remote is not None:
        with contextlib.ExitStack() as stack:
            if tools is not None:
                stack.callback(close_tools, tools)
            asks.session = remote_sessions(remote)
            return _converse(remote, args, tools, response_format, pictures, asks)
    with WorkerClient() as client, contextlib.ExitStack() as stack:
        if tools is not None:
            stack.callback(close_tools, tools)
        loaded = load_model(client, args)
        session = ChatSession(
            client,
            loaded.template,
            sampling=loaded.sampling,
            max_tokens=args.max_tokens,
            thinking_budget=args.thinking_budget,
        )
        asks.session = local_sessions(session, loaded)
        return _converse(session, args, tools, response_format, pictures, asks)


def _converse(
    session: ChatSession | RemoteSession,
    args: argparse.Namespace,
    tools: ConversationTools | None,
    response_format: ResponseFormat | None,
    pictures: Sequence[Picture] = (),
    asks: TerminalAsks | None = None,
) -> int:
    """The prompt (or the interactive loop) through `session`, with the tool loop when tools
    are enabled; the exit status."""
    approve = (
        allow_all if args.yes else ApprovalPolicy(terminal_ask(_read_line), store=ApprovalStore())
    )
    context = _context(args, asks)
    json_mode = response_format is not None and response_format.type != "text"
    printer = TerminalReply(args.show_analysis, sys.stdout, sys.stderr, json_mode=json_mode)
    pending = list(pictures)  # the images the next message carries
    prompts = [args.prompt] if args.prompt is not None else _interactive(session, pending)
    status = 0
    saved = saved_chat(args.save, args.resume)
    generation = _generation(args, tools is not None, response_format, saved)
    # a resumed conversation's messages come first; later turns continue the session's own
    conversation = session.conversation.with_messages(saved.history) if saved is not None else None
    compactions = TerminalCompactions(saved.doc.compaction() if saved is not None else None)
    try:
        attached = None
        for number, text in enumerate(prompts):
            now = conversation or session.conversation
            if compactions.command(text, session, now, generation, sys.stderr, saved):
                continue  # /compact, /compact undo
            files = [Path(a) for a in args.attach] if number == 0 else []  # the first message's
            images, pending[:] = tuple(pending), []  # this message's; the next starts bare
            contents = tuple(p.content() for p in images)
            if files or args.library:
                text, attached = prepare(session, files, text, sys.stderr, args.library)
            printer.begin(saved.begin(text, contents) if saved is not None else Reply())
            if saved is not None and (files or images):
                keep_files(files, saved.doc.id, saved.doc.turns[-1].version.id)
                save_images(saved, images)
            request = TurnRequest(
                compactions.request(generation),
                message=user_message(text, contents),
                conversation=conversation,
                tools=tools.registry if tools is not None else None,
                approve=approve,
                max_calls=args.max_tool_calls,
                context=context,
            )
            conversation = None
            events = compactions.events(run_turn(session, request), saved is not None)
            status = max(status, _follow(events, printer, saved))
            compactions.after(printer.builder.reply)
            if printer.json_failed:  # cut or invalid: nothing was printed on stdout
                status = max(status, 1)
            if attached is not None:
                answer = "".join(
                    g.text for g in printer.builder.reply.segments if g.kind == "answer"
                )
                sources(answer, attached, sys.stderr)
    finally:
        if saved is not None:
            saved.close()
            sys.stderr.write(f"[saved as {saved.doc.id}: {saved.doc.title}]\n")
    return status if args.prompt is not None else 0


def _context(args: argparse.Namespace, asks: TerminalAsks | None) -> ToolContext:
    """The tools' context for this chat: its own id (a server's requests are audited under it)."""
    conversation_id = f"cli-{uuid.uuid4().hex[:12]}"
    if asks is not None:
        asks.conversation_id = conversation_id
    return ToolContext(call_id="", conversation_id=conversation_id, offline=args.offline)


def _generation(
    args: argparse.Namespace,
    tools: bool,
    response_format: ResponseFormat | None,
    saved: ChatCheckpoints | None,
) -> GenerationRequest:
    """The knobs of every turn of this chat, built once from its arguments: a saved
    conversation's KV state is kept for it; the interactive loop (a person between turns)
    compacts ahead under summarise."""
    return GenerationRequest(
        max_tokens=args.max_tokens,
        tool_choice=args.tool_choice if tools else "auto",
        response_format=response_format,
        effort=ReasoningEffort(args.reasoning_effort) if args.reasoning_effort else None,
        overflow=Overflow(args.overflow or load_settings().overflow),
        keep=saved.doc.id if saved is not None else "",
        compact_ahead=args.prompt is None,
    )


def _follow(
    events: Iterable[TurnEvent],
    printer: TerminalReply,
    saved: ChatCheckpoints | None,
) -> int:
    """Print a turn's events (and checkpoint them with --save); 1 when the turn failed."""
    failed: str | None = None
    notices = TerminalNotices(printer.builder.reply, printer.err)  # said beside the answer
    for event in events:
        printer(event)
        notices(event)
        if saved is not None:
            saved.event(event)
        if isinstance(event, TurnFailed):
            failed = event.reason
    if saved is not None:
        saved.end(failed)
    return 1 if failed is not None else 0


def _interactive(session: ChatSession | RemoteSession, pending: list[Picture]) -> Iterator[str]:
    """The user's messages; `/image FILE` adds an image to `pending` (the next message's)."""
    while True:
        sys.stderr.write("> ")
        sys.stderr.flush()
        line = sys.stdin.readline()
        if not line:
            return
        command, _, rest = line.strip().partition(" ")
        if command == "/image":
            add_image(session, rest.strip(), pending, sys.stderr)
        elif line.strip():
            yield line.rstrip("\n")


run = run_chat
