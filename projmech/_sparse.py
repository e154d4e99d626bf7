"""``scipy.sparse.issparse`` as the type checker should read it.

scipy's stubs narrow ``issparse(x)`` to an empty marker class, so that after the check nothing of
a sparse array is known (not even its ``shape``). :func:`issparse` is the same test, narrowing to
the base class every sparse array and matrix derives from: the type the stubs themselves use for
"any sparse input".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import scipy.sparse as sp

if TYPE_CHECKING:
    from scipy.sparse._base import _spbase
    from typing_extensions import TypeIs

__all__ = ["issparse"]


def issparse(x: object) -> TypeIs[_spbase]:
    """Whether ``x`` is a scipy sparse array or matrix (``scipy.sparse.issparse``)."""
    return sp.issparse(x)
