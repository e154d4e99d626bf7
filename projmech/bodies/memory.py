"""Whether an allocation fits in this machine's memory, asked before it is made.

A projection onto ``K_Q`` over a universe of ``2 x 10^12`` elements, or ``10^12`` synthetic rows,
would otherwise end in numpy's ``MemoryError`` (or, for a size the system grants lazily, in
swapping and the out-of-memory killer) after the solver has already run for a while. Each model
of what a step holds lives beside the step (:func:`~projmech.bodies.hull.projection_memory` for
the hull, :meth:`~projmech.bodies.body.Relaxation.memory` for the relaxation,
:func:`~projmech.synthetic.rounding.synthetic_data` for its rows); this module says whether that
many bytes fit (:func:`memory_shortfall`), so that the library and the command line refuse by
one rule, before any work.
"""

from __future__ import annotations

import math
import os

__all__ = ["MEMORY_FRACTION", "available_memory", "memory_limit", "memory_shortfall", "format_bytes"]

#: The share of the available memory (:func:`available_memory`) one step may plan to hold: the
#: rest is left to the arrays the caller already holds (the workload, the data, the noisy
#: answers) and to the other processes whose memory the figure counts as free.
MEMORY_FRACTION = 0.8


def available_memory() -> int | None:
    """Bytes this process could allocate now without swapping, or None where unknown.

    psutil's ``virtual_memory().available`` (free memory and the caches the system can reclaim)
    where psutil is installed; otherwise the machine's physical memory (``os.sysconf``), which
    bounds what is available from above, so that only what can never fit is refused; None
    without either (then nothing is refused).
    """
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
    """The bytes one step may hold: :data:`MEMORY_FRACTION` of :func:`available_memory` (None
    where that is unknown)."""
    available = available_memory()
    return None if available is None else MEMORY_FRACTION * available


def memory_shortfall(needed: float) -> str | None:
    """Why ``needed`` bytes do not fit (a phrase such as ``"about 90 TiB, more than the 17 GiB
    of memory available here"``, to follow a description of what holds them), or None if they
    fit or the memory is unknown."""
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
