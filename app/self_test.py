"""`harmony-desk --self-test`: does this installation work, offline? One line per check.

Guarantees: every check runs even when an earlier one failed; each line says ✓ or ✗ (or ! for a
warning that does not fail the run), what was checked, how long it took and, when it failed, why;
the exit status is 0 only if no check failed. Nothing goes over the network; the user's data is
not changed (the folder check writes and removes one temporary file; the window check keeps its
conversations in memory). A missing keyring is a warning: the app then keeps keys for the session
only, and says so.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from app.errors import HarmonyDeskError


@dataclass(frozen=True)
class Outcome:
    name: str
    ok: bool
    detail: str
    seconds: float
    warning: bool = False


class Warned(HarmonyDeskError):
    """A check that found something worth saying but not worth failing for."""


def _vocabulary() -> str:
    from app.harmony.encoding import VOCAB_SHA256, load_encoding

    e = load_encoding()
    return f"o200k_harmony, {e.n_vocab} tokens, sha256 {VOCAB_SHA256[:12]}… verified"


def _harmony() -> str:
    from app.domain.messages import Conversation, Message, Role
    from app.harmony.encoding import load_encoding
    from app.harmony.parser import StreamParser
    from app.harmony.renderer import Renderer

    e = load_encoding()
    prompt = Renderer(e).render(Conversation(messages=(Message.of(Role.USER, "Hello?"),)))
    reply = e.encode_with_specials(
        "<|channel|>analysis<|message|>Greet.<|end|><|start|>assistant<|channel|>final"
        "<|message|>Hello!<|return|>"
    )
    parser = StreamParser(e)
    for token in reply:
        list(parser.feed(token))
    list(parser.finish(""))
    got = [(m.channel, m.text) for m in parser.messages]
    if got != [("analysis", "Greet."), ("final", "Hello!")]:
        raise AssertionError(f"the sample reply parsed as {got}")
    return f"rendered a {len(prompt)}-token prompt, parsed analysis + final back"


def _model() -> str:
    from app.domain.events import GenerationDone, TokenStep, TurnFailed
    from app.domain.sampling import Sampling
    from app.engine.local.client import WorkerClient
    from app.library.bundled import default_model_path

    path = default_model_path()  # read from the bundled package data, checked on first run
    with WorkerClient() as client:
        info = client.load(str(path), n_ctx=256, n_threads=1)
        prompt = client.tokenize("<|im_start|>user\nHello!<|im_end|>\n", True)
        steps, done = 0, None
        for event in client.generate(
            prompt, stop_ids=(), sampling=Sampling(temperature=0.0), max_tokens=4
        ):
            if isinstance(event, TokenStep):
                steps += 1
            elif isinstance(event, GenerationDone | TurnFailed):
                done = event
    if not isinstance(done, GenerationDone) or steps == 0:
        raise AssertionError(f"the worker generated {steps} tokens ({done})")
    return f"{path.name} ({info.architecture}) loaded in a worker, {steps} tokens generated"


def _window() -> str:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from app.ui.app import application, build_window

    app = application()
    window = build_window()
    window.show()
    for _ in range(10):
        app.processEvents()
    shown = window.isVisible()
    window.close()
    app.processEvents()
    if not shown:
        raise AssertionError("the window did not show")
    return f"opened and closed on the {app.platformName()} platform"


def _keyring() -> str:
    from app.secrets import Secrets

    secrets = Secrets()
    name = type(secrets.backend).__module__ + "." + type(secrets.backend).__name__
    if not secrets.saved:
        raise Warned(f"{name}: {secrets.problem}")
    return f"{name} is usable"


def _library() -> str:
    import send2trash  # noqa: F401 - deleting a model needs the trash backend in the bundle

    from app.library.catalog import load_catalog

    catalog = load_catalog()
    return f"catalogue of {len(catalog.models)} models; downloads need network only when asked"


def _folders() -> str:
    from app.paths import cache_dir, config_dir, data_dir

    checked = []
    for label, folder in (("data", data_dir()), ("config", config_dir()), ("cache", cache_dir())):
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".self-test-") as probe:
            probe.write(b"ok")
            probe.flush()
            os.fsync(probe.fileno())
        checked.append(f"{label} {folder}")
    return "writable: " + ", ".join(checked)


CHECKS: list[tuple[str, Callable[[], str]]] = [
    ("vocabulary", _vocabulary),
    ("harmony format", _harmony),
    ("default model", _model),
    ("window", _window),
    ("keyring", _keyring),
    ("model library", _library),
    ("folders", _folders),
]


def run_checks(checks: list[tuple[str, Callable[[], str]]] | None = None) -> list[Outcome]:
    outcomes = []
    for name, check in checks or CHECKS:
        start = time.perf_counter()
        try:
            outcome = Outcome(name, True, check(), time.perf_counter() - start)
        except Warned as warned:
            outcome = Outcome(name, True, str(warned), time.perf_counter() - start, warning=True)
        except Exception as exc:  # a failed check is reported, and the others still run
            where = traceback.extract_tb(exc.__traceback__)[-1]
            place = f"{os.path.basename(where.filename)}:{where.lineno}"
            detail = f"{type(exc).__name__}: {exc} (at {place})"
            outcome = Outcome(name, False, detail, time.perf_counter() - start)
        outcomes.append(outcome)
    return outcomes


def report(outcomes: list[Outcome], out: TextIO) -> int:
    from app import __version__

    out.write(
        f"Harmony Desk {__version__} self-test ({sys.platform}, Python {sys.version.split()[0]})\n"
    )
    for o in outcomes:
        mark = "!" if o.warning else "✓" if o.ok else "✗"
        out.write(f"{mark} {o.name:<15} {o.seconds:6.2f} s  {o.detail}\n")
    failed = [o.name for o in outcomes if not o.ok]
    out.write("all checks passed\n" if not failed else f"FAILED: {', '.join(failed)}\n")
    return 0 if not failed else 1


def main(out: TextIO = sys.stdout) -> int:
    return report(run_checks(), out)


__all__ = ["CHECKS", "Outcome", "main", "report", "run_checks"]
