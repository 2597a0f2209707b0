"""The Tool calls view: one chat's tool calls from the audit, in a window of its own."""
