"""The engine (`app/engine`): sessions, the llama.cpp worker, KV reuse, remotes, the loop."""
