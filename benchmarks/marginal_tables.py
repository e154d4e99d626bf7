"""Projection over the tables a workload reads: the tables bodies, beside Private-PGM and CVXPY.

Two bodies project over the tables' cells, never the universe: disjoint tables
(``body="tables"``, ``projmech.bodies.project_to_tables``: ``K_Q`` table by table) and the local
polytope of marginal tables of any order (``body="local"``, ``projmech.bodies.project_to_local``:
consistent, non-negative tables; ``K_Q`` itself where the tables are acyclic). Each ``projmech``
row: the release end to end (counting, noise, projection) with ``ProjectionMechanism`` at its
default ``body="auto"``, the body chosen, the time of the projection and of the release, the
largest disagreement of two tables on a shared marginal (or of a table's sum from 1) and the most
negative cell, the certified gap against its tolerance, and the RMSE of the noisy and of the
projected answers against the truth.

Rows (``--rows`` picks some):

* ``adult 1-way``: Adult (14 categorical attributes, 48,842 rows), all 1-way marginals, zCDP 0.5;
* ``10x17 1-way``, ``10x17 prefix``, ``10x17 2-way``, ``10x17 3-way``: 10 attributes of 17 values
  (2.0e12 cells, 10,000 uniform random rows), zCDP 0.5;
* ``chain 3-way``: 20 attributes of 4 values (1.1e12 cells), a chain of 18 overlapping 3-way
  tables ``{i, i+1, i+2}`` (acyclic: the projection is onto ``K_Q``), 10,000 rows of a Markov
  chain, zCDP 0.5; beside it ``chain 3-way cvxpy``: the same noisy answers projected onto the
  same polytope written as a CVXPY model (Clarabel), the objective compared;
* ``adult10 3-way``: Adult's 10 attributes other than fnlwgt, capital-gain, capital-loss and
  hours-per-week (120 tables, 443,862 cells), all 3-way marginals at (1, 1e-9)-DP; beside it
  ``adult10 3-way mbi``: Private-PGM's ``ApproxMirrorDescent`` (mbi 2.x, JAX on the CPU,
  ``--mbi-iters`` steps, 1,000 by default, of size 2 / Lipschitz) on the same noisy answers
  (``GaussianMechanism`` draws the same noise for the same seed), its first call (JIT
  compilation included) and a second, warm one;
* ``adult10 3-way factorization``: the same tables measured by ``FactorizationMechanism`` (the
  optimal residual strategy), its answers projected onto the local polytope;
* ``adult 2-way local``, ``adult 2-way L`` and ``adult 2-way mbi``: all 2-way marginals of Adult's
  14 attributes (91 tables) at (1, 1e-9)-DP, onto the local polytope, onto the relaxation L
  (``body="relaxed"``, its semidefinite and local constraints), and by mbi likewise.

Usage::

    .venv/bin/python benchmarks/marginal_tables.py            # 5 repeats per row, the least time
    .venv/bin/python benchmarks/marginal_tables.py --repeats 1 --rows "adult10 3-way,adult10 3-way mbi"
    .venv/bin/python benchmarks/marginal_tables.py --smoke    # does it run (seconds)

The mbi rows need ``mbi>=2.0`` (``pip install -e '.[benchmarks]'``) and report why where it is
missing. Writes ``results/marginal_tables.csv``. Each row runs in a fresh process with the BLAS
thread count set to each of ``--threads`` (default 1 and 2).
"""

from __future__ import annotations

import itertools
import json
import sys
from typing import Any

import _common as bench
import numpy as np
import pandas as pd

ROWS = ("adult 1-way", "10x17 1-way", "10x17 prefix", "10x17 2-way", "10x17 3-way", "chain 3-way",
        "chain 3-way cvxpy", "adult10 3-way", "adult10 3-way mbi", "adult10 3-way factorization",
        "adult 2-way local", "adult 2-way L", "adult 2-way mbi")

#: Adult's attributes in the 10-attribute rows: all but the four with about 100 values.
ADULT10 = ("age", "workclass", "education-num", "marital-status", "occupation", "relationship", "race", "sex",
           "native-country", "income>50K")
#: A smoke run: one row of each kind of job, on small data: Adult's attributes below (2,000 of its
#: rows) for Adult's rows, 3 attributes of 5 values for 10x17, 5 of 4 values for the chain, 500 rows.
SMOKE_ROWS = ("10x17 prefix", "chain 3-way cvxpy", "adult10 3-way factorization", "adult10 3-way mbi", "adult 2-way L")
SMOKE_ATTRIBUTES = ("race", "sex", "income>50K")


def _setting(row: str, smoke: bool = False) -> tuple[Any, Any, Any, Any]:
    """``(data, workload, privacy, body)`` of a row (its mbi and CVXPY twins share it); on a smoke
    run's small data with ``smoke``."""
    import projmech as pm
    from projmech.workloads import identity, kron, stack, total

    base = row.replace(" cvxpy", "").replace(" mbi", "").replace(" local", "").replace(" factorization", "")
    base = base.replace(" L", "")
    if smoke:
        adult = pm.datasets.adult(attributes=SMOKE_ATTRIBUTES).subsample(2000, np.random.default_rng(0))
        values, attributes, rows, chain = 5, 3, 500, 5
    else:
        adult, values, attributes, rows, chain = None, 17, 10, 10_000, 20
    if base == "adult 1-way":
        data = adult or pm.datasets.adult()
        return data, pm.marginals(data.domain, way=1, implicit=True), pm.ZCDP(0.5), "auto"
    if base.startswith("10x17"):
        domain = pm.Domain([f"p{i}" for i in range(attributes)], [values] * attributes)
        data = pm.Dataset(np.random.default_rng(0).integers(0, values, size=(rows, attributes)), domain)
        if base.endswith("prefix"):
            return data, kron([pm.prefix(values)] + [total(values)] * (attributes - 1)), pm.ZCDP(0.5), "auto"
        return data, pm.marginals(domain, way=int(base[6]), implicit=True), pm.ZCDP(0.5), "auto"
    if base == "chain 3-way":
        domain = pm.Domain([f"c{i}" for i in range(chain)], [4] * chain)
        rng = np.random.default_rng(0)
        records = np.empty((rows, chain), dtype=np.int64)
        records[:, 0] = rng.integers(0, 4, size=rows)
        for column in range(1, chain):  # each value repeats the last with probability 0.7
            keep = rng.random(rows) < 0.7
            records[:, column] = np.where(keep, records[:, column - 1], rng.integers(0, 4, size=rows))
        workload = stack([kron([identity(4) if i <= j < i + 3 else total(4) for j in range(chain)])
                          for i in range(chain - 2)])
        return pm.Dataset(records, domain), workload, pm.ZCDP(0.5), "auto"
    if base == "adult10 3-way":
        data = adult or pm.datasets.adult(attributes=ADULT10)
        return data, pm.marginals(data.domain, way=3, implicit=True), pm.ApproxDP(1.0, 1e-9), "auto"
    if base == "adult 2-way":
        data = adult or pm.datasets.adult()
        body = "relaxed" if row.endswith(" L") else "local"
        return data, pm.marginals(data.domain, way=2, implicit=True), pm.ApproxDP(1.0, 1e-9), body
    raise ValueError(f"unknown row {row!r}")


def _table_rows(workload: Any) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """Each table's attributes and its rows in the workload's answers."""
    from projmech.bodies import local_tables, table_groups

    groups = table_groups(workload)
    if not isinstance(groups, str):
        return list(zip(groups.attributes, groups.rows))
    model = local_tables(workload)
    assert not isinstance(model, str), model
    return [(model.attributes[t], np.arange(row, row + int(model.starts[t + 1] - model.starts[t])))
            for t, row, _ in model.terms]


def _inconsistency(answers: np.ndarray, tables: list[tuple[tuple[int, ...], np.ndarray]], sizes: tuple[int, ...]
                   ) -> float:
    """The largest disagreement of two tables on the marginal of the attributes they share, or of
    a table's sum from 1 (tables read as row-major arrays over their attributes)."""
    arrays = {attributes: answers[rows].reshape([sizes[a] for a in attributes]) for attributes, rows in tables}
    worst = max(abs(float(table.sum()) - 1.0) for table in arrays.values())
    for (one, first), (two, second) in itertools.combinations(arrays.items(), 2):
        shared = sorted(set(one) & set(two))
        if shared:
            left = first.sum(axis=tuple(i for i, a in enumerate(one) if a not in shared))
            right = second.sum(axis=tuple(i for i, a in enumerate(two) if a not in shared))
            worst = max(worst, float(np.max(np.abs(left - right))))
    return worst


def _job(row: str, repeats: int, mbi_iters: int = 1000, smoke: bool = False) -> dict:
    if row.endswith(" mbi"):
        return _mbi_job(row, mbi_iters, smoke)
    if row.endswith(" cvxpy"):
        return _cvxpy_job(row, smoke)
    import projmech as pm

    data, workload, privacy, body = _setting(row, smoke)
    truth = workload.answer_data(data)
    tables = _table_rows(workload) if not row.endswith("prefix") else []
    best: dict = {}
    for repeat in range(repeats):
        with bench.Timer() as timer:
            if row.endswith(" factorization"):  # the optimal strategy's answers, projected
                mechanism = pm.FactorizationMechanism(workload, privacy, project=True, body=body, noise="continuous")
            else:
                mechanism = pm.ProjectionMechanism(workload, privacy, body=body, noise="continuous")
            release = mechanism.release(data, rng=repeat)
        projection = release.projection
        if not best or timer.seconds < best["release_s"]:
            best = {
                "row": row, "k": workload.num_queries, "m": float(workload.universe_size),
                "body": mechanism.body.name, "release_s": timer.seconds,
                "projection_s": projection.stats.total_time,
                "inconsistency": _inconsistency(release.answers, tables, data.domain.sizes) if tables else float("nan"),
                "min_cell": float(projection.answers.min()),
                "gap": projection.stats.gap, "tolerance": projection.stats.tolerance,
                "tolerance_met": projection.stats.tolerance_met,
                "objective": 0.5 * float(np.sum((release.answers - release.noisy_answers) ** 2)),
                "noise_checksum": float(np.sum(release.noisy_answers)),
                "rmse_noisy": float(np.sqrt(np.mean((release.noisy_answers - truth) ** 2))),
                "rmse_projected": float(np.sqrt(np.mean((release.answers - truth) ** 2))),
                "peak_mb": bench.peak_memory_mb(),
            }
    return best


def _noisy(row: str, smoke: bool = False) -> tuple[Any, Any, np.ndarray, np.ndarray, float]:
    """``(data, workload, truth, noisy answers, sigma)`` of the row's first release (seed 0),
    drawn by the Gaussian mechanism, whose noise the projection mechanism shares for a seed."""
    import projmech as pm

    data, workload, privacy, _ = _setting(row, smoke)
    release = pm.GaussianMechanism(workload, privacy, noise="continuous").release(data, rng=0)
    return data, workload, workload.answer_data(data), release.noisy_answers, float(release.sigma)


def _cvxpy_job(row: str, smoke: bool = False) -> dict:
    """The row's noisy answers projected onto the local polytope of its tables written as a CVXPY
    model from the definition (Clarabel): the oracle for the objective and the time to beat."""
    import cvxpy as cp

    data, workload, truth, noisy, sigma = _noisy(row, smoke)
    tables = _table_rows(workload)
    sizes = data.domain.sizes
    with bench.Timer() as timer:
        variables = [cp.Variable(rows.size, nonneg=True) for _, rows in tables]
        constraints = [cp.sum(v) == 1 for v in variables]
        for (one, v1), (two, v2) in itertools.combinations(zip([t for t, _ in tables], variables), 2):
            shared = sorted(set(one) & set(two))
            if shared:
                constraints.append(_summing(one, shared, sizes) @ v1 == _summing(two, shared, sizes) @ v2)
        objective = sum(cp.sum_squares(v - noisy[rows]) for v, (_, rows) in zip(variables, tables))
        problem = cp.Problem(cp.Minimize(0.5 * objective), constraints)
        problem.solve(solver="CLARABEL")
    answers = np.concatenate([v.value for v in variables])
    return {"row": row, "k": workload.num_queries, "m": float(workload.universe_size), "body": "cvxpy/CLARABEL",
            "release_s": timer.seconds, "projection_s": timer.seconds, "status": "ok" if problem.status == "optimal"
            else f"cvxpy: {problem.status}", "objective": float(problem.value),
            "inconsistency": _inconsistency(answers, tables, sizes), "min_cell": float(answers.min()),
            "noise_checksum": float(np.sum(noisy)),
            "rmse_noisy": float(np.sqrt(np.mean((noisy - truth) ** 2))),
            "rmse_projected": float(np.sqrt(np.mean((answers - truth) ** 2))), "peak_mb": bench.peak_memory_mb()}


def _summing(attributes: tuple[int, ...], kept: list[int], sizes: tuple[int, ...]) -> Any:
    """The sparse 0/1 matrix summing a row-major table of ``attributes`` onto ``kept``."""
    import scipy.sparse as sp

    shape = [sizes[a] for a in attributes]
    cells = np.indices(shape).reshape(len(shape), -1)
    target = np.ravel_multi_index([cells[attributes.index(a)] for a in kept], [sizes[a] for a in kept])
    return sp.csr_array((np.ones(cells.shape[1]), (target, np.arange(cells.shape[1]))),
                        shape=(int(np.prod([sizes[a] for a in kept])), cells.shape[1]))


def _mbi_job(row: str, iters: int, smoke: bool = False) -> dict:
    """Private-PGM's approximate estimator on the row's noisy answers (identity measurements of each
    table, in counts, with the noise's standard deviation): its first call, then a warm one."""
    mbi, version = bench.import_mbi()
    if mbi is None:
        return {"row": row, "status": f"skipped: {version}"}
    from mbi import approximate_oracles, marginal_loss

    data, workload, truth, noisy, sigma = _noisy(row, smoke)
    tables = _table_rows(workload)
    names = list(data.domain.attributes)
    domain = mbi.Domain(names, list(data.domain.sizes))
    n = float(data.n)
    cliques = [tuple(names[a] for a in attributes) for attributes, _ in tables]
    times = []
    for _ in range(2):  # the first call compiles (JIT); the second is warm
        with bench.Timer() as timer:
            measurements = [mbi.LinearMeasurement(noisy[rows] * n, clique, stddev=sigma * n)
                            for (_, rows), clique in zip(tables, cliques)]
            loss = marginal_loss.from_linear_measurements(measurements, domain)
            estimator = approximate_oracles.ApproxMirrorDescent(stepsize=2.0 / (loss.lipschitz * n))
            marginals = estimator.estimate(domain, loss, known_total=n, iters=iters)
            answers = np.concatenate([np.asarray(marginals.project(clique).datavector(), dtype=float)
                                      for clique in cliques]) / n
        times.append(timer.seconds)
    return {"row": row, "k": workload.num_queries, "m": float(workload.universe_size),
            "body": f"mbi {version} ApproxMirrorDescent", "mbi_iters": iters, "release_s": times[1],
            "first_call_s": times[0],
            "projection_s": times[1], "inconsistency": _inconsistency(answers, tables, data.domain.sizes),
            "min_cell": float(answers.min()), "objective": 0.5 * float(np.sum((answers - noisy) ** 2)),
            "noise_checksum": float(np.sum(noisy)),
            "rmse_noisy": float(np.sqrt(np.mean((noisy - truth) ** 2))),
            "rmse_projected": float(np.sqrt(np.mean((answers - truth) ** 2))), "peak_mb": bench.peak_memory_mb()}


def main() -> None:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=bench.int_list, default=[1, 2])
    parser.add_argument("--rows", type=bench.name_list, default=list(ROWS), help="comma-separated rows (default all)")
    parser.add_argument("--mbi-iters", type=int, default=1000, help="mbi's mirror-descent steps (default 1000)")
    parser.add_argument("--worker", help="(internal) run one job")
    bench.add_smoke_option(parser, f"rows {', '.join(SMOKE_ROWS)} on small data; 1 repeat, 1 thread, 20 mbi steps")
    args = parser.parse_args()
    if args.worker:
        job = json.loads(args.worker)
        print(json.dumps(_job(job["row"], job["repeats"], job.get("mbi_iters", 1000), job.get("smoke", False))))
        return
    out = bench.RESULTS / "marginal_tables.csv"
    if args.smoke:
        args.rows, args.repeats, args.threads, args.mbi_iters = list(SMOKE_ROWS), 1, [1], 20
        out = bench.smoke_path(out)
    unknown = sorted(set(args.rows) - set(ROWS))
    if unknown:
        parser.error(f"--rows: unknown {unknown}; expected some of {list(ROWS)}")
    rows = []
    for threads in args.threads:
        for row in args.rows:
            result = bench.run_in_process(__file__, {"row": row, "repeats": args.repeats, "mbi_iters": args.mbi_iters,
                                                     "smoke": args.smoke}, threads, timeout=1800)
            rows.append({"row": row, "threads": threads, **result})
    frame = pd.DataFrame(rows)
    path = bench.write_csv(frame, out)
    print(f"{'row':<20} {'th':>2} {'body':<20} {'k':>8} {'cells':>8} {'release':>8} {'project':>8} {'1st call':>8} "
          f"{'incons.':>8} {'min cell':>9} {'gap<=tol':>8} {'objective':>11} {'rmse noisy':>10} {'projected':>10} "
          f"{'peak MB':>8}")
    for r in frame.to_dict("records"):
        if r.get("status") != "ok":
            print(f"{r['row']:<20} {r['threads']:>2} {r.get('status')}")
            continue
        first = r.get("first_call_s")
        print(f"{r['row']:<20} {r['threads']:>2} {str(r['body'])[:20]:<20} {r['k']:>8} {r['m']:>8.2g} "
              f"{r['release_s']:>7.3f}s {r['projection_s']:>7.3f}s "
              f"{'' if first is None or first != first else f'{first:7.1f}s':>8} {r['inconsistency']:>8.1e} "
              f"{r['min_cell']:>9.2e} {str(r.get('tolerance_met', '')):>8} {r['objective']:>11.6g} "
              f"{r['rmse_noisy']:>10.3e} {r['rmse_projected']:>10.3e} {r['peak_mb']:>8.0f}")
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
