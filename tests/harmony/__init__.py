"""The Harmony format (`app/harmony`): encoding, parser, renderer, OpenChatML."""
