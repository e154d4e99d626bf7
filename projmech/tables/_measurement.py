"""A noisy measurement of a table, or of a linear query on it, with its noise scale."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Measurement", "KroneckerQuery", "combined"]


@dataclass(frozen=True, eq=False)
class KroneckerQuery:
    """A query matrix on a table held as its Kronecker factors: ``scale (Q_1 ⊗ ... ⊗ Q_d)``, one
    factor per attribute, so that a strategy block of a large table never becomes a dense matrix.

    Parameters
    ----------
    factors : tuple of numpy.ndarray
        One matrix per attribute of the table, ``Q_i`` of the attribute's size in columns.
    scale : float, default 1.0
        The factor in front of the product.

    Examples
    --------
    >>> query = pm.tables.KroneckerQuery((np.ones((1, 2)), np.eye(3)), 2.0)
    >>> query.shape, (query @ np.arange(6.0)).tolist()
    ((3, 6), [6.0, 10.0, 14.0])
    """

    factors: tuple[np.ndarray, ...]
    scale: float = 1.0

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, columns)`` of the product."""
        return (math.prod(f.shape[0] for f in self.factors), math.prod(f.shape[1] for f in self.factors))

    @property
    def ndim(self) -> int:
        """2, as a matrix's."""
        return 2

    def __matmul__(self, cells: np.ndarray) -> np.ndarray:
        cells = np.asarray(cells, dtype=float)
        if cells.shape != (self.shape[1],):
            raise ValueError(f"cells: expected a vector of {self.shape[1]} cells, got shape {cells.shape}")
        return self.scale * _kronecker_apply(self.factors, cells)

    def transpose_apply(self, answers: np.ndarray) -> np.ndarray:
        """``Q^T answers``: the answers' weights spread back over the table's flat cells.

        Parameters
        ----------
        answers : numpy.ndarray
            One value per row of the query.

        Returns
        -------
        numpy.ndarray
            One value per cell.
        """
        answers = np.asarray(answers, dtype=float)
        if answers.shape != (self.shape[0],):
            raise ValueError(f"answers: expected a vector of {self.shape[0]} answers, got shape {answers.shape}")
        return self.scale * _kronecker_apply(tuple(f.T for f in self.factors), answers)

    def toarray(self) -> np.ndarray:
        """The dense matrix (for small tables and tests).

        Returns
        -------
        numpy.ndarray
        """
        dense = np.ones((1, 1))
        for factor in self.factors:
            dense = np.kron(dense, factor)
        return self.scale * dense


def _kronecker_apply(factors: tuple[np.ndarray, ...], vector: np.ndarray) -> np.ndarray:
    """``(F_1 ⊗ ... ⊗ F_d) vector``, one axis at a time."""
    tensor = vector.reshape([f.shape[1] for f in factors])
    for axis, factor in enumerate(factors):
        tensor = np.moveaxis(np.tensordot(factor, tensor, axes=([1], [axis])), 0, axis)
    return tensor.ravel()


@dataclass(frozen=True, eq=False)
class Measurement:
    """One noisy measurement of a table (as Private-PGM's ``LinearMeasurement``).

    Parameters
    ----------
    attributes : tuple of int
        The table's attributes, increasing domain positions.
    values : numpy.ndarray
        The noisy answers as fractions of the public size: the cells (row-major), or ``query``'s answers.
    sigma : float
        The standard deviation of their noise, as a fraction of the public size.
    query : numpy.ndarray, optional
        A matrix over the table's flat cells whose answers were measured; None for the cells.

    Examples
    --------
    >>> pm.tables.Measurement((0,), np.array([0.6, 0.4]), 0.01).attributes
    (0,)
    """

    attributes: tuple[int, ...]
    values: np.ndarray
    sigma: float
    query: np.ndarray | KroneckerQuery | None = None

    @property
    def is_identity(self) -> bool:
        """Whether the table's cells themselves were measured."""
        return self.query is None

    def check(self, sizes: Sequence[int]) -> None:
        """Refuse (``ValueError``) attributes that are not increasing positions of ``sizes``, values not one
        per cell (or per row of ``query``), or a sigma that is not positive and finite.

        Parameters
        ----------
        sizes : sequence of int
            The domain's attribute sizes.
        """
        attributes = tuple(self.attributes)
        if not attributes or any(not 0 <= a < len(sizes) for a in attributes) or \
                any(b <= a for a, b in zip(attributes, attributes[1:])):
            raise ValueError(f"measurements: attributes {attributes} must be increasing positions in "
                             f"0..{len(sizes) - 1} (the values are read row-major over them)")
        cells = math.prod(sizes[a] for a in attributes)
        if isinstance(self.query, KroneckerQuery):
            factors = self.query.factors
            if len(factors) != len(attributes) or any(
                    np.ndim(f) != 2 or np.shape(f)[1] != sizes[a] for f, a in zip(factors, attributes)):
                raise ValueError(f"measurements: the Kronecker query on {attributes} must have one factor per "
                                 f"attribute, of {[sizes[a] for a in attributes]} columns, got shapes "
                                 f"{[np.shape(f) for f in factors]}")
            cells = self.query.shape[0]
        elif self.query is not None:
            if np.ndim(self.query) != 2 or np.shape(self.query)[1] != cells:
                raise ValueError(f"measurements: the query on {attributes} must be a matrix of {cells} columns, "
                                 f"got shape {np.shape(self.query)}")
            cells = np.shape(self.query)[0]
        if np.shape(self.values) != (cells,):
            raise ValueError(f"measurements: the table on {attributes} has {cells} cells, its values have shape "
                             f"{np.shape(self.values)}")
        if not np.all(np.isfinite(np.asarray(self.values, dtype=float))):
            raise ValueError(f"measurements: the values on {attributes} must be finite")
        if isinstance(self.query, KroneckerQuery):
            entries = [np.asarray(f, dtype=float) for f in self.query.factors] + [np.asarray(self.query.scale)]
        else:
            entries = [] if self.query is None else [np.asarray(self.query, dtype=float)]
        if not all(np.all(np.isfinite(entry)) for entry in entries):
            raise ValueError(f"measurements: the query on {attributes} must have finite entries")
        if not (math.isfinite(self.sigma) and self.sigma > 0):
            raise ValueError(f"measurements: sigma must be positive and finite, got {self.sigma}")


def combined(sizes: Sequence[int], measurements: Sequence[Measurement]
             ) -> tuple[dict[tuple[int, ...], np.ndarray], dict[tuple[int, ...], float]]:
    """Each measured table once: its measurements' precision-weighted mean and that mean's noise.

    Parameters
    ----------
    sizes : sequence of int
        The domain's attribute sizes.
    measurements : sequence of Measurement
        Measurements of the tables' cells (no ``query``).

    Returns
    -------
    tables : dict
        Each measured table's attributes to its combined values, shaped as the table.
    sigmas : dict
        Each to its combined noise's standard deviation.

    Examples
    --------
    >>> tables, sigmas = pm.tables.combined((2,), [pm.tables.Measurement((0,), np.array([0.6, 0.4]), 1.0),
    ...                                            pm.tables.Measurement((0,), np.array([0.4, 0.6]), 1.0)])
    >>> tables[(0,)].tolist(), round(sigmas[(0,)], 6)
    ([0.5, 0.5], 0.707107)
    """
    precisions: dict[tuple[int, ...], float] = {}
    weighted: dict[tuple[int, ...], np.ndarray] = {}
    for m in measurements:
        if not m.is_identity:
            raise ValueError(f"measurements: the one on {m.attributes} measures a query, not the table's cells")
        precision = 1.0 / m.sigma**2
        values = np.asarray(m.values, dtype=float).reshape([sizes[a] for a in m.attributes])
        precisions[m.attributes] = precisions.get(m.attributes, 0.0) + precision
        weighted[m.attributes] = weighted.get(m.attributes, 0.0) + precision * values
    tables = {axes: total / precisions[axes] for axes, total in weighted.items()}
    return tables, {axes: 1.0 / math.sqrt(precision) for axes, precision in precisions.items()}
