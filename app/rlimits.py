"""Limits a helper process sets on itself before it reads anything untrusted (the chat
template sandbox, the image decoder).

Guarantees: `limit_memory(mb)` caps the process's address space at what it holds now plus `mb`
MiB (its data segment at `mb` MiB where /proc does not say, as on macOS); `limit_cpu(margin)`
caps its CPU time at what it has used plus `margin` seconds; neither raises a limit the system
set lower (a hard limit stays); on Windows, which has no rlimits, both do nothing and the app's
wall deadline alone holds. Stdlib only: a helper imports it before anything heavy.
"""

from __future__ import annotations

import os
import sys


def _limit(kind: int, soft: int) -> None:
    import resource

    _, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(kind, (soft, hard))


def address_space() -> int:
    """This process's address space now (bytes; 0 where /proc does not say)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def limit_memory(memory_mb: int) -> None:
    """See the module guarantees."""
    if sys.platform == "win32":
        return
    import resource

    base = address_space()
    if base:
        _limit(resource.RLIMIT_AS, base + memory_mb * 2**20)
    else:  # no /proc (macOS): the data segment is what RLIMIT_DATA bounds there
        _limit(resource.RLIMIT_DATA, memory_mb * 2**20)


def limit_cpu(margin_s: int) -> None:
    """See the module guarantees."""
    if sys.platform == "win32":
        return
    import resource

    used = resource.getrusage(resource.RUSAGE_SELF)
    _limit(resource.RLIMIT_CPU, int(used.ru_utime + used.ru_stime) + margin_s)


__all__ = ["address_space", "limit_cpu", "limit_memory"]
