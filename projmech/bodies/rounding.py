"""Synthetic binary rows from a moment matrix of the relaxation L, by Gaussian rounding.

A point of L is a moment matrix, not a distribution, so it has no witness to sample from. In the
±1 form ``s = 2x - 1`` its second moments are ``M = [[1, m^T], [m, C]]`` (``diag(C) = 1``).
Hyperplane rounding draws ``g ~ N(0, I)`` and sets ``s_i = sign(<u_i, g>) sign(<u_0, g>)``
for unit vectors ``u``; by Grothendieck's identity ``E[s_i s_j] = (2/pi) arcsin <u_i, u_j>``.
Choosing the Gram matrix of the ``u`` as ``sin(pi M / 2)`` (entrywise; Krivine's transform)
therefore reproduces every first and second moment of M exactly in expectation, whenever that
matrix is positive semidefinite. When it is not, it is replaced by the nearest correlation-like
matrix (eigenvalues clipped at 0, diagonal rescaled to 1), the moments are reproduced only
approximately, and :func:`gaussian_rounding` reports by how much (the rows' own marginals are
what they are: compare them with the projected answers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..data import Dataset
from ..domain import Domain
from ..validation import check_positive_int
from .relaxation import MomentEncoding, RelaxationResult

__all__ = ["SyntheticData", "gaussian_rounding", "rounding_covariance", "synthetic_data"]


def _check_binary_moments(moments: Any) -> np.ndarray:
    Y = np.asarray(moments, dtype=float)
    if Y.ndim != 2 or Y.shape[0] != Y.shape[1] or Y.shape[0] < 2:
        raise ValueError(f"moments: expected a square (d+1) x (d+1) moment matrix with d >= 1, got shape {Y.shape}")
    if not np.all(np.isfinite(Y)):
        raise ValueError("moments: contains NaN or infinite entries")
    if abs(Y[0, 0] - 1.0) > 1e-6:
        raise ValueError(f"moments: Y[0, 0] must be 1 (the total mass), got {Y[0, 0]}")
    return (Y + Y.T) / 2


def rounding_covariance(moments: Any) -> tuple[np.ndarray, float]:
    """The Gram matrix of the rounding vectors and how far it had to be repaired.

    Returns ``(S, repair)``: ``S`` is ``sin(pi M / 2)`` made PSD with unit diagonal, ``M`` the ±1
    form of the binary moment matrix ``moments`` (``[[1, mu^T], [mu, P]]``, as from
    :func:`~projmech.bodies.relaxation.project_to_relaxation` with the binary encoding), and
    ``repair`` the largest entry change (0 when the transform was already PSD).
    """
    Y = _check_binary_moments(moments)
    mu = np.clip(np.diag(Y)[1:], 0.0, 1.0)
    d = mu.size
    # +-1 moments: E[s_i] = 2 mu_i - 1, E[s_i s_j] = 1 - 2 mu_i - 2 mu_j + 4 P_ij.
    M = np.empty((d + 1, d + 1))
    M[0, 0] = 1.0
    M[0, 1:] = M[1:, 0] = 2 * mu - 1
    P = Y[1:, 1:]
    M[1:, 1:] = 1 - 2 * mu[:, None] - 2 * mu[None, :] + 4 * P
    np.fill_diagonal(M, 1.0)
    target = np.sin(np.pi / 2 * np.clip(M, -1.0, 1.0))
    eigenvalues, eigenvectors = np.linalg.eigh(target)
    # A singular transform (e.g. one attribute the complement of another) has eigenvalues of
    # +-1e-16 from rounding alone; only a negative one beyond that needs (and reports) a repair.
    if eigenvalues.min() >= -1e-12 * max(1.0, float(np.abs(eigenvalues).max())):
        return target, 0.0
    repaired = (eigenvectors * np.clip(eigenvalues, 0.0, None)) @ eigenvectors.T
    scale = np.sqrt(np.clip(np.diag(repaired), np.finfo(float).tiny, None))
    repaired = repaired / scale[:, None] / scale[None, :]
    return repaired, float(np.abs(repaired - target).max())


def gaussian_rounding(moments: Any, n: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """``n`` synthetic rows over ``{0, 1}^d`` whose moments match ``moments`` in expectation.

    Parameters
    ----------
    moments : array_like, shape (d+1, d+1)
        A binary moment matrix ``[[1, mu^T], [mu, P]]`` (e.g. ``RelaxationResult.moments``).
    n : int
        Rows to draw.
    rng : numpy.random.Generator

    Returns
    -------
    rows : ndarray of int64, shape (n, d)
    repair : float
        See :func:`rounding_covariance`; 0 means the rows reproduce the moments exactly in
        expectation, otherwise only approximately.
    """
    n = check_positive_int("n", n)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a numpy.random.Generator, got {type(rng).__name__}")
    covariance, repair = rounding_covariance(moments)
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    factor = eigenvectors * np.sqrt(np.clip(eigenvalues, 0.0, None))[None, :]
    projections = rng.standard_normal((n, factor.shape[1])) @ factor.T  # rows: <u_i, g>
    signs = np.sign(projections[:, 1:]) * np.sign(projections[:, :1])
    signs[signs == 0] = 1  # a probability-zero tie
    return ((signs + 1) // 2).astype(np.int64), repair


@dataclass(frozen=True)
class SyntheticData:
    """Synthetic rows drawn from a point of L, and how far their marginals are from it.

    Attributes
    ----------
    data : Dataset
        The rows, over the projection's domain.
    repair : float
        See :func:`rounding_covariance` (0: the moments are reproduced exactly in expectation).
    marginal_rmse, marginal_max_error : float
        RMSE and largest absolute difference between the rows' own 2-way marginals and the
        projected answers they were drawn from: sampling error (about ``1/sqrt(n)``) plus the
        bias of any repair.
    """

    data: Dataset
    repair: float
    marginal_rmse: float
    marginal_max_error: float


def synthetic_data(domain: Domain, result: RelaxationResult, n: int, rng: np.random.Generator) -> SyntheticData:
    """Draw ``n`` synthetic rows from a projection onto L by :func:`gaussian_rounding` and report
    how far the sample's 2-way marginals are from the projected answers.

    Post-processing of a private release: the rows carry the release's guarantee. Binary
    domains only (the rounding of one-hot moments is not implemented).

    Raises
    ------
    ValueError
        For a non-binary domain, or moments that do not match the domain.
    """
    if not isinstance(domain, Domain):
        raise TypeError(f"domain: expected a Domain, got {type(domain).__name__}")
    if not isinstance(result, RelaxationResult):
        raise TypeError(f"result: expected a RelaxationResult, got {type(result).__name__}")
    if any(size != 2 for size in domain.sizes):
        raise ValueError("domain: Gaussian rounding draws binary rows; every attribute must have 2 values")
    encoding = MomentEncoding.of(domain, "binary")
    if result.moments.shape != (encoding.size, encoding.size) or result.answers.shape != (encoding.num_queries,):
        raise ValueError(
            f"result: its moments {result.moments.shape} do not match the binary encoding of the domain "
            f"({encoding.size} x {encoding.size})"
        )
    rows, repair = gaussian_rounding(result.moments, n, rng)
    x = rows.astype(float)
    mean = x.mean(axis=0)
    sample = np.block([[np.ones((1, 1)), mean[None, :]], [mean[:, None], x.T @ x / x.shape[0]]])
    difference = encoding.answers(sample) - result.answers
    return SyntheticData(
        data=Dataset(rows, domain),
        repair=repair,
        marginal_rmse=float(np.sqrt(np.mean(difference ** 2))),
        marginal_max_error=float(np.abs(difference).max()),
    )
