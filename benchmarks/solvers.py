"""Benchmark the solvers behind ``project_to_hull`` on noisy answers.

Three parts (``--parts``, default ``small,scaling``):

``small``
    Every requested solver (the CVXPY ones and ``"fast"``, ``--solvers``) on the same noisy
    point ``y`` of two families of small projection problems, at the library's tolerance
    ``--tol``:

    * ``marginals d=D``: all 2-way marginals over ``D`` binary attributes (``k = 4 C(D, 2)``,
      ``m = 2^D``), true answers from a synthetic data set of ``--rows`` rows over ``{0,1}^D``
      (independent attributes with seeded random biases), plus Gaussian noise calibrated for
      ``ApproxDP(--epsilon, --delta)`` at that ``n`` (replace-one neighbours);
    * ``random KxM``: ``random_queries(K, M)`` (0/1 entries) on a random histogram of ``--rows``
      rows over ``M`` cells, with Gaussian noise calibrated the same way.

    Per solver: median wall time over ``--repeats`` runs (``solve_time``: model building and
    solve, as reported by ``project_to_hull``; ``total``: the whole call, certification
    included), the projected distance, the certified Frank–Wolfe gap, the raw feasibility error
    of the solver's own output, and the objective's relative difference to the best objective
    reached on that problem. A solver that yields no certified projection is a row with status
    ``failed: <reason>``.

``scaling``
    End-to-end time to the same objective against ``d`` (``--scaling-dims``, default 8 … 20):
    all 2-way marginals of ``--scaling-rows`` rows (default 50,000) from the generator of the
    ``small`` part, one noisy point per ``d`` (the Gaussian mechanism's), solved by

    * ``fast``: ``project_to_hull(implicit workload, y, solver="fast", noise_scale=sigma,
      tol=1e-6)``, certified to 1e-6 relative;
    * ``fast-default``: the same at the σ-tied default tolerance (``tol=None``, i.e. 1e-4 of
      ``(k/2) sigma^2``), for its error against the true marginals;
    * ``CLARABEL``, ``ECOS``, ``OSQP``, ``SCS``: ``project_to_hull`` on the explicit sparse
      matrix ``marginals(domain, 2)`` (built before the clock starts: an input) with the
      library's tight solver options, their output accepted whatever its gap and judged below;
      up to ``--cvxpy-max-d``, and a solver is dropped at larger ``d`` once it took more than
      ``--cvxpy-time-limit`` seconds;
    * ``mbi``: Private-PGM's exact ``MirrorDescent`` (1000 iterations, its default; the helpers of
      ``relaxation.py``), optional: skipped with a note when ``mbi`` cannot be imported, and
      beyond ``--mbi-max-d`` (its single clique is the whole ``2^d`` universe).

    Every (method, ``d``) runs in a fresh worker process (this script with ``--worker``), so
    its peak resident memory can be read from the kernel; all workers rebuild the same seeded
    problem and the script checks that they saw the same ``y``. Reported per method: median
    time of the whole call over ``--repeats`` (and the first call's, which includes JAX's
    compilation for mbi), objective ``(1/2)||answers - y||^2``, its relative difference to the
    best certified lower bound on the optimum (the largest ``objective - gap`` of a
    ``project_to_hull`` result), whether that is within 1e-6, RMSE against the true marginals
    and peak memory. Targets of the issue, printed PASS/FAIL: at ``d = 16`` the fast solver at
    least 20 times faster than the fastest CVXPY solver and within 0.5 s; at ``d = 20`` within
    20 s and 2 GB of peak memory.

``auto``
    The measurements behind the cost model of ``body="auto"`` and ``solver="auto"``
    (:mod:`projmech.bodies._cost`), and ``auto`` judged by them. On each problem of
    ``--auto-problems`` (default :data:`AUTO_PROBLEMS`: marginals of binary and categorical
    tables, 2- and 3-way, from records of a chain Bayesian network; random 0/1 queries; prefix
    and all-range), with ``--auto-rows`` records and the Gaussian mechanism's noise: the whole
    call of each modelled choice (``fast`` on the implicit workload, Clarabel and SCS on the
    explicit matrix, the ADMM onto ``L`` for 2-way marginals), then of ``auto``
    (``choose_body(workload).project(...)``, on the workload as ``marginals(domain, way)`` builds
    it by default), each in a fresh process with one BLAS thread after a warm-up, killed after
    ``--auto-timeout`` seconds. Printed: measured and estimated seconds; per problem what
    ``auto`` ran, its time against the fastest certified choice, PASS within 10x; and the cost
    models refitted to the run (least squares on log seconds), to paste into
    ``projmech/bodies/cost.py``.

Outputs: ``results/solvers.csv`` (``--out``, the ``small`` part),
``results/solvers_scaling.csv`` (``--scaling-out``) and ``results/solvers_auto.csv``
(``--auto-out``).

Run from the repository root: ``.venv/bin/python benchmarks/solvers.py [--quick | --smoke]``.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import math
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import _common as bench
import cvxpy as cp
import numpy as np
import pandas as pd

from projmech import (
    ApproxDP,
    Dataset,
    Domain,
    GaussianMechanism,
    ProjectionError,
    ProjectionResult,
    Workload,
    all_range,
    marginals,
    prefix,
    project_to_hull,
    random_queries,
)
from projmech.analysis import format_number
from projmech.analysis.evaluation import rmse
from projmech.bodies import (
    COST_MODELS,
    HULL_MAX_UNIVERSE,
    NOISE_TOL,
    SOLVERS,
    CostModel,
    PowerLaw,
    WorkloadSize,
    choose_body,
    estimated_seconds,
    project_to_relaxation,
)
from projmech.solve import SolveError
from projmech.validation import DEFAULT_MAX_ENTRIES

PARTS: tuple[str, ...] = ("small", "scaling", "auto")
#: The parts run without --parts: "auto" times every choice on two dozen problems (about 15 minutes).
DEFAULT_PARTS: tuple[str, ...] = ("small", "scaling")

# --- part "small" ------------------------------------------------------------------------------
FAST = "fast"
#: Solvers of the ``small`` part: the CVXPY ones and the active-set solver.
HULL_SOLVERS: tuple[str, ...] = (*SOLVERS, FAST)
DEFAULT_DIMS: tuple[int, ...] = (6, 8, 10, 12)
DEFAULT_RANDOM: tuple[tuple[int, int], ...] = ((50, 200), (200, 2000), (500, 4000))
QUICK_DIMS: tuple[int, ...] = (6, 8)
QUICK_RANDOM: tuple[tuple[int, int], ...] = ((50, 200),)
#: Objectives below this count as 0 in the relative difference (the noisy point is inside K_Q).
OBJECTIVE_FLOOR = 1e-12

# --- part "scaling" ---------------------------------------------------------------------------
FAST_DEFAULT = "fast-default"
MBI = "mbi"
SCALING_METHODS: tuple[str, ...] = (FAST, FAST_DEFAULT, *SOLVERS, MBI)
DEFAULT_SCALING_DIMS: tuple[int, ...] = (8, 10, 12, 14, 16, 18, 20)
QUICK_SCALING_DIMS: tuple[int, ...] = (8, 10, 12)
DEFAULT_SCALING_ROWS = 50_000
#: "The same objective": relative difference to the certified optimum, and the fast solver's tol.
TIGHT_TOL = 1e-6
#: tol for the CVXPY solvers in the scaling part: ``gap <= 1e6 * max(f_low, scale)`` accepts
#: any feasible output, so that a solver that stops short of 1e-6 still gets a row with its
#: objective (project_to_hull would raise instead); how close it came is judged afterwards.
ACCEPT_ANY_TOL = 1e6
DEFAULT_CVXPY_MAX_D = 16
DEFAULT_CVXPY_TIME_LIMIT = 120.0
DEFAULT_MBI_MAX_D = 16
#: Wall-clock limit of one worker (one method at one d, all repeats), seconds.
DEFAULT_WORKER_TIMEOUT = 1800.0
#: The issue's targets: at d = 16 the fast solver >= 20x faster than the fastest CVXPY solver and
#: within 0.5 s; at d = 20 within 20 s and 2 GB (10^9 bytes) of peak resident memory.
TARGET_SPEEDUP_D, TARGET_SPEEDUP, TARGET_SPEEDUP_SECONDS = 16, 20.0, 0.5
TARGET_LARGE_D, TARGET_LARGE_SECONDS, TARGET_LARGE_MEMORY_MB = 20, 20.0, 2000.0


@dataclass(frozen=True)
class Problem:
    """One projection instance: a workload, the noisy point and how it was made."""

    name: str
    workload: Workload
    noisy: np.ndarray
    n: int
    sigma: float
    truth: np.ndarray


def _noisy_answers(workload: Workload, data_or_histogram: Dataset | np.ndarray, n: int, privacy: ApproxDP,
                   rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Noisy answers and sigma of one Gaussian-mechanism release on a data set or a normalized
    histogram of ``n`` rows (calibration from the library: replace-one neighbours)."""
    # Continuous noise: --seed then fixes the noise too (OpenDP's discrete draws cannot be seeded).
    release = GaussianMechanism(workload, privacy, noise="continuous").release(data_or_histogram, n=n, rng=rng)
    return release.noisy_answers, release.sigma


def marginal_problem(d: int, rows: int, privacy: ApproxDP, seed: int, implicit: bool = False) -> Problem:
    """Noisy 2-way marginals of a synthetic ``rows``-row data set over ``{0,1}^d``.

    Parameters
    ----------
    d, rows : int
        Binary attributes and data set size.
    privacy : ApproxDP
        Guarantee the noise is calibrated for.
    seed : int
        The data and the noise come from ``default_rng([seed, 0, d])``: every call with the same
        arguments gives the same point, whichever ``implicit`` (up to the rounding of the answers).
    implicit : bool
        Use ``marginals(domain, 2, implicit=True)``, which never builds the ``k x m`` matrix
        (``d = 20``: 760 x 2^20).
    """
    rng = np.random.default_rng([seed, 0, d])
    domain = bench.binary_domain(d)
    biases = rng.uniform(0.1, 0.9, size=d)
    data = Dataset((rng.random((rows, d)) < biases).astype(np.int64), domain)
    workload = marginals(domain, 2, implicit=implicit)
    # Answers counted from the records: no histogram over the 2^d universe.
    noisy, sigma = _noisy_answers(workload, data, rows, privacy, rng)
    return Problem(f"marginals d={d}", workload, noisy, rows, sigma, workload.answer_data(data))


def random_problem(k: int, m: int, rows: int, privacy: ApproxDP, seed: int) -> Problem:
    """Noisy answers of ``k`` random 0/1 queries on a random ``rows``-row histogram over ``m`` cells."""
    rng = np.random.default_rng([seed, 1, k, m])
    workload = random_queries(k, m, rng)
    counts = rng.multinomial(rows, rng.dirichlet(np.ones(m)))
    noisy, sigma = _noisy_answers(workload, counts / rows, rows, privacy, rng)
    return Problem(f"random {k}x{m}", workload, noisy, rows, sigma, workload.answer(counts / rows))


def problems(dims: Sequence[int], shapes: Sequence[tuple[int, int]], rows: int, privacy: ApproxDP,
             seed: int) -> Iterator[Problem]:
    """The marginal problems, then the random-workload ones, built lazily (one in memory at a time)."""
    for d in dims:
        yield marginal_problem(d, rows, privacy, seed)
    for k, m in shapes:
        yield random_problem(k, m, rows, privacy, seed)


def _failure_reason(error: ProjectionError, solver: str) -> str:
    """The outcome ``project_to_hull`` recorded for ``solver`` (its last attempt)."""
    outcomes = [f"{attempt.status.value}: {attempt.detail}" for attempt in error.attempts if attempt.solver == solver]
    return outcomes[-1] if outcomes else str(error)


def relative_difference(values: pd.Series, reference: pd.Series) -> pd.Series:
    """``(values - reference) / max(reference, OBJECTIVE_FLOOR)``, elementwise.

    The floor keeps the ratio meaningful when the noisy point lies inside K_Q (objective ~1e-28).
    """
    return (values - reference) / reference.clip(lower=OBJECTIVE_FLOOR)


# --------------------------------------------------------------------------------------------
# Part "small": every solver on small problems, at the library's tolerance
# --------------------------------------------------------------------------------------------


def benchmark(problem: Problem, solver: str, repeats: int, tol: float = 1e-8) -> dict[str, Any]:
    """Solve ``problem`` with ``solver`` ``repeats`` times; one result row with median times.

    A solver that fails is not retried (the solvers are deterministic on a fixed input): its
    row carries the time of the failed attempt and ``status = "failed: <reason>"``.
    """
    k, m = problem.workload.shape
    row: dict[str, Any] = {"problem": problem.name, "k": k, "m": m, "n": problem.n, "sigma": problem.sigma,
                           "solver": solver, "status": ""}
    solve_times, total_times = [], []
    result = None
    for _ in range(repeats):
        timer = bench.Timer()
        try:
            result = project_to_hull(problem.workload, problem.noisy, solver=solver, tol=tol)
        except ProjectionError as error:
            total_times = [timer.seconds]
            solve_times, result = [], None
            row["status"] = f"failed: {_failure_reason(error, solver)}"
            break
        total_times.append(timer.seconds)
        solve_times.append(result.stats.solve_time)
    row["repeats"] = len(total_times)
    row["solve_time_s"] = statistics.median(solve_times) if solve_times else math.nan
    row["total_time_s"] = statistics.median(total_times)
    if result is None:
        row.update(distance=math.nan, objective=math.nan, gap=math.nan, tolerance=math.nan,
                   raw_feasibility_error=math.nan)
    else:
        row.update(status=result.stats.status.value, distance=result.distance, objective=result.objective,
                   gap=result.stats.gap, tolerance=result.stats.tolerance,
                   raw_feasibility_error=result.raw_feasibility_error)
    return row


def add_relative_objective(results: pd.DataFrame) -> pd.DataFrame:
    """Column ``objective_rel_diff``: ``(objective - best) / max(best, OBJECTIVE_FLOOR)`` per
    problem, ``best`` being the smallest objective any solver certified on that problem."""
    best = results.groupby("problem", sort=False)["objective"].transform("min")
    results["objective_rel_diff"] = relative_difference(results["objective"], best)
    return results


def format_results(results: pd.DataFrame) -> str:
    """A fixed-width plain-text table of the ``small`` part's rows."""
    return bench.column_table(results.itertuples(index=False), [
        ("problem", "<16", "problem"), ("k", ">5", "k"), ("m", ">5", "m"), ("solver", "<9", "solver"),
        ("solve s", "9.4f", "solve_time_s"), ("total s", "9.4f", "total_time_s"), ("distance", "11.6g", "distance"),
        ("gap", "9.1e", "gap"), ("raw feas", "9.1e", "raw_feasibility_error"),
        ("obj rel", "9.1e", "objective_rel_diff")])


def part_small(args: argparse.Namespace, privacy: ApproxDP, repeats: int) -> pd.DataFrame:
    """Run the ``small`` part (every solver of ``args.solvers`` on every problem, in this process).

    Returns
    -------
    DataFrame
        One row per problem and solver (:func:`benchmark`), with ``objective_rel_diff``.
    """
    rows = []
    for problem in problems(args.dims, args.random, args.rows, privacy, args.seed):
        for solver in args.solvers:
            row = benchmark(problem, solver, repeats, args.tol)
            rows.append(row)
            print(f"  {problem.name:<16} {solver:<9} {row['total_time_s']:8.3f} s  {row['status']}", flush=True)
    return add_relative_objective(pd.DataFrame(rows))


# --------------------------------------------------------------------------------------------
# Part "scaling": worker side (one method at one d, in a fresh process)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """What one worker process runs: ``method`` on the marginal problem of ``d`` attributes."""

    method: str
    d: int
    rows: int
    seed: int
    epsilon: float
    delta: float
    repeats: int


@dataclass(frozen=True)
class Estimate:
    """One method's estimate of the marginals, with what it certifies."""

    answers: np.ndarray
    gap: float             # certified Frank–Wolfe gap (NaN for mbi, which certifies nothing)
    status: str
    iterations: float
    support_size: float


def reset_peak_memory() -> bool:
    """Set the kernel's high-water mark of this process's resident memory to its current size
    (Linux >= 4.0: ``/proc/self/clear_refs``), so the peak measured next is that of the solves,
    not of building their inputs. False where this is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def _hull_estimate(result: ProjectionResult) -> Estimate:
    """The :class:`Estimate` of a ``project_to_hull`` result (its gap is a certificate)."""
    stats = result.stats
    return Estimate(result.answers, stats.gap, stats.status.value,
                    math.nan if stats.iterations is None else float(stats.iterations), float(result.support.size))


def _check_same_layout(explicit: Workload, implicit: Workload, rng: np.random.Generator) -> None:
    """Raise unless the explicit and implicit marginal workloads have the same columns on a random
    sample: the CVXPY solvers get the former, the noisy point is in the latter's row order."""
    indices = rng.choice(explicit.shape[1], size=min(256, explicit.shape[1]), replace=False)
    if not np.array_equal(explicit.columns(indices), implicit.columns(indices)):
        raise RuntimeError("marginals(domain, 2) and its implicit form order their rows differently")


def prepare_method(method: str, problem: Problem) -> Callable[[], Estimate]:
    """The timed call of ``method`` on ``problem``; its inputs are built here, outside the clock.

    Parameters
    ----------
    method : str
        One of ``SCALING_METHODS``.
    problem : Problem
        A marginal problem on the implicit workload (:func:`marginal_problem` with ``implicit=True``).

    Returns
    -------
    callable
        No arguments, returns an :class:`Estimate`: one whole ``project_to_hull`` call (the
        CVXPY solvers get the explicit sparse matrix, built here) or one mbi estimate (measurement
        objects, inference and reading the marginals back).

    Raises
    ------
    RuntimeError
        When mbi cannot be imported; ValueError when the explicit matrix is too large
        (``marginals``'s cap on stored entries).
    """
    workload, noisy, sigma = problem.workload, problem.noisy, problem.sigma
    if method in (FAST, FAST_DEFAULT):
        tol = TIGHT_TOL if method == FAST else None
        return lambda: _hull_estimate(project_to_hull(workload, noisy, solver=FAST, tol=tol, noise_scale=sigma))
    if method in SOLVERS:
        explicit = marginals(workload.domain, 2)
        _check_same_layout(explicit, workload, np.random.default_rng(0))
        return lambda: _hull_estimate(project_to_hull(explicit, noisy, solver=method, tol=ACCEPT_ANY_TOL,
                                                      noise_scale=sigma))
    if method == MBI:
        # Imported here: only mbi's workers need JAX (it would inflate the others' memory), and
        # relaxation.py owns the mbi glue (cell order checked there, counts and total n).
        from _common import import_mbi
        from relaxation import DEFAULT_PGM_ITERS, PrivatePGM

        mbi, why = import_mbi()
        if mbi is None:
            raise RuntimeError(why)
        domain = workload.domain
        pgm = PrivatePGM(mbi, domain, DEFAULT_PGM_ITERS, exact_max=domain.size, oracle_iters=1)
        return lambda: Estimate(pgm.estimate(noisy, sigma, problem.n).answers, math.nan, "estimate",
                                float(DEFAULT_PGM_ITERS), math.nan)
    raise ValueError(f"method: expected one of {list(SCALING_METHODS)}, got {method!r}")


def run_job(job: Job) -> dict[str, Any]:
    """Build the problem of ``job``, time ``job.repeats`` calls of its method; one result row.

    Parameters
    ----------
    job : Job

    Returns
    -------
    dict
        The row of the scaling CSV for this method and ``d`` (before the comparison across
        methods): times, objective, gap, RMSE against the truth, memory, and ``y_digest``, a
        hash of the noisy point. A method that fails (``ProjectionError``, or any error while
        building its inputs) is not retried; its row has ``status = "failed: <reason>"`` and
        the time of the failed attempt.
    """
    problem = marginal_problem(job.d, job.rows, ApproxDP(job.epsilon, job.delta), job.seed, implicit=True)
    k, m = problem.workload.shape
    row: dict[str, Any] = {
        "d": job.d, "k": k, "m": m, "n": problem.n, "sigma": problem.sigma, "method": job.method,
        "tol": {FAST: TIGHT_TOL, FAST_DEFAULT: NOISE_TOL}.get(job.method, math.nan),
        "noisy_rmse": rmse(problem.noisy, problem.truth),
        # Every worker rebuilds the point from the seed; the main process checks they agree.
        "y_digest": hashlib.sha256(problem.noisy.tobytes()).hexdigest()[:16],
    }
    try:
        solve = prepare_method(job.method, problem)
    except Exception as error:  # noqa: BLE001 - reported in the row, the run goes on
        return {**row, "status": f"failed: {type(error).__name__}: {error}"}
    gc.collect()
    row["rss_inputs_mb"] = bench.vm_status_mb("VmRSS")
    row["peak_scope"] = "solves" if reset_peak_memory() else "process"
    solver = FAST if job.method == FAST_DEFAULT else job.method  # the solver named in ProjectionError.attempts
    times: list[float] = []
    estimate = None
    for _ in range(job.repeats):
        timer = bench.Timer()
        try:
            estimate = solve()
        except ProjectionError as error:
            times, estimate = [timer.seconds], None
            row["status"] = f"failed: {_failure_reason(error, solver)}"
            break
        times.append(timer.seconds)
    row.update(repeats=len(times), time_s=statistics.median(times), first_time_s=times[0],
               peak_rss_mb=bench.peak_memory_mb())
    if estimate is not None:
        residual = estimate.answers - problem.noisy
        row.update(status=estimate.status, objective=0.5 * float(residual @ residual), gap=estimate.gap,
                   iterations=estimate.iterations, support_size=estimate.support_size,
                   rmse=rmse(estimate.answers, problem.truth))
    return row


# --------------------------------------------------------------------------------------------
# Part "scaling": main side
# --------------------------------------------------------------------------------------------


def _shape(d: int) -> dict[str, int]:
    """``d``, ``k`` and ``m`` of the 2-way marginals over ``d`` binary attributes, for the rows of
    methods that never built the problem (skipped, crashed)."""
    return {"d": d, "k": 4 * math.comb(d, 2), "m": 2**d}


def run_worker(job: Job, timeout: float) -> dict[str, Any]:
    """Run ``job`` in a fresh process of this script (``--worker``) and return its row.

    A fresh process per job gives each method its own peak memory and an interpreter untouched
    by the others (imports, JAX, allocator state).

    Parameters
    ----------
    job : Job
    timeout : float
        Seconds before the worker is killed.

    Returns
    -------
    dict
        The worker's row (:func:`run_job`), or a ``failed`` row after a crash or timeout.
    """
    base = {**_shape(job.d), "method": job.method}
    timer = bench.Timer()
    try:
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(asdict(job))],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {**base, "status": f"failed: timeout after {timeout:g} s", "time_s": timer.seconds}
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {**base, "status": f"failed: worker exited with code {done.returncode}: {tail}"}
    return json.loads(lines[-1])


def skip_reason(method: str, d: int, args: argparse.Namespace, slow: dict[str, tuple[int, float]],
                mbi_missing: str | None) -> str | None:
    """Why ``method`` is not run at ``d``, as a ``skipped: ...`` status; None when it runs.

    Parameters
    ----------
    method : str
    d : int
    args : argparse.Namespace
        ``cvxpy_max_d``, ``cvxpy_time_limit`` and ``mbi_max_d``.
    slow : dict
        CVXPY solver -> the first ``(d, seconds)`` at which it exceeded ``--cvxpy-time-limit``;
        it only gets slower with ``d``.
    mbi_missing : str or None
        Why mbi cannot run at all (:func:`check_mbi`).
    """
    if method in SOLVERS:
        if d > args.cvxpy_max_d:
            return f"skipped: d > --cvxpy-max-d {args.cvxpy_max_d}"
        if method in slow:
            slow_d, seconds = slow[method]
            return f"skipped: took {seconds:.3g} s at d={slow_d} (> --cvxpy-time-limit {args.cvxpy_time_limit:g} s)"
    if method == MBI:
        if mbi_missing is not None:
            return f"skipped: {mbi_missing}"
        if d > args.mbi_max_d:
            return f"skipped: d > --mbi-max-d {args.mbi_max_d} (exact estimator over the whole 2^d clique)"
    return None


def check_mbi() -> str | None:
    """None when mbi can run, else why not (also printed). Checks once, on exact input, that
    mbi's clique marginals come back in our cell order (``relaxation.check_mbi_layout``)."""
    from _common import import_mbi
    from relaxation import check_mbi_layout

    mbi, version = import_mbi()
    if mbi is None:
        print(f"note: Private-PGM is skipped: {version}", flush=True)
        return version
    error = check_mbi_layout(mbi)
    print(f"mbi {version}: clique marginals match marginals(domain, 2)'s cell order (max error {error:.1e})",
          flush=True)
    return None


def add_certified_comparison(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns comparing each method's objective with the certified optimum of its ``d``.

    ``lower_bound = objective - gap`` bounds the optimum from below for every ``project_to_hull``
    result (the Frank–Wolfe gap is a certificate whatever solver produced the point);
    ``best_lower_bound`` is the largest of them on the problem, ``objective_rel_diff`` the
    relative difference ``(objective - best_lower_bound) / best_lower_bound`` (an upper bound on
    the true relative suboptimality), ``same_objective`` whether it is at most 1e-6, and
    ``certified`` whether the method's own gap proves 1e-6 relative (``gap <= 1e-6 lower_bound``).
    """
    frame["lower_bound"] = frame["objective"] - frame["gap"]
    frame["best_lower_bound"] = frame.groupby("d", sort=False)["lower_bound"].transform("max")
    frame["objective_rel_diff"] = relative_difference(frame["objective"], frame["best_lower_bound"])
    measured = frame["objective_rel_diff"].notna()
    frame["same_objective"] = (frame["objective_rel_diff"] <= TIGHT_TOL).where(measured)
    frame["certified"] = (frame["gap"] <= TIGHT_TOL * frame["lower_bound"]).where(frame["gap"].notna())
    return frame


def part_scaling(args: argparse.Namespace, privacy: ApproxDP, repeats: int) -> pd.DataFrame:
    """Run the ``scaling`` part, one worker per method and ``d`` in increasing ``d``.

    Parameters
    ----------
    args : argparse.Namespace
        The resolved command line (:func:`resolve`).
    privacy : ApproxDP
    repeats : int
        Timed calls per method and ``d``.

    Returns
    -------
    DataFrame
        One row per ``d`` and method, with the columns of :func:`add_certified_comparison`.

    Raises
    ------
    RuntimeError
        If the workers of one ``d`` saw different noisy points (a bug: the problem is seeded).
    """
    mbi_missing = check_mbi() if MBI in args.methods else None
    slow: dict[str, tuple[int, float]] = {}
    rows = []
    for d in args.scaling_dims:
        for method in args.methods:
            reason = skip_reason(method, d, args, slow, mbi_missing)
            if reason is None:
                job = Job(method, d, args.scaling_rows, args.seed, privacy.epsilon, privacy.delta, repeats)
                row = run_worker(job, args.worker_timeout)
            else:
                row = {**_shape(d), "method": method, "status": reason}
            rows.append(row)
            seconds = row.get("time_s", math.nan)
            if method in SOLVERS and seconds > args.cvxpy_time_limit:  # a timeout counts too
                slow[method] = (d, seconds)
            print(f"  d={d:<3} {method:<13} {format_number(seconds, '9.3f')} s  "
                  f"{format_number(row.get('peak_rss_mb', math.nan), '7.0f')} MB  {row['status']}", flush=True)
        digests = {row["y_digest"] for row in rows if row["d"] == d and "y_digest" in row}
        if len(digests) > 1:
            raise RuntimeError(f"the workers of d={d} saw different noisy points ({sorted(digests)})")
    frame = pd.DataFrame(rows).drop(columns="y_digest", errors="ignore")
    for column in ("sigma", "objective", "gap", "iterations", "time_s", "first_time_s", "rss_inputs_mb",
                   "peak_rss_mb", "rmse", "noisy_rmse"):
        if column not in frame:  # every row skipped or failed
            frame[column] = math.nan
    return add_certified_comparison(frame)


def format_scaling(frame: pd.DataFrame) -> str:
    """Fixed-width table of the ``scaling`` part: time, objective, certificate and memory per method."""
    return bench.column_table(frame.itertuples(index=False), [
        ("d", ">3", "d"), ("k", "5.0f", "k"), ("m", "8.0f", "m"), ("method", "<13", "method"),
        ("time s", "9.3f", "time_s"), ("first s", "9.3f", "first_time_s"), ("obj rel", "9.1e", "objective_rel_diff"),
        ("<=1e-6", ">6", lambda row: "-" if pd.isna(row.same_objective) else ("yes" if row.same_objective else "no")),
        ("gap", "9.1e", "gap"), ("iters", "6.0f", "iterations"), ("inputs MB", "9.0f", "rss_inputs_mb"),
        ("peak MB", "8.0f", "peak_rss_mb")])


def format_errors(frame: pd.DataFrame) -> str:
    """Fixed-width table: RMSE against the true marginals of the noisy answers and of the fast
    solver at the σ-tied default tolerance and at 1e-6, per ``d``.

    ``dev/σ`` is ``sqrt(2 gap / k) / sigma`` of the default solve: its certified RMS deviation
    from the exact projection in units of the noise (at most 0.01 by the choice of tolerance).
    """
    header = (f"{'d':>3} {'k':>5} {'sigma':>9} {'noisy RMSE':>11} {'default RMSE':>13} {'time s':>8} "
              f"{'dev/σ':>8} {'1e-6 RMSE':>11} {'time s':>8} {'RMSE rel diff':>13}")
    lines = []
    by_method = frame.set_index(["d", "method"])
    for d in dict.fromkeys(frame["d"]):
        if (d, FAST_DEFAULT) not in by_method.index or (d, FAST) not in by_method.index:
            continue
        default, tight = by_method.loc[(d, FAST_DEFAULT)], by_method.loc[(d, FAST)]
        deviation = math.sqrt(2 * default["gap"] / default["k"]) / default["sigma"]
        lines.append(
            f"{d:>3} {format_number(default['k'], '5.0f')} {format_number(default['sigma'], '9.2e')} "
            f"{format_number(default['noisy_rmse'], '11.4e')} {format_number(default['rmse'], '13.6e')} "
            f"{format_number(default['time_s'], '8.3f')} {format_number(deviation, '8.1e')} "
            f"{format_number(tight['rmse'], '11.6e')} {format_number(tight['time_s'], '8.3f')} "
            f"{format_number(default['rmse'] / tight['rmse'] - 1, '+13.1e')}"
        )
    return bench.ruled(header, lines)


def check_targets(frame: pd.DataFrame) -> list[str]:
    """The issue's targets as PASS/FAIL lines, for the record.

    ``fast`` (certified to 1e-6) against: at ``d = 16``, the fastest CVXPY solver that returned a
    point (whether or not it reached the same objective: the stricter comparison) and 0.5 s; at
    ``d = 20``, 20 s and 2 GB of peak memory. A failed fast solve is a FAIL.
    """
    finished = ~frame["status"].astype(str).str.startswith(("failed", "skipped"))
    lines = []
    for d in (TARGET_SPEEDUP_D, TARGET_LARGE_D):
        rows = frame[(frame["d"] == d) & (frame["method"] == FAST)]
        if rows.empty:
            lines.append(f"d={d}: not in this run (--scaling-dims, --methods)")
            continue
        fast = rows.iloc[0]
        if not finished[rows.index[0]]:
            lines.append(f"d={d}: fast {fast['status']}: FAIL")
        elif d == TARGET_SPEEDUP_D:
            within = fast["time_s"] <= TARGET_SPEEDUP_SECONDS
            cvxpy = frame[finished & (frame["d"] == d) & frame["method"].isin(SOLVERS)]
            if cvxpy.empty:
                lines.append(f"d={d}: fast {fast['time_s']:.3f} s (target <= {TARGET_SPEEDUP_SECONDS:g} s: "
                             f"{'PASS' if within else 'FAIL'}); no CVXPY solver finished, speedup not measured")
                continue
            best = cvxpy.loc[cvxpy["time_s"].idxmin()]
            speedup = best["time_s"] / fast["time_s"]
            same = {True: "same objective", False: "objective not within 1e-6"}.get(best["same_objective"], "?")
            lines.append(f"d={d}: fast {fast['time_s']:.3f} s, fastest CVXPY {best['method']} {best['time_s']:.2f} s "
                         f"({same}): {speedup:.0f}x (target >= {TARGET_SPEEDUP:g}x and <= "
                         f"{TARGET_SPEEDUP_SECONDS:g} s): {'PASS' if within and speedup >= TARGET_SPEEDUP else 'FAIL'}")
        else:
            passed = fast["time_s"] <= TARGET_LARGE_SECONDS and fast["peak_rss_mb"] <= TARGET_LARGE_MEMORY_MB
            lines.append(f"d={d}: fast {fast['time_s']:.2f} s, peak {fast['peak_rss_mb']:.0f} MB (target <= "
                         f"{TARGET_LARGE_SECONDS:g} s and <= {TARGET_LARGE_MEMORY_MB:g} MB): "
                         f"{'PASS' if passed else 'FAIL'}")
    return lines


# --------------------------------------------------------------------------------------------
# Part "auto": the measurements behind projmech.bodies._cost, and auto's choice judged by them
# --------------------------------------------------------------------------------------------

#: The problems of the ``auto`` part: ``marginals:SIZES:WAY`` (records from a chain Bayesian
#: network), ``random:K:M``, ``prefix:M``, ``range:M`` (a random histogram). Marginals of
#: categorical and binary tables of every size where some choice is fast enough to measure, the
#: relaxation alone where the universe is beyond the hull, and workloads only the hull takes.
AUTO_PROBLEMS: tuple[str, ...] = (
    "marginals:2x6:2", "marginals:2x10:2", "marginals:2x14:2", "marginals:2x16:2", "marginals:3,4,5:2",
    "marginals:5x4:2", "marginals:10x3:2", "marginals:4x6:2", "marginals:2,2,4,5,16,32:2", "marginals:5x9:2",
    "marginals:300,300:2", "marginals:10x20:2", "marginals:15x20:2", "marginals:2x10:3", "marginals:4x6:3",
    "marginals:2,2,4,5,16,32:3", "random:50:200", "random:200:2000", "random:500:4000", "prefix:256",
    "prefix:2048", "range:128", "range:512",
)
QUICK_AUTO_PROBLEMS: tuple[str, ...] = ("marginals:2x6:2", "marginals:3,4,5:2", "marginals:2x10:2", "prefix:256")
#: A smoke run's problems of the part auto, and methods of the part scaling (the fast solver, a
#: CVXPY solver, Private-PGM).
SMOKE_AUTO_PROBLEMS: tuple[str, ...] = ("marginals:2x4:2",)
SMOKE_METHODS: tuple[str, ...] = (FAST, "CLARABEL", MBI)
#: What the part times: each modelled choice alone, then ``auto`` (body and solver chosen by the model).
AUTO_CHOICES: tuple[str, ...] = (*COST_MODELS, "auto")
#: ``auto`` must stay within this factor of the fastest certified choice measured.
AUTO_MAX_RATIO = 10.0
DEFAULT_AUTO_ROWS = 10_000
DEFAULT_AUTO_TIMEOUT = 120.0


def _sizes(text: str) -> tuple[int, ...]:
    """``"2x6"`` (six attributes of 2 values) or ``"3,4,5"``."""
    if "x" in text:
        size, _, count = text.partition("x")
        return (int(size),) * int(count)
    return tuple(int(size) for size in text.split(","))


def auto_problem(spec: str, rows: int, privacy: ApproxDP, seed: int, explicit: bool) -> tuple[Workload, np.ndarray,
                                                                                              float, np.ndarray]:
    """The workload of ``spec`` (explicit where it fits the default entry cap and ``explicit``
    is asked for), its noisy answers, their sigma, and the true answers."""
    kind, *parts = spec.split(":")
    rng = np.random.default_rng([seed, 2, *map(ord, spec)])
    if kind == "marginals":
        sizes, way = _sizes(parts[0]), int(parts[1])
        domain = Domain([f"a{i}" for i in range(len(sizes))], sizes)
        implicit = not explicit or math.prod(sizes) * math.comb(len(sizes), way) > DEFAULT_MAX_ENTRIES
        workload = marginals(domain, way, implicit=implicit)
        data = Dataset(bench.chain_records(sizes, rows, rng), domain)
        noisy, sigma = _noisy_answers(workload, data, rows, privacy, rng)
        return workload, noisy, sigma, workload.answer_data(data)
    builders = {"random": lambda: random_queries(int(parts[0]), int(parts[1]), rng),
                "prefix": lambda: prefix(int(parts[0])), "range": lambda: all_range(int(parts[0]))}
    if kind not in builders:
        raise ValueError(f"unknown problem {spec!r}")
    workload = builders[kind]()
    histogram = rng.multinomial(rows, rng.dirichlet(np.ones(workload.universe_size))) / rows
    noisy, sigma = _noisy_answers(workload, histogram, rows, privacy, rng)
    return workload, noisy, sigma, workload.answer(histogram)


def run_auto_job(job: dict[str, Any]) -> dict[str, Any]:
    """Time one choice on one problem (in a worker process, after a warm-up on a tiny one)."""
    privacy = ApproxDP(job["epsilon"], job["delta"])
    choice = job["choice"]

    def project(spec: str, rows: int) -> tuple[Any, float, str]:
        workload, noisy, sigma, _ = auto_problem(spec, rows, privacy, job["seed"],
                                                 explicit=choice in SOLVERS + ("auto",))
        timer = bench.Timer()
        if choice == "auto":
            body = choose_body(workload)
            result = body.project(workload, noisy, noise_scale=sigma)
            ran = f"{body.name}/{result.stats.solver}"
        elif choice == "relaxed":
            if workload.domain is None:
                raise ValueError("the relaxation takes 2-way marginals only")
            result, ran = project_to_relaxation(workload.domain, noisy), "relaxed/admm"
        else:
            result, ran = project_to_hull(workload, noisy, solver=choice, noise_scale=sigma), f"hull/{choice}"
        return result, timer.seconds, ran

    project("marginals:2,3,4:2", 100)  # imports and first-call costs, outside the timed call
    try:
        result, seconds, ran = project(job["spec"], job["rows"])
    except (SolveError, ValueError) as error:
        return {"status": f"failed: {type(error).__name__}: {str(error)[:120]}"}
    return {"seconds": seconds, "ran": ran, "certified": bool(result.stats.tolerance_met),
            "distance": float(result.distance)}


def part_auto(args: argparse.Namespace, privacy: ApproxDP) -> pd.DataFrame:
    """Every choice and ``auto`` on every problem of ``args.auto_problems``, each in a fresh
    process with one BLAS thread; one row per (problem, choice) with the model's estimate."""
    rows = []
    for spec in args.auto_problems:
        workload, _, _, _ = auto_problem(spec, 10, privacy, args.seed, explicit=False)
        sizes = WorkloadSize.of(workload)
        base = {"problem": spec, "k": sizes.queries, "m": sizes.universe, "product_work": sizes.product_work,
                "rank": sizes.rank, "moment_dimension": sizes.moment_dimension}
        for choice in AUTO_CHOICES:
            estimate = estimated_seconds(choice, sizes) if choice in COST_MODELS else math.nan
            if choice == "relaxed" and sizes.moment_dimension is None:
                rows.append({**base, "choice": choice, "status": "skipped: not 2-way marginals"})
                continue
            if choice in COST_MODELS and choice != "relaxed" and sizes.universe > HULL_MAX_UNIVERSE:
                rows.append({**base, "choice": choice, "status": "skipped: universe above HULL_MAX_UNIVERSE"})
                continue
            job = {"choice": choice, "spec": spec, "rows": args.auto_rows, "seed": args.seed,
                   "epsilon": args.epsilon, "delta": args.delta}
            row = {**base, "choice": choice, "estimate_s": estimate,
                   **bench.run_in_process(str(Path(__file__).resolve()), job, 1, args.auto_timeout)}
            rows.append(row)
            print(f"  {spec:<28} {choice:<9} {bench.cell(row.get('seconds'), '9.4f'):>9}  {row['status']}", flush=True)
    return pd.DataFrame(rows)


def fit_cost_models(frame: pd.DataFrame) -> dict[str, CostModel]:
    """Each modelled choice's :class:`CostModel` refitted to this run's certified times, with the
    model's form (its sizes) kept: least squares on log seconds, coefficients and overhead in
    log space, exponents free."""
    from scipy.optimize import least_squares

    fitted = {}
    for choice, model in COST_MODELS.items():
        done = frame[(frame["choice"] == choice) & (frame["status"] == "ok") & frame["certified"].astype(bool)]
        if len(done) < 2 * len(model.terms) + 1:
            continue
        sizes = [done[term.size].to_numpy(dtype=float) for term in model.terms]
        measured = np.log(done["seconds"].to_numpy(dtype=float))

        def residual(theta: np.ndarray, sizes: list[np.ndarray] = sizes, measured: np.ndarray = measured) -> np.ndarray:
            total = np.exp(theta[0]) + sum(np.exp(theta[1 + 2 * i]) * size ** theta[2 + 2 * i]
                                           for i, size in enumerate(sizes))
            return np.log(total) - measured

        start = np.concatenate([[np.log(1e-2)], *[[np.log(1e-6), 1.0] for _ in sizes]])
        theta = least_squares(residual, start).x
        fitted[choice] = CostModel(float(np.exp(theta[0])), tuple(
            PowerLaw(term.size, float(np.exp(theta[1 + 2 * i])), float(theta[2 + 2 * i]))
            for i, term in enumerate(model.terms)))
    return fitted


def auto_verdicts(frame: pd.DataFrame) -> pd.DataFrame:
    """Per problem: what ``auto`` ran, its time, the fastest certified choice and the ratio,
    ``PASS`` when within :data:`AUTO_MAX_RATIO`."""
    verdicts = []
    for spec, rows in frame.groupby("problem", sort=False):
        ok = rows[(rows["status"] == "ok") & rows["certified"].astype(bool)]
        alternatives = ok[ok["choice"] != "auto"]
        auto = ok[ok["choice"] == "auto"]
        if alternatives.empty or auto.empty:
            verdicts.append({"problem": spec, "verdict": "FAIL: auto did not certify" if not alternatives.empty
                             else "no certified alternative"})
            continue
        best = alternatives.loc[alternatives["seconds"].idxmin()]
        ratio = float(auto["seconds"].iloc[0] / best["seconds"])
        verdicts.append({"problem": spec, "auto_ran": auto["ran"].iloc[0], "auto_s": float(auto["seconds"].iloc[0]),
                         "fastest": best["choice"], "fastest_s": float(best["seconds"]), "ratio": ratio,
                         "verdict": "PASS" if ratio <= AUTO_MAX_RATIO else "FAIL"})
    return pd.DataFrame(verdicts)


def _uncertified(row: Any) -> str:
    return "" if getattr(row, "certified", True) in (True, None) or row.status != "ok" else " (not certified)"


def format_auto(frame: pd.DataFrame, verdicts: pd.DataFrame) -> str:
    """Measured and estimated seconds per problem and choice, then auto's verdicts."""
    lines = []
    for row in frame.itertuples(index=False):
        lines.append(f"{row.problem:<28} {row.k:>6} {row.m:>9.3g} {row.rank:>6} {row.choice:<9} "
                     f"{bench.cell(getattr(row, 'seconds', None), '9.4f'):>9} "
                     f"{bench.cell(getattr(row, 'estimate_s', None), '9.4f'):>9}  "
                     f"{row.status}{_uncertified(row)}")
    table = bench.ruled(
        f"{'problem':<28} {'k':>6} {'m':>9} {'rank':>6} {'choice':<9} {'seconds':>9} {'estimate':>9}  status",
        lines)
    verdict_lines = [f"{row.problem:<28} {bench.cell(getattr(row, 'auto_ran', None), ''):<15} "
                     f"{bench.cell(getattr(row, 'auto_s', None), '9.4f'):>9} "
                     f"{bench.cell(getattr(row, 'fastest', None), ''):<9}"
                     f" {bench.cell(getattr(row, 'fastest_s', None), '9.4f'):>9} "
                     f"{bench.cell(getattr(row, 'ratio', None), '7.2f'):>7}  {row.verdict}"
                     for row in verdicts.itertuples(index=False)]
    return table + "\n\n" + bench.ruled(f"{'problem':<28} {'auto ran':<15} {'auto s':>9} {'fastest':<9} {'seconds':>9} "
                                        f"{'ratio':>7}  verdict", verdict_lines)


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def _shape_list(text: str) -> list[tuple[int, int]]:
    shapes = []
    for part in text.split(","):
        if part.strip():
            k, _, m = part.lower().partition("x")
            shapes.append((int(k), int(m)))
    return shapes


def _name_list(choices: Sequence[str]) -> Callable[[str], list[str]]:
    """Parser of a comma-separated list of names from ``choices``, case-insensitive."""
    canonical = {name.lower(): name for name in choices}

    def parse(text: str) -> list[str]:
        names = bench.name_list(text)
        unknown = [name for name in names if name.lower() not in canonical]
        if unknown:
            raise argparse.ArgumentTypeError(f"unknown {unknown}; choose from {list(choices)}")
        return [canonical[name.lower()] for name in names]

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--parts", type=_name_list(PARTS), default=list(DEFAULT_PARTS),
                        help=f"comma-separated parts of {','.join(PARTS)} (default {','.join(DEFAULT_PARTS)})")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs per solver, median reported (default 3; --quick 1)")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help=f"small part: dims {','.join(map(str, QUICK_DIMS))} and one small random workload; "
                             f"scaling part: dims {','.join(map(str, QUICK_SCALING_DIMS))}; 1 repeat")
    small = parser.add_argument_group("part small")
    small.add_argument("--dims", type=bench.int_list, default=None,
                       help="comma-separated numbers of binary attributes (default "
                            f"{','.join(map(str, DEFAULT_DIMS))})")
    small.add_argument("--random", type=_shape_list, default=None,
                       help="comma-separated KxM random workloads (default "
                            + ",".join(f"{k}x{m}" for k, m in DEFAULT_RANDOM) + "; empty string: none)")
    small.add_argument("--solvers", type=_name_list(HULL_SOLVERS), default=list(HULL_SOLVERS),
                       help=f"comma-separated solvers (default {','.join(HULL_SOLVERS)})")
    small.add_argument("--rows", type=int, default=1000, help="data set size n (default 1000)")
    small.add_argument("--tol", type=float, default=1e-8,
                       help="certification tolerance of project_to_hull (default its own, 1e-8)")
    small.add_argument("--out", default="results/solvers.csv", help="CSV output (default results/solvers.csv)")
    scaling = parser.add_argument_group("part scaling")
    scaling.add_argument("--scaling-dims", type=bench.int_list, default=None,
                         help=f"binary attributes (default {','.join(map(str, DEFAULT_SCALING_DIMS))})")
    scaling.add_argument("--scaling-rows", type=int, default=DEFAULT_SCALING_ROWS,
                         help=f"data set size n (default {DEFAULT_SCALING_ROWS})")
    scaling.add_argument("--methods", type=_name_list(SCALING_METHODS), default=list(SCALING_METHODS),
                         help=f"comma-separated methods (default {','.join(SCALING_METHODS)})")
    scaling.add_argument("--cvxpy-max-d", type=int, default=DEFAULT_CVXPY_MAX_D,
                         help=f"largest d for the CVXPY solvers (default {DEFAULT_CVXPY_MAX_D})")
    scaling.add_argument("--cvxpy-time-limit", type=float, default=DEFAULT_CVXPY_TIME_LIMIT,
                         help="skip a CVXPY solver at larger d once its median time exceeded this many seconds "
                              f"(default {DEFAULT_CVXPY_TIME_LIMIT:g})")
    scaling.add_argument("--mbi-max-d", type=int, default=DEFAULT_MBI_MAX_D,
                         help=f"largest d for Private-PGM's exact estimator (default {DEFAULT_MBI_MAX_D})")
    scaling.add_argument("--worker-timeout", type=float, default=DEFAULT_WORKER_TIMEOUT,
                         help=f"seconds per method and d, all repeats (default {DEFAULT_WORKER_TIMEOUT:g})")
    scaling.add_argument("--scaling-out", default="results/solvers_scaling.csv",
                         help="CSV output (default results/solvers_scaling.csv)")
    auto = parser.add_argument_group("part auto")
    auto.add_argument("--auto-problems", type=bench.name_list, default=None,
                      help="problems, e.g. marginals:2,2,4,5,16,32:2, marginals:2x10:3, random:200:2000, prefix:256, "
                           "range:128 (default: the two dozen of AUTO_PROBLEMS; --quick: four)")
    auto.add_argument("--auto-rows", type=int, default=DEFAULT_AUTO_ROWS,
                      help=f"records behind each problem (default {DEFAULT_AUTO_ROWS:,})")
    auto.add_argument("--auto-timeout", type=float, default=DEFAULT_AUTO_TIMEOUT,
                      help=f"seconds before one timed call is killed (default {DEFAULT_AUTO_TIMEOUT:g})")
    auto.add_argument("--auto-out", default="results/solvers_auto.csv",
                      help="CSV output (default results/solvers_auto.csv)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)  # internal: one Job, as JSON
    bench.add_smoke_option(parser, f"small: d = 4 and random 10x20, 200 rows; scaling: d = 4, 500 rows, methods "
                                   f"{','.join(SMOKE_METHODS)}; auto: {','.join(SMOKE_AUTO_PROBLEMS)}; 1 repeat")
    return parser


def resolve(args: argparse.Namespace) -> tuple[int, str | None]:
    """Fill the ``--quick``-dependent defaults in ``args``; ``(repeats, error message or None)``."""
    args.dims = args.dims if args.dims is not None else list(QUICK_DIMS if args.quick else DEFAULT_DIMS)
    args.random = args.random if args.random is not None else list(QUICK_RANDOM if args.quick else DEFAULT_RANDOM)
    if args.scaling_dims is None:
        args.scaling_dims = list(QUICK_SCALING_DIMS if args.quick else DEFAULT_SCALING_DIMS)
    # Increasing and distinct: a CVXPY solver too slow at some d is skipped at the larger ones.
    args.scaling_dims = sorted(set(args.scaling_dims))
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    if repeats < 1:
        return repeats, "--repeats must be at least 1"
    installed = set(cp.installed_solvers())
    for option in ("solvers", "methods"):
        names = getattr(args, option)
        missing = [name for name in names if name in SOLVERS and name not in installed]
        if missing:
            print(f"solvers.py: --{option}: skipping solvers that are not installed: {missing}", file=sys.stderr)
        setattr(args, option, [name for name in names if name not in missing])
    if "small" in args.parts and not args.solvers:
        return repeats, "no solver left to benchmark"
    return repeats, None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.worker is not None:
        job = json.loads(args.worker)
        print(json.dumps(run_auto_job(job) if "choice" in job else run_job(Job(**job))))
        return 0
    if args.smoke:
        args.dims, args.random, args.rows, args.repeats, args.out = [4], [(10, 20)], 200, 1, bench.smoke_path(args.out)
        args.scaling_dims, args.scaling_rows, args.methods = [4], 500, list(SMOKE_METHODS)
        args.scaling_out, args.auto_out = bench.smoke_path(args.scaling_out), bench.smoke_path(args.auto_out)
        args.auto_problems, args.auto_rows = list(SMOKE_AUTO_PROBLEMS), 500
    repeats, error = resolve(args)
    if error is not None:
        return bench.usage_error(error)
    privacy = ApproxDP(args.epsilon, args.delta)
    timer = bench.Timer()
    if "small" in args.parts:
        print(f"solver benchmark: {privacy}, replace-one, n={args.rows}, tol={args.tol:g}, {repeats} repeat(s), "
              f"solvers {args.solvers}", flush=True)
        results = part_small(args, privacy, repeats)
        print()
        print(format_results(results))
        print(f"\nwrote {bench.write_csv(results, args.out)}\n")
    if "scaling" in args.parts:
        print(f"scaling: 2-way marginals, d = {args.scaling_dims}, n={args.scaling_rows}, {privacy}, replace-one, "
              f"{repeats} repeat(s), methods {args.methods}; one worker process each", flush=True)
        scaling = part_scaling(args, privacy, repeats)
        print("\nEnd-to-end time to the same objective (obj rel: (objective - best certified lower bound) / bound; "
              "time: median whole call; first: first call; peak: resident memory of the worker)\n")
        print(format_scaling(scaling))
        print("\nError against the true marginals: fast solver at the σ-tied default tolerance and at 1e-6\n")
        print(format_errors(scaling))
        print("\nTargets:")
        for line in check_targets(scaling):
            print(f"  {line}")
        print(f"\nwrote {bench.write_csv(scaling, args.scaling_out)}")
    if "auto" in args.parts:
        problems = args.auto_problems or list(QUICK_AUTO_PROBLEMS if args.quick else AUTO_PROBLEMS)
        args.auto_problems = problems
        print(f"auto: {len(problems)} problems, choices {list(AUTO_CHOICES)}, n={args.auto_rows}, {privacy}, "
              "one BLAS thread, one worker process each", flush=True)
        auto = part_auto(args, privacy)
        verdicts = auto_verdicts(auto)
        print("\nSeconds of the whole call, measured and estimated by projmech.bodies._cost; then auto against the "
              f"fastest certified choice (PASS: within {AUTO_MAX_RATIO:g}x)\n")
        print(format_auto(auto, verdicts))
        print("\nThe cost models refitted to this run (projmech.bodies._cost.COST_MODELS):\n")
        for choice, model in fit_cost_models(auto).items():
            print(f"    {choice!r}: {model!r},")
        print(f"\nwrote {bench.write_csv(auto.merge(verdicts, on='problem', how='left'), args.auto_out)}")
    print(f"done in {timer.seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
