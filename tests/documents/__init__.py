"""Documents a conversation attaches and the library they come from (`app/documents`)."""
