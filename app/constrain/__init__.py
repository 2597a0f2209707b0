"""JSON mode and grammars, pure: schema plans, widenings and refusals, the grammar pieces,
closings within a token budget, retries, the size bounds of a schema, and how a tool's calls
are held (its schema with references written out, or unconstrained with the reason). Imports
only the domain and the error tree: no engine, no template, no model."""
