"""The unchecked kernels of a workload, under public names, for the solvers of other packages."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from .base import Workload

__all__ = ["Kernels"]


class Kernels:
    """A workload's unchecked kernels: the one interface through which other packages' solvers call them.

    The workload's public products check their arguments; these do not, so that a solver loop
    calling them with float64 arrays it built re-validates nothing. Each type implements them.

    Parameters
    ----------
    workload : Workload
        The workload whose kernels these are.

    Attributes
    ----------
    matvec, rmatvec : callable
        ``F @ vector`` for a vector of length ``m``; ``F.T @ values`` for one of length ``k``.
    matmat, rmatmat : callable
        ``F @ block`` for an ``(m, r)`` block; ``F.T @ block`` for a ``(k, r)`` one.
    sparse_columns : callable
        ``F[:, index]`` as a ``scipy.sparse.csc_array``, for int64 universe indices.
    column_gram : callable
        ``F[:, left]^T F[:, right]``, for int64 universe indices.
    scaled_identity : callable
        ``c`` when F is ``c I``, else None.
    stored_entries : callable
        The entries an explicit form of F would store (``k * m`` unless sparse).

    Examples
    --------
    >>> import numpy as np
    >>> import projmech as pm
    >>> kernels = pm.identity(2).kernels
    >>> kernels.rmatvec(np.array([1.0, 2.0])), kernels.stored_entries()
    (array([1., 2.]), 2)
    """

    __slots__ = ("matvec", "rmatvec", "matmat", "rmatmat", "sparse_columns", "column_gram", "scaled_identity",
                 "stored_entries")

    matvec: Callable[[np.ndarray], np.ndarray]
    rmatvec: Callable[[np.ndarray], np.ndarray]
    matmat: Callable[[np.ndarray], np.ndarray]
    rmatmat: Callable[[np.ndarray], np.ndarray]
    sparse_columns: Callable[[np.ndarray], sp.csc_array]
    column_gram: Callable[[np.ndarray, np.ndarray], np.ndarray]
    scaled_identity: Callable[[], float | None]
    stored_entries: Callable[[], int]

    def __init__(self, workload: Workload) -> None:
        self.matvec = workload._matvec
        self.rmatvec = workload._rmatvec
        self.matmat = workload._matmat
        self.rmatmat = workload._rmatmat
        self.sparse_columns = workload._sparse_columns
        self.column_gram = workload._column_gram
        self.scaled_identity = workload._scaled_identity
        self.stored_entries = workload._stored_entries
