"""What one request asks of the model, as the app's own values, and the rules every API's
conversion shares.

Guarantees: each API (chat completions, Anthropic's Messages, the Responses API) converts its own
wire model straight into one `Asked` — the app's `Conversation` (`transcript`), the one
`GenerationRequest` and the fields given that are not applied — with no other API's body in between
and no second parse; a problem is a 400 raised where the value is read, naming the field as the
client's own API spells it. Each rule below is written once, here: a model whose template has no
tool-call format refuses tools with a 400 naming the model, unless the `tool_choice` is `none` (then
the tools are left out and said to be ignored, and the answer is plain text); a `tool_choice` word
is auto, none or required, and a named choice names a function; a reasoning effort is asked where
the template takes one and said to be ignored otherwise; an answer's budget is what the request
asks, at most the server's limit (a 400 over it), else the limit; the overflow policy is the
request's where it asks one, else summarise on a server started with `--compact`
(`Target.overflow`), else stop; a request has at most 4 stop sequences; a named tool that is not
declared (the `GenerationRequest`'s own check) is a 400 naming `tool_choice`; a request with images
is converted off the server's loop, which goes on serving others while pictures are decoded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

from app.constrain.constraint import ToolChoice
from app.domain.budget import Overflow
from app.domain.messages import Conversation, ReasoningEffort, ToolDescription
from app.engine.request import GenerationRequest
from app.errors import RequestError
from app.kvcache import tenant_of_key
from app.server.errors import ApiError
from app.server.options import ServeOptions
from app.server.pictures import text_only
from app.server.served import ServedModel
from app.templates.base import Template

TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"  # a function's name, in every API
Effort = Literal["low", "medium", "high"]  # a reasoning effort a template may take
MAX_STOPS = 4


@dataclass(frozen=True)
class Asked:
    """What one request asks of the model: the conversation, and how to generate its answer."""

    conversation: Conversation
    generation: GenerationRequest
    ignored: tuple[str, ...] = ()  # fields given that this model does not apply
    notes: tuple[str, ...] = ()  # what is taken otherwise than asked, for the warning header
    # how its API words a refusal, not what is asked (two APIs asking the same are equal):
    prompt_param: str = field(default="messages", compare=False)  # the field holding the prompt
    fits_by: str = field(default="", compare=False)  # what asks to leave older messages out


@dataclass(frozen=True)
class Target:
    """What a request is read for: the served model's template, its name (for errors) and
    whether it sees images (a projector is loaded), and the server's limits."""

    template: Template
    model: str = "this model"
    limit: int = 4096  # the most tokens an answer may ask for
    thinking_budget: int | None = None  # gpt-oss under a constraint, unless a request says
    sees: bool = False
    tenant: str = ""  # whose cached prompts its requests reuse: the server's key's
    compact: bool = False  # `serve --compact`: summarise unless a request asks otherwise

    @classmethod
    def of(cls, served: ServedModel, options: ServeOptions) -> Target:
        return cls(
            served.template,
            served.name,
            options.max_tokens,
            options.thinking_budget,
            served.sees_images,
            tenant_of_key(options.token),
            options.compact,
        )

    def overflow(self, asked: Overflow | None) -> Overflow:
        """The overflow policy of a request: what it asked (None: nothing), else summarise
        on a server started with `--compact`, else stop."""
        if asked is not None:
            return asked
        return Overflow.SUMMARISE if self.compact else Overflow.STOP

    def seeing(self, param: str, what: str) -> None:
        """A 400 naming `param` unless the model sees images (`what`: the client's word)."""
        if not self.sees:
            raise text_only(self.model, param, what)

    def callable(
        self, tools: Sequence[ToolDescription], choice: ToolChoice
    ) -> tuple[tuple[ToolDescription, ...], tuple[str, ...]]:
        """The tools the model is given, and `tools` as ignored when they are left out."""
        if not tools or self.template.tool_calls is not None:
            return tuple(tools), ()
        if choice != "none":
            raise ApiError(
                400,
                f"{self.model} cannot call tools: its chat template ({self.template.name}) has no"
                ' tool-call format (with "tool_choice": "none" the tools are ignored)',
                param="tools",
                code="unsupported_parameter",
            )
        return (), ("tools",)  # none may be called: a plain answer

    def effort(
        self, effort: str | None, field: str = "reasoning_effort"
    ) -> tuple[ReasoningEffort | None, tuple[str, ...]]:
        """The effort to ask for, and `field` as ignored when the template takes none."""
        if effort is None:
            return None, ()
        if self.template.takes_effort:
            return ReasoningEffort(effort), ()
        return None, (field,)

    def max_tokens(self, asked: int | None, param: str = "max_tokens") -> int:
        """The answer's budget: what the request asks, at most the limit (clients mean a
        ceiling: Claude Code, OpenCode and Qwen Code ask 32,000), else the limit."""
        return min(asked, self.limit) if asked else self.limit

    def clamped(self, asked: int | None, param: str = "max_tokens") -> tuple[str, ...]:
        """What the warning header says of a budget over the limit (nothing when within)."""
        if asked is None or asked <= self.limit:
            return ()
        return (f"{param} {asked} is over this server's limit: {self.limit} used",)


def stops_of(stop: str | Sequence[str] | None, param: str) -> tuple[str, ...]:
    """The stop sequences asked for (empty ones left out): at most `MAX_STOPS`."""
    stops = [stop] if isinstance(stop, str) else list(stop or ())
    if len(stops) > MAX_STOPS:
        raise ApiError(400, f"at most {MAX_STOPS} stop sequences", param=param)
    return tuple(s for s in stops if s)


def choice_word(word: str) -> ToolChoice:
    """A `tool_choice` given as a word."""
    if word not in ("auto", "none", "required"):
        raise ApiError(
            400, f"tool_choice {word!r} is not auto, none or required", param="tool_choice"
        )
    return word


def choice_named(name: object) -> ToolChoice:
    """A `tool_choice` that names a function (anything but a name is a 400)."""
    if not isinstance(name, str):
        raise ApiError(400, "tool_choice must name a function", param="tool_choice")
    return name


@contextmanager
def checked() -> Iterator[None]:
    """Around building a `GenerationRequest`: its `RequestError` as a 400 naming the field."""
    try:
        yield
    except RequestError as exc:
        raise ApiError(400, exc.message, param=exc.field) from None


async def off_loop(convert: Callable[[], Asked], images: bool) -> Asked:
    """`convert()`, on a thread when the request has images to decode."""
    return await asyncio.to_thread(convert) if images else convert()


__all__ = [
    "MAX_STOPS",
    "TOOL_NAME",
    "Asked",
    "Effort",
    "Target",
    "checked",
    "choice_named",
    "choice_word",
    "off_loop",
    "stops_of",
]
