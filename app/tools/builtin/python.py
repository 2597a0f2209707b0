"""Harmony's built-in `python` tool: the model's code runs in the conversation's sandbox.

Guarantees: the tool is addressed as `python`, declared in the system message with the text
gpt-oss was trained on, called on the analysis channel with the code as the whole body, and
marked as running code; state lives between calls of one conversation (one `PythonSandbox`
per tool instance); the model reads the printed output as plain text, and every failure
(an exception, a refused socket or file, a limit) as an error envelope with the reason. The
description states the limits (time and memory) that a call runs under, as the sandbox sets them.
"""

from __future__ import annotations

from dataclasses import replace

from app.tools.api import Risk, Tool, ToolError, tool
from app.tools.sandbox import PythonSandbox, SandboxLimits


def python_tool(sandbox: PythonSandbox) -> Tool:
    """The `python` tool bound to one conversation's sandbox."""
    limits = sandbox.limits  # the sandbox enforces its own clocks; the runner's is a backstop
    backstop_ms = int((limits.wall_seconds + limits.start_seconds) * 1000) + 15_000

    @tool(
        name="python",
        namespace="python",
        risk=Risk.RUNS_CODE,
        deadline_ms=backstop_ms,
        body="code",
        text_reply=True,
    )
    def run(code: str) -> str:
        """Runs Python code in the conversation's sandbox and returns what it printed."""
        result = sandbox.run(code)
        if not result.ok:
            message = result.error or "the code failed"
            if result.output:
                message = f"{result.output.rstrip()}\n{message}"
            raise ToolError(message, result.code or "E-TOOL-ERROR")
        return result.output or "(no output)"

    return replace(run, description=f"{run.description}\n\n{_limits_said(limits)}")


def _limits_said(limits: SandboxLimits) -> str:
    """The sandbox, and the bounds each call runs under, in the model's words."""
    return (
        "The sandbox is CPython in WebAssembly: no network, no other processes; numpy, pandas"
        " and matplotlib are there; files go in /mnt/data. Each call may take at most"
        f" {limits.wall_seconds:g} s and {limits.memory_bytes // 2**20} MiB of memory; past"
        " that it is stopped and its variables are gone."
    )


__all__ = ["python_tool"]
