"""Workloads at the edges of float64's range, factorized at unit scale and scaled back.

The Gram matrix ``F^T F`` squares the entries, which underflow below about 1e-154 and overflow
above 1e154; ``gamma`` is homogeneous, so F is divided by a power of two, factorized, and every
quantity but the strategy multiplied back (:class:`ScaledFactorization`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import NoReturn

import numpy as np
import scipy.sparse as sp

from ..workloads import Kron, MatrixWorkload, Workload
from ._base import Factorization, FactorizationError

__all__ = ["ScaledFactorization", "SAFE_SCALE"]

#: An explicit workload whose largest magnitude lies outside ``[2^-300, 2^300]`` is factorized
#: divided by a power of two near that magnitude: inside the range every product the methods
#: form stays normal.
SAFE_SCALE = 2.0**300


def scaled_form(workload: Workload) -> tuple[float, Workload] | None:
    """``(s, F / s)`` for a workload whose entries are too small or too large for its Gram matrix, else None.

    ``s`` is a power of two near the largest magnitude (an exact division); a Kronecker product is
    scaled factor by factor, so that its norm and bound, which multiply, stay in range.
    """
    if isinstance(workload, MatrixWorkload):
        matrix = workload.matrix
        peak = float(np.abs(matrix.data if sp.issparse(matrix) else matrix).max(initial=0.0))
        if peak == 0 or 1.0 / SAFE_SCALE <= peak <= SAFE_SCALE:
            return None
        if peak < sys.float_info.min:
            _refuse_subnormal(f"{peak:.3g}")
        scale = math.ldexp(1.0, math.frexp(peak)[1] - 1)
        return scale, Workload(matrix / scale, domain=workload.domain, name=workload.name)
    if isinstance(workload, Kron):
        forms = [scaled_form(factor) for factor in workload.factors]
        if all(form is None for form in forms):
            return None
        # The scale 2^exponent, the product of the factors' scales, is about the size of the
        # product's entries (times the unscaled factors' entries): outside float64's normal range
        # those entries, and gamma, are lost (the scale itself would underflow or overflow).
        exponent = sum(0 if form is None else math.frexp(form[0])[1] - 1 for form in forms)
        if exponent < sys.float_info.min_exp - 1:
            _refuse_subnormal(f"about 2^{exponent}")
        if exponent >= sys.float_info.max_exp:
            raise ValueError(f"workload: its largest entry magnitude, about 2^{exponent}, is beyond float64's range "
                             f"({sys.float_info.max:.3g}); scale F down (gamma(c F) = |c| gamma(F))")
        scale = math.ldexp(1.0, exponent)
        factors = [factor if form is None else form[1] for factor, form in zip(workload.factors, forms)]
        return scale, Kron(factors, domain=workload.domain, name=workload.name, implicit=workload.is_implicit)
    return None


def _refuse_subnormal(magnitude: str) -> NoReturn:
    """Refuse a workload whose largest entry magnitude is below float64's normal range (few significant bits)."""
    # Subnormal numbers carry few significant bits, and gamma(F), of their size, would too.
    raise ValueError(
        f"workload: its largest entry magnitude, {magnitude}, is below float64's smallest normal number "
        f"({sys.float_info.min:.3g}): gamma(F) and the answers would have few significant digits; scale F up "
        "(gamma(c F) = |c| gamma(F))"
    )


class ScaledFactorization(Factorization):
    """The factorization of ``F = s F'`` made from one of ``F'``, for a power of two ``s``.

    Every quantity but the strategy is homogeneous, so it is reported from ``F'``'s factorization
    times ``s``: computed from F's own entries, its squares would underflow or overflow.

    Parameters
    ----------
    workload : Workload
        F.
    inner : Factorization
        A factorization of ``F / scale``.
    scale : float
        ``s``, a power of two.

    Attributes
    ----------
    inner : Factorization
        The factorization of ``F / scale``.
    scale : float
        ``s``.

    Examples
    --------
    >>> tiny = pm.factorization_norm(1e-200 * pm.prefix(8).toarray())
    >>> type(tiny).__name__, round(tiny.gamma / 1e-200, 4), round(pm.factorization_norm(pm.prefix(8)).gamma, 4)
    ('ScaledFactorization', 1.4949, 1.4949)
    """

    def __init__(self, workload: Workload, inner: Factorization, scale: float) -> None:
        self.workload = workload
        self.inner = inner
        self.scale = scale
        self.strategy = inner.strategy  # M is the same: only R scales
        self.objective = inner.objective
        self.lower_bound = None if inner.lower_bound is None else scale * inner.lower_bound
        self.stats = inner.stats

    def _reconstruct(self, measurements: np.ndarray) -> np.ndarray:
        return self.scale * self.inner._reconstruct(measurements)

    def _reconstruct_block(self, block: np.ndarray) -> np.ndarray:
        return self.scale * self.inner._reconstruct_block(block)

    def _reconstruction_columns(self, start: int, stop: int) -> np.ndarray:
        return self.scale * self.inner._reconstruction_columns(start, stop)

    @property
    def reconstruction_norm(self) -> float:
        """``||R||_F = s ||R'||_F``."""
        return self.scale * self.inner.reconstruction_norm

    @property
    def residual(self) -> float:
        """``||R M - F||_{1->2} = s ||R' M - F'||_{1->2}``."""
        return self.scale * self.inner.residual

    @property
    def strategy_sensitivity(self) -> float:
        """``||M||_{1->2}``, that of ``F'``'s factorization (the strategy is the same)."""
        return self.inner.strategy_sensitivity

    def _query_norms(self) -> np.ndarray:
        return self.scale * self.inner.query_norms

    @property
    def relative_gap(self) -> float | None:
        """That of ``F'``'s factorization: the gap on the squared objective does not depend on ``s``."""
        return self.inner.relative_gap

    def _finite_factors(self) -> bool:
        return self.inner._finite_factors()

    def _workload_norm(self) -> float:
        return self.scale * self.inner._workload_norm()

    def _defect_residual(self) -> float:
        return self.scale * self.inner._defect_residual()

    def _is_approximate(self) -> bool:
        return self.inner._is_approximate()

    def _description(self) -> str:
        return f"{self.inner._description()}, solved on F / 2^{math.frexp(self.scale)[1] - 1}"


def factorize_scaled(workload: Workload, scale: float, scaled: Workload,
                      solve: Callable[[Workload], Factorization]) -> Factorization:
    """``solve(F / scale)`` as a :class:`ScaledFactorization` of F (a FactorizationError's best too);
    refused where the value leaves float64's normal range.
    """
    try:
        inner = solve(scaled)
        if scale == 1.0:
            return inner
    except FactorizationError as error:
        if error.best is not None:
            error.best = ScaledFactorization(workload, error.best, scale)
        raise
    fact = ScaledFactorization(workload, inner, scale)
    if not sys.float_info.min <= fact.value <= sys.float_info.max:
        raise ValueError(f"workload: its factorization norm, {fact.value:.3g}, lies outside float64's normal range; "
                         "scale F (gamma(c F) = |c| gamma(F))")
    return fact
