"""Binary rows from a moment matrix (a point of L, which has no witness) by hyperplane rounding
:cite:p:`GW95` with Krivine's transform, repaired where it is not positive semidefinite.
Derivation: :doc:`/theory/relaxation` (section *From L to rows*)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..validation import GENERATOR, check_positive_int

__all__ = ["gaussian_rounding", "rounding_covariance"]


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

    Krivine's transform ``sin(pi M / 2)`` of the ±1 moments ``M`` (``E[s s^T]`` for
    ``s = (1, 2x - 1)``), with negative eigenvalues clipped and the diagonal rescaled to 1 when
    it is not positive semidefinite.

    Parameters
    ----------
    moments : array_like, shape (d+1, d+1)
        A binary moment matrix ``[[1, mu^T], [mu, P]]`` (e.g. ``RelaxationResult.moments``).

    Returns
    -------
    covariance : ndarray, shape (d+1, d+1)
        The Gram matrix of the rounding vectors: positive semidefinite, unit diagonal.
    repair : float
        The largest entry change the repair made; 0 when none was needed (the rows' moments are
        then exact in expectation).

    Examples
    --------
    >>> from projmech.synthetic import rounding_covariance
    >>> moments = np.array([[1.0, 0.5, 0.5], [0.5, 0.5, 0.25], [0.5, 0.25, 0.5]])
    >>> covariance, repair = rounding_covariance(moments)
    >>> np.allclose(covariance, np.eye(3)), repair
    (True, 0.0)
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

    Each row draws ``g ~ N(0, I)`` and sets ``x_i = (sign(<u_i, g>) sign(<u_0, g>) + 1) / 2``,
    the vectors ``u`` having the Gram matrix of :func:`rounding_covariance`.

    Parameters
    ----------
    moments : array_like, shape (d+1, d+1)
        A binary moment matrix ``[[1, mu^T], [mu, P]]`` (e.g. ``RelaxationResult.moments``).
    n : int
        Rows to draw.
    rng : numpy.random.Generator
        The source of the Gaussian draws.

    Returns
    -------
    rows : ndarray of int64, shape (n, d)
        The rows, one 0/1 value per attribute.
    repair : float
        See :func:`rounding_covariance`.

    Examples
    --------
    >>> from projmech.synthetic import gaussian_rounding
    >>> moments = np.array([[1.0, 0.5, 0.5], [0.5, 0.5, 0.25], [0.5, 0.25, 0.5]])
    >>> rows, repair = gaussian_rounding(moments, 10_000, np.random.default_rng(0))
    >>> rows.shape, repair, bool(np.all(np.abs(rows.mean(axis=0) - 0.5) < 0.02))
    ((10000, 2), 0.0, True)
    """
    n = check_positive_int("n", n)
    GENERATOR.check("rng", rng)
    covariance, repair = rounding_covariance(moments)
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    factor = eigenvectors * np.sqrt(np.clip(eigenvalues, 0.0, None))[None, :]
    projections = rng.standard_normal((n, factor.shape[1])) @ factor.T  # rows: <u_i, g>
    signs = np.sign(projections[:, 1:]) * np.sign(projections[:, :1])
    signs[signs == 0] = 1  # a probability-zero tie
    return ((signs + 1) // 2).astype(np.int64), repair
