"""The Harmony format of gpt-oss: encoding, renderer, streaming parser, tool namespaces."""
