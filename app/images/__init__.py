"""Images in the conversation: decoded with limits, kept by content, turned into pixels."""
