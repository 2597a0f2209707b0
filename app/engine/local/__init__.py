"""The app side of the model worker: process handle, request router, client, local session."""
