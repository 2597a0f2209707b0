"""The bundle's entry point: `harmony-desk` as installed, plus what a frozen app needs.

`multiprocessing.freeze_support()` lets the model worker (a spawned process) start from the
bundled executable.
"""

from __future__ import annotations

import multiprocessing
import sys

if __name__ == "__main__":
    multiprocessing.freeze_support()
    from app.cli import main

    sys.exit(main())
