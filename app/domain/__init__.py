"""The nouns of Harmony Desk (conversations, messages, events) as immutable values. No Qt."""
