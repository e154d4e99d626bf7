"""Evidence that ``project_to_hull`` never returns a false certificate.

Random projection instances of fifteen kinds (``KINDS``: random dense and sparse 0/1 workloads,
2-way marginals, prefix, ``c I`` and ``c (2-way marginals)`` with ``c`` log-uniform in
``[1e-6, 1e8]``, duplicate columns, rank-one F, ``k = 1``, ``m = 1``, ``F = 0``, and ``y`` inside
K_Q, on a face, at a vertex, far outside), each projected by every solver (``--solvers``:
``fast``, the CVXPY ones and ``auto``). Every call ends one of three ways:

* ``certified``: a result that passes the independent check below;
* ``reported failure``: a :class:`~projmech.ProjectionError` (the library refused to certify);
* ``FALSE CERTIFICATE``: a result that fails the check -- what must never happen.

The check is done here, with numpy on the dense matrix, without the library's checker: the
witness ``w`` has the universe's length, is finite, ``w >= 0`` and ``|sum(w) - 1| <= 1e-9``;
the answers equal ``F w`` to ``1e-9 max|F|``; the distance is ``||answers - y||``; the
Frank–Wolfe gap ``w.g - min g`` of ``g = F^T (F w - y)`` (every column) is at most the
documented threshold ``tol * max(f - gap, scale)`` (``f = (1/2)||F w - y||^2``; ``scale =
max((k/2) sigma^2, 1e-8)`` with the noise level ``sigma``, else 1), and the result's reported
gap is not below it (it bounds the distance to the exact projection: ``sqrt(2 gap)``). Each
comparison allows ``64 eps`` times the size of what it compares, far below the tolerances.

Every call passes ``tol`` explicitly (the library's defaults: 1e-4 with a noise level, else
1e-8), so the threshold is known here. Output: a table kind x solver of
certified / reported failure / FALSE CERTIFICATE counts, printed and written to
``results/feasibility.csv`` (``--out``); one row per call in ``results/feasibility_calls.csv``
(``--calls-out``). Exit status 1 if any call is a false certificate.

Run from the repository root: ``.venv/bin/python benchmarks/feasibility.py [--quick | --smoke]``.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import _common as bench
import numpy as np
import pandas as pd

from projmech import ProjectionError, ProjectionResult, marginals, prefix, project_to_hull, random_queries

SOLVERS: tuple[str, ...] = ("fast", "CLARABEL", "ECOS", "OSQP", "SCS", "auto")
CERTIFIED, FAILURE, FALSE = "certified", "reported failure", "FALSE CERTIFICATE"
DEFAULT_INSTANCES = 200
QUICK_INSTANCES = 30
#: The documented tolerances (README, "What is guaranteed"): relative to ``(k/2) sigma^2`` (at
#: least ``SCALE_FLOOR``) with a noise level, else relative to 1.
NOISE_TOL, PLAIN_TOL, SCALE_FLOOR = 1e-4, 1e-8, 1e-8
#: Rounding allowed in each comparison, relative to the size of what is compared.
SLACK = 64 * np.finfo(float).eps
#: The range of the scale ``c`` of the scaled kinds.
SCALE_RANGE = (1e-6, 1e8)


@dataclass(frozen=True)
class Instance:
    """One projection problem: a dense ``k x m`` matrix, the point, its noise level (or None)."""

    F: np.ndarray
    y: np.ndarray
    sigma: float | None = None
    note: str = ""


def _noisy(F: np.ndarray, rng: np.random.Generator, sigma: float) -> Instance:
    """The answers of a random distribution plus Gaussian noise of standard deviation ``sigma``."""
    h = rng.dirichlet(np.full(F.shape[1], 0.5))
    return Instance(F, F @ h + rng.normal(0.0, sigma, F.shape[0]), sigma)


def _marginal_matrix(d: int) -> np.ndarray:
    return marginals(bench.binary_domain(d), 2).toarray()


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.exp(rng.uniform(math.log(low), math.log(high))))


def random_dense(rng: np.random.Generator) -> Instance:
    k, m = int(rng.integers(2, 30)), int(rng.integers(2, 120))
    return _noisy(rng.normal(size=(k, m)), rng, sigma=0.3)


def random_sparse(rng: np.random.Generator) -> Instance:
    k, m = int(rng.integers(2, 40)), int(rng.integers(2, 200))
    return _noisy(random_queries(k, m, rng).toarray(), rng, sigma=0.1)


def two_way_marginals(rng: np.random.Generator) -> Instance:
    d = int(rng.choice([4, 6, 8, 10]))  # up to m = 1024, where "auto" orders the solvers by estimate
    return _noisy(_marginal_matrix(d), rng, sigma=float(rng.choice([0.002, 0.02, 0.2])))


def prefix_queries(rng: np.random.Generator) -> Instance:
    return _noisy(prefix(int(rng.integers(2, 128))).toarray(), rng, sigma=0.05)


def scaled_identity(rng: np.random.Generator) -> Instance:
    c, m = _log_uniform(rng, *SCALE_RANGE), int(rng.integers(2, 64))
    instance = _noisy(np.eye(m), rng, sigma=0.2)
    # Half of them with the noise level (a scale-relative tolerance), half without.
    sigma = c * instance.sigma if rng.random() < 0.5 else None
    return Instance(c * instance.F, c * instance.y, sigma, f"c={c:.1e}")


def scaled_marginals(rng: np.random.Generator) -> Instance:
    c, d = _log_uniform(rng, *SCALE_RANGE), int(rng.choice([3, 4, 5, 6]))
    instance = _noisy(_marginal_matrix(d), rng, sigma=0.05)
    sigma = c * instance.sigma if rng.random() < 0.5 else None
    return Instance(c * instance.F, c * instance.y, sigma, f"c={c:.1e}")


def duplicate_columns(rng: np.random.Generator) -> Instance:
    base = random_queries(int(rng.integers(2, 10)), int(rng.integers(2, 20)), rng).toarray()
    copies = rng.integers(0, base.shape[1], size=int(rng.integers(1, 3 * base.shape[1])))
    F = np.hstack([base, base[:, copies]])[:, rng.permutation(base.shape[1] + copies.size)]
    return _noisy(F, rng, sigma=0.2)


def rank_one(rng: np.random.Generator) -> Instance:
    k, m = int(rng.integers(2, 20)), int(rng.integers(2, 60))
    return _noisy(np.outer(rng.normal(size=k), rng.uniform(-1.0, 2.0, size=m)), rng, sigma=0.3)


def one_query(rng: np.random.Generator) -> Instance:
    return _noisy(rng.uniform(-1.0, 1.0, size=(1, int(rng.integers(1, 80)))), rng, sigma=1.0)


def one_element(rng: np.random.Generator) -> Instance:
    return _noisy(rng.normal(size=(int(rng.integers(1, 30)), 1)), rng, sigma=1.0)


def zero_workload(rng: np.random.Generator) -> Instance:
    k, m = int(rng.integers(1, 20)), int(rng.integers(1, 60))
    return Instance(np.zeros((k, m)), rng.normal(0.0, 1.0, k))


def y_inside(rng: np.random.Generator) -> Instance:
    F = random_queries(int(rng.integers(2, 30)), int(rng.integers(2, 150)), rng).toarray()
    return Instance(F, F @ rng.dirichlet(np.ones(F.shape[1])))


def y_on_a_face(rng: np.random.Generator) -> Instance:
    """0/1 columns: ``{x : x_i = 0}`` meets K_Q in a face (``x_i >= 0`` holds on K_Q); ``y`` is a
    random point of that face (a query ``i`` that is 0 on some columns and 1 on others)."""
    while True:
        F = random_queries(int(rng.integers(2, 20)), int(rng.integers(4, 120)), rng).toarray()
        rows = [i for i in range(F.shape[0]) if 0 < F[i].sum() < F.shape[1]]
        if rows:
            break
    face = np.flatnonzero(F[int(rng.choice(rows))] == 0)
    h = np.zeros(F.shape[1])
    h[face] = rng.dirichlet(np.ones(face.size))
    return Instance(F, F @ h)


def y_at_a_vertex(rng: np.random.Generator) -> Instance:
    """Every 0/1 column is a vertex of K_Q (an extreme point of the cube); ``y`` is one, or lies
    in its normal cone along ``2 F_j - 1`` (which pushes every coordinate away from the cube)."""
    F = random_queries(int(rng.integers(2, 20)), int(rng.integers(2, 120)), rng).toarray()
    vertex = F[:, int(rng.integers(F.shape[1]))]
    return Instance(F, vertex + rng.uniform(0.0, 3.0) * (2.0 * vertex - 1.0) * float(rng.random() < 0.5))


def y_far_outside(rng: np.random.Generator) -> Instance:
    F = random_queries(int(rng.integers(2, 30)), int(rng.integers(2, 150)), rng).toarray()
    direction = rng.normal(size=F.shape[0])
    return Instance(F, _log_uniform(rng, 1e3, 1e9) * direction / np.linalg.norm(direction))


KINDS: dict[str, Callable[[np.random.Generator], Instance]] = {
    "random dense": random_dense,
    "random sparse 0/1": random_sparse,
    "2-way marginals": two_way_marginals,
    "prefix": prefix_queries,
    "c I, c in [1e-6, 1e8]": scaled_identity,
    "c marginals, c in [1e-6, 1e8]": scaled_marginals,
    "duplicate columns": duplicate_columns,
    "rank-one F": rank_one,
    "k = 1": one_query,
    "m = 1": one_element,
    "F = 0": zero_workload,
    "y inside K_Q": y_inside,
    "y on a face": y_on_a_face,
    "y at a vertex": y_at_a_vertex,
    "y far outside": y_far_outside,
}


def independent_check(instance: Instance, tol: float, result: ProjectionResult) -> str | None:
    """Why ``result`` is not a valid certified projection of ``instance`` (module docstring), or None."""
    F, y = instance.F, instance.y
    k, m = F.shape
    weights = result.weights
    w = np.asarray(weights.toarray() if hasattr(weights, "toarray") else weights, dtype=float).ravel()
    if w.shape != (m,):
        return f"witness of length {w.size}, universe {m}"
    if not np.all(np.isfinite(w)) or w.min() < 0:
        return "witness not finite and non-negative"
    if not abs(w.sum() - 1.0) <= 1e-9:
        return f"witness sums to {w.sum():.17g}"
    size_f, size_y = float(np.abs(F).max(initial=0.0)), float(np.abs(y).max())
    product = F @ w
    if not np.max(np.abs(result.answers - product), initial=0.0) <= 1e-9 * size_f:
        return "answers differ from F w"
    residual = product - y
    distance = float(np.linalg.norm(residual))
    if not abs(result.distance - distance) <= 1e-9 * distance + SLACK * (size_f + size_y):
        return f"distance {result.distance} != ||F w - y|| = {distance}"
    gradient = F.T @ residual
    gap = float(w @ (gradient - gradient.min()))
    # The gradient's rounding: k terms of size |F| (|F| w + |y|) each.
    rounding = SLACK * k * size_f * (size_f + size_y)
    objective = 0.5 * distance**2
    scale = 1.0 if instance.sigma is None else max(0.5 * k * instance.sigma**2, SCALE_FLOOR)
    threshold = tol * max(objective - gap, scale)
    if not gap <= threshold + rounding:
        return f"gap {gap:.3e} above the documented threshold {threshold:.3e}"
    if not result.stats.gap >= gap - rounding:
        return f"reported gap {result.stats.gap:.3e} below the true gap {gap:.3e}"
    return None


def run_call(instance: Instance, solver: str) -> dict[str, object]:
    """One ``project_to_hull`` call and its verdict."""
    tol = PLAIN_TOL if instance.sigma is None else NOISE_TOL
    timer = bench.Timer()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # solvers' own warnings; their status is recorded
            result = project_to_hull(instance.F, instance.y, solver=solver, tol=tol, noise_scale=instance.sigma)
    except ProjectionError as error:
        elapsed = timer.seconds
        return {"outcome": FAILURE, "detail": "; ".join(str(attempt) for attempt in error.attempts)[:300],
                "time_s": elapsed, "gap": math.nan, "solver_used": ""}
    elapsed = timer.seconds
    problem = independent_check(instance, tol, result)
    return {"outcome": FALSE if problem else CERTIFIED, "detail": problem or "", "time_s": elapsed,
            "gap": result.stats.gap, "solver_used": result.stats.solver}


def instances(count: int, seed: int) -> list[tuple[str, int, Instance]]:
    """``count`` instances, the kinds in turn (``count / 15`` each, the first kinds one more)."""
    names = list(KINDS)
    out = []
    for index in range(count):
        name = names[index % len(names)]
        out.append((name, index, KINDS[name](np.random.default_rng([seed, index]))))
    return out


def summary_table(calls: pd.DataFrame, solvers: Sequence[str]) -> pd.DataFrame:
    """Kind x solver: ``certified / reported failure / FALSE CERTIFICATE`` counts, and a total row."""
    counts = calls.groupby(["kind", "solver", "outcome"]).size().unstack(fill_value=0)
    for outcome in (CERTIFIED, FAILURE, FALSE):
        if outcome not in counts:
            counts[outcome] = 0
    rows = {}
    for kind in list(KINDS) + ["all"]:
        row = {}
        for solver in solvers:
            if kind == "all":
                cell = counts.xs(solver, level="solver").sum()
            elif (kind, solver) in counts.index:
                cell = counts.loc[(kind, solver)]
            else:
                continue
            row[solver] = f"{cell[CERTIFIED]} / {cell[FAILURE]} / {cell[FALSE]}"
        if row:
            rows[kind] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "kind"
    return table


def summary_markdown(table: pd.DataFrame, instances_per_kind: pd.Series) -> str:
    header = ["kind", "n", *table.columns]
    rows = [[str(kind), str(instances_per_kind.get(kind, instances_per_kind.sum())), *(str(v) for v in row)]
            for kind, row in table.iterrows()]
    return bench.markdown(header, rows, ["---", *["---:"] * (len(header) - 1)])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=DEFAULT_INSTANCES, help="random instances (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--solvers", default=",".join(SOLVERS), help="comma-separated (default: all six)")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_INSTANCES} instances (two per kind)")
    parser.add_argument("--out", default="results/feasibility.csv", help="the kind x solver table")
    parser.add_argument("--calls-out", default="results/feasibility_calls.csv", help="one row per call")
    bench.add_smoke_option(parser, "one instance of each kind")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    solvers = bench.name_list(args.solvers)
    refused = bench.unknown_names("--solvers", solvers, SOLVERS)
    if refused is not None:
        return refused
    count = QUICK_INSTANCES if args.quick else args.instances
    if args.smoke:
        count, args.out, args.calls_out = len(KINDS), bench.smoke_path(args.out), bench.smoke_path(args.calls_out)
    if count < 1:
        raise ValueError(f"--instances: expected a positive integer, got {count}")
    timer = bench.Timer()
    rows = []
    for kind, index, instance in instances(count, args.seed):
        for solver in solvers:
            row = run_call(instance, solver)
            rows.append({"kind": kind, "instance": index, "k": instance.F.shape[0], "m": instance.F.shape[1],
                         "note": instance.note, "sigma": instance.sigma, "solver": solver, **row})
            if row["outcome"] == FALSE:
                print(f"FALSE CERTIFICATE: {kind} #{index} ({instance.note}) {solver}: {row['detail']}", flush=True)
    calls = pd.DataFrame(rows)
    table = summary_table(calls, solvers)
    per_kind = calls.groupby("kind")["instance"].nunique()
    elapsed = timer.seconds
    print(f"{count} instances x {len(solvers)} solvers = {len(calls)} calls in {elapsed:.0f} s; "
          "cells: certified / reported failure / FALSE CERTIFICATE\n")
    print(summary_markdown(table, per_kind))
    for path, frame, index in ((args.out, table, True), (args.calls_out, calls, False)):
        bench.write_csv(frame, path, index=index)
    false = int((calls["outcome"] == FALSE).sum())
    print(f"\nfalse certificates: {false}; written {args.out} and {args.calls_out}")
    return 1 if false else 0


if __name__ == "__main__":
    sys.exit(main())
