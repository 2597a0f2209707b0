"""Harmony Desk: a desktop chat application for language models run on your own machine."""

__version__ = "0.1.0"
