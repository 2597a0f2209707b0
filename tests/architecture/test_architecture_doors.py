"""One request, one driver: the rules that keep every door (the window, the terminal chat, each
HTTP API) on `run_turn` with its knobs in one `GenerationRequest`. Each rule is a function over
source text, tested on a planted violation and then on the app itself: nothing outside the
engine assigns a session's attribute; nothing in the server imports the engine's local side;
the terminal chat loads no Qt."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"

# A session is what these make: a `ChatSession(...)`/`RemoteSession(...)`, or any `.session(...)`
# call (the model host's, the served model's, the remote host's) or `_session(...)` helper.
SESSION_MAKERS = ("session", "Session", "_session")


def _makes_a_session(value: ast.expr) -> bool:
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name.endswith(SESSION_MAKERS)


def _session_names(function: ast.AST) -> set[str]:
    """The names that hold a session in `function`: parameters annotated with a session type,
    names bound to a made session, and any name ending in `session`."""
    names: set[str] = set()
    if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
        for arg in [*function.args.args, *function.args.kwonlyargs]:
            if arg.annotation is not None and "Session" in ast.unparse(arg.annotation):
                names.add(arg.arg)
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and _makes_a_session(node.value):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Name) and node.id.endswith("session"):
            names.add(node.id)
    return names


def session_assignments(source: str) -> list[str]:
    """`name.attribute = …` (and `+=`) where `name` holds a session, as `line: text`."""
    tree = ast.parse(source)
    found: list[str] = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module):
            continue
        held = _session_names(function)
        for node in ast.walk(function):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
            for target in targets:
                for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in held:
                        found.append(f"{node.lineno}: {ast.unparse(node)}")
    return sorted(set(found))


def test_the_session_rule_finds_a_planted_assignment() -> None:
    planted = (
        "def turn(host, spec):\n"
        "    local = host.session(max_tokens=8)\n"
        "    local.overflow = spec.overflow\n"
        "def door(session: ChatSession) -> None:\n"
        "    session.conversation_id, x = 'c', 1\n"
        "def fine(self, window):\n"
        "    self.max_tokens = 5\n"
        "    window.title = 'x'\n"
    )
    assert session_assignments(planted) == [
        "3: local.overflow = spec.overflow",
        "5: session.conversation_id, x = ('c', 1)",
    ]


def test_nothing_outside_the_engine_assigns_a_session_attribute() -> None:
    """A turn's knobs travel in its `GenerationRequest`; only the engine keeps a session's state."""
    found = {
        str(path.relative_to(APP)): hits
        for path in APP.rglob("*.py")
        if (APP / "engine") not in path.parents and (hits := session_assignments(path.read_text()))
    }
    assert found == {}


def engine_local_imports(source: str) -> list[str]:
    """Every import of `app.engine.local` in `source`: at top level, inside a function, or
    type-only."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("app.engine.local")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("app.engine.local"):
            found.append(node.module)
        elif isinstance(node, ast.ImportFrom) and node.module == "app.engine":
            found += [f"app.engine.{a.name}" for a in node.names if a.name == "local"]
    return found


def test_the_server_rule_finds_a_planted_import() -> None:
    planted = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from app.engine.local.session import ChatSession\n"
    assert engine_local_imports(planted) == ["app.engine.local.session"]
    assert engine_local_imports("def f():\n    from app.engine import local\n") == ["app.engine.local"]
    assert engine_local_imports("from app.engine.session import ModelSession\n") == []


def test_nothing_in_the_server_imports_the_engines_local_side() -> None:
    """The server asks `run_turn` and the `ModelSession` protocol; it never reaches the model."""
    found = {
        str(path.relative_to(APP)): hits
        for path in (APP / "server").rglob("*.py")
        if (hits := engine_local_imports(path.read_text()))
    }
    assert found == {}


def import_closure(start: str, imports_of: dict[str, set[str]]) -> set[str]:
    """Every module `start` loads through top-level imports (`imports_of`: module → modules)."""
    seen, todo = set(), [start]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += sorted(imports_of.get(module, ()))
    return seen


def _top_level_imports(path: Path) -> set[str]:
    """The modules `path` imports when it is imported: top level, not type-only, not deferred."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def _static_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in APP.rglob("*.py"):
        parts = path.relative_to(APP.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found = _top_level_imports(path)
        # a package's __init__ runs before any of its modules
        parents = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
        graph[module] = {n for n in found if n.startswith("app.") or n.split(".")[0] == "PySide6"} | parents
    return graph


def test_the_closure_finds_qt_planted_two_imports_away() -> None:
    planted = {"app.cli.chat": {"app.a"}, "app.a": {"app.b"}, "app.b": {"PySide6.QtCore"}}
    assert "PySide6.QtCore" in import_closure("app.cli.chat", planted)
    assert "PySide6.QtCore" not in import_closure("app.a", {"app.a": {"app.c"}})


def test_the_terminal_chat_loads_no_qt() -> None:
    """Statically (every top-level import, transitively) and for real (a fresh interpreter)."""
    closure = import_closure("app.cli.chat", _static_graph())
    assert not {m for m in closure if m.startswith("PySide6")}, sorted(closure)
    check = "import sys, app.cli.chat; print(sorted(m for m in sys.modules if m.startswith('PySide6')))"
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True, cwd=APP.parent)
    assert out.stdout.strip() == "[]"
