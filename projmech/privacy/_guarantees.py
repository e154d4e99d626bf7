"""Privacy definitions, neighbouring relations and noise calibration: the public face of ``privacy``.

:class:`ZCDP` :cite:p:`BS16`, :class:`ApproxDP` and :class:`PureDP` :cite:p:`DMNS06` with their
composition, the two neighbouring relations and the public size, and the noise scales
(:doc:`/theory/privacy`).
"""

from __future__ import annotations

from ._calibration import LARGEST_CONVERTED_EPSILON as LARGEST_CONVERTED_EPSILON
from ._calibration import (
    gaussian_delta,
    gaussian_sigma,
    laplace_scale,
    zcdp_delta,
    zcdp_for_approx_dp,
)
from ._definitions import LARGE_DELTA, ZCDP, ApproxDP, LargeDeltaWarning, Privacy, PureDP, compose, scale_budget
from ._neighbouring import DEFAULT_SIZE_SHARE, ESTIMATE_SIZE, Neighbouring, SizePolicy

__all__ = [
    "ZCDP",
    "ApproxDP",
    "PureDP",
    "Privacy",
    "LargeDeltaWarning",
    "LARGE_DELTA",
    "Neighbouring",
    "gaussian_sigma",
    "gaussian_delta",
    "laplace_scale",
    "zcdp_delta",
    "zcdp_for_approx_dp",
    "compose",
    "SizePolicy",
    "scale_budget",
    "ESTIMATE_SIZE",
    "DEFAULT_SIZE_SHARE",
]
