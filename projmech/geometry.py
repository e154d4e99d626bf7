"""Geometry of the bodies noisy answers are projected onto: support functions and Gaussian widths.

Definitions follow seed 000 (Nikolov, *Projection mechanism*), §2.3:

- the **support function** of ``K ⊆ R^k`` is ``h_K(y) = sup {<x, y> : x in K}`` (Definition 5);
- the **mean width** is ``M*(K) = E h_K(U)``, ``U`` uniform on the unit sphere of ``R^k``
  (Definition 6). This is the seed's convention: *half* of the classical mean width
  ``E [h_K(U) + h_K(-U)] = 2 M*(K)`` (the average distance between two parallel supporting
  hyperplanes), and, like ``l*``, it is translation invariant (``E <t, U> = 0``);
- the **Gaussian width** is ``l*(K) = E h_K(G)``, ``G ~ N(0, I_k)`` (Definition 7);
- ``l*(K) = c_k M*(K)`` with ``c_k = E ||G||_2 = √2 Γ((k+1)/2) / Γ(k/2)`` (seed 000, after
  Definition 7): ``G = ||G|| U`` with ``||G||`` independent of ``U = G / ||G||`` and ``h_K``
  positively homogeneous. :func:`gaussian_norm_mean` computes ``c_k``;
  :func:`gaussian_width_from_mean` and :func:`mean_width_from_gaussian` convert.

For a workload F (``k x m``), ``K_Q = conv(columns of F)`` (the columns are the answer vectors
``S_Q`` of single-row data sets), so ``h_{K_Q}(y) = max_u <F[:, u], y>``: the maximum over
``S_Q`` (seed 000, proof of Theorem 4, second line) — :func:`support_function`. The projection
mechanism's error bound uses ``l*(K_Q)`` (seed 000, Theorem 8: ``E (1/k)||Ŷ - y||² <=
σ l*(K_Q) / k`` for noise ``σ G``, ``σ = sqrt(k) / (n sqrt(rho))`` there), and holds with
``l*(L)`` for any convex ``L ⊇ K_Q`` onto which one projects instead (the proof uses only that
the body is convex and contains the true answers; :mod:`projmech.bounds` evaluates it).
:func:`gaussian_width` estimates widths by Monte Carlo, with a Student-t confidence interval;
:func:`gaussian_widths` estimates several bodies on the same Gaussian draws, and
:func:`compare_widths` gives the paired ratio and difference of two of them, with their own
(tighter) intervals. :func:`mean_width` and :func:`mean_widths` do the same for ``M*`` on
directions uniform on the sphere. A body is given by its support function (a callable), or, for
``K_Q``, by the workload or its matrix. The support function of the moment relaxation L of 2-way
marginals is :func:`projmech.bodies.relaxation.relaxation_support`.

How much the relaxation L costs (issue 4; binary attributes)
-------------------------------------------------------------
Write ``s = 2x - 1`` and ``t = (1, s) in {±1}^{d+1}``. Every cell of a 2-way table is
``(1 + a m_i + b m_j + ab R_ij)/4`` (``a, b = ±1``) with ``m = E s``, ``R = E s sᵀ``, so every
direction ``g`` in answer space acts as ``h(g) = sum(g)/4 + max <A(g), X>`` over the body, where
``X = [[1, mᵀ], [m, R]]`` and ``A(g)`` is a symmetric ``(d+1) x (d+1)`` matrix with zero
diagonal (``g -> A(g)`` is linear and onto). In these coordinates ``K_Q`` is the cut polytope
``CUT = conv {t tᵀ}`` and the ``"sdp"`` relaxation is the elliptope ``E = {X ⪰ 0, diag X = 1}``;
``"sdp+local"`` adds the inequalities ``1 ± m_i ± m_j ± R_ij >= 0`` (signs with even parity).

1. ``K_Q ⊆ L`` for all three relaxations, so the error bound of Theorem 8 holds with ``l*(L)``.
2. Widths: for ``"sdp"`` and ``"sdp+local"``, ``l*(L) <= 2 K_G l*(K_Q) < 3.57 l*(K_Q)``.
   Proof: by Grothendieck's inequality, ``max_{X in E} <A, X> <= K_G ||A||_{∞→1}``
   (Grothendieck 1953; ``K_G <= π / (2 ln(1 + √2)) ≈ 1.782``, Krivine 1979); writing
   ``xᵀAy = pᵀAp - qᵀAq`` with ``p = (x+y)/2``, ``q = (x-y)/2 in [-1, 1]^{d+1}`` and using that a
   zero-diagonal quadratic form is maximized over the cube at a vertex,
   ``||A||_{∞→1} <= c(A) + c(-A)`` with ``c(A) = max_t tᵀAt`` (a polarization of the kind
   Alon & Naor 2004 use between the cut norm and ``||·||_{∞→1}``). Since ``sum(g)`` has mean 0
   and ``G`` and ``-G`` have the same law, ``l*(K_Q) = E c(A(G)) = E c(-A(G))``; and
   ``"sdp+local" ⊆ "sdp"``. For ``"local"`` alone there is no such constant: the point
   ``m = 0``, ``R_ij = sign(A_ij)`` is feasible, which gives ``l*(L) >= C(d,2)/√(2π)``, while
   ``l*(K_Q) <= √(2 ln 2^d) · √C(d,2)`` (seed 000, proof of Theorem 4): the ratio grows like
   ``√d`` at least.
3. No uniform sandwich. Seed 002 (slide 15) states the existence of an L with
   ``(1/C)·L ⊆ K_Q ⊆ L`` (the extracted slide text reads ``1 • 10 L ⊆ K_Q ⊆ L``, probably
   ``C = 10``; it does not say which L). Literally, scaling about the origin, this holds for no
   ``C > 1``: every point of ``K_Q`` and of ``L`` has each pair's table summing to 1. About a
   centre ``c``: the centres that work form a convex set invariant under flipping attribute
   values, so if any works, the uniform point (all cells 1/4: ``m = 0``, ``R = I``) does, and
   the sandwich is then ``max_{X in L} <A, X> <= C · c(A)`` for every zero-diagonal ``A``.
   For ``L = E`` the best such ``C`` is the Grothendieck constant of the complete graph on
   ``d+1`` vertices, which is ``Θ(log d)`` (Alon, Makarychev, Makarychev & Naor 2006: the
   maximum integrality gap for the complete graph without loops is ``Θ(log n)``, the lower bound
   improving Kashin & Szarek; upper bounds by Nemirovski–Roos–Terlaky 1999, Megretski 2001,
   Charikar & Wirth 2004). The lower bound holds for ``"sdp+local"`` too: a vector solution
   on ``d`` vertices with ``v_0`` orthogonal to all of them has ``m = 0``, where the local
   inequalities ``1 ± R_ij >= 0`` hold automatically. So ``C = Θ(log d)`` for both SDP
   relaxations: a sandwich with an absolute ``C`` is false, the Gaussian-width comparison (2)
   is what the error analysis needs and what holds. For bipartite bodies the sandwich does
   hold with ``C = K_G``: ``conv {x yᵀ} ⊆ {(<u_i, v_j>)} ⊆ K_G conv {x yᵀ}`` (Grothendieck's
   inequality itself), but ``conv {x yᵀ}`` is strictly larger than ``K_Q``.

Dwork, Nikolov & Talwar (2015, "Efficient algorithms for privately releasing marginals via
convex relaxations", Discrete Comput. Geom. 53; arXiv:1308.1385) build their relaxations for
k-way marginals with Grothendieck's inequality and obtain average error
``Õ(√n d^{⌈k/2⌉/4})``, matching the best known information-theoretic bound for ``k = 2`` (their
abstract); only the abstract could be checked here, not the statement and constant of their
width lemma.

References: Grothendieck (1953), Résumé de la théorie métrique des produits tensoriels
topologiques; Krivine (1979), Constantes de Grothendieck et fonctions de type positif sur les
sphères; Alon & Naor (2004), Approximating the cut-norm via Grothendieck's inequality (STOC);
Charikar & Wirth (2004), Maximizing quadratic programs: extending Grothendieck's inequality
(FOCS); Alon, Makarychev, Makarychev & Naor (2006), Quadratic forms on graphs (Invent. Math.
163); Khot & Naor (2012), Grothendieck-type inequalities in combinatorial optimization (CPAM;
arXiv:1108.2464), §3.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

import numpy as np
import scipy.sparse as sp

from ._sparse import issparse
from .validation import (
    GENERATOR,
    NONNEGATIVE,
    OPEN_UNIT,
    POSITIVE_INT,
    Constraint,
    InstanceOf,
    Integral,
    Interval,
    OrNone,
    Real,
    check_real_array,
    validate_params,
)
from .workloads import Workload, as_query_matrix, column_norm

__all__ = [
    "Support",
    "WidthEstimate",
    "WidthComparison",
    "support_function",
    "finite_set_width_bound",
    "gaussian_width_bound",
    "gaussian_norm_mean",
    "gaussian_width",
    "gaussian_widths",
    "mean_width",
    "mean_widths",
    "gaussian_width_from_mean",
    "mean_width_from_gaussian",
    "compare_widths",
]

#: A support function evaluated on many directions: an ``(s, k)`` array to ``s`` values.
Support = Callable[[np.ndarray], np.ndarray]

#: Which width an estimate is of: ``l*`` (Gaussian directions) or ``M*`` (uniform unit directions).
_WidthKind = Literal["gaussian", "mean"]

#: Entries of the ``directions x columns`` block formed at once by :func:`support_function`.
DEFAULT_BLOCK_ENTRIES = 2**22

#: Below this ``z = k/2`` the ratio ``Γ(z + 1/2) / Γ(z)`` is a quotient of ``math.gamma`` values
#: (each correct to a few ulps; ``Γ`` overflows beyond ``z ≈ 171``); above it, the asymptotic series.
_DIRECT_GAMMA_MAX_Z = 150.0
#: ``ln(Γ(z + 1/2) / Γ(z)) ~ (1/2) ln z + Σ_j a_j z^{-(2j+1)}``, ``a_j`` for ``j = 0..3``: DLMF 5.11.8
#: for ``ln Γ(z + 1/2) - ln Γ(z)``, whose ``n``-th coefficient is ``(2^{-n} - 2) B_{n+1} / (n (n+1))``
#: (``n`` odd; ``B`` the Bernoulli numbers). At ``z >= 150`` the first omitted term is below 1e-22.
_HALF_GAMMA_RATIO_SERIES = (-1 / 8, 1 / 192, -1 / 640, 17 / 14336)


def _query_matrix(workload_or_matrix: Any) -> np.ndarray | sp.csc_array:
    """F as a dense array or a CSC array (column blocks are cheap to slice)."""
    if isinstance(workload_or_matrix, Workload):
        matrix = workload_or_matrix.matrix  # raises for an implicit workload
    else:
        matrix = as_query_matrix(workload_or_matrix, "workload_or_matrix")
    return sp.csc_array(matrix) if issparse(matrix) else np.asarray(matrix, dtype=float)


def _directions(directions: Any, k: int) -> tuple[np.ndarray, bool]:
    G = check_real_array("directions", directions, finite=False)
    single = G.ndim == 1
    if single:
        G = G[None, :]
    if G.ndim != 2 or G.shape[1] != k or G.shape[0] == 0:
        raise ValueError(f"directions: expected shape (s, {k}) or ({k},) (one entry per query), "
                         f"got {np.shape(directions)}")
    if not np.all(np.isfinite(G)):
        raise ValueError("directions: contains NaN or infinite entries")
    return G, single


@validate_params(block_entries=POSITIVE_INT)
def support_function(workload_or_matrix: Any, directions: Any, *,
                     block_entries: int = DEFAULT_BLOCK_ENTRIES) -> np.ndarray | float:
    """The support function of ``K_Q = conv(columns of F)``: ``h(g) = max_u <g, F[:, u]>``.

    Seed 000, Definition 5; the maximum over ``K_Q`` is attained at a column (a vertex), so
    ``h`` is one matrix product ``G F`` followed by a row maximum, computed over blocks of
    columns so that at most about ``block_entries`` products are held at once.

    Parameters
    ----------
    workload_or_matrix : Workload or array_like or scipy.sparse matrix, shape (k, m)
        An explicit workload (an implicit one has no columns to maximize over) or its matrix.
    directions : array_like, shape (s, k) or (k,)
        One direction per row.
    block_entries : int
        Largest ``s x block`` product formed at once (default ``2**22``, 32 MiB).

    Returns
    -------
    ndarray, shape (s,), or float
        ``h_{K_Q}`` of each direction (a float for a 1-d ``directions``).

    Raises
    ------
    ValueError
        For directions of the wrong shape or with NaN/infinite entries, a matrix with NaN, or an
        implicit workload.
    """
    F = _query_matrix(workload_or_matrix)
    k, m = F.shape
    G, single = _directions(directions, k)
    block = max(1, block_entries // G.shape[0])
    best = np.full(G.shape[0], -np.inf)
    for start in range(0, m, block):
        columns = F[:, start:start + block]
        products = (columns.T @ G.T).T if issparse(columns) else G @ columns
        best = np.maximum(best, np.asarray(products).max(axis=1))
    return float(best[0]) if single else best


@validate_params(num_points=POSITIVE_INT, radius=NONNEGATIVE)
def finite_set_width_bound(num_points: int, radius: float) -> float:
    """``l*(conv S) <= √(2 ln |S|) · R`` for a finite set ``S`` of points of norm at most ``R``.

    Seed 000, proof of Theorem 4: for every ``λ > 0``,
    ``l*(conv S) = E max_{y in S} <y, G> <= (1/λ) ln Σ_{y in S} E e^{λ <y, G>}
    <= (1/λ) ln |S| + λ R² / 2``, minimized at ``λ = √(2 ln |S|) / R``. (A single point has width
    0, which the formula gives.)

    Parameters
    ----------
    num_points : int
        ``|S|`` (for ``K_Q``: the number of columns ``m``, or ``|X|``, of which it is at most).
    radius : float
        ``R >= max_{y in S} ||y||_2``; 0 allowed.

    Returns
    -------
    float
    """
    return math.sqrt(2.0 * math.log(num_points)) * radius


def gaussian_width_bound(workload_or_matrix: Any) -> float:
    """The finite-class bound ``l*(K_Q) <= √(2 ln m) · max_u ||F[:, u]||_2`` (seed 000).

    :func:`finite_set_width_bound` with ``S = S_Q`` (the columns), ``|S_Q| <= |X| = m`` and
    ``R = ||F||_{1->2}``, the largest column norm. For queries with values in ``[0, 1]``,
    ``R <= √k``, which gives the stated ``l*(K_Q) <= √(2 k ln |X|)``; for 2-way marginals of binary
    data ``R = √(k/4)``, half of it.

    Parameters
    ----------
    workload_or_matrix : Workload or array_like or scipy.sparse matrix, shape (k, m)
        An implicit workload works too (its column norms come from the Gram matrix).
    """
    if isinstance(workload_or_matrix, Workload):
        radius, m = workload_or_matrix.column_norm(2), workload_or_matrix.universe_size
    else:
        F = as_query_matrix(workload_or_matrix, "workload_or_matrix")
        radius, m = column_norm(F, 2), F.shape[1]
    return finite_set_width_bound(m, radius)


@validate_params(k=POSITIVE_INT)
def gaussian_norm_mean(k: int) -> float:
    """``c_k = E ||G||_2 = √2 Γ((k+1)/2) / Γ(k/2)`` for ``G ~ N(0, I_k)`` (seed 000, §2.3).

    The constant of ``l*(K) = c_k M*(K)``. ``c_1 = √(2/π)``, ``c_2 = √(π/2)``,
    ``c_k c_{k+1} = k``, and ``k / √(k+1) <= c_k <= √k`` (so ``c_k = √k (1 - 1/(4k) + O(k^-2))``).

    For ``k <= 300`` the gamma functions are evaluated directly; beyond, where they overflow, the
    ratio comes from its asymptotic series in ``log`` form (DLMF 5.11.8), so ``c_k`` is accurate
    to a few ulps for every ``k`` (checked against 40-digit arithmetic up to ``k = 10^9`` in the
    tests). A difference of ``scipy.special.gammaln`` values would avoid the overflow too, but
    loses ``ln Γ(k/2) · 2^-52`` absolutely: about 2e-9 relative at ``k = 10^7``.

    Parameters
    ----------
    k : int
        The dimension, at least 1.

    Returns
    -------
    float
    """
    z = k / 2
    if z <= _DIRECT_GAMMA_MAX_Z:
        ratio = math.gamma(z + 0.5) / math.gamma(z)
    else:
        inverse = 1.0 / z
        correction = sum(a * inverse ** (2 * j + 1) for j, a in enumerate(_HALF_GAMMA_RATIO_SERIES))
        ratio = math.sqrt(z) * math.exp(correction)
    return math.sqrt(2.0) * ratio


@dataclass(frozen=True)
class WidthEstimate:
    """A Monte Carlo estimate of ``l*(K) = E h_K(G)`` or ``M*(K) = E h_K(U)`` (seed 000, Defs 6–7).

    Attributes
    ----------
    estimate : float
        The sample mean of ``h_K`` over the draws.
    standard_error : float
        ``std(values, ddof=1) / √samples``.
    low, high : float
        Student-t confidence interval for the width at level ``confidence``.
    samples : int
    confidence : float
    values : ndarray, shape (samples,)
        The per-draw values (kept for paired comparisons): ``h_K(g_i)`` or ``h_K(u_i)``, or, after
        a conversion, those times the constant.
    draws : str
        A digest of the Gaussian draws ``g_i`` (``u_i = g_i / ||g_i||`` for the mean width): two
        estimates with equal ``draws`` used the same directions, which :func:`compare_widths`
        requires.
    kind : {"gaussian", "mean"}
        Which width: ``l*`` (Gaussian directions) or ``M*`` (uniform unit directions).
    """

    estimate: float
    standard_error: float
    low: float
    high: float
    samples: int
    confidence: float
    values: np.ndarray
    draws: str
    kind: _WidthKind = "gaussian"

    @property
    def half_width(self) -> float:
        """Half the length of the confidence interval."""
        return (self.high - self.low) / 2

    def summary(self) -> dict[str, Any]:
        return {"width": self.kind, "estimate": self.estimate, "standard_error": self.standard_error,
                "ci_low": self.low, "ci_high": self.high, "samples": self.samples, "confidence": self.confidence}


@dataclass(frozen=True)
class WidthComparison:
    """Paired comparison of two widths estimated on the same Gaussian draws.

    ``ratio = l*(A) / l*(B)`` (ratio of the sample means; interval by the delta method on the
    paired values, ``z_i = (a_i - ratio b_i) / mean(b)``) and ``difference = l*(A) - l*(B)``
    (interval on the paired differences ``a_i - b_i``); the same with ``M*`` for two mean-width
    estimates. Pairing removes the variance the two bodies share, so these intervals are much
    tighter than combining two independent ones.

    Attributes
    ----------
    ratio, ratio_standard_error, ratio_low, ratio_high : float
    difference, difference_standard_error, difference_low, difference_high : float
    correlation : float
        Sample correlation of the paired support values.
    samples : int
    confidence : float
    """

    ratio: float
    ratio_standard_error: float
    ratio_low: float
    ratio_high: float
    difference: float
    difference_standard_error: float
    difference_low: float
    difference_high: float
    correlation: float
    samples: int
    confidence: float

    def summary(self) -> dict[str, Any]:
        return {"ratio": self.ratio, "ratio_ci_low": self.ratio_low, "ratio_ci_high": self.ratio_high,
                "difference": self.difference, "difference_ci_low": self.difference_low,
                "difference_ci_high": self.difference_high, "correlation": self.correlation,
                "samples": self.samples, "confidence": self.confidence}


def t_quantile(samples: int, confidence: float) -> float:
    """The Student-t quantile that makes ``mean ± quantile * standard error`` a two-sided
    interval at level ``confidence`` from ``samples`` values (``samples - 1`` degrees of freedom)."""
    from scipy import stats  # imported where needed: half a second at import

    return float(stats.t.ppf(0.5 + confidence / 2, samples - 1))


def _estimate(values: np.ndarray, confidence: float, draws: str, kind: _WidthKind) -> WidthEstimate:
    samples = values.size
    mean = float(values.mean())
    error = float(values.std(ddof=1) / math.sqrt(samples))
    half = t_quantile(samples, confidence) * error
    return WidthEstimate(estimate=mean, standard_error=error, low=mean - half, high=mean + half,
                         samples=samples, confidence=confidence, values=values, draws=draws, kind=kind)


def _as_support(name: str, body: Any, dimension: int) -> Support:
    """A support function: ``body`` itself if callable, else that of ``K_Q`` for a workload/matrix."""
    if callable(body):
        return body
    if isinstance(body, (Workload, np.ndarray, list, tuple)) or issparse(body):
        try:
            F = _query_matrix(body)
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from None
        if F.shape[0] != dimension:
            raise ValueError(f"{name}: K_Q lives in R^{F.shape[0]} (one coordinate per query), "
                             f"but dimension is {dimension}")
        # An array for the (samples, k) directions it is called with.
        return lambda G: cast(np.ndarray, support_function(F, G))
    raise TypeError(f"{name}: expected a callable (directions -> values), a Workload or a query matrix, "
                    f"got {type(body).__name__}")


#: The arguments of the four Monte Carlo width estimators (at least 2 samples for an interval).
_WIDTH_PARAMETERS: dict[str, Constraint] = dict(
    dimension=POSITIVE_INT,
    samples=Interval(Integral, 2, None, reason="a confidence interval"),
    rng=GENERATOR,
    confidence=OPEN_UNIT,
)


def _sample_widths(supports: Mapping[str, Any], dimension: int, samples: int, rng: np.random.Generator,
                   confidence: float, kind: _WidthKind) -> dict[str, WidthEstimate]:
    """The Monte Carlo machinery shared by :func:`gaussian_widths` and :func:`mean_widths`, on
    arguments they checked."""
    if not isinstance(supports, Mapping) or not supports:
        raise ValueError("supports: expected a non-empty mapping of names to support functions")
    functions = {name: _as_support(f"supports[{name!r}]", body, dimension) for name, body in supports.items()}
    G = rng.standard_normal((samples, dimension))
    draws = hashlib.sha256(np.asarray(G.shape).tobytes() + G.tobytes()).hexdigest()[:16]
    # G / ||G|| is uniform on the sphere (the Gaussian is rotation invariant); a zero row has
    # probability 0. Evaluating h on unit vectors, rather than dividing h(G) by ||G||, keeps the
    # estimator the definition even for a support callable that is only approximately homogeneous.
    directions = G if kind == "gaussian" else G / np.linalg.norm(G, axis=1, keepdims=True)
    estimates = {}
    for name, support in functions.items():
        values = np.asarray(support(directions), dtype=float)
        if values.shape != (samples,):
            raise ValueError(f"supports[{name!r}]: returned shape {values.shape} for {samples} directions, "
                             f"expected ({samples},)")
        if not np.all(np.isfinite(values)):
            raise ValueError(f"supports[{name!r}]: returned NaN or infinite values")
        estimates[name] = _estimate(values.copy(), confidence, draws, kind)
    return estimates


@validate_params(**_WIDTH_PARAMETERS)
def gaussian_widths(
    supports: Mapping[str, Support | Any],
    dimension: int,
    samples: int,
    rng: np.random.Generator,
    *,
    confidence: float = 0.95,
) -> dict[str, WidthEstimate]:
    """Monte Carlo Gaussian widths ``l*(K) = E h_K(G)`` of several bodies on common draws.

    Draws ``samples`` directions ``g_i ~ N(0, I_dimension)`` once (from ``rng`` only) and
    evaluates every support function on all of them, so the estimates are paired (common random
    numbers): :func:`compare_widths` then gives their ratio and difference with tight intervals.

    Parameters
    ----------
    supports : mapping of str to callable, Workload or matrix
        Each callable maps an ``(samples, dimension)`` array of directions to ``samples`` finite
        values ``h_K(g_i)``, e.g. ``lambda G: relaxation_support(domain, G).values``; an
        explicit Workload or a ``(dimension, m)`` query matrix stands for ``K_Q`` (its support is
        :func:`support_function`).
    dimension : int
        ``k``, the dimension of the space the bodies live in.
    samples : int
        At least 2 (for an interval).
    rng : numpy.random.Generator
        The only source of randomness.
    confidence : float
        Level of the Student-t intervals (default 0.95).

    Returns
    -------
    dict of str to WidthEstimate
        In the order of ``supports``, with ``kind="gaussian"``.

    Raises
    ------
    TypeError
        For a support that is neither callable nor a workload/matrix, non-integer
        ``dimension``/``samples``, or an ``rng`` that is not a ``numpy.random.Generator``.
    ValueError
        For ``dimension < 1``, ``samples < 2``, ``confidence`` outside (0, 1), no supports, a
        matrix with a number of rows other than ``dimension``, or a support returning the wrong
        shape or NaN/infinite values.
    """
    return _sample_widths(supports, dimension, samples, rng, confidence, "gaussian")


@validate_params(**_WIDTH_PARAMETERS)
def gaussian_width(
    support: Support | Any,
    dimension: int,
    samples: int,
    rng: np.random.Generator,
    *,
    confidence: float = 0.95,
) -> WidthEstimate:
    """Monte Carlo estimate of one Gaussian width ``l*(K) = E h_K(G)``, ``G ~ N(0, I_dimension)``.

    See :func:`gaussian_widths` (one body); e.g. for ``K_Q`` of a workload ``F``:
    ``gaussian_width(F, F.shape[0], 4000, rng)``, the same as
    ``gaussian_width(lambda G: support_function(F, G), F.shape[0], 4000, rng)``.
    """
    return _sample_widths({"support": support}, dimension, samples, rng, confidence, "gaussian")["support"]


@validate_params(**_WIDTH_PARAMETERS)
def mean_widths(
    supports: Mapping[str, Support | Any],
    dimension: int,
    samples: int,
    rng: np.random.Generator,
    *,
    confidence: float = 0.95,
) -> dict[str, WidthEstimate]:
    """Monte Carlo mean widths ``M*(K) = E h_K(U)`` of several bodies on common draws.

    ``U`` is uniform on the unit sphere of ``R^dimension`` (seed 000, Definition 6; half the
    classical mean width, see the module docstring). The directions are ``u_i = g_i / ||g_i||``
    for Gaussian ``g_i`` drawn exactly as in :func:`gaussian_widths` (same ``rng`` state, same
    ``draws``), and everything else (arguments, intervals, errors) is as there. The estimates
    have ``kind="mean"``; ``l*(K) = c_k M*(K)`` (:func:`gaussian_width_from_mean`).
    """
    return _sample_widths(supports, dimension, samples, rng, confidence, "mean")


@validate_params(**_WIDTH_PARAMETERS)
def mean_width(
    support: Support | Any,
    dimension: int,
    samples: int,
    rng: np.random.Generator,
    *,
    confidence: float = 0.95,
) -> WidthEstimate:
    """Monte Carlo estimate of one mean width ``M*(K) = E h_K(U)``, ``U`` uniform on the sphere.

    See :func:`mean_widths` (one body); e.g. ``mean_width(F, F.shape[0], 4000, rng)`` for ``K_Q``.
    """
    return _sample_widths({"support": support}, dimension, samples, rng, confidence, "mean")["support"]


_Width = TypeVar("_Width", float, WidthEstimate)


def _scale_width(width: Any, factor: float, source: _WidthKind, target: _WidthKind, name: str) -> Any:
    if isinstance(width, WidthEstimate):
        if width.kind != source:
            raise ValueError(f"{name}: expected an estimate of the {source} width, got one of the {width.kind} width")
        # A constant factor scales the mean, its standard error and the interval alike.
        return dataclasses.replace(width, estimate=width.estimate * factor,
                                   standard_error=width.standard_error * factor, low=width.low * factor,
                                   high=width.high * factor, values=width.values * factor, kind=target)
    return Interval(Real, None, None).check(name, width) * factor


def gaussian_width_from_mean(mean_width: _Width, k: int) -> _Width:
    """``l*(K) = c_k M*(K)`` (seed 000, §2.3), for a number or a mean-width estimate.

    Parameters
    ----------
    mean_width : float or WidthEstimate
        ``M*(K)``; an estimate must have ``kind="mean"``, and its interval is scaled with it.
    k : int
        The dimension of the space ``K`` lives in.

    Returns
    -------
    float or WidthEstimate
        The same type as ``mean_width`` (an estimate with ``kind="gaussian"``).
    """
    return _scale_width(mean_width, gaussian_norm_mean(k), "mean", "gaussian", "mean_width")


def mean_width_from_gaussian(gaussian_width: _Width, k: int) -> _Width:
    """``M*(K) = l*(K) / c_k`` (seed 000, §2.3): the inverse of :func:`gaussian_width_from_mean`."""
    return _scale_width(gaussian_width, 1.0 / gaussian_norm_mean(k), "gaussian", "mean", "gaussian_width")


@validate_params(numerator=InstanceOf(WidthEstimate), denominator=InstanceOf(WidthEstimate),
                 confidence=OrNone(OPEN_UNIT))
def compare_widths(numerator: WidthEstimate, denominator: WidthEstimate, *,
                   confidence: float | None = None) -> WidthComparison:
    """Paired ratio and difference of two widths estimated on the same draws.

    Parameters
    ----------
    numerator, denominator : WidthEstimate
        From one :func:`gaussian_widths` (or one :func:`mean_widths`) call: equal ``draws`` and
        ``kind``.
    confidence : float, optional
        Level of the intervals; default the estimates' own.

    Raises
    ------
    TypeError
        If either is not a :class:`WidthEstimate`.
    ValueError
        If they were not computed on the same directions, are widths of different kinds, or the
        denominator's width is not positive (a ratio needs ``l*(B) > 0``).
    """
    if numerator.draws != denominator.draws or numerator.samples != denominator.samples:
        raise ValueError("numerator, denominator: not estimated on the same Gaussian directions "
                         "(estimate both in one gaussian_widths call)")
    if numerator.kind != denominator.kind:
        raise ValueError(f"numerator, denominator: a {numerator.kind} width and a {denominator.kind} width; "
                         "convert one first (gaussian_width_from_mean, mean_width_from_gaussian)")
    if not denominator.estimate > 0:
        raise ValueError(f"denominator: its width estimate {denominator.estimate:g} is not positive; "
                         "the ratio is undefined")
    confidence = numerator.confidence if confidence is None else confidence
    a, b = numerator.values, denominator.values
    n = a.size
    quantile = t_quantile(n, confidence)
    ratio = numerator.estimate / denominator.estimate
    ratio_error = float(((a - ratio * b) / denominator.estimate).std(ddof=1) / math.sqrt(n))
    difference = a - b
    difference_mean = float(difference.mean())
    difference_error = float(difference.std(ddof=1) / math.sqrt(n))
    spread = a.std() * b.std()
    correlation = float(np.mean((a - a.mean()) * (b - b.mean())) / spread) if spread > 0 else math.nan
    return WidthComparison(
        ratio=ratio,
        ratio_standard_error=ratio_error,
        ratio_low=ratio - quantile * ratio_error,
        ratio_high=ratio + quantile * ratio_error,
        difference=difference_mean,
        difference_standard_error=difference_error,
        difference_low=difference_mean - quantile * difference_error,
        difference_high=difference_mean + quantile * difference_error,
        correlation=correlation,
        samples=n,
        confidence=confidence,
    )
