"""OpenAI's Responses API: `routes` (attached to the app), `wire` (its request), `convert` (the
request as the app's own `Asked`, straight from its input items) and `output` (the response
object and its events)."""
