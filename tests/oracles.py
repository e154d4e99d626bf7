"""Independent oracles shared by several test files: import them with ``from oracles import ...``
(``tests`` is on the import path: ``pythonpath`` in ``pyproject.toml``).

Each computes its value without the code under test (closed forms, quadrature, brute force,
a direct CVXPY model, dp-accounting), so a test that compares the library with one of them
checks the library and nothing else. Heavy dependencies are imported inside the functions that
need them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

#: Two threshold queries (the textbook two-threshold example): K_Q is the triangle {0 <= a1 <= a2 <= 1}.
THRESHOLD_F = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])

#: A small dense workload with unequal columns: l2 column norms sqrt(2), sqrt(5), sqrt(0.5), sqrt(0.14)
#: and l1 column norms 2, 3, 1, 0.6, so only the largest column sets the sensitivity.
F_SMALL = np.array([[1.0, 0.0, 0.5, 0.2], [0.0, 2.0, 0.5, 0.1], [1.0, 1.0, 0.0, 0.3]])
#: A normalized histogram over the four columns of :data:`F_SMALL`, and its true answers.
H_SMALL = np.array([0.1, 0.2, 0.3, 0.4])
TRUTH_SMALL = F_SMALL @ H_SMALL


# --- geometry: bodies, projections, widths ----------------------------------------------------

def cube_vertices(k: int) -> np.ndarray:
    """The 2^k vertices of [0, 1]^k as the columns of a k x 2^k matrix."""
    return np.array(list(itertools.product([0.0, 1.0], repeat=k))).T


def expected_max_of_gaussians(k: int) -> float:
    """E max_i g_i for k independent standard normals: ∫ x k φ(x) Φ(x)^(k-1) dx, by quadrature."""
    from scipy import integrate, stats

    value, error = integrate.quad(lambda x: x * k * stats.norm.pdf(x) * stats.norm.cdf(x) ** (k - 1),
                                  -np.inf, np.inf, epsabs=1e-12)
    assert error < 1e-9
    return value


def project_simplex(X: np.ndarray) -> np.ndarray:
    """Onto the probability simplex, a vector or each row of a matrix: sort, find the threshold θ
    with sum max(x - θ, 0) = 1 (Held, Wolfe & Crowder 1974; Duchi et al. 2008)."""
    X = np.asarray(X)
    rows = np.atleast_2d(X)
    U = -np.sort(-rows, axis=1)
    cumulative = np.cumsum(U, axis=1) - 1
    j = np.arange(1, rows.shape[1] + 1)
    rho = (U - cumulative / j > 0).sum(axis=1)  # the condition holds for j = 1..rho exactly
    theta = cumulative[np.arange(rows.shape[0]), rho - 1] / rho
    return np.maximum(rows - theta[:, None], 0.0).reshape(X.shape)


def brute_force_projection(F: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Projection onto conv(columns of F) by enumerating affinely independent supports.

    Returns ``(point, weights, distance)``. Exact up to floating-point rounding; meant for m <= 6.
    """
    k, m = F.shape
    best: tuple[np.ndarray, np.ndarray, float] | None = None
    for size in range(1, min(m, k + 1) + 1):
        for support in itertools.combinations(range(m), size):
            columns = F[:, support]
            base = columns[:, 0]
            if size == 1:
                coefficients = np.ones(1)
            else:
                directions = columns[:, 1:] - base[:, None]
                if np.linalg.matrix_rank(directions) < size - 1:
                    continue  # affinely dependent: covered by a smaller support (Caratheodory)
                t = np.linalg.lstsq(directions, y - base, rcond=None)[0]
                coefficients = np.concatenate([[1.0 - t.sum()], t])
            if coefficients.min() < -1e-12:
                continue
            coefficients = np.clip(coefficients, 0.0, None)
            coefficients /= coefficients.sum()
            point = columns @ coefficients
            distance = float(np.linalg.norm(point - y))
            if best is None or distance < best[2]:
                weights = np.zeros(m)
                weights[list(support)] = coefficients
                best = (point, weights, distance)
    assert best is not None
    return best


def simplex_dual_bound(F: np.ndarray, y: np.ndarray, r: np.ndarray) -> float:
    """A lower bound on ``min (1/2)||F w - y||^2`` over the simplex from any residual guess ``r``
    (weak duality): ``(1/2)||z||^2 >= r.z - (1/2)||r||^2`` for every ``z``, so the optimum is at
    least ``min_i (F^T r)_i - r.y - (1/2)||r||^2``, with equality at the optimal residual."""
    return float(np.min(F.T @ r) - r @ y - 0.5 * (r @ r))


def reference_projection(F: Any, y: np.ndarray) -> tuple[float, np.ndarray]:
    """``min (1/2)||F w - y||^2`` over the simplex by Clarabel on a direct CVXPY model: a certified
    lower bound on the optimum and the projected point.

    Clarabel is asked for tolerances of 1e-13, but neither its status nor its tolerances are taken
    at its word (what it reaches can depend on the CPU): the bound is :func:`simplex_dual_bound` at
    the residual of Clarabel's point and at those of its support polished by least squares (the
    projection onto the support's affine hull: exact where the support is the optimal face's),
    the best of them. The point is Clarabel's, clipped to the simplex, or the polished one where
    its weights are a distribution and it is nearer. The two are checked to certify each other
    within 1e-11 (relative, absolute below 1): the optimum is that close to the bound, and the
    point within ``sqrt(2e-11)`` of the projection."""
    import cvxpy as cp

    dense = F.toarray() if sp.issparse(F) else np.asarray(F, dtype=float)
    w = cp.Variable(dense.shape[1], nonneg=True)
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(dense @ w - y)), [cp.sum(w) == 1])
    try:
        problem.solve(solver="CLARABEL", tol_gap_abs=1e-13, tol_gap_rel=1e-13, tol_feas=1e-13, max_iter=500)
    except cp.error.SolverError as error:
        pytest.skip(f"the reference solve by Clarabel failed: {error}")
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        pytest.skip(f"the reference solve by Clarabel ended {problem.status}")
    weights = np.clip(np.asarray(w.value, dtype=float), 0.0, None)
    weights /= weights.sum()
    point = dense @ weights
    upper = 0.5 * float(np.sum((point - y) ** 2))
    lower = simplex_dual_bound(dense, y, point - y)
    for threshold in (1e-3, 1e-5, 1e-7, 1e-9):
        support = np.flatnonzero(weights > threshold * weights.max())
        base = dense[:, support[0]]
        directions = dense[:, support[1:]] - base[:, None]
        t = np.linalg.lstsq(directions, y - base, rcond=None)[0]
        polished = base + directions @ t
        lower = max(lower, simplex_dual_bound(dense, y, polished - y))
        objective = 0.5 * float(np.sum((polished - y) ** 2))
        if t.min(initial=0.0) >= 0.0 and t.sum() <= 1.0 and objective < upper:
            point, upper = polished, objective
    assert upper - lower <= 1e-11 * max(upper, 1.0), (
        f"the reference is certified only to {upper - lower:.1e} (Clarabel: {problem.status})")
    return max(lower, 0.0), point


# --- a third-party solver's answer, at the accuracy it reports ----------------------------------

#: The relative accuracy each of Clarabel's statuses vouches for at its default settings:
#: ``optimal`` meets its tolerances (duality gap and residuals 1e-8), ``optimal_inaccurate``
#: (AlmostSolved) only its reduced ones (gap 5e-5, residuals 1e-4). Which of the two a semidefinite
#: problem ends in depends on the CPU: Clarabel computes its PSD cones with SciPy's BLAS and
#: LAPACK, whose kernels OpenBLAS picks by CPU, and its last steps to 1e-8 are as ill-conditioned
#: as double precision allows (one projection onto L ends ``optimal`` with the SkylakeX kernels
#: and ``optimal_inaccurate`` with the Haswell ones, 7e-10 apart). A reference is compared at the
#: accuracy its own status reports.
CLARABEL_ACCURACY = {"optimal": 1e-8, "optimal_inaccurate": 1e-4}


def clarabel_solve(problem: Any) -> float:
    """Solve the CVXPY ``problem`` by Clarabel at its default settings; return the relative accuracy
    its status vouches for (:data:`CLARABEL_ACCURACY`). A solve without a solution skips the test,
    the solver's status as its reason."""
    import warnings

    import cvxpy as cp

    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            problem.solve(solver="CLARABEL")
    except cp.error.SolverError as error:
        pytest.skip(f"the reference solve by Clarabel failed: {error}")
    if problem.status not in CLARABEL_ACCURACY:
        pytest.skip(f"the reference solve by Clarabel ended {problem.status}")
    return CLARABEL_ACCURACY[problem.status]


Solved = TypeVar("Solved")


def unless_inaccurate(solve: Callable[..., Solved], *args: Any, **kwargs: Any) -> Solved:
    """``solve(*args, **kwargs)``: a projmech function run on a CVXPY solver by name, where that
    solver is what the test exercises. If it refuses the solve only because the solver ended
    ``optimal_inaccurate`` (which a semidefinite problem can, on one CPU and not another:
    :data:`CLARABEL_ACCURACY`), the test is skipped with that status as its reason."""
    from projmech.solve import SolveError, Status

    try:
        return solve(*args, **kwargs)
    except SolveError as error:
        if error.attempts and all(attempt.status is Status.OPTIMAL_INACCURATE for attempt in error.attempts):
            pytest.skip(f"the solver ended optimal_inaccurate: {error}")
        raise


def point_room(accuracy: float, seen: float) -> float:
    """How far a reference point may lie from the optimum (at scale 1): ``seen``, what Clarabel's
    points were measured to reach where it meets its tolerances, or where its status reports less,
    the strong-convexity bound ``sqrt(2 accuracy)``."""
    return seen if accuracy <= CLARABEL_ACCURACY["optimal"] else max(seen, math.sqrt(2 * accuracy))


def relaxation_reference(domain: Any, y: np.ndarray, relaxation: str = "sdp+local",
                         encoding: str = "auto") -> tuple[np.ndarray, float, float]:
    """The projection of ``y`` onto the relaxation L by Clarabel on the CVXPY model of L (the
    model's definition, not the solvers of :func:`~projmech.bodies.project_to_relaxation`):
    ``(answers, distance, accuracy)``, the distance known to the relative ``accuracy`` of
    :func:`clarabel_solve`."""
    import cvxpy as cp

    from projmech.bodies._relaxation import MomentEncoding, _cvxpy_body

    model = MomentEncoding.of(domain, encoding)
    body = _cvxpy_body(model, relaxation)
    problem = cp.Problem(cp.Minimize(cp.norm(body.answers - y, 2)), body.constraints)
    accuracy = clarabel_solve(problem)
    answers = np.asarray(body.answers.value, dtype=float)
    return answers, float(problem.value), accuracy


# --- marginals ---------------------------------------------------------------------------------

def brute_marginals(attributes: Sequence[Any], sizes: Sequence[int], way: int) -> tuple[np.ndarray, list[str]]:
    """Rows and labels of all way-way marginal queries by explicit loops, from the definition:
    query (S, cell) is 1 on the elements whose values on S are the cell (row-major universe)."""
    elements = list(itertools.product(*(range(s) for s in sizes)))
    rows, labels = [], []
    for subset in itertools.combinations(range(len(sizes)), way):
        for cell in itertools.product(*(range(sizes[i]) for i in subset)):
            rows.append([1.0 if all(u[i] == v for i, v in zip(subset, cell)) else 0.0 for u in elements])
            labels.append(" & ".join(f"{attributes[i]}={v}" for i, v in zip(subset, cell)))
    return np.array(rows), labels


def marginal_truth(columns: Mapping[str, Any], labels: Iterable[str], *, normalize: bool = True) -> np.ndarray:
    """The fraction of rows matching each label ``"x=i & y=j"`` (their number with
    ``normalize=False``), evaluated row by row. ``columns`` maps each attribute to its column of
    values: a DataFrame, or ``dict(zip(attributes, records.T))``."""
    values = []
    for label in labels:
        mask = None
        for term in label.split(" & "):
            name, value = term.split("=")
            match = np.asarray(columns[name]) == int(value)
            mask = match if mask is None else mask & match
        values.append(mask.mean() if normalize else mask.sum())
    return np.array(values, dtype=float)


# --- privacy ------------------------------------------------------------------------------------

def oracle_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """dp-accounting's smallest sigma, computed at a scale where its 1e-7 absolute bisection
    tolerance is negligible, then rescaled (the profile depends on sigma/Delta only)."""
    plm = pytest.importorskip("dp_accounting.pld.privacy_loss_mechanism")
    common = pytest.importorskip("dp_accounting.pld.common")
    guarantee = common.DifferentialPrivacyParameters(epsilon, delta)
    scale = 1e3 / sensitivity
    loss = plm.GaussianPrivacyLoss.from_privacy_guarantee(guarantee, sensitivity=sensitivity * scale)
    return loss.standard_deviation / scale


def laplace_difference_tail(z: float, b: float) -> float:
    """``Pr[N1 - N2 > z]`` for independent ``Lap(b)``, ``z >= 0`` (the density of the difference
    is ``(1/(4b)) (1 + |u|/b) e^{-|u|/b}``)."""
    return 0.5 * math.exp(-z / b) * (1 + z / (2 * b))


# --- the discrete Laplace, in closed form -----------------------------------------------------

def discrete_laplace_pmf(b: float, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """The discrete Laplace of scale ``b`` on ``-bound..bound``: ``(1 - q) / (1 + q) q^|x|``,
    ``q = e^{-1/b}`` (the mass beyond ``bound`` is left out)."""
    q = math.exp(-1.0 / b)
    support = np.arange(-bound, bound + 1)
    return support, (1 - q) / (1 + q) * q ** np.abs(support).astype(float)


def discrete_difference_tail(z: float, b: float) -> float:
    """``Pr[Z_1 - Z_0 >= z]`` for independent discrete Laplace ``Z_0, Z_1`` of scale ``b``:
    ``Pr[D >= ceil(z)]``, ``D`` an integer, from the convolution of the pmfs."""
    support, pmf = discrete_laplace_pmf(b, int(60 * b) + 10)
    difference = np.convolve(pmf, pmf[::-1])  # on -2 bound .. 2 bound
    values = np.arange(-2 * support[-1], 2 * support[-1] + 1)
    return float(difference[values >= math.ceil(z)].sum())


def chi_square_pvalue(draws: np.ndarray, b: float, bound: int) -> float:
    """Chi-square test of integer draws against the discrete Laplace of scale ``b``: one cell per
    value in ``-bound..bound``, one for each tail."""
    support, pmf = discrete_laplace_pmf(b, bound)
    tail = (1.0 - pmf.sum()) / 2.0
    observed = [np.sum(draws < -bound), *[np.sum(draws == value) for value in support], np.sum(draws > bound)]
    expected = draws.size * np.array([tail, *pmf, tail])
    return float(stats.chisquare(observed, expected).pvalue)


def summing_matrix(attributes: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
    """The 0/1 matrix summing a vector over the universe (row-major) onto the table of ``attributes``:
    the universe is the table of every attribute (:func:`marginal_matrix`)."""
    return marginal_matrix(list(sizes), list(range(len(sizes))), list(attributes))


def universe_least_squares(measurements: Sequence[Any], sizes: Sequence[int]) -> np.ndarray:
    """The least-norm vector over the universe, summing to 1, minimizing
    ``sum_i ||Q_i M_i x - y_i||^2 / sigma_i^2`` (``M_i`` summing onto measurement i's table), by a
    dense KKT system: the tables it sums to are the measurements' least-squares tables."""
    rows, values = [], []
    for m in measurements:
        cells = math.prod(sizes[a] for a in m.attributes)
        query = np.eye(cells) if m.query is None else (m.query.toarray() if hasattr(m.query, "toarray") else m.query)
        rows.append(query @ summing_matrix(m.attributes, sizes) / m.sigma)
        values.append(np.asarray(m.values) / m.sigma)
    design, target = np.vstack(rows), np.concatenate(values)
    m = design.shape[1]
    kkt = np.block([[design.T @ design, np.ones((m, 1))], [np.ones((1, m)), np.zeros((1, 1))]])
    return np.linalg.lstsq(kkt, np.concatenate([design.T @ target, [1.0]]), rcond=None)[0][:m]


def helmert_contrasts(n: int) -> np.ndarray:
    """The ``(n - 1) x n`` Helmert contrasts written out: orthonormal rows orthogonal to the ones vector."""
    rows = np.zeros((n - 1, n))
    for j in range(1, n):
        rows[j - 1, :j], rows[j - 1, j] = 1.0, -float(j)
        rows[j - 1] /= math.sqrt(j * (j + 1))
    return rows


def marginal_tables_workload(sizes: Sequence[int], subsets: Sequence[Sequence[int]],
                             weights: Sequence[float] | None = None) -> Any:
    """A stack of marginal tables on ``subsets`` (Kronecker products of identities and totals
    over attributes of ``sizes``), the table of ``subsets[i]`` scaled by ``weights[i]``."""
    import projmech as pm
    from projmech.workloads import identity, kron, stack, total

    weights = list(weights) if weights is not None else [1.0] * len(subsets)
    parts = []
    for subset, weight in zip(subsets, weights):
        factors = [identity(size) if a in subset else total(size) for a, size in enumerate(sizes)]
        first = next(iter(subset))
        factors[first] = pm.Workload(weight * np.eye(sizes[first]))
        parts.append(kron(factors))
    return stack(parts)


def marginal_matrix(shape, attributes, kept):
    """The 0/1 matrix summing a table of ``attributes`` (row-major, ``shape``) onto ``kept``."""
    keep_axes = [attributes.index(a) for a in kept]
    kept_shape = [shape[axis] for axis in keep_axes]
    matrix = np.zeros((int(np.prod(kept_shape)), int(np.prod(shape))))
    for flat, cell in enumerate(itertools.product(*(range(n) for n in shape))):
        matrix[np.ravel_multi_index([cell[axis] for axis in keep_axes], kept_shape), flat] = 1.0
    return matrix
