"""Hostile inputs refused: how long until the clear refusal, and the memory it took.

Each class runs in a fresh child process: the child reads its resident size after its imports
(idle, `VmRSS`; the peak is its own `VmHWM`, which a child does not inherit as it does
`ru_maxrss`), builds the hostile input, hands it to the app's own entry point, and reports the time
to the refusal, the peak resident size over idle, and the refusal's words. Goal: every refusal
under 2 s and under 200 MB over the idle process. Checked before printing: each class was
refused (a clear error or notice), not accepted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time
sys.path.insert(0, {root!r})
def status_mb(field):  # VmRSS now, VmHWM the peak (of this process alone: a new mm at exec)
    with open("/proc/self/status") as f:
        line = next(line for line in f if line.startswith(field + ":"))
    return int(line.split()[1]) / 1024
def main():
{setup}
    idle = status_mb('VmRSS')
    start = time.perf_counter()
    try:
{work}
        said = "ACCEPTED"
    except Exception as exc:
        said = type(exc).__name__ + ": " + str(exc)
    took = time.perf_counter() - start
    peak = status_mb('VmHWM')
    print(json.dumps({{"s": took, "mb": max(0.0, peak - idle), "said": said[:160]}}))
if __name__ == "__main__":
    main()
"""

CLASSES: dict[str, tuple[str, str]] = {  # name: (setup, work), each indented by the child
    "JSON mode: minItems 1e9, max_tokens 8": (
        "from app.constrain.constraint import json_body",
        "json_body({'type': 'array', 'minItems': 1e9}, 8)",
    ),
    "JSON mode: minItems 1000x1000x1000": (
        "from app.constrain.constraint import json_body\n"
        "s = {'type': 'array', 'minItems': 1000}\n"
        "for _ in range(2): s = {'type': 'array', 'minItems': 1000, 'items': s}",
        "json_body(s, 8)",
    ),
    "template: 9 ** 999999999": (
        "from app.templates.jinja_render import render\nrender('{{ 1 }}')",
        "render('{{ 9 ** 999999999 }}')",
    ),
    "template: 'a' * 3e9": (
        "from app.templates.jinja_render import render\nrender('{{ 1 }}')",
        "render(\"{{ 'a' * 3000000000 }}\")",
    ),
    "template file: YAML alias bomb": (
        "from pathlib import Path\nfrom app.templates.files import read_spec\n"
        "p = Path({tmp!r}) / 'bomb.yaml'\n"
        "p.write_text('model_name: bomb\\nbase: chatml\\nx: &b ' + 'a' * 2_000_000"
        " + '\\nstop_words: [' + ', '.join(['*b'] * 200_000) + ']\\n')",
        "read_spec(p)",
    ),
    "server body nested 100,000 deep": (
        "from app.server.intake import parsed\nraw = b'[' * 100_000 + b']' * 100_000",
        "parsed(raw)",
    ),
    "PDF: FlateDecode bomb (1 GiB)": (
        "from pathlib import Path\nfrom app.documents.extract import extract\n"
        "from tests.hostile.test_hostile_documents import flate_bomb_pdf\n"
        "p = flate_bomb_pdf(Path({tmp!r}) / 'bomb.pdf')",
        "out = extract(p)\nif not out.notice: raise SystemExit('read whole')\n"
        "raise ValueError(out.notice)",
    ),
    "DOCX: zip bomb (2 GiB)": (
        "from pathlib import Path\nfrom app.documents.extract import extract\n"
        "from tests.hostile.test_hostile_documents import docx_bomb\n"
        "p = docx_bomb(Path({tmp!r}) / 'bomb.docx')",
        "out = extract(p)\nif not out.notice: raise SystemExit('read whole')\n"
        "raise ValueError(out.notice)",
    ),
}


def _indent(code: str) -> str:
    return "\n".join("    " + line for line in code.splitlines())


def run(name: str, setup: str, work: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        code = CHILD.format(
            root=str(ROOT),
            setup=_indent(setup.replace("{tmp!r}", repr(tmp))),
            work=_indent(_indent(work)),
        )
        script = Path(tmp) / "child.py"
        script.write_text(code)
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=ROOT
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise SystemExit(f"{name}: the child printed nothing ({done.stderr[-400:]})")
    found: dict[str, object] = json.loads(lines[-1])
    return found


def main() -> None:
    print(f"{'class':38}{'refused in':>12}{'MB over idle':>14}  refusal")
    for name, (setup, work) in CLASSES.items():
        r = run(name, setup, work)
        said = str(r["said"])
        assert not said.startswith("ACCEPTED"), f"{name} was accepted"
        s, mb = float(str(r["s"])), float(str(r["mb"]))
        mark = "ok" if s < 2 and mb < 200 else "OVER GOAL"
        print(f"{name:38}{s:>10.3f} s{mb:>12.1f}  {mark}  {said[:70]}")


if __name__ == "__main__":
    main()
