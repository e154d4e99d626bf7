"""Sparse matrices as the type checker should read them.

scipy's stubs narrow ``issparse(x)`` to an empty marker class, so that after the check nothing of
a sparse array is known (not even its ``shape``). :func:`issparse` is the same test, narrowing to
the base class every sparse array and matrix derives from: the type the stubs themselves use for
"any sparse input".

:data:`QueryMatrix` is what :mod:`projmech.workloads` returns for a query matrix
(``Workload.matrix``, ``as_query_matrix``): a dense ndarray, or a CSR array when sparse.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from scipy.sparse._base import _spbase
    from typing_extensions import TypeIs

__all__ = ["QueryMatrix", "issparse"]

QueryMatrix: TypeAlias = np.ndarray | sp.csr_array


def issparse(x: object) -> TypeIs[_spbase]:
    """Whether ``x`` is a scipy sparse array or matrix (``scipy.sparse.issparse``)."""
    return sp.issparse(x)
