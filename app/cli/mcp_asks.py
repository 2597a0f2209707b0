"""The terminal chat's answers to what an MCP server asks beside tool calls: sampling (the
chat's model answers, after the person approves it at a prompt) and elicitation (a prompt per
field of the server's form, or an address to open).

Guarantees: every question goes to stderr and its answer comes from stdin, one question at a
time; everything the server wrote (its name, the system prompt, each message, a form's
message, labels, descriptions and choices, an address) is shown inert (`app.domain.inert`:
escapes, controls and bidi characters shown escaped, never acted on; a message's body keeps
its lines, each indented so none can pose as the host's own line), a long one cut at
`SHOWN_CHARS` with how much more there was; a sampling request shows the server, the system
prompt, each message and the token limit, and is approved like a tool call — [y]es,
[n]o, [a]llow in this chat, [A]lways, [N]ever — under the chat's own choices (saved ones
included); it is answered by a fresh session over the chat's model (`session`). A form asks
field by field: its label (* when required), what it takes, its description, and its default
in brackets (`(text) [Ada]`; yes/no as `[Y/n]` or `[y/N]`; a choice's default marked among
the choices, `(one of: red, [green], blue)`; a secret's as `[default hidden]`): Enter takes
the default, and a required field without one is asked again; a value that does not fit is
said and asked again (`TRIES` times, then the form is cancelled); a secret-looking field is
read without echo on a terminal; end of input cancels. A form the host asks again (its answer
did not fit: `app/tools/mcp/elicit.py`) says what was wrong and asks only those fields. An
address is shown and opened only on [y]es: its canonical form is shown with its real host set
apart (`Site: evil.example (the link says accounts.google.com…)`), and that very string is what
opens. A `--yes` run asks nothing: sampling is allowed (as its tool calls are) and said, a
request for input is declined and said; the caps on both (`app/tools/mcp/caps.py`) hold there
too, and reaching one is said once (`told`). A question the deadline passed is withdrawn where
stdin is a terminal; from a pipe, its line is read and dropped.
"""

from __future__ import annotations

import getpass
import select
import sys
import threading
import webbrowser
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from app.domain.elicit_form import Form, FormField, Reply, UrlAsk, parse, problem
from app.domain.inert import inert
from app.errors import HarmonyDeskError
from app.tools.approval import ApprovalPolicy, ApprovalStore, Mode
from app.tools.calls import Approve, Decision, PendingCall, allow_all
from app.tools.mcp.answers import asking_hooks
from app.tools.mcp.asks import Refusal
from app.tools.mcp.hooks import McpHooks
from app.tools.mcp.sampling import SampleAnswer, SampleRequest

if TYPE_CHECKING:
    from app.engine.session import Session
    from app.tools.mcp.tools import McpPool

SHOWN_CHARS = 2000
TRIES = 3
POLL_S = 0.1
Fresh = Callable[[SampleRequest], "tuple[Session, str]"]  # a fresh session, the model's name


class TerminalAsks:
    """See the module guarantees."""

    def __init__(self, yes: bool, stdin: TextIO | None = None, out: TextIO | None = None) -> None:
        self.yes = yes
        self.stdin, self.out = stdin or sys.stdin, out or sys.stderr
        self.conversation_id = ""
        self.session: Fresh | None = None  # set once the chat's model is ready
        self.open_url: Callable[[str], object] = webbrowser.open
        self._policy: Approve = (
            allow_all if yes else ApprovalPolicy(self._asked, store=ApprovalStore())
        )
        self._turn = threading.Lock()  # one question at a time on the terminal
        self._cancel = threading.Event()

    def hooks(self, pool: Callable[[], McpPool]) -> McpHooks:
        """The hooks for the chat's MCP pool (`pool()`: it, for its servers and logs)."""
        return asking_hooks(self, pool)

    def _say(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def told(self, server: str, sentence: str) -> None:
        """A cap on what `server` may ask was reached (said once per cap)."""
        self._say(f"[mcp] {inert(sentence)}\n")

    def _line(self, prompt: str, cancel: threading.Event, secret: bool = False) -> str | None:
        """A line typed after `prompt` (without its newline); None at end of input or when
        `cancel` comes first (see the module guarantees)."""
        tty = self.stdin.isatty()
        if secret and tty:
            return getpass.getpass(prompt, stream=self.out)
        self._say(prompt)
        while tty and not cancel.is_set():
            if select.select([self.stdin], [], [], POLL_S)[0]:
                break
        if cancel.is_set():
            self._say("\n(not answered in time)\n")
            return None
        line = self.stdin.readline()
        return line.rstrip("\n") if line else None

    # --- sampling -----------------------------------------------------------------------

    def conversation(self) -> str:
        return self.conversation_id

    def approve(self, conversation: str, call: PendingCall, cancel: threading.Event) -> Decision:
        with self._turn:
            self._cancel = cancel
            if self.yes:
                server = _one(call.tool.namespace.removeprefix("mcp:"))
                self._say(
                    f"[sampling] “{server}” asks the model; allowed without asking (--yes).\n"
                )
            return self._policy(call)

    def _asked(self, call: PendingCall) -> tuple[Mode | None, Decision]:
        """The prompt for a sampling request (under the chat's policy, in ASK mode)."""
        shown, server = call.arguments, _one(call.tool.namespace.removeprefix("mcp:"))
        limit, asked = shown.get("max_tokens", 0), shown.get("asked_tokens", 0)
        more = f"; it asked for {asked:,}" if asked > limit else ""
        lines = [
            f"[sampling] The MCP server “{server}” asks the model to answer this"
            f" (at most {limit:,} tokens{more}):"
        ]
        if shown.get("system_prompt"):
            lines.append(f"  System: {_body(shown['system_prompt'])}")
        lines += [
            f"  {_one(m['role'].capitalize())}: {_body(m['text'])}"
            for m in shown.get("messages", ())
        ]
        self._say("\n".join(lines) + "\n")
        question = "Allow? [y]es [n]o [a]llow in this chat [A]lways [N]ever: "
        raw = (self._line(question, self._cancel) or "").strip()[:1]
        answers = {
            "y": (None, Decision(True, how="asked: allowed")),
            "a": (
                Mode.ALLOW_CONVERSATION,
                Decision(True, how="asked: allow for this conversation"),
            ),
            "A": (Mode.ALWAYS, Decision(True, how="asked: always allow")),
            "N": (Mode.DENY, Decision(False, how="asked: deny from now on")),
        }
        how = "not answered in time" if self._cancel.is_set() else "asked: denied"
        return answers.get(raw, (None, Decision(False, how=how)))

    def complete(
        self, conversation: str, request: SampleRequest, cancel: threading.Event
    ) -> SampleAnswer | Refusal:
        if self.session is None:
            return Refusal(
                f"No model is loaded to answer the sampling request of “{request.server}”."
            )
        from app.engine.turn.mcp_sample import answer

        try:
            session, model = self.session(request)
        except HarmonyDeskError as exc:
            return Refusal(f"The model could not answer the sampling request: {exc.message}")
        said = answer(session, request, model, cancel)
        if isinstance(said, SampleAnswer):
            server = _one(request.server)
            self._say(f"[sampling] {model} answered “{server}” ({len(said.text)} characters).\n")
        return said

    # --- elicitation --------------------------------------------------------------------

    def fill(self, form: Form, cancel: threading.Event) -> Reply:
        with self._turn:
            server, message = _one(form.server), _body(form.message)
            if self.yes:
                self._say(
                    f"[input] The MCP server “{server}” asked: {message}\n"
                    "  Declined: a --yes run never asks for input.\n"
                )
                return Reply("decline", why="a --yes run never asks")
            if form.wrong:
                return self._fix(form, cancel)
            self._say(f"[input] The MCP server “{server}” asks: {message}\n")
            raw = (self._line("  Answer it? [y]es [d]ecline [c]ancel: ", cancel) or "c").strip()
            if raw[:1].lower() != "y":
                return Reply("decline" if raw[:1].lower() == "d" else "cancel")
            return self._answer(form.fields, {}, cancel)

    def _fix(self, form: Form, cancel: threading.Event) -> Reply:
        """The form asked again: what was wrong is said, and only those fields are asked."""
        self._say(f"[input] The answer to “{_one(form.server)}” does not fit its form yet:\n")
        for _, said in form.wrong:
            self._say(f"  {_one(said)}\n")
        wrong = {name for name, _ in form.wrong}
        fields = tuple(f for f in form.fields if f.name in wrong)
        return self._answer(fields, dict(form.given or {}), cancel)

    def _answer(
        self, fields: tuple[FormField, ...], values: dict[str, Any], cancel: threading.Event
    ) -> Reply:
        for field in fields:
            value = self._field(field, cancel)
            if value is _CANCELLED:
                return Reply("cancel")
            values[field.name] = value
        return Reply("accept", {k: v for k, v in values.items() if v is not None})

    def _field(self, field: FormField, cancel: threading.Event) -> Any:
        """A field's value: Enter takes its default, if it has one."""
        if field.description:
            self._say(f"  {_body(field.description)}\n")
        prompt = f"  {_one(field.label)}{' *' if field.required else ''} {_asks(field)}: "
        for _ in range(TRIES):
            line = self._line(prompt, cancel, secret=field.secret)
            if line is None:
                return _CANCELLED
            value = parse(field, line)
            if value is None and field.default is not None:
                return list(field.default) if field.kind == "choices" else field.default
            wrong = problem(field, value)
            if not wrong:
                return value
            self._say(f"  {_one(wrong)}\n")
        self._say("  The form is cancelled.\n")
        return _CANCELLED

    def visit(self, ask: UrlAsk, cancel: threading.Event) -> Reply:
        with self._turn:
            said = f"[input] The MCP server “{_one(ask.server)}” asks you to open a page"
            shown = f"{said}: {_body(ask.message)}\n  {inert(ask.url)}\n"
            self._say(f"{shown}  Site: {ask.link.site}\n")
            if self.yes:
                self._say("  Declined: a --yes run never asks.\n")
                return Reply("decline", why="a --yes run never asks")
            raw = self._line("  Open it in your browser? [y]es [d]ecline [c]ancel: ", cancel) or "c"
            choice = raw.strip()[:1].lower()
            if choice == "y":
                self.open_url(ask.url)  # the very string shown above
                return Reply("accept")
            return Reply("decline" if choice == "d" else "cancel")


_CANCELLED = object()


def _asks(field: FormField) -> str:
    """What a field takes, its default in brackets: `(text) [Ada]`, `[Y/n]`, `(one of: red,
    [green], blue)` — a choice's default marked among the choices."""
    default = field.default
    if field.kind == "boolean":
        return "(yes or no)" if default is None else ("[Y/n]" if default else "[y/N]")
    if field.kind in ("choice", "choices"):
        marked = default if isinstance(default, list) else [default]
        labels = [f"[{_one(lb)}]" if v in marked else _one(lb) for v, lb in field.options]
        return f"({'one' if field.kind == 'choice' else 'any'} of: {', '.join(labels)})"
    asks = f"({_one(field.hint())})"
    if default is None:
        return asks
    return f"{asks} [{'default hidden' if field.secret else _one(str(default))}]"


def _one(text: str) -> str:
    """A server's short text (a name, a label) as one inert line."""
    return inert(text, SHOWN_CHARS)


def _body(text: str) -> str:
    """A server's long text (a prompt, a message) inert, its lines kept and indented."""
    return inert(text, SHOWN_CHARS, lines=True).replace("\n", "\n    │ ")


__all__ = ["TerminalAsks"]
