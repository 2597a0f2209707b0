"""The built-in tool namespaces gpt-oss was trained with: `browser` and `python`.

Their descriptions are the exact text the model expects in the system message; changing a
character changes the prompt the model sees.
"""

from __future__ import annotations

from app.domain.messages import ToolDescription, ToolNamespaceConfig

_BROWSER_DESCRIPTION = "\n".join(
    [
        "Tool for browsing.",
        "The `cursor` appears in brackets before each browsing display: `[{cursor}]`.",
        "Cite information from the tool using the following format:",
        "`【{cursor}†L{line_start}(-L{line_end})?】`, for example: `【6†L9-L11】` or `【8†L3】`.",
        "Do not quote more than 10 words directly from the tool output.",
        "sources=web (default: web)",
    ]
)

_OPEN_DESCRIPTION = "\n".join(
    [
        "Opens the link `id` from the page indicated by `cursor` starting at line number `loc`,"
        " showing `num_lines` lines.",
        "Valid link ids are displayed with the formatting: `【{id}†.*】`.",
        "If `cursor` is not provided, the most recent page is implied.",
        "If `id` is a string, it is treated as a fully qualified URL associated with `source`.",
        "If `loc` is not provided, the viewport will be positioned at the beginning of the"
        " document or centered on the most relevant passage, if available.",
        "Use this function without `id` to scroll to a new location of an opened page.",
    ]
)

_PYTHON_DESCRIPTION = (
    "Use this tool to execute Python code in your chain of thought. The code will not be shown"
    " to the user. This tool should be used for internal reasoning, but not for code that is"
    " intended to be visible to the user (e.g. when creating plots, tables, or files).\n\n"
    "When you send a message containing Python code to python, it will be executed in a"
    " stateful Jupyter notebook environment. python will respond with the output of the"
    " execution or time out after 120.0 seconds. The drive at '/mnt/data' can be used to save"
    " and persist user files. Internet access for this session is UNKNOWN. Depends on the"
    " cluster."
)


def _number(default: int | None = None) -> dict[str, object]:
    schema: dict[str, object] = {"type": "number"}
    if default is not None:
        schema["default"] = default
    return schema


def browser_namespace() -> ToolNamespaceConfig:
    """The `browser` namespace: search, open, find."""
    search = ToolDescription(
        name="search",
        description="Searches for information related to `query` and displays `topn` results.",
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "topn": _number(10),
                "source": {"type": "string"},
            },
            "required": ["query"],
        },
    )
    open_ = ToolDescription(
        name="open",
        description=_OPEN_DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {
                "id": {"type": ["number", "string"], "default": -1},
                "cursor": _number(-1),
                "loc": _number(-1),
                "num_lines": _number(-1),
                "view_source": {"type": "boolean", "default": False},
                "source": {"type": "string"},
            },
        },
    )
    find = ToolDescription(
        name="find",
        description=(
            "Finds exact matches of `pattern` in the current page, or the page given by `cursor`."
        ),
        parameters={
            "type": "object",
            "properties": {"pattern": {"type": "string"}, "cursor": _number(-1)},
            "required": ["pattern"],
        },
    )
    return ToolNamespaceConfig(
        name="browser", description=_BROWSER_DESCRIPTION, tools=(search, open_, find)
    )


def python_namespace() -> ToolNamespaceConfig:
    """The `python` namespace: a stateful notebook the model sends code to."""
    return ToolNamespaceConfig(name="python", description=_PYTHON_DESCRIPTION, tools=())
