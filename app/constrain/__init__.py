"""JSON mode and grammars, pure: schema plans, widenings and refusals, the grammar pieces,
closings within a token budget, retries, and the size bounds of a schema. Imports only the
domain and the error tree: no engine, no template, no model."""
