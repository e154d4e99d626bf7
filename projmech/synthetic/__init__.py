"""Synthetic rows from a table model: :func:`synthetic_data` (rows from a projection or a fitted
distribution, with their error), :func:`check_rows_fit` (asked before anything is spent), and
:func:`gaussian_rounding` with :func:`rounding_covariance` (binary rows from a moment matrix)."""

from ._gaussian import gaussian_rounding, rounding_covariance
from ._memory import check_rows_fit
from ._result import SyntheticData
from ._rounding import synthetic_data

__all__ = ["SyntheticData", "synthetic_data", "check_rows_fit", "gaussian_rounding", "rounding_covariance"]

# What other folders use beyond the public API above (not part of it).
from ._marginal_rows import pair_tables
