"""Whether an allocation fits in this machine's memory, asked before it is made, so that the library
and the command line refuse by one rule before any work (not with a ``MemoryError`` later)."""

from __future__ import annotations

import math
import os

__all__ = ["MEMORY_FRACTION", "available_memory", "memory_limit", "memory_shortfall", "format_bytes"]

#: The share of the available memory (:func:`available_memory`) one step may plan to hold: the
#: rest is left to the arrays the caller already holds (the workload, the data, the noisy
#: answers) and to the other processes whose memory the figure counts as free.
MEMORY_FRACTION = 0.8


def available_memory() -> int | None:
    """Bytes this process could allocate now without swapping: psutil's available memory, else
    the physical memory (an upper bound, so only what can never fit is refused), else None."""
    try:
        import psutil  # type: ignore[import-untyped]  # optional: no stubs needed where it is absent
    except ImportError:
        pass
    else:
        return int(psutil.virtual_memory().available)
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows)
        return None


def memory_limit() -> float | None:
    """The bytes one step may hold: :data:`MEMORY_FRACTION` of :func:`available_memory`, or None."""
    available = available_memory()
    return None if available is None else MEMORY_FRACTION * available


def memory_shortfall(needed: float) -> str | None:
    """Why ``needed`` bytes do not fit (``"about 90 TiB, more than the 17 GiB of memory available
    here"``), or None if they fit or the memory is unknown."""
    limit = memory_limit()
    if limit is None or needed <= limit:
        return None
    return (f"about {format_bytes(needed)}, more than the {format_bytes(limit)} of memory available here "
            f"({MEMORY_FRACTION:.0%} of what is free)")


def format_bytes(size: float) -> str:
    """``size`` bytes in binary units to three digits (``"14.7 TiB"``)."""
    if not math.isfinite(size):
        return "more bytes than a float counts"
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            break
        size /= 1024
    return f"{size:.3g} {unit}"
