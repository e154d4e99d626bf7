"""The unchecked kernels of a workload, under public names, for the solvers of other packages."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from ._base import Workload

__all__ = ["Kernels"]


class Kernels:
    """A workload's unchecked kernels (``matvec``, ``rmatvec``, ``matmat``, ``rmatmat``, ``sparse_columns``,
    ``column_gram``, ``scaled_identity``, ``stored_entries``), for solver loops that checked their arrays.

    Parameters
    ----------
    workload : Workload
        The workload whose kernels these are.

    Examples
    --------
    >>> pm.identity(2).kernels.stored_entries()
    2
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
