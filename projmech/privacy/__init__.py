"""Privacy: guarantees, neighbouring relations, the public size, calibration, and the noise drawn.

The definitions and their composition, the two neighbouring relations and the calibration of noise
scales are derived on :doc:`/theory/privacy`; the noise distributions and their samplers follow.
"""

from __future__ import annotations

from ._calibration import gaussian_delta, gaussian_sigma, laplace_scale, zcdp_delta, zcdp_for_approx_dp
from ._definitions import LARGE_DELTA, ZCDP, ApproxDP, LargeDeltaWarning, Privacy, PureDP, compose, scale_budget
from ._neighbouring import DEFAULT_SIZE_SHARE, ESTIMATE_SIZE, Neighbouring, SizePolicy
from ._noise import (
    NOISE_KINDS,
    Noise,
    calibrate,
    choose_discrete,
    discrete_gaussian_pmf,
    discrete_laplace_pmf,
    public_size,
)

__all__ = ["ZCDP", "ApproxDP", "PureDP", "Privacy", "LargeDeltaWarning", "LARGE_DELTA", "Neighbouring",
           "gaussian_sigma", "gaussian_delta", "laplace_scale", "zcdp_delta", "zcdp_for_approx_dp", "compose",
           "SizePolicy", "scale_budget", "ESTIMATE_SIZE", "DEFAULT_SIZE_SHARE", "Noise", "NOISE_KINDS", "calibrate",
           "choose_discrete", "discrete_gaussian_pmf", "discrete_laplace_pmf", "public_size"]
