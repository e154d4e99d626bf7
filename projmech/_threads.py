"""One BLAS thread where results must not depend on the thread count.

OpenBLAS splits a matrix product differently with 1 and 2 threads, and the sums then round
differently (1e-12 in the counts of Adult's 21 million marginal cells): a release with a fixed
seed would differ between machines. Measurement and reconstruction therefore run their dense
kernels on one BLAS thread, set explicitly with threadpoolctl (a leaf module: threadpoolctl only).
"""

from __future__ import annotations

import functools
from contextlib import AbstractContextManager
from typing import Any

__all__ = ["one_blas_thread"]


def one_blas_thread() -> AbstractContextManager[Any]:
    """A context in which BLAS (OpenBLAS, MKL, BLIS) uses a single thread, restored on exit."""
    return _controller().limit(limits=1, user_api="blas")


@functools.lru_cache(maxsize=1)
def _controller() -> Any:
    """The loaded thread pools, found once (a scan of the process's libraries: 0.2 ms a time)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()
