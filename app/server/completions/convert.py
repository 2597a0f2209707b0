"""A completions request as what the session is asked: the one prompt, and its generation.

Guarantees: one prompt per request (a list of several is a 400 naming `prompt`); the answer's
budget is the request's, at most the server's limit (`Target.max_tokens`), and its sampling the
request's where given; the prompt is the client's own text, untouched.
"""

from __future__ import annotations

from app.engine.request import GenerationRequest
from app.server.asked import Target
from app.server.completions.wire import CompletionRequest
from app.server.errors import ApiError
from app.server.sampled import sampling_of


def prompt_of(request: CompletionRequest) -> str:
    """The request's one prompt."""
    prompts = [request.prompt] if isinstance(request.prompt, str) else request.prompt
    if len(prompts) != 1:
        raise ApiError(400, "one prompt per request", param="prompt")
    return prompts[0]


def generation_of(request: CompletionRequest, target: Target) -> GenerationRequest:
    """How the prompt is continued."""
    return GenerationRequest(
        max_tokens=target.max_tokens(request.budget),
        sampling=sampling_of(request),
        tenant=target.tenant,
    )


__all__ = ["generation_of", "prompt_of"]
