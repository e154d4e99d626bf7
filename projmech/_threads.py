"""One BLAS thread where results must not depend on the thread count.

OpenBLAS splits a matrix product differently with 1 and 2 threads, and the sums then round
differently (1e-12 in the counts of Adult's 21 million marginal cells): a release with a fixed
seed would differ between machines. Measurement and reconstruction therefore run their dense
kernels on one BLAS thread, set explicitly with threadpoolctl (a leaf module: threadpoolctl only).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, ParamSpec, TypeVar

__all__ = ["one_blas_thread", "on_one_blas_thread"]

Arguments = ParamSpec("Arguments")
Result = TypeVar("Result")


def one_blas_thread() -> AbstractContextManager[Any]:
    """A context in which BLAS (OpenBLAS, MKL, BLIS) uses a single thread, restored on exit."""
    return _controller().limit(limits=1, user_api="blas")


def on_one_blas_thread(function: Callable[Arguments, Result]) -> Callable[Arguments, Result]:
    """``function`` run inside :func:`one_blas_thread`: for optimizers whose iterates go through
    dense products and eigendecompositions, where 1 and 2 threads round differently and the
    difference grows over the iterations (prefix(512): strategies 3.5e-7 apart, answers 8e-9)."""
    @functools.wraps(function)
    def pinned(*args: Arguments.args, **kwargs: Arguments.kwargs) -> Result:
        with one_blas_thread():
            return function(*args, **kwargs)

    return pinned


@functools.lru_cache(maxsize=1)
def _controller() -> Any:
    """The loaded thread pools, found once (a scan of the process's libraries: 0.2 ms a time)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()
