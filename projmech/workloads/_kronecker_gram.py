"""The Gram matrix of a structured workload, a weighted sum of Kronecker products of small matrices.

What a factorization needs is computed factor by factor, never from the ``m x m`` matrix.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence

import numpy as np
from scipy.sparse.linalg import LinearOperator

from ..validation import DEFAULT_MAX_ENTRIES, check_entries, format_count

__all__ = ["KroneckerGram"]


class KroneckerGram:
    """A Gram matrix ``G = sum_t weights[t] * (factors[t][0] ⊗ ... ⊗ factors[t][d-1])`` :cite:p:`MMHM18`.

    Get one from :meth:`Workload.kronecker_gram`; :attr:`terms` holds the float64 factors and
    :attr:`sizes` their sizes ``(m_1, ..., m_d)``.

    Parameters
    ----------
    terms : sequence of (float, sequence of ndarray)
        Each term's weight and its ``d`` square factors.

    Examples
    --------
    >>> pm.workloads.kron([pm.workloads.prefix(3), pm.identity(2)]).kronecker_gram().trace()
    12.0
    """

    def __init__(self, terms: Sequence[tuple[float, Sequence[np.ndarray]]]) -> None:
        kept = [(float(weight), tuple(np.asarray(factor, dtype=float) for factor in factors))
                for weight, factors in terms]
        if not kept:
            raise ValueError("terms: need at least one term")
        sizes = tuple(factor.shape[0] for factor in kept[0][1])
        for _, factors in kept:
            if tuple(factor.shape for factor in factors) != tuple((size, size) for size in sizes):
                raise ValueError(f"terms: every term needs square factors of sizes {sizes}, got "
                                 f"{[factor.shape for factor in factors]}")
        self.terms: tuple[tuple[float, tuple[np.ndarray, ...]], ...] = tuple(kept)
        self.sizes: tuple[int, ...] = sizes

    @property
    def shape(self) -> tuple[int, int]:
        """``(m, m)``, with ``m`` the product of :attr:`sizes`."""
        m = math.prod(self.sizes)
        return m, m

    def matvec(self, vector: np.ndarray) -> np.ndarray:
        """Compute ``G @ vector``, each factor applied along its own axis.

        Parameters
        ----------
        vector : array_like, shape (m,)
            A vector over the universe (row-major in the factors).

        Returns
        -------
        ndarray, shape (m,)
        """
        vector = np.asarray(vector, dtype=float)
        if vector.shape != (self.shape[1],):
            raise ValueError(f"vector: expected shape ({self.shape[1]},), got {vector.shape}")
        result = np.zeros(self.shape[0])
        for weight, factors in self.terms:
            tensor = vector.reshape(self.sizes)
            for axis, factor in enumerate(factors):
                tensor = np.moveaxis(np.tensordot(factor, tensor, axes=(1, axis)), 0, axis)
            result += weight * tensor.ravel()
        return result

    def __matmul__(self, vector: np.ndarray) -> np.ndarray:
        return self.matvec(vector)

    def trace(self) -> float:
        """Compute the trace ``tr(G) = ||F||_F^2`` from the factors' traces.

        Returns
        -------
        float
        """
        return float(sum(weight * math.prod(float(np.trace(f)) for f in factors) for weight, factors in self.terms))

    def diagonal(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> np.ndarray:
        """Compute the diagonal of ``G``: the squared column norms of F.

        Parameters
        ----------
        max_entries : int, default DEFAULT_MAX_ENTRIES
            Refuse a longer diagonal.

        Returns
        -------
        ndarray, shape (m,)
        """
        check_entries("max_entries", self.shape[0], max_entries,
                      f"the diagonal of a Gram matrix (m={format_count(self.shape[0])})")
        return sum((weight * functools.reduce(np.kron, [np.diag(f) for f in factors])
                    for weight, factors in self.terms), np.zeros(self.shape[0]))

    def toarray(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> np.ndarray:
        """Build the dense ``m x m`` matrix ``G``.

        Only for a small universe: :meth:`matvec`, :meth:`diagonal` and :meth:`trace` never build it.

        Parameters
        ----------
        max_entries : int, default DEFAULT_MAX_ENTRIES
            The cap on ``m * m``, checked before anything is allocated; each entry
            takes 8 bytes.

        Returns
        -------
        ndarray
        """
        m = self.shape[0]
        check_entries("max_entries", m * m, max_entries, f"a dense Gram matrix (m={format_count(m)})")
        return sum((weight * functools.reduce(np.kron, factors) for weight, factors in self.terms),
                   np.zeros((m, m)))

    def aslinearoperator(self) -> LinearOperator:
        """Wrap ``G`` as a symmetric :class:`scipy.sparse.linalg.LinearOperator` (``matvec`` both ways).

        Returns
        -------
        scipy.sparse.linalg.LinearOperator
        """
        return LinearOperator(self.shape, matvec=self.matvec, rmatvec=self.matvec, dtype=float)

    def __add__(self, other: KroneckerGram) -> KroneckerGram:
        if not isinstance(other, KroneckerGram):
            return NotImplemented
        if other.sizes != self.sizes:
            raise ValueError(f"other: factor sizes differ ({self.sizes} vs {other.sizes})")
        return KroneckerGram(self.terms + other.terms)

    def kron(self, other: KroneckerGram) -> KroneckerGram:
        """Compute ``self ⊗ other`` term by term: the Gram matrix of a Kronecker product.

        Parameters
        ----------
        other : KroneckerGram
            The Gram matrix of the second factor.

        Returns
        -------
        KroneckerGram
            ``len(self.terms) * len(other.terms)`` terms, factor sizes ``self.sizes + other.sizes``.
        """
        return KroneckerGram([(w1 * w2, f1 + f2) for (w1, f1), (w2, f2) in itertools.product(self.terms, other.terms)])

    def __repr__(self) -> str:
        return f"KroneckerGram(sizes={self.sizes}, terms={len(self.terms)})"
