"""Opening a request to a remote endpoint: retries, waits and failures that say what to do.

Guarantees: 401/403 say which key to fix and how; 404 lists the models the server offers; 429
waits per Retry-After (or backs off) and says so as a `ParseIssue` (E-NETWORK); 5xx,
connection errors and timeouts are retried with backoff, then fail; a wait ends at once when
the turn is cancelled; an error's text never carries the key.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Generator
from typing import Any

from app.domain.endpoint import Endpoint
from app.domain.events import ParseIssue, Severity
from app.domain.redact import redact
from app.errors import ErrorCode, HarmonyDeskError


class RemoteError(HarmonyDeskError):
    """A request the endpoint refused, with what to do about it."""

    def __init__(
        self, message: str, code: ErrorCode = ErrorCode.NETWORK, known: tuple[str | None, ...] = ()
    ) -> None:
        message = redact(message, known)  # a server's text may carry a key or a token
        super().__init__(message)
        self.message, self.code = message, code


class Opener:
    """Opens the streamed requests of one endpoint (its SDK client, its key for redaction)."""

    def __init__(
        self,
        endpoint: Endpoint,
        client: Any,
        key: str | None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.endpoint, self.client, self._key, self._sleep = endpoint, client, key, sleep

    def __call__(
        self, body: dict[str, Any], cancel: threading.Event
    ) -> Generator[ParseIssue, None, Any]:
        """The stream of chunks, after retrying what may be retried (None: cancelled)."""
        import openai

        e = self.endpoint
        for attempt in range(e.retries + 1):
            last = attempt == e.retries
            try:
                return self.client.chat.completions.create(**body)
            except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
                where = (
                    f"the key '{e.key_name}' (set it with `harmony-desk keys set {e.key_name}`)"
                    if e.key_name
                    else f"a key: this endpoint has none (`harmony-desk endpoints add {e.name}"
                    " ... --key-name NAME`, then `harmony-desk keys set NAME`)"
                )
                raise RemoteError(
                    f"{e.name} refused the request ({exc.status_code}): check {where}"
                ) from None
            except openai.NotFoundError:
                raise RemoteError(
                    f"{e.name} has no model '{e.model}'; it offers: {self._offered()}"
                ) from None
            except openai.RateLimitError as exc:
                if last:
                    raise RemoteError(
                        f"{e.name} is still rate limiting after {attempt} waits"
                    ) from None
                wait = _retry_after(exc.response) or _backoff(attempt)
                yield ParseIssue(
                    ErrorCode.NETWORK,
                    f"{e.name} is rate limiting (429); waiting {wait:.0f} s before trying again",
                    Severity.WARNING,
                )
            except (openai.InternalServerError, openai.APIConnectionError) as exc:
                # a timeout is a connection error to the SDK
                if last:
                    raise RemoteError(
                        f"{e.name} failed {attempt + 1} times ({_describe(exc)}); try again later"
                    ) from None
                wait = _backoff(attempt)
                yield ParseIssue(
                    ErrorCode.NETWORK,
                    f"{e.name}: {_describe(exc)}; trying again in {wait:.0f} s",
                    Severity.WARNING,
                )
            except openai.APIStatusError as exc:
                raise RemoteError(
                    f"{e.name} refused the request ({exc.status_code}): {_detail(exc)}",
                    known=(self._key,),
                ) from None
            if _wait(wait, cancel, self._sleep):
                return None
        raise AssertionError("unreachable")

    def _offered(self) -> str:
        try:
            names = sorted(m.id for m in self.client.models.list())
        except Exception:  # listing is a courtesy
            return "(the list of models could not be read)"
        return ", ".join(names) or "(no models)"


def _retry_after(response: Any) -> float | None:
    header = getattr(response, "headers", {}).get("retry-after") if response is not None else None
    try:
        return min(60.0, max(0.0, float(header))) if header is not None else None
    except ValueError:
        return None


def _backoff(attempt: int) -> float:
    return float(min(30, 2**attempt))


def _wait(seconds: float, cancel: threading.Event, sleep: Callable[[float], None]) -> bool:
    """Sleep `seconds` in small steps; True when cancelled meanwhile."""
    slept = 0.0
    while slept < seconds:
        if cancel.is_set():
            return True
        step = min(0.1, seconds - slept)
        sleep(step)
        slept += step
    return cancel.is_set()


def _describe(exc: Exception) -> str:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "no answer within the time limit"
    if isinstance(exc, openai.APIStatusError):
        return f"server error {exc.status_code}"
    return "cannot connect"


def _detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        message = body.get("message") or (body.get("error") or {}).get("message")
        if message:
            return str(message)[:300]
    return json.dumps(body)[:300] if body is not None else str(exc)[:300]


__all__ = ["Opener", "RemoteError"]
