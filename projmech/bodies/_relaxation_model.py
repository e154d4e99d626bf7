"""The relaxation L of 2-way marginals (:doc:`/theory/relaxation`): the moment encoding of a row and
L's constraints, ``"sdp"`` (``Y ⪰ 0``, :cite:p:`Las01`), ``"local"`` (nonnegative cells) or both."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..data import Domain
from ..solve import SolveError

__all__ = ["RELAXATIONS", "RelaxationError", "MomentEncoding", "moment_dimension", "check_relaxation"]

#: The constraints L may have, as ``relaxation=`` takes them (module docstring).
RELAXATIONS = ("sdp+local", "sdp", "local")


def check_relaxation(relaxation: Any) -> None:
    """A ValueError naming ``relaxation`` unless it is one of :data:`RELAXATIONS`."""
    if relaxation not in RELAXATIONS:
        raise ValueError(f"relaxation: expected one of {RELAXATIONS}, got {relaxation!r}")


class RelaxationError(SolveError):
    """The solver returned no optimal projection onto the relaxation, or no optimal support value.

    The point in ``best`` is never returned as a projection.

    Parameters
    ----------
    message : str
        What failed.
    attempts : iterable of Attempt
        The solver's outcome.
    best : RelaxationResult or None
        The feasible point, with its certified gap, where ADMM stopped at ``max_iterations``.

    Examples
    --------
    >>> y = np.random.default_rng(0).normal(0.25, 0.1, 12)
    >>> try:
    ...     pm.project_to_relaxation(pm.Domain(["a", "b", "c"], [2, 2, 2]), y, tol=1e-9, max_iterations=10)
    ... except pm.RelaxationError as error:
    ...     print(error.best.stats.status, error.best.stats.gap > 1e-9)
    iteration_limit True
    """


def _is_binary(sizes: Sequence[int], encoding: str) -> bool:
    """Whether ``encoding`` (``"auto"``: binary where every attribute has 2 values) is binary."""
    return all(size == 2 for size in sizes) if encoding == "auto" else encoding == "binary"


def moment_dimension(sizes: Sequence[int], encoding: str = "auto") -> int:
    """``D``, the number of indicators ``z`` of a row (one per binary attribute, or one per value):
    the moment matrix is ``(D + 1) x (D + 1)``."""
    return len(sizes) if _is_binary(sizes, encoding) else int(sum(sizes))


@dataclass(frozen=True)
class MomentEncoding:
    """The linear map from a moment matrix ``Y`` (``(D+1) x (D+1)``) to 2-way marginal answers.

    Answers follow ``marginals(domain, 2)``; ``cells @ vec(Y)`` (row-major) gives them. Build one
    with :meth:`of`; the cells of each encoding are in :doc:`/theory/relaxation`.

    Parameters
    ----------
    domain : Domain
        The domain whose 2-way marginals are encoded.
    binary : bool
        ``z = x`` (one indicator per binary attribute) or one-hot indicators.
    offsets : ndarray of int
        Where each attribute's indicators start in ``z``.
    size : int
        ``D + 1``, the order of ``Y``.
    cells : scipy.sparse.csr_array, shape (k, (D+1)^2)
        The map itself.

    Examples
    --------
    >>> from projmech.bodies import MomentEncoding
    >>> domain = pm.Domain(["a", "b", "c"], [2, 2, 2])
    >>> encoding = MomentEncoding.of(domain)
    >>> encoding.binary, encoding.size, encoding.num_queries
    (True, 4, 12)
    >>> moments = encoding.moments_of(np.full(domain.size, 1 / domain.size))  # [[1, mu^T], [mu, P]]
    >>> float(moments[0, 1]), float(moments[1, 2]), encoding.answers(moments)[:4].tolist()
    (0.5, 0.25, [0.25, 0.25, 0.25, 0.25])
    """

    domain: Domain
    binary: bool
    offsets: np.ndarray
    size: int
    cells: sp.csr_array

    @classmethod
    def of(cls, domain: Domain, encoding: str = "auto") -> MomentEncoding:
        """The encoding of ``domain``'s 2-way marginals.

        Parameters
        ----------
        domain : Domain
            At least 2 attributes, each with at least 2 values.
        encoding : {"auto", "binary", "one-hot"}
            ``"auto"``: binary where every attribute has 2 values.

        Returns
        -------
        MomentEncoding
        """
        if not isinstance(domain, Domain):
            raise TypeError(f"domain: expected a Domain, got {type(domain).__name__}")
        sizes = list(domain.sizes)
        if len(sizes) < 2:
            raise ValueError(f"domain: 2-way marginals need at least 2 attributes, got {len(sizes)}")
        small = [name for name, size in zip(domain.attributes, sizes) if size < 2]
        if small:
            raise ValueError(f"domain: attributes with fewer than 2 values have no 2-way table to relax: {small}")
        if encoding not in ("auto", "binary", "one-hot"):
            raise ValueError(f"encoding: expected 'auto', 'binary' or 'one-hot', got {encoding!r}")
        binary = _is_binary(sizes, encoding)
        if binary and any(size != 2 for size in sizes):
            raise ValueError("encoding: 'binary' needs every attribute to have exactly 2 values")
        offsets = np.arange(len(sizes)) if binary else np.concatenate([[0], np.cumsum(sizes)[:-1]])
        size = moment_dimension(sizes, encoding) + 1
        first, second = np.triu_indices(len(sizes), 1)  # lexicographic pairs
        if binary:
            # indicator(x_a = v) = v x_a + (1 - v)(1 - x_a), multiplied out: per pair the cells
            # (0,0), (0,1), (1,0), (1,1) in terms of Y[0,0] = 1, Y[0,i] = mu_a, Y[0,j], Y[i,j] = P_ab.
            i, j = first + 1, second + 1
            one, mu_i, mu_j, joint = np.zeros_like(i), i, j, i * size + j
            cell_of_term = np.array([0, 0, 0, 0, 1, 1, 2, 2, 3])
            entries = np.stack([one, mu_i, mu_j, joint, mu_j, joint, mu_i, joint, joint], axis=1)
            signs = np.array([1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0, 1.0])
            rows = (4 * np.arange(first.size)[:, None] + cell_of_term).ravel()
            columns = entries.ravel()
            values = np.broadcast_to(signs, entries.shape).ravel()
            row = 4 * first.size
        else:
            sizes_array = np.asarray(sizes)
            table = sizes_array[first] * sizes_array[second]
            start = np.concatenate([[0], np.cumsum(table)[:-1]])
            pair = np.repeat(np.arange(first.size), table)
            within = np.arange(table.sum()) - np.repeat(start, table)
            v, w = within // sizes_array[second][pair], within % sizes_array[second][pair]
            rows = np.arange(table.sum())
            columns = (1 + offsets[first][pair] + v) * size + (1 + offsets[second][pair] + w)
            values = np.ones(rows.size)
            row = int(table.sum())
        cells = sp.csr_array((values, (rows, columns)), shape=(row, size * size))
        return cls(domain=domain, binary=binary, offsets=np.asarray(offsets), size=size, cells=cells)

    @property
    def num_queries(self) -> int:
        """The number ``k`` of 2-way marginal cells."""
        return self.cells.shape[0]

    def answers(self, moments: np.ndarray) -> np.ndarray:
        """The 2-way marginal answers of a moment matrix.

        Parameters
        ----------
        moments : array_like, shape (D+1, D+1)
            A moment matrix of this encoding.

        Returns
        -------
        ndarray, shape (k,)
        """
        return self.cells @ np.asarray(moments, dtype=float).ravel()

    def moments_of(self, histogram: np.ndarray) -> np.ndarray:
        """The exact moment matrix ``E[(1, z)(1, z)^T]`` of a distribution over the universe.

        Parameters
        ----------
        histogram : array_like, shape (m,)
            Weights over the universe of the domain.

        Returns
        -------
        ndarray, shape (D+1, D+1)
        """
        h = np.asarray(histogram, dtype=float).ravel()
        codes = np.unravel_index(np.arange(self.domain.size), self.domain.sizes)
        lifted = np.zeros((self.domain.size, self.size))
        lifted[:, 0] = 1.0
        for a, column in enumerate(codes):
            if self.binary:
                lifted[:, 1 + a] = column
            else:
                lifted[np.arange(self.domain.size), 1 + self.offsets[a] + column] = 1.0
        return lifted.T @ (h[:, None] * lifted)


def _equalities(encoding: MomentEncoding) -> tuple[sp.csr_array, np.ndarray]:
    """``A vec(Y) = b``: ``Y_00 = 1``, ``diag(P) = mu`` and, one-hot, exclusivity and row sums."""
    size, sizes = encoding.size, list(encoding.domain.sizes)
    rows: list[dict[int, float]] = [{0: 1.0}]
    rhs = [1.0]
    for i in range(1, size):
        rows.append({i * size + i: 1.0, i: -1.0})  # Y_ii = Y_0i
        rhs.append(0.0)
    if not encoding.binary:
        for a, start in enumerate(encoding.offsets):
            block = range(1 + start, 1 + start + sizes[a])
            for i, j in itertools.combinations(block, 2):
                rows.append({i * size + j: 1.0})  # z_{a,v} z_{a,w} = 0
                rhs.append(0.0)
            for column in range(size):  # sum_v Y[(a,v), column] = Y[0, column]
                row = {i * size + column: 1.0 for i in block}
                row[column] = row.get(column, 0.0) - 1.0
                rows.append(row)
                rhs.append(0.0)
    data, row_index, column_index = [], [], []
    for r, entries in enumerate(rows):
        for c, value in entries.items():
            row_index.append(r)
            column_index.append(c)
            data.append(value)
    matrix = sp.csr_array((data, (row_index, column_index)), shape=(len(rows), size * size))
    return matrix, np.array(rhs)


def _violation(encoding: MomentEncoding, moments: np.ndarray, relaxation: str,
               matrix: sp.csr_array, rhs: np.ndarray) -> float:
    """The largest violation of L's constraints (``matrix``, ``rhs``: its equalities)."""
    violation = float(np.abs(matrix @ moments.ravel() - rhs).max())
    violation = max(violation, float(np.abs(moments - moments.T).max()))
    if "sdp" in relaxation:
        violation = max(violation, -float(np.linalg.eigvalsh((moments + moments.T) / 2).min()))
    if "local" in relaxation:
        violation = max(violation, -float(encoding.answers(moments).min()))
    return max(violation, 0.0)


@dataclass(frozen=True)
class _CvxpyBody:
    """L as CVXPY objects: the moment matrix variable and its constraints."""

    moments: Any  # cp.Variable, (D+1) x (D+1): PSD for the SDP relaxations, else symmetric
    flat: Any  # cp.Expression: vec(Y), row-major
    answers: Any  # cp.Expression: cells @ vec(Y), the 2-way marginal answers of Y
    equality: Any  # cp.Constraint: A vec(Y) == b
    local: Any  # cp.Constraint answers >= 0, or None
    equalities: sp.csr_array  # A
    rhs: np.ndarray  # b

    @property
    def constraints(self) -> list[Any]:
        return [self.equality] if self.local is None else [self.equality, self.local]


def _cvxpy_body(encoding: MomentEncoding, relaxation: str) -> _CvxpyBody:
    """L as a CVXPY variable and constraints: the one definition the CVXPY projection and the support share."""
    import cvxpy as cp

    shape = (encoding.size, encoding.size)
    Y = cp.Variable(shape, PSD=True) if "sdp" in relaxation else cp.Variable(shape, symmetric=True)
    flat = cp.vec(Y, order="C")
    answers = encoding.cells @ flat
    equalities, rhs = _equalities(encoding)
    return _CvxpyBody(
        moments=Y,
        flat=flat,
        answers=answers,
        equality=equalities @ flat == rhs,
        local=answers >= 0 if "local" in relaxation else None,
        equalities=equalities,
        rhs=rhs,
    )
