"""When the iterative projections check their certificate next."""

from __future__ import annotations

import math

__all__ = ["next_certificate"]


def next_certificate(checks: list[tuple[int, float]], target: float, least: int, most: int) -> int:
    """Iterations to the next certificate: half those the last two gaps' linear fall (in log scale)
    predicts to ``target``, between ``least`` and ``most``; ``least`` until two gaps fall.

    ``checks`` holds (iteration, gap) at each certificate so far. A certificate costs a few
    iterations' work, and a gap checked too late costs the iterations past the target.
    """
    if len(checks) < 2:
        return least
    (first, earlier), (last, later) = checks[-2], checks[-1]
    if not (target < later < earlier) or last <= first:
        return least
    predicted = math.log(later / target) / (math.log(earlier / later) / (last - first))
    return round(min(max(least, predicted / 2), most))
