"""The model worker process: the only code that imports llama.cpp (see `main.py`)."""
