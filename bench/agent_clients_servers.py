"""The two servers `bench/agent_clients.py` runs each client against, on the same GGUF.

Guarantees: both get the same model file, context (`CONTEXTS`: 32,768 tokens for `smollm2-32k`,
for the clients whose prompts need it; 8,192 for SmolLM2-135M as trained; 32,768 for Gemma 3
270M, kept for comparison), the same RoPE (`YARN`: `smollm2-32k` is the bundled SmolLM2
extended by YaRN x4 from its trained 8,192 tokens, ours `--rope-scale 4`, llama-server
`--rope-scaling yarn --rope-scale 4 --yarn-orig-ctx 8192`), the same attention (`FLASH`, the models
run with flash attention on both: none, as ours' default; ours reads a prompt in 63-row chunks
under flash attention on the CPU, to keep its restores exact, so it would not be the same
workload), one slot, `--threads`, the same sampling where a request names none (`_sampling`: ours'
defaults for the model, given to llama-server), and the same
cap on an answer (`MAX_TOKENS`): ours `--max-tokens`, llama-server `-n`, which is only a
default there (a request's `max_tokens` wins over it), so the clients that ask for a number
of their own are set to ask for this one (`agent_clients_kit.cap_answers`). Ours is
`python -m app serve` with temporary config, data and cache folders (a run never reuses what
an earlier one kept on disk, nor touches the user's), and picks its chat template from the
model itself. The agents run on `smollm2-32k`, not on Gemma 3 270M: the registry's only 32k
model is a base model that never ends its turns, so no agent's turn could be judged on it;
SmolLM2 extended by YaRN x4 reads their 9,000-23,000-token prompts and ends its turns, but for
Claude Code's (see `bench/agent_clients.py`), which runs on Qwen2.5-Coder-1.5B-Instruct from
PyPI (`qwen2.5-coder-1.5b`, `bench/registry_models.py`; `--model` runs every client on it): its
trained 32,768 tokens, its own template on both (it declares tools and calls them in the Hermes
shape).
llama-server runs with `--jinja`: on the GGUF's own template for SmolLM2; Gemma 3 270M base's
GGUF has none, and llama.cpp's built-in `gemma` template refuses `tools`, so it is given
`GEMMA_TOOLS`, Gemma's turns with tools declared and called as ours does for Gemma
(`app/templates/calls/gemma.py`: the declaration after the system text, leading the first user
turn; calls in ```` ```tool_call ```` blocks, results in ```` ```tool_output ```` blocks in a
user turn), so both read about the same prompt. For `smollm2-32k` llama-server is given Qwen
2.5's official template (`HERMES_TOOLS`): SmolLM2's own template writes no tools, so on it the
agents' 10,000-15,000 tokens of tool declarations never reached llama-server's prompt (a first
run measured ours reading 40,860 prompt tokens in Claude Code's first turn against its 7,413),
while ours declares them in the Hermes shape Qwen's templates use, with the same ChatML turns.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from app.gguf.info import read_model
from app.library.bundled import default_model_path, gemma_model_path
from app.templates.registry import default_template_name, get_template
from bench.agent_clients_proxy import Exchange
from bench.llama_server import Server, llama_server, ours
from bench.registry_models import CODER, coder_model_path

MODELS: dict[str, Callable[[], Path]] = {
    "smollm2": default_model_path,
    "smollm2-32k": default_model_path,
    "gemma": gemma_model_path,
    CODER: coder_model_path,  # `--model`: an instruct model that follows an agent's prompt
}
CONTEXTS = {"smollm2": 8192, "smollm2-32k": 32768, "gemma": 32768, CODER: 32768}
# A turn's wall-clock limit by model, where `--turn-timeout` gives none: on two threads here
# SmolLM2 reads about 50-100 prompt tokens/s, Qwen2.5-Coder-1.5B about 20, and Claude Code's
# first turn is a 19,000-token prompt read once per request.
TURN_SECONDS = {"smollm2": 600.0, "smollm2-32k": 600.0, "gemma": 600.0, CODER: 2400.0}
HERMES_TOOLS = {"smollm2-32k"}  # llama-server declares tools as ours does (`QWEN25`)
QWEN25 = (
    Path(__file__).resolve().parent.parent
    / "tests/fixtures/llama_templates/Qwen-Qwen2.5-7B-Instruct.jinja"
)
FLASH: frozenset[str] = frozenset()  # models run with flash attention on both (see above)
YARN = {"smollm2-32k": (4, 8192)}  # a model's YaRN scale and the trained context it extends
MAX_TOKENS = 128
SERVERS = ("ours", "llama-server")

GEMMA_TOOLS = r"""{{- bos_token -}}
{%- set ns = namespace(lead="", results="") -%}
{%- for message in messages -%}
{%- if message.role == "system" or message.role == "developer" -%}
{%- if message.content is string -%}{%- set ns.lead = ns.lead + message.content + "\n\n" -%}
{%- else -%}{%- for part in message.content -%}{%- if part.type == "text" -%}
{%- set ns.lead = ns.lead + part.text + "\n\n" -%}{%- endif -%}{%- endfor -%}{%- endif -%}
{%- endif -%}
{%- endfor -%}
{%- if tools -%}
{%- set ns.lead = ns.lead + "You can use these tools (each a JSON schema):\n" -%}
{%- for tool in tools -%}
{%- set ns.lead = ns.lead + ((tool.function if tool.function is defined else tool) | tojson) + "\n" -%}
{%- endfor -%}
{%- set ns.lead = ns.lead + "\nTo call a tool, reply with only this block, nothing after it:\n```tool_call\n{\"name\": \"<tool name>\", \"arguments\": {<argument name>: <value>, ...}}\n```\nFor several calls, write one block after another. Each result comes back to you in a ```tool_output block; then answer the user. If no tool helps, answer directly.\n\n" -%}
{%- endif -%}
{%- for message in messages -%}
{%- if message.role == "tool" -%}
{%- set ns.results = ns.results + "```tool_output\n" + (message.content if message.content is string else (message.content | map(attribute="text") | join(""))) + "\n```\n" -%}
{%- if loop.last or messages[loop.index0 + 1].role != "tool" -%}
{{- "<start_of_turn>user\n" + ns.results + "<end_of_turn>\n" -}}{%- set ns.results = "" -%}
{%- endif -%}
{%- elif message.role == "user" -%}
{{- "<start_of_turn>user\n" + ns.lead -}}{%- set ns.lead = "" -%}
{%- if message.content is string -%}{{- message.content -}}
{%- else -%}{%- for part in message.content -%}{%- if part.type == "text" -%}{{- part.text -}}{%- endif -%}{%- endfor -%}{%- endif -%}
{{- "<end_of_turn>\n" -}}
{%- elif message.role == "assistant" -%}
{{- "<start_of_turn>model\n" -}}
{%- if message.content is string -%}{{- message.content -}}
{%- elif message.content -%}{%- for part in message.content -%}{%- if part.type == "text" -%}{{- part.text -}}{%- endif -%}{%- endfor -%}{%- endif -%}
{%- if message.tool_calls -%}{%- for call in message.tool_calls -%}
{{- "```tool_call\n{\"name\": " + (call.function.name | tojson) + ", \"arguments\": " + (call.function.arguments if call.function.arguments is string else (call.function.arguments | tojson)) + "}\n```\n" -}}
{%- endfor -%}{%- endif -%}
{{- "<end_of_turn>\n" -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- "<start_of_turn>model\n" -}}{%- endif -%}
"""  # noqa: E501


def model_path(model: str) -> Path:
    return Path(MODELS[model]())


def starter(
    name: str, model: str, threads: int, folder: Path, answers: int = 0
) -> Callable[[], Server]:
    """A function that makes server `name` (one of `SERVERS`) for `model`; `folder` is a
    temporary folder of the run's (ours keeps its data and cache under it, llama-server's
    template file is written there); `answers`: the cap on an answer (0: `MAX_TOKENS`)."""
    cap_tokens = str(answers or MAX_TOKENS)
    path, ctx = model_path(model), CONTEXTS[model]
    if name == "ours":
        cap = ("--max-tokens", cap_tokens, *_ours_rope(model))
        cache, data = str(folder / "cache"), str(folder / "data")
        keep = {"HARMONY_DESK_CACHE": cache, "HARMONY_DESK_DATA": data}
        fa = model in FLASH
        made = ours(path, threads=threads, parallel=1, ctx=ctx, extra=cap, flash_attn=fa)
        return lambda: replace(made, env=keep)
    template: tuple[str, ...] = ()
    if model == "gemma":
        file = folder / "gemma-tools.jinja"
        file.write_text(GEMMA_TOOLS)
        template = ("--chat-template-file", str(file))
    elif model in HERMES_TOOLS:  # SmolLM2's own template drops the tools the agents declare
        template = ("--chat-template-file", str(QWEN25))
    spec = ("--jinja", *template, "-n", cap_tokens, *_llama_server_rope(model), *_sampling(path))
    fa = model in FLASH
    return lambda: llama_server(path, threads=threads, slots=1, ctx=ctx, spec=spec, flash_attn=fa)


def _ours_rope(model: str) -> tuple[str, ...]:
    """`serve`'s arguments for `model`'s RoPE (none: the model's own)."""
    if model not in YARN:
        return ()
    return ("--rope-scale", str(YARN[model][0]))


def _llama_server_rope(model: str) -> tuple[str, ...]:
    """llama-server's flags for `model`'s RoPE, the same scaling as `_ours_rope`."""
    if model not in YARN:
        return ()
    scale, trained = YARN[model]
    return ("--rope-scaling", "yarn", "--rope-scale", str(scale), "--yarn-orig-ctx", str(trained))


def _sampling(path: Path) -> tuple[str, ...]:
    """llama-server's flags for the sampling ours gives a request that names none: the defaults
    of the template ours picks for the file (SmolLM2: temperature 0.2, top-p 0.9, top-k 40,
    repetition penalty 1.1), where llama-server's own are temperature 0.8, top-p 0.95, min-p
    0.05 and no penalty. Claude Code names none, and one model sampled two ways is not one
    workload: on Claude Code's first prompt SmolLM2 ended its answer on llama-server's and ran
    to the cap on ours'."""
    metadata = read_model(path).metadata
    template = get_template(default_template_name(metadata)).for_model(metadata)
    s = template.defaults.sampling()
    return (
        *("--temp", str(s.temperature), "--top-p", str(s.top_p), "--top-k", str(s.top_k)),
        *("--min-p", str(s.min_p), "--repeat-penalty", str(s.repeat_penalty)),
    )


LOGGED = re.compile(r" (POST) (/\S*) (\d{3}) \d+ ms; prompt (\d+) \(evaluated (\d+)")


def fill_from_log(folder: Path, exchanges: list[Exchange]) -> None:
    """Ours' own figures for the requests whose answers carried none (a chat stream asked
    without `stream_options.include_usage`): its request log (under the data folder
    `starter` gave it) has one line per request as it ends, with the prompt tokens and those
    evaluated; the lines are paired in order with the POSTs answered 200 in the order their
    answers ended, and only where the paths agree all along."""
    log = folder / "data" / "logs" / "harmony-desk.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    lines = [m.groups() for m in LOGGED.finditer(text) if m.group(3) == "200"]
    posts = sorted(
        (x for x in exchanges if x.method == "POST" and x.status == 200 and x.finished),
        key=lambda x: x.finished,
    )
    answered = [x for x in posts if x.api in ("messages", "responses", "chat")]
    if [x.path for x in answered] != [line[1] for line in lines]:
        return
    for x, line in zip(answered, lines, strict=True):
        x.logged = int(line[3]), int(line[4])


__all__ = [
    "CONTEXTS",
    "GEMMA_TOOLS",
    "MAX_TOKENS",
    "MODELS",
    "SERVERS",
    "YARN",
    "fill_from_log",
    "model_path",
    "starter",
]
