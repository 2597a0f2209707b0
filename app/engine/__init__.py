"""Model backends behind one seam: the local llama.cpp worker process, and what feeds it."""
