"""Anthropic's Messages API: `routes` (attached to the app, its errors in Anthropic's shape),
`wire` (its request), `convert` (the request as the app's own `Asked`, straight from its
blocks) and `blocks` (the answer folded into content blocks and their events)."""
