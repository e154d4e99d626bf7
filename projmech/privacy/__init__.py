"""Privacy: guarantees, neighbouring relations, the public size, calibration, and the noise drawn.

Public modules: ``guarantees`` (the definitions, relations and calibration, :doc:`/theory/privacy`)
and ``noise`` (the distributions and their samplers); their ``__all__`` is exported here.
"""

from __future__ import annotations

from ._guarantees import (
                         DEFAULT_SIZE_SHARE,
                         ESTIMATE_SIZE,
                         LARGE_DELTA,
                         ZCDP,
                         ApproxDP,
                         LargeDeltaWarning,
                         Neighbouring,
                         Privacy,
                         PureDP,
                         SizePolicy,
                         compose,
                         gaussian_delta,
                         gaussian_sigma,
                         laplace_scale,
                         scale_budget,
                         zcdp_delta,
                         zcdp_for_approx_dp,
)
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
