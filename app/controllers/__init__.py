"""GUI-side orchestration on the asyncio loop (qasync): conversations, turns, the model."""
