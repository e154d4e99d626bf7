"""What :func:`~projmech.synthetic.synthetic_data` returns: the rows and their distance to the
answers they were drawn from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data import Dataset

__all__ = ["SyntheticData"]


@dataclass(frozen=True)
class SyntheticData:
    """The rows :func:`synthetic_data` draws, with how far their answers are from the projected ones.

    Parameters
    ----------
    data : Dataset
        The rows, over the domain of the result they were drawn from.
    repair : float
        See :func:`rounding_covariance`; 0 for rows not drawn by Gaussian rounding.
    marginal_rmse, marginal_max_error : float
        RMSE and largest absolute difference between the rows' answers (2-way marginals for L,
        the projected workload otherwise) and the projected ones.
    method : str
        ``"search"`` or ``"gaussian"`` (rows from L), ``"witness"`` (from K_Q), ``"tables"``
        (from disjoint tables), ``"local"`` (from the local polytope's tables) or ``"joint"``
        (from a fitted distribution).

    Examples
    --------
    >>> import numpy as np, projmech as pm
    >>> domain = pm.Domain(["x", "y"], [3, 2])
    >>> one_way = pm.marginals(domain, way=1)
    >>> rows = pm.synthetic_data(domain, pm.project_to_hull(one_way, one_way.answer(np.full(6, 1 / 6)), solver="fast"),
    ...                          60, np.random.default_rng(0), workload=one_way)
    >>> rows.method, len(rows.data), rows.marginal_max_error <= 1e-12
    ('witness', 60, True)
    """

    data: Dataset
    repair: float
    marginal_rmse: float
    marginal_max_error: float
    method: str = "witness"


def _synthetic(data: Dataset, repair: float, difference: np.ndarray, method: str) -> SyntheticData:
    """The rows with the RMSE and largest entry of ``difference`` (their answers minus the
    projected ones)."""
    return SyntheticData(data=data, repair=repair, marginal_rmse=float(np.sqrt(np.mean(difference ** 2))),
                         marginal_max_error=float(np.abs(difference).max()), method=method)
