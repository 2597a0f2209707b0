"""JSON mode and grammars, pure: schema plans, widenings and refusals, the grammar pieces,
closings within a token budget, retries, and the triggers of lazy grammars. Imports only the
domain and the error tree: no engine, no template, no model."""
