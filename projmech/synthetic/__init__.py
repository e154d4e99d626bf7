"""Synthetic rows from a table model: rows whose answers approach an estimate's.

- :func:`synthetic_data`: rows from a projection or estimate (tree sampling, junction-tree
  sampling, local search), with the rounding's error stated; :func:`gaussian_rounding` and
  :func:`rounding_covariance` for a hull's witness distribution.
"""

from .rounding import SyntheticData, gaussian_rounding, rounding_covariance, synthetic_data

__all__ = ["SyntheticData", "synthetic_data", "gaussian_rounding", "rounding_covariance"]
