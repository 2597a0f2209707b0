"""The one reply builder, as a package: a turn's events folded into a `Reply` and the changes
a frontend paints or prints.

Every frontend shows what this builds — the window paints its changes, the terminal prints
them, the server hands them out, the history stores the `Reply`, an import feeds it the stored
messages — so two frontends cannot show different things for the same output.

- `builder`: `ReplyBuilder`, the one exhaustive match over the event union, and the answer,
  preamble and analysis lanes;
- `cards`: `ToolCards`, a reply's tool cards (approval state, outcomes, stored tool replies);
- `debug`: `DebugLog`, what only the debug pane reads (timings, prompt, scores, remote lines);
- `changes`: the `Change` values `apply` returns.
"""

from app.domain.reply.builder import ReplyBuilder
from app.domain.reply.cards import CallResult
from app.domain.reply.changes import Added, Appended, Change, Thought, Updated

__all__ = ["Added", "Appended", "CallResult", "Change", "ReplyBuilder", "Thought", "Updated"]
