"""What the debug pane's Analysis page says when the shown answer has no analysis.

Guarantees: an answer with analysis is never given a note; an answer still streaming gets none
(its analysis may come); an answer by the loaded model whose template writes no reasoning
(neither Harmony's analysis channel nor `<think>` text) says "This model writes no analysis",
so an empty page is never left unexplained; any other answer without analysis says that this
answer has none. Decided from the template's declared traits, never from the text.
"""

from __future__ import annotations

from app.controllers.chat import ChatController
from app.domain.history import Reply
from app.domain.model_names import same_model

NO_ANALYSIS_WRITTEN = (
    "This model writes no analysis: it is not a reasoning model, so it answers without a"
    " thinking part to show here."
)
NONE_THIS_TIME = "This answer has no analysis."


def loaded_reasons(controller: ChatController) -> bool | None:
    """Whether the loaded model writes analysis (None: no model is loaded)."""
    template = controller.host.template
    if template is None:
        return None
    return template.name == "harmony" or template.thinks or template.opens_think


def analysis_note(reply: Reply, loaded: str, reasons: bool | None) -> str:
    """The Analysis page's note for `reply` (the loaded model is `loaded`, which writes
    analysis when `reasons`), or "" when it needs none."""
    if reply.debug.analysis.strip() or reply.state == "streaming":
        return ""
    by_loaded = not reply.model or same_model(reply.model, loaded)
    if by_loaded and reasons is False:
        return NO_ANALYSIS_WRITTEN
    return NONE_THIS_TIME


__all__ = ["NONE_THIS_TIME", "NO_ANALYSIS_WRITTEN", "analysis_note", "loaded_reasons"]
