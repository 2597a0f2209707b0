"""`harmony-desk chat`: a conversation in the terminal, on the same engine the window uses.

The visible answer (and preambles) stream to stdout; analysis goes to stderr only with
`--show-analysis`; progress, timings and problems go to stderr. A load error exits with
status 2 and says what is wrong; a failed turn exits 1 with `--prompt`, and the interactive
loop goes on after it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator

from pydantic import ValidationError

from app.cli.checkpoints import ChatCheckpoints
from app.cli.terminal_reply import TerminalReply, TurnEvent
from app.domain.endpoint import Endpoint
from app.domain.history import Reply
from app.domain.messages import ReasoningEffort
from app.domain.sampling import Sampling
from app.domain.terminal import raw_terminal
from app.engine.approval import ApprovalPolicy, ApprovalStore, terminal_ask
from app.engine.chat import ChatSession
from app.engine.client import WorkerClient, default_threads
from app.engine.constraint import JsonSchemaFormat, ResponseFormat, check_schema
from app.engine.protocol import TurnFailed
from app.engine.remote import RemoteSession
from app.engine.tool_runner import allow_all
from app.engine.turn import TurnRequest, run_turn
from app.errors import InvalidInputError, validation_problems
from app.settings import load_settings
from app.templates.choices import ChoiceStore, ModelChoice
from app.templates.registry import default_template_name, get_template
from app.tools.api import ToolContext
from app.tools.mcp_tools import McpPool
from app.tools.session import MCP_PREFIX, ConversationTools, ToolOptions, UnknownToolError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        default="default",
        help="a GGUF file, or 'default' (`models default`, else the bundled model)",
    )
    parser.add_argument("--template", help="a chat template name (default: from the model)")
    parser.add_argument("--reasoning-effort", choices=[e.value for e in ReasoningEffort])
    parser.add_argument("--show-analysis", action="store_true", help="print reasoning to stderr")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--prompt", help="one message; without it, an interactive loop")
    parser.add_argument("--ctx", type=int, default=None, help="context length in tokens")
    parser.add_argument("--threads", type=int, default=None, help=f"default {default_threads()}")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument(
        "--gpu-layers",
        help="layers on the GPU: auto (all, where llama.cpp can offload), all, 0, or a number;"
        " remembered for the model",
    )
    parser.add_argument(
        "--flash-attn", action=argparse.BooleanOptionalAction, default=None,
        help="flash attention (remembered for the model)",
    )  # fmt: skip
    parser.add_argument("--kv-type", choices=["f16", "q8_0"], help="the KV cache's type")
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
        "--save", action="store_true", help="keep the conversation in the history the window shows"
    )
    parser.add_argument("--yes", action="store_true", help="allow every tool call without asking")
    parser.add_argument(
        "--tool-choice", default="auto", help="auto, none, required, or a tool name"
    )
    parser.add_argument(
        "--thinking-budget",
        type=int,
        default=None,
        help="gpt-oss with tools or JSON: at most this many tokens per reasoning message",
    )
    parser.add_argument("--json-schema", metavar="FILE", help="answer in JSON matching this schema")
    parser.add_argument("--json-object", action="store_true", help="answer with any JSON object")
    parser.add_argument("--temperature", type=float, help="remembered for this model")
    parser.add_argument("--top-p", type=float, help="remembered for this model")
    parser.add_argument("--top-k", type=int, help="remembered for this model")
    parser.add_argument("--repeat-penalty", type=float, help="remembered for this model")
    parser.add_argument(
        "--endpoint", help="chat with a remote endpoint: a configured name or a base URL"
    )
    parser.add_argument("--remote-model", help="the served model (with --endpoint URL)")
    parser.add_argument("--key-name", help="the keyring entry of the endpoint's API key")


def _status(text: str) -> None:
    """The app's own status line (its carriage returns pass; the label is the app's text)."""
    terminal = raw_terminal(sys.stderr)
    terminal.write(text)
    terminal.flush()


def _progress(label: str) -> Callable[[float], None]:
    """A progress printer that writes only when the shown percentage changes."""
    shown = [-1]

    def report(fraction: float) -> None:
        percent = int(fraction * 100)
        if percent != shown[0]:
            shown[0] = percent
            _status(f"\r{label}… {percent:3d}%")

    return report


def _model_path(name: str) -> str:
    if name != "default":
        return name
    from app.engine.default_model import default_model_path
    from app.library.folders import startup_model

    chosen = startup_model(load_settings())  # `harmony-desk models default PATH`
    if chosen is not None:
        return chosen

    path = default_model_path(_progress("Preparing the default model"))
    raw_terminal(sys.stderr).write("\r")
    return str(path)


def _choice(args: argparse.Namespace) -> ModelChoice:
    """The choices given on the command line, checked before they are remembered."""
    if args.template:
        get_template(args.template)  # an unknown name fails here, and is not remembered
    try:
        layers = args.gpu_layers
        return ModelChoice(
            template=args.template,
            temperature=args.temperature,
            top_p=args.top_p,
            top_k=args.top_k,
            repetition_penalty=args.repeat_penalty,
            gpu_layers=int(layers) if layers and layers.isdigit() else layers,
            flash_attn=args.flash_attn,
            kv_type=args.kv_type,
        )
    except ValidationError as exc:
        raise InvalidInputError(f"invalid model setting ({validation_problems(exc)})") from exc


def _read_line(prompt: str) -> str:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    return sys.stdin.readline()


def _tools(args: argparse.Namespace) -> ConversationTools | None:
    """The conversation's tools named on the command line (a clear error for an unknown name)."""
    names = [n.strip() for n in (args.tools or "").split(",") if n.strip()]
    names += [MCP_PREFIX + n.strip() for n in (args.mcp or "").split(",") if n.strip()]
    if not names:
        return None
    options = ToolOptions(
        enabled=tuple(names),
        offline=args.offline,
        granted_folders=tuple(args.grant),
        writable_folders=tuple(args.grant_writable),
        search=args.search,
        searxng_url=args.searxng_url,
        allow_private_addresses=args.allow_local_addresses,
    )
    pool = McpPool() if args.mcp else None
    try:
        return ConversationTools(options, mcp=pool)
    except UnknownToolError as exc:
        if pool is not None:
            pool.close()
        raise InvalidInputError(exc.message) from exc


def _close(tools: ConversationTools) -> None:
    """End the conversation's tools and the MCP servers this command started."""
    tools.close()
    if tools.mcp is not None:
        tools.mcp.close()


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
    from app.settings import load_settings

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
    response_format = _response_format(args)  # a bad schema fails before the model loads
    remote = _remote(args) if args.endpoint else None
    tools = _tools(args)
    if remote is not None:
        with contextlib.ExitStack() as stack:
            if tools is not None:
                stack.callback(_close, tools)
            return _converse(remote, args, tools, response_format)
    path = _model_path(args.model)
    choice = ChoiceStore().remember(path, _choice(args))
    with WorkerClient() as client, contextlib.ExitStack() as stack:
        if tools is not None:
            stack.callback(_close, tools)
        info = client.load(
            path,
            n_ctx=args.ctx or 4096,
            n_threads=args.threads,
            on_progress=_progress(f"Loading {path}"),
            settings=choice.load_settings(load_settings().gpu_layers),
        )
        name = choice.template or default_template_name(info.metadata)
        where = info.placement.words() if info.placement else "CPU"
        sys.stderr.write(
            f"\rLoaded {info.architecture} model ({info.n_ctx} context, template {name},"
            f" on {where}, {info.n_threads} threads).\n"
        )
        template = get_template(name).for_model(info.metadata)
        sampling = choice.apply(template.defaults).sampling(seed=args.seed)
        session = ChatSession(
            client,
            template,
            sampling=sampling,
            max_tokens=args.max_tokens,
            thinking_budget=args.thinking_budget,
        )
        return _converse(session, args, tools, response_format)


def _converse(
    session: ChatSession | RemoteSession,
    args: argparse.Namespace,
    tools: ConversationTools | None,
    response_format: ResponseFormat | None,
) -> int:
    """The prompt (or the interactive loop) through `session`, with the tool loop when tools
    are enabled; the exit status."""
    approve = (
        allow_all if args.yes else ApprovalPolicy(terminal_ask(_read_line), store=ApprovalStore())
    )
    conversation_id = f"cli-{uuid.uuid4().hex[:12]}"
    context = ToolContext(call_id="", conversation_id=conversation_id, offline=args.offline)
    effort = ReasoningEffort(args.reasoning_effort) if args.reasoning_effort else None
    printer = TerminalReply(args.show_analysis, sys.stdout, sys.stderr)
    prompts = [args.prompt] if args.prompt is not None else _interactive()
    status = 0
    saved = ChatCheckpoints() if args.save else None
    try:
        for text in prompts:
            printer.begin(saved.begin(text) if saved is not None else Reply())
            request = TurnRequest(
                text,
                effort=effort,
                response_format=response_format,
                tools=tools.registry if tools is not None else None,
                approve=approve,
                tool_choice=args.tool_choice if tools is not None else "auto",
                max_calls=args.max_tool_calls,
                context=context,
            )
            status = max(status, _follow(run_turn(session, request), printer, saved))
    finally:
        if saved is not None:
            saved.close()
            sys.stderr.write(f"[saved as {saved.doc.id}: {saved.doc.title}]\n")
    return status if args.prompt is not None else 0


def _follow(
    events: Iterable[TurnEvent],
    printer: TerminalReply,
    saved: ChatCheckpoints | None,
) -> int:
    """Print a turn's events (and checkpoint them with --save); 1 when the turn failed."""
    failed: str | None = None
    for event in events:
        printer(event)
        if saved is not None:
            saved.event(event)
        if isinstance(event, TurnFailed):
            failed = event.reason
    if saved is not None:
        saved.end(failed)
    return 1 if failed is not None else 0


def _interactive() -> Iterator[str]:
    while True:
        sys.stderr.write("> ")
        sys.stderr.flush()
        line = sys.stdin.readline()
        if not line:
            return
        if line.strip():
            yield line.rstrip("\n")


run = run_chat
