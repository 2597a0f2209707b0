"""The turn: `run_turn` (the only turn driver), the sans-I/O tool loop and the tool turn."""
