"""Checks and scale-safe norms of query matrices, shared by every workload type.

The norms feed the noise, so they divide by each column's largest magnitude before squaring:
entries of 1e-200 or 1e200 neither vanish nor overflow (:doc:`/theory/workloads`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._sparse import QueryMatrix, issparse
from ..validation import check_entries

__all__ = ["max_column_distance"]

Matrix = QueryMatrix


def max_column_distance(gram: np.ndarray, terms: int) -> float:
    """Bound the largest distance between two columns of a matrix from its Gram matrix, tight to rounding.

    A margin against cancellation in ``G_uu + G_vv - 2 G_uv`` is added to each pair (:doc:`/theory/workloads`).

    Parameters
    ----------
    gram : array_like, shape (m, m)
        The Gram matrix ``A^T A``.
    terms : int
        The number of rows of ``A``.

    Returns
    -------
    float
        The bound; 0 for a single column.

    Examples
    --------
    >>> round(pm.workloads.max_column_distance(np.eye(3), terms=3), 6)
    1.414214
    """
    gram = np.asarray(gram, dtype=float)
    m = gram.shape[0]
    diagonal = np.diag(gram)
    margin = 2.0 * (terms + 4) * np.finfo(float).eps
    best, block = 0.0, max(1, 2**22 // max(m, 1))
    for start in range(0, m, block):
        stop = min(m, start + block)
        norms = diagonal[start:stop, None] + diagonal[None, :]
        squares = norms - 2.0 * gram[start:stop] + margin * np.abs(norms)
        squares[np.arange(stop - start), np.arange(start, stop)] = -np.inf  # u == v is no pair
        best = max(best, float(squares.max()))
    return math.sqrt(max(best, 0.0))


def matrix_column_norms(matrix: Matrix, ord: float) -> np.ndarray:
    """The ``l_p`` norm of every column of a checked dense or sparse matrix, scale-safe in l2 (each
    column divided by its largest magnitude before squaring).
    """
    if issparse(matrix):
        csr = sp.csr_array(matrix)
        if not csr.has_canonical_format:  # duplicates of an entry add up: sum them first (in a copy)
            csr = csr.copy()
            csr.sum_duplicates()
        magnitudes = np.abs(csr.data)
        columns, m = csr.indices, csr.shape[1]
        if ord == 1:
            return np.bincount(columns, weights=magnitudes, minlength=m)
        peaks = np.zeros(m)
        np.maximum.at(peaks, columns, magnitudes)
        if ord != 2:
            return peaks
        scaled = magnitudes / np.where(peaks > 0, peaks, 1.0)[columns]  # a column of stored zeros has peak 0
        return peaks * np.sqrt(np.bincount(columns, weights=scaled * scaled, minlength=m))
    if ord == 2:
        return root_sum_squares(matrix)
    dense = np.abs(matrix)
    return dense.sum(axis=0) if ord == 1 else dense.max(axis=0)


def root_sum_squares(parts: Any) -> np.ndarray:
    """``sqrt(sum of squares)`` along the first axis, scale-safely: the l2 norms of a matrix's columns,
    or of a stack's parts' column norms.
    """
    magnitudes = np.abs(np.asarray(parts, dtype=float))  # a new array: scaled and squared in place
    peaks = magnitudes.max(axis=0)
    magnitudes /= np.where(peaks > 0, peaks, 1.0)
    np.square(magnitudes, out=magnitudes)
    return peaks * np.sqrt(magnitudes.sum(axis=0))


def check_matrix_entries(argument: str, builder: str, stored: int, k: int, m: int, max_entries: int, *,
                         implicit: bool = False) -> None:
    """Refuse an explicit matrix of ``stored`` entries above ``max_entries`` before allocating it
    (suggesting ``implicit=True`` where the builder offers it).
    """
    alternative = "; or pass implicit=True, which never builds the matrix" if implicit else ""
    check_entries(argument, stored, max_entries, f"{builder}: the explicit matrix (k={k:,}, m={m:,})",
                  hint=f" (raise max_entries if you have the memory: about 8-16 bytes per entry){alternative}")


def check_labels(labels: Any, k: int) -> tuple[str, ...]:
    if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
        # A str would be split into one label per character.
        raise TypeError(f"labels: expected a sequence of {k} str, got a {type(labels).__name__}")
    labels = tuple(labels)
    for label in labels:
        if not isinstance(label, str):
            raise TypeError(f"labels: every label must be a str, got {label!r}")
    if len(labels) != k:
        raise ValueError(f"labels: expected {k} labels (one per query), got {len(labels)}")
    return labels
