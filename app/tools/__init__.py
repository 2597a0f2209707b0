"""Tool plugins: the one API plugins import, discovery, the registry and the approval policy."""
