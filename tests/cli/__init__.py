"""The command line (`app/cli`), run as real subprocesses."""
