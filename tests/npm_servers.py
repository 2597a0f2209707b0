"""Real MCP servers from npm, as the tests start them.

`make test` installs the packages pinned in `tests/mcp_npm/` into `.venv/npm`
(`npm ci`, never into the project); `command(name)` is the command line that starts one of
them over stdio (`mcp-server-everything`, `mcp-server-basic-vanillajs`), and a test that needs
one is skipped with the reason when Node or the install is missing (run `make test` once).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

NPM_BIN = Path(sys.prefix) / "npm" / "node_modules" / ".bin"


def command(name: str, *args: str) -> list[str]:
    """The command that starts npm server `name` over stdio (skips the test when absent)."""
    path = NPM_BIN / name
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed: the npm MCP servers cannot run")
    if not path.exists():
        pytest.skip(f"{name} is not installed: run `make test` once (it installs tests/mcp_npm)")
    return [str(path), *args]


__all__ = ["NPM_BIN", "command"]
