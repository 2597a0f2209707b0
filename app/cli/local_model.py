"""A local model for a headless command (`chat`, `serve`): the arguments that choose and load
it, and the loading itself.

Guarantees: `--model default` is the model the user chose (`models default`), else the bundled
one, assembled on first use with its progress shown; the template, sampling and load settings
given are checked before they are remembered for the model; loading shows its progress as a
bar on a terminal and, on a pipe or a file, as exactly one line when it starts (`Loading
NAME…`) and one when it ends (`app/cli/progress.py`) — that line says what was loaded, from
which file, in how long, on what, with how many threads, and its context extension if any; a
failed load clears its bar and leaves the one sentence saying why to the caller. `--rope-scale
N` (a number of at least 1; anything else is refused by the parser, exit status 2) loads the
model with YaRN RoPE scaling by N from its trained context, for this run only; without `--ctx`
the context is then the trained one times N, bounded by the fit check as the trained one is
(said on stderr).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from pydantic import ValidationError

from app.cli.progress import Progress
from app.domain.declared import setting
from app.domain.terminal import raw_terminal
from app.engine.cores import default_threads
from app.engine.local.client import WorkerClient
from app.engine.local.serving import Loaded, load_chosen
from app.errors import HarmonyDeskError, InvalidInputError, validation_problems
from app.library.projectors import projector_for
from app.settings import load_settings
from app.templates.choices import ChoiceStore, ModelChoice
from app.templates.files import TemplateFileError
from app.templates.registry import (
    TemplateError,
    get_template,
    register_file,
)


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The model options `serve` and `chat` share, in this order: which model and template,
    its context and resources, how it loads (remembered for the model), its sampling."""
    _add_model_and_template(parser)
    _add_context_and_resources(parser)
    _add_load_settings(parser)
    _add_sampling(parser)


def _add_model_and_template(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        default="default",
        help="a GGUF file, or 'default' (`models default`, else the bundled model)",
    )
    parser.add_argument("--template", help="a chat template name (default: from the model)")
    parser.add_argument(
        "--chat-template",
        metavar="FILE",
        type=Path,
        help="a template file (LMDeploy's JSON shape, or YAML) to use: see `templates check`",
    )


def _add_context_and_resources(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ctx", type=int, default=None, help="context length in tokens")
    parser.add_argument(
        "--rope-scale",
        type=rope_scale,
        default=1.0,
        metavar="N",
        help="extend the model's trained context N times by YaRN RoPE scaling (1, the default:"
        " off); without --ctx the context is then the trained one times N, where it fits",
    )
    parser.add_argument("--threads", type=int, default=None, help=f"default {default_threads()}")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument(
        "--cache-ram",
        type=int,
        default=2048,
        metavar="MIB",
        help="the prompt cache's RAM in MiB (states of prompts and conversations; the disk cache"
        " takes what it lets go, under the cap in Settings); 0 keeps none in RAM",
    )


def _add_load_settings(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gpu-layers",
        help="layers on the GPU: auto (all, where llama.cpp can offload), all, 0, or a number;"
        " remembered for the model",
    )
    parser.add_argument(
        "--flash-attn",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="flash attention (remembered for the model)",
    )
    kv_types = setting(ModelChoice, "kv_type").choices
    parser.add_argument("--kv-type", choices=kv_types, help="the KV cache's type")
    parser.add_argument(
        "--speculative",
        choices=setting(ModelChoice, "speculative").choices,
        help="speculative decoding: lookup (drafts from the conversation, the default), draft"
        " (a draft model, --draft-model) or off; remembered for the model",
    )
    parser.add_argument(
        "--draft-model", metavar="GGUF", help="a smaller model with the same vocabulary"
    )
    parser.add_argument(
        "--projector",
        metavar="GGUF",
        help="the model's multimodal projector (an mmproj file), so that it sees images; 'none'"
        " for text only; default: the one in the model's folder; remembered for the model",
    )


def _add_sampling(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--temperature", type=float, help="remembered for this model")
    parser.add_argument("--top-p", type=float, help="remembered for this model")
    parser.add_argument("--top-k", type=int, help="remembered for this model")
    parser.add_argument("--repeat-penalty", type=float, help="remembered for this model")


def rope_scale(text: str) -> float:
    """`--rope-scale`: a finite number of at least 1, else the parser's error (exit status 2)."""
    try:
        scale = float(text)
    except ValueError:
        scale = float("nan")
    if not math.isfinite(scale) or scale < 1.0:
        raise argparse.ArgumentTypeError(
            f"{text} is not a scale: give a number of at least 1 (1 keeps the model's trained"
            " context; 4 makes it four times as long, by YaRN)"
        )
    return scale


def status(text: str) -> None:
    """The app's own status line (its carriage returns pass; the label is the app's text)."""
    terminal = raw_terminal(sys.stderr)
    terminal.write(text)
    terminal.flush()


def _model_path(name: str) -> str:
    if name != "default":
        return name
    from app.library.bundled import default_model_path
    from app.library.folders import startup_model

    chosen = startup_model(load_settings())  # `harmony-desk models default PATH`
    if chosen is not None:
        return chosen

    preparing = Progress("Preparing the default model", quiet=True)  # a bar on a terminal only
    try:
        path = default_model_path(preparing)
    finally:
        preparing.abandon()  # its bar makes way for the load's
    return str(path)


def _choice(args: argparse.Namespace) -> ModelChoice:
    """The choices given on the command line, checked before they are remembered."""
    if getattr(args, "chat_template", None) is not None:
        try:
            args.template = register_file(args.chat_template)
        except (TemplateFileError, TemplateError) as exc:
            raise InvalidInputError(exc.message) from exc
    if args.template:
        get_template(args.template)  # an unknown name fails here, and is not remembered
    try:
        layers = args.gpu_layers
        from_file = getattr(args, "chat_template", None) is not None  # used, not remembered
        return ModelChoice(
            template=None if from_file else args.template,
            temperature=args.temperature,
            top_p=args.top_p,
            top_k=args.top_k,
            repetition_penalty=args.repeat_penalty,
            gpu_layers=int(layers) if layers and layers.isdigit() else layers,
            flash_attn=args.flash_attn,
            kv_type=args.kv_type,
            speculative=getattr(args, "speculative", None)
            or ("draft" if getattr(args, "draft_model", None) else None),
            draft_model=str(Path(args.draft_model).resolve()) if args.draft_model else None,
            projector=_projector_arg(getattr(args, "projector", None)),
        )
    except ValidationError as exc:
        raise InvalidInputError(f"invalid model setting ({validation_problems(exc)})") from exc


def _projector_arg(given: str | None) -> str | None:
    """`--projector`: None (not given), "" (none) or the file's absolute path (checked)."""
    if given is None:
        return None
    if given.lower() == "none":
        return ""
    path = Path(given).expanduser()
    if not path.is_file():
        raise InvalidInputError(f"the projector {given} is not a file")
    return str(path.resolve())


def _default_context(path: str, args: argparse.Namespace, projector: Path | None) -> int:
    """The context a load without `--ctx` gets: 4,096 for a chat on the model's own RoPE; for
    `serve` (which has `--parallel`: agents send prompts of 6k-25k tokens) or with
    `--rope-scale N`, the model's trained context (times N), halved until a cache for each
    answer at once fits the free memory — said on stderr."""
    parallel, scale = getattr(args, "parallel", None), getattr(args, "rope_scale", 1.0)
    if parallel is None and scale <= 1.0:
        return 4096
    from app.engine.local.memory import context_that_fits, with_projector
    from app.gguf.info import read_model

    try:
        model = read_model(path)
    except HarmonyDeskError:
        return 4096  # the load says what is wrong with the file
    trained = model.context_length
    wanted = int(trained * scale)
    n_ctx, estimate = context_that_fits(
        with_projector(model, projector), wanted, sequences=parallel or 1
    )
    why = _context_why(n_ctx, trained, wanted, scale)
    each = f" for each of {parallel} answers at once" if parallel else ""
    print(
        f"Context: {n_ctx:,} tokens{each} ({why}; {estimate.short()}). --ctx N chooses another.",
        file=sys.stderr,
    )
    return n_ctx


def _context_why(n_ctx: int, trained: int, wanted: int, scale: float) -> str:
    """Why the default context is `n_ctx` (`wanted`: the trained context times `scale`)."""
    if not trained:
        return "the model's file names no context"
    yarn = f", YaRN x{scale:g}" if scale > 1.0 else ""
    if n_ctx == wanted:
        return f"trained {trained:,}{yarn}" if yarn else "the model's trained context"
    extended = f"; {wanted:,} with YaRN x{scale:g}" if yarn else ""
    return f"the model is trained for {trained:,}{extended}; {n_ctx:,} is what fits the free memory"


def load_model(client: WorkerClient, args: argparse.Namespace) -> Loaded:
    """Load the model `args` choose into `client` (see the module guarantees)."""
    path = _model_path(args.model)
    choice = ChoiceStore().remember(path, _choice(args))
    if getattr(args, "chat_template", None) is not None:  # this run's template, from its file
        choice = choice.model_copy(update={"template": args.template})
    progress = Progress(f"Loading {Path(path).name}")
    progress.start()
    projector = projector_for(path, choice.projector)
    try:
        loaded = load_chosen(
            client,
            path,
            choice,
            n_ctx=args.ctx or _default_context(path, args, projector),
            threads=args.threads,
            sequences=getattr(args, "parallel", None) or 1,
            cache_ram=getattr(args, "cache_ram", 2048),
            projector=projector,
            seed=args.seed,
            on_progress=progress,
            rope_scale=getattr(args, "rope_scale", 1.0),
        )
    except BaseException:
        progress.abandon()
        raise
    info = loaded.info
    where = info.placement.words() if info.placement else "CPU"
    sees = f", with its projector {Path(info.projector).name}" if info.projector else ""
    rope = info.placement.rope_words() if info.placement else ""
    extended = f", {rope}" if rope else ""
    progress.end(
        f"Loaded {info.architecture} model {Path(path).name}{sees} in {progress.elapsed:.1f} s"
        f" ({info.n_ctx} context{extended}, template {loaded.template.name}, on {where},"
        f" {info.n_threads} threads)."
    )
    return loaded


__all__ = ["add_model_arguments", "load_model", "rope_scale", "status"]
