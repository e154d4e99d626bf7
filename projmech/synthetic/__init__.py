"""Synthetic rows from a table model: rows whose answers approach an estimate's.

- :func:`synthetic_data`: rows from a projection or a fitted distribution (tree sampling,
  junction-tree sampling, local search, rounding to counts), with the rows' error stated;
  :func:`check_rows_fit`: whether the rows fit in memory, asked before anything is spent.
- :func:`gaussian_rounding` and :func:`rounding_covariance`: binary rows from a moment matrix.
"""

from .gaussian import gaussian_rounding, rounding_covariance
from .memory import check_rows_fit
from .result import SyntheticData
from .rounding import synthetic_data

__all__ = ["SyntheticData", "synthetic_data", "check_rows_fit", "gaussian_rounding", "rounding_covariance"]
