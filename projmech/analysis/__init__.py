"""Analysis: the workload's geometry (support functions, widths), error bounds and the data
sizes they need, and error measures.

Its modules, the public ones first (their ``__all__`` is exported here):

- ``geometry``: Geometry of the bodies noisy answers are projected onto: support functions and
  Gaussian widths.
- ``bounds``: Error bounds of the Gaussian and projection mechanisms, and the data size each one
  needs.
- ``evaluation``: Error measures and repeated trials with confidence intervals.
- ``experiments``: The error-against-n experiment (every mechanism beside its bound, as in
  :cite:t:`ENU20`), shared by ``projmech demo`` and ``benchmarks/error_vs_n.py``: mechanisms on
  subsamples of a data set, mean RMSE with confidence intervals, a table and a plot.
"""

from __future__ import annotations

from .bounds import (
                       MEASURES,
                       MinimumSize,
                       check_measure,
                       gaussian_mechanism_error,
                       min_n,
                       noise_constant,
                       ntz_projection_error,
                       projection_error,
                       projection_min_n,
)
from .evaluation import TrialSummary, evaluate, gaussian_expected_rmse, max_error, mean_confidence_interval, rmse
from .geometry import (
                       Support,
                       WidthComparison,
                       WidthEstimate,
                       compare_widths,
                       finite_set_width_bound,
                       gaussian_norm_mean,
                       gaussian_width,
                       gaussian_width_bound,
                       gaussian_width_from_mean,
                       gaussian_widths,
                       mean_width,
                       mean_width_from_gaussian,
                       mean_widths,
                       support_function,
)

__all__ = ["Support", "WidthEstimate", "WidthComparison", "support_function", "finite_set_width_bound",
           "gaussian_width_bound", "gaussian_norm_mean", "gaussian_width", "gaussian_widths", "mean_width",
           "mean_widths", "gaussian_width_from_mean", "mean_width_from_gaussian", "compare_widths", "MEASURES",
           "MinimumSize", "check_measure", "noise_constant", "gaussian_mechanism_error", "projection_error",
           "ntz_projection_error", "min_n", "projection_min_n", "rmse", "max_error", "gaussian_expected_rmse",
           "TrialSummary", "evaluate", "mean_confidence_interval"]
