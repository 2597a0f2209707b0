"""The terminal chat on the real bundled SmolLM2 with a real MCP server whose tool returns 5 MB
of text (tests/fixtures/mcp_hygiene_server.py): the turn goes on, the terminal says that the
result was cut and where the whole is kept, and `harmony-desk tools audit` brings it back."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from tests.fixtures.mcp_hygiene_server import DUMP_MB, dump_text
from tests.keys.test_endpoints import cli, secret_service
from tests.tools.mcp.test_mcp_config import _env

__all__ = ["secret_service"]
SERVER = str(Path(__file__).resolve().parents[1] / "fixtures" / "mcp_hygiene_server.py")


def test_the_terminal_says_where_the_whole_of_a_cut_result_is_kept(
    secret_service: dict[str, str], tmp_path: Path
) -> None:
    env = _env(tmp_path, secret_service)
    assert cli(["mcp", "add", "hyg", "--", sys.executable, SERVER], env).returncode == 0
    done = cli(["chat", "--model", "default", "--mcp", "hyg", "--tool-choice", "required", "--yes",
                "--max-tokens", "48", "--temperature", "0", "--prompt", "Dump the server's log."],
               env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    whole = dump_text(DUMP_MB)
    audit = tmp_path / "data" / "tool-audit.jsonl"
    said = re.search(
        rf"\[E-CONTEXT\] The result of functions\.hyg__dump \({len(whole):,} characters\) was"
        rf" past its share of the context .*kept in the tool audit, {re.escape(str(audit))},"
        r" as result ([0-9a-f]{16})",
        done.stderr,
    )
    assert said is not None, done.stderr[-3000:]
    exported = cli(["tools", "audit", "--format", "json"], env)
    assert exported.returncode == 0, exported.stderr
    entries = [e for e in json.loads(exported.stdout) if e.get("result_key") == said.group(1)]
    assert entries and entries[0]["result"] == whole
