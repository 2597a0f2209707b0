"""Documents in the conversation: text from the user's files, chunked with where each piece
came from, indexed for search (SQLite FTS5 with BM25, and embeddings made on this machine)."""
