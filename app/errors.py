"""The one error tree of Harmony Desk, and the error codes.

Expected failures (malformed model output, a bad input line, a tool that timed out, a prompt
the worker refused) are values that carry an `ErrorCode`; exceptions are for conditions the
caller cannot continue past (a missing or altered vocabulary file, a conversation that cannot be
rendered). Every exception raised on purpose by the app derives from `HarmonyDeskError` and
carries a stable `code`; foreign errors are translated at the boundary, `raise … from exc`.

Every error speaks twice: `message` is one sentence a person who is not a developer can read
(no reprs, byte strings, exception class names, tracebacks or `PATH` dumps), and the optional
`details` holds the technical facts behind it (the bytes a file starts with, a server's stderr,
llama.cpp's own words, a full path) for a Details disclosure, a log or a bug report.

    HarmonyDeskError                    code         where it is raised
    ├── InvalidInputError               INPUT-INVALID  a conversation, message or token list
    │   ├── MissingKey                                 secrets: no key in the keyring
    │   ├── ImageError                                 an image file (images/decode)
    │   └── RequestError                               a GenerationRequest's knob (`field`)
    │       └── ContextError                CONTEXT    a raw prompt the context cannot hold
    ├── VisionError                     INPUT-INVALID  an image the projector cannot take
    │                                                  (inside the worker; sent as `Refused`)
    ├── TranscriptError                 (per error)    a transcript, with line and column
    ├── RenderError                     RENDER       a conversation the renderer cannot write
    ├── SchemaError                     INPUT-INVALID  a schema JSON mode refuses (constrain)
    ├── ResourceError                   RESOURCE     a bundled resource missing or altered
    │   └── VocabularyError                          the o200k vocabulary file
    ├── ModelLoadError (LoadProblem)    RESOURCE     a model file that cannot be loaded
    ├── WorkerError                     STREAM-TRUNCATED  the worker died or did not answer
    ├── IllegalTransition               INPUT-INVALID  a bug: a state table's illegal move
    │                                                  (engine/protocol; also a RuntimeError)
    ├── DownloadError (DownloadProblem) DOWNLOAD     a model download that stopped
    ├── TemplateError, TemplateFileError, JinjaTemplateError     templates
    ├── TemplateRefused, TooBig                      inside the template renderer's process
    ├── CallSyntaxError                 CALL-SCHEMA  call markup no tool call can come of
    │                                                (templates/calls; a notice, never run)
    ├── NotACall                        CALL-SCHEMA  held text a format reads as answer text
    │                                                (templates/calls; a signal, never shown)
    ├── ToolError                       TOOL-ERROR   a tool's own failure (tools/api)
    ├── DuplicateToolError, UnknownToolError, McpError, SignInError, SandboxFolderError,
    │   SandboxUnavailableError                      the tool host
    │   RuntimeCompileError                          the python tool's runtime compiled ahead
    │   (SignInError └── WiderSignIn: a server's step-up to a wider scope, tools/mcp)
    ├── RemoteError                     (per error)  a remote endpoint (engine/remote/retry)
    ├── Unknown                         INPUT-INVALID  JSON mode's closer cannot read a pattern
    │   └── TooLarge                                   …or would build past its budget
    ├── StoreError                      RESOURCE     the conversation store
    ├── OutputError                     RESOURCE     a file the app writes (fileio)
    ├── LibraryError                    INPUT-INVALID  the model library's folders
    ├── VisibilityError                 PERM-VISIBILITY  OpenChatML's visibility policy
    ├── ApiError                        (per status) the local server's 4xx answers
    │   └── ContextTooLong, Busy         a prompt past the context (with its counts); embeddings
    │                                    busy (429)
    ├── Warned                                       a self-test check that passed with a remark
    ├── UnknownSettingError, UndeclaredSettingError  bugs: a setting's name or declaration
    │                                                (domain/declared)
    └── EndpointError, ServeError                    the window's remote and server hosts

The worker's refusals of one request travel as codes, not exceptions (`Refused` on the pipe,
then `TurnFailed.code`): E-CONTEXT (the prompt does not fit), E-GRAMMAR (a constraint the
vocabulary cannot follow), E-NO-MODEL, and E-WORKER for a worker that died mid-answer.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any


class ErrorCode(StrEnum):
    """Error codes: the OpenChatML 2.2 taxonomy first, then the app's own input codes."""

    PARSE_HEADER = "E-PARSE-HEADER"
    PARSE_CHANNEL_MISSING = "E-PARSE-CHANNEL-MISSING"
    BODY_CONSTRAINT_VIOLATION = "E-BODY-CONSTRAINT-VIOLATION"
    CALL_SCHEMA = "E-CALL-SCHEMA"
    TOOL_TIMEOUT = "E-TOOL-TIMEOUT"
    TOOL_CANCELLED = "E-TOOL-CANCELLED"
    STREAM_TRUNCATED = "E-STREAM-TRUNCATED"
    PERM_VISIBILITY = "E-PERM-VISIBILITY"
    # Not in OpenChatML: problems with what a caller handed to the app.
    INPUT_JSON = "E-INPUT-JSON"
    INPUT_INVALID = "E-INPUT-INVALID"
    RENDER = "E-RENDER"
    RESOURCE = "E-RESOURCE"
    TOOL_ERROR = "E-TOOL-ERROR"
    TOOL_DENIED = "E-TOOL-DENIED"
    TOOLS_UNAVAILABLE = "E-TOOLS-UNAVAILABLE"  # tools chosen for a model with no call format
    OFFLINE = "E-OFFLINE"
    NETWORK = "E-NETWORK"
    DOWNLOAD = "E-DOWNLOAD"
    # The model worker's refusals of a request (the worker stays ready).
    CONTEXT = "E-CONTEXT"  # the prompt does not fit in the context window
    GRAMMAR = "E-GRAMMAR"  # a constraint this model's vocabulary cannot follow
    NO_MODEL = "E-NO-MODEL"  # no model is loaded in the worker
    WORKER = "E-WORKER"  # the worker process died or stopped answering
    INTERNAL = "E-INTERNAL"  # a bug caught at a thread's edge (said, never a crash)


class HarmonyDeskError(Exception):
    """Base of every error the app raises on purpose."""

    code: ErrorCode = ErrorCode.INPUT_INVALID
    details: str = ""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.details = details  # the technical facts behind `message` ("" when none)


class ResourceError(HarmonyDeskError):
    """A bundled resource is missing or is not the file the app was built with."""

    code = ErrorCode.RESOURCE


class VocabularyError(ResourceError):
    """The o200k vocabulary file is missing, unreadable or altered."""

    def __init__(self, path: Path, expected_sha256: str, problem: str) -> None:
        super().__init__(
            f"The tokenizer vocabulary {path} {problem}; expected a file with "
            f"sha256 {expected_sha256}. Reinstall Harmony Desk to restore it."
        )
        self.path = path
        self.expected_sha256 = expected_sha256


class InvalidInputError(HarmonyDeskError):
    """Input that does not describe a valid conversation, message or token list."""

    code = ErrorCode.INPUT_INVALID


def validation_problems(exc: Exception) -> str:
    """A pydantic `ValidationError` in one line: `field: what is wrong; ...`."""
    errors: list[dict[str, Any]] = getattr(exc, "errors", list)()
    return "; ".join(f"{e['loc'][0] if e['loc'] else 'value'}: {e['msg']}" for e in errors)


class RequestError(InvalidInputError):
    """A generation request asks for something it cannot: which knob (`field`), and why."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


class ContextError(RequestError):
    """A prompt the model's context cannot hold, before anything was generated."""

    code = ErrorCode.CONTEXT


class SchemaError(HarmonyDeskError):
    """A schema JSON mode cannot take: which keyword or place, and why."""

    code = ErrorCode.INPUT_INVALID


class RenderError(HarmonyDeskError):
    """A conversation that is valid data but cannot be rendered to Harmony tokens."""

    code = ErrorCode.RENDER


class TranscriptError(HarmonyDeskError):
    """A transcript that cannot be read, with where: line, column (1-based) and byte offset."""

    def __init__(
        self, code: ErrorCode, message: str, line: int = 0, column: int = 0, offset: int = 0
    ) -> None:
        where = f"{line}:{column}: " if line else ""
        super().__init__(f"{where}{message}")
        self.code = code
        self.detail = message
        self.line = line
        self.column = column
        self.offset = offset


class LoadProblem(StrEnum):
    """Why a model could not be loaded."""

    MISSING_FILE = "missing_file"
    NOT_GGUF = "not_gguf"
    TRUNCATED = "truncated"
    UNSUPPORTED_ARCHITECTURE = "unsupported_architecture"
    NOT_ENOUGH_MEMORY = "not_enough_memory"
    INCOMPATIBLE_VOCABULARY = "incompatible_vocabulary"
    LOAD_FAILED = "load_failed"
    CANCELLED = "cancelled"


class ModelLoadError(HarmonyDeskError):
    """A model file that cannot be loaded; `problem` says why, the message says it in words
    (naming the file, not its folder), `details` start with the full path."""

    code = ErrorCode.RESOURCE

    def __init__(self, problem: LoadProblem, path: object, reason: str, details: str = "") -> None:
        name = Path(str(path)).name or str(path)
        facts = f"File: {path}" + (f"\n{details}" if details else "")
        super().__init__(f"Cannot load the model “{name}”: {reason}.", facts)
        self.problem = problem
        self.path = path
        self.reason = reason


class DownloadProblem(StrEnum):
    """Why a model download stopped."""

    NOT_FOUND = "not_found"  # HTTP 404 / 410
    RANGE = "range"  # HTTP 416 on a resume that cannot be used
    REDIRECTS = "redirects"  # a redirect loop, or too many
    TLS = "tls"
    NETWORK = "network"  # refused, reset, timed out, cut short, HTTP 5xx / 429: retried
    HTTP = "http"  # any other refusal
    NO_SPACE = "no_space"  # checked before starting
    DISK_FULL = "disk_full"  # while writing
    WRITE = "write"
    CHECKSUM = "checksum"
    CHANGED = "changed"  # the server's size is not the catalogue's
    NOT_GGUF = "not_gguf"
    EXISTS = "exists"
    PAUSED = "paused"
    CANCELLED = "cancelled"


class DownloadError(HarmonyDeskError):
    """A download that stopped; `problem` says why, the message says it in words."""

    code = ErrorCode.DOWNLOAD

    def __init__(self, problem: DownloadProblem, what: object, reason: str) -> None:
        super().__init__(f"Download of {what} stopped: {reason}.")
        self.problem = problem
        self.reason = reason


class WorkerError(HarmonyDeskError):
    """The model worker process failed (it died, or answered out of turn)."""

    code = ErrorCode.STREAM_TRUNCATED
