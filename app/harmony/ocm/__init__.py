"""OpenChatML 2.2 transcripts: the model, reader, writer, JSON projection and Harmony interop."""
