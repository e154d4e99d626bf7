"""Optimal factorizations of multi-attribute workloads beside HDMM's published values, and
releases end to end.

Part ``gamma``: ``factorization_norm`` on HDMM's benchmark workloads (as issue 14 defines them,
in ``projmech.workloads``; HDMM's values are its best template in
``experiments/journal/hderror.csv``, in projmech's normalization of gamma):

* Adult W1: every 0- to 3-way marginal over (100,100,100,99,85,42,16,15,9,7,6,5,2,2) (HDMM 11.29,
  OPT_M); W2: the 2-way Kronecker products with prefix on the first five attributes and identity
  on the others (24.95, OPT⊗);
* CPS W1: ``identity_total`` on each of (50,100,7,4,2) (1.8585); W2: prefix(50) ⊗ prefix(100) ⊗
  identity_total on (7,4,2) (6.9755);
* Loans W1: the marginal of every attribute subset of (101,101,101,101,3,8,36,6,51,4,5,15) whose
  table has at most 5,000 cells (8.26); W2: the same with prefix on the first four (23.60);
* ResidualPlanner's scale: all 2-way marginals of 100 attributes of 10 values, and all 0- to
  3-way marginals of 15 attributes of 10 values (HDMM's OPT_M: 2,870 s for 100 evaluations).

Per row: gamma, the certified lower bound, the relative gap on gamma^2, the method, wall time,
and whether gamma, rounded to HDMM's four decimals, is at most HDMM's value. Each row runs in a fresh process with
``OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = MKL_NUM_THREADS`` set to each of ``--threads``, which
records its peak memory, and a hash of the strategy's first measurements on fixed records, so that
the strategy's dependence on the thread count is seen.

Part ``worst``: the max objective on the marginal rows (``factorization_norm(objective="max")``,
its certified gamma_2 = the worst query's error factor, and the time of the optimization with the
query norms), beside gamma_2 of the mean-optimal strategy (what HDMM's objective, the expected
total squared error, optimizes) and each strategy's gamma.

Part ``release``: records, counts, noise, reconstruction, answers, end to end at ``ZCDP(0.5)``
with the seed fixed: Adult W1 on the embedded categorical Adult data (48,842 rows), and all 2-way
marginals of 100 attributes of 5 values on 50,000 synthetic rows, and Adult's 2-way tables
with prefix on its six ordinal attributes (``range_marginals``). Per row: time, peak memory,
RMSE against the closed form, and a hash of the released answers (the same for 1 and 2 threads
if the release does not depend on BLAS threading).

Writes ``results/multidimensional.csv``. Run from the repository root:
``.venv/bin/python benchmarks/multidimensional.py [--quick | --smoke]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

import _common as bench
import pandas as pd

ADULT = (100, 100, 100, 99, 85, 42, 16, 15, 9, 7, 6, 5, 2, 2)
CPS = (50, 100, 7, 4, 2)
LOANS = (101, 101, 101, 101, 3, 8, 36, 6, 51, 4, 5, 15)

#: name: (HDMM's gamma, its best template), to the four decimals of hderror.csv.
HDMM = {"Adult W1": (11.2938, "OPT_M"), "Adult W2": (24.9534, "OPT⊗"), "CPS W1": (1.8585, "OPT⊗"),
        "CPS W2": (6.9755, "OPT⊗"), "Loans W1": (8.2628, "OPT_M"), "Loans W2": (23.6048, "OPT_M")}


def _domain(sizes: Sequence[int]) -> Any:
    import projmech as pm

    return pm.Domain([f"a{i}" for i in range(len(sizes))], sizes)


def _small_krons(sizes: Sequence[int], ordinal: int, cells: int) -> Any:
    """The union over attribute subsets with at most ``cells`` cells of the products with prefix
    (first ``ordinal`` attributes) or identity on the subset and total elsewhere."""
    from projmech.workloads import identity, kron, prefix, stack, total

    domain = _domain(sizes)
    inside = [prefix(n) if i < ordinal else identity(n) for i, n in enumerate(sizes)]
    outside = [total(n) for n in sizes]
    parts = [kron([inside[i] if i in subset else outside[i] for i in range(len(sizes))], domain=domain, implicit=True)
             for way in range(len(sizes) + 1) for subset in itertools.combinations(range(len(sizes)), way)
             if math.prod(sizes[i] for i in subset) <= cells]
    return stack(parts, implicit=True)


def workload(name: str) -> Any:
    import projmech as pm
    from projmech.workloads import identity_total, kron, prefix, range_marginals

    if name == "Adult W1":
        return pm.marginals(_domain(ADULT), ways=(0, 1, 2, 3), implicit=True)
    if name == "Adult W2":
        return range_marginals(_domain(ADULT), 2, {f"a{i}": "prefix" for i in range(5)})
    if name == "CPS W1":
        return kron([identity_total(n) for n in CPS], domain=_domain(CPS))
    if name == "CPS W2":
        return kron([prefix(50), prefix(100), *(identity_total(n) for n in CPS[2:])], domain=_domain(CPS))
    if name == "Loans W1":
        return _small_krons(LOANS, 0, 5000)
    if name == "Loans W2":
        return _small_krons(LOANS, 4, 5000)
    if name == "100 x 10, 2-way":
        return pm.marginals(_domain([10] * 100), 2, implicit=True)
    if name == "15 x 10, 0-3-way":
        return pm.marginals(_domain([10] * 15), ways=(0, 1, 2, 3), implicit=True)
    if name == SMOKE_ROW:
        return pm.marginals(_domain([3] * 4), ways=(0, 1, 2), implicit=True)
    raise ValueError(f"unknown workload {name!r}")


#: The marginal workloads of GAMMA_ROWS, whose max objective has a structured method.
WORST_ROWS = ("Adult W1", "Loans W1", "100 x 10, 2-way", "15 x 10, 0-3-way")
GAMMA_ROWS = ("Adult W1", "Adult W2", "CPS W1", "CPS W2", "Loans W1", "Loans W2", "100 x 10, 2-way",
              "15 x 10, 0-3-way")
QUICK_GAMMA_ROWS = ("Adult W1", "CPS W1", "CPS W2", "100 x 10, 2-way")
RELEASE_ROWS = ("Adult W1 on Adult", "Adult ranges on Adult", "100 x 5, 2-way")
#: A smoke run's row of every part: a workload and records small enough for seconds.
SMOKE_ROW = "4 x 3, 0-2-way"


def gamma_job(name: str, tol: float) -> dict[str, Any]:
    import numpy as np

    import projmech as pm

    built = workload(name)
    with bench.Timer() as timer:
        fact = pm.factorization_norm(built, tol=tol)
    # A fingerprint of the strategy: its first measurements on fixed records.
    domain = built.domain
    records = np.random.default_rng(0).integers(0, np.array(domain.sizes), size=(100, len(domain)))
    try:
        probe = fact.strategy.answer_counts(pm.Dataset(records, domain))[:1000]
    except ValueError:  # a strategy over every attribute at once: no table of the records holds it
        probe = fact.strategy.columns(np.arange(min(8, built.universe_size)))
    return {"k": f"{built.num_queries:.4g}", "m": f"{built.universe_size:.4g}", "method": fact.stats.solver,
            "gamma": fact.gamma, "lower_bound": fact.lower_bound, "relative_gap": fact.relative_gap,
            "tolerance_met": fact.stats.tolerance_met, "seconds": timer.seconds, "peak_mb": bench.peak_memory_mb(),
            "strategy_hash": bench.answers_digest(probe)}


def worst_job(name: str, tol: float) -> dict[str, Any]:
    """The worst query's error factor: gamma_2 of the max-optimal strategy (certified) beside
    gamma_2 of the mean-optimal one, which HDMM's objective (expected total squared error) asks
    for."""
    import projmech as pm

    built = workload(name)
    with bench.Timer() as timer:
        worst = pm.factorization_norm(built, objective="max", tol=tol)
        value = worst.gamma_2  # its query norms are part of the time
    mean = pm.factorization_norm(built, tol=tol)
    return {"k": f"{built.num_queries:.4g}", "m": f"{built.universe_size:.4g}", "method": worst.stats.solver,
            "gamma": value, "lower_bound": worst.lower_bound, "relative_gap": worst.relative_gap,
            "tolerance_met": worst.stats.tolerance_met, "seconds": timer.seconds, "peak_mb": bench.peak_memory_mb(),
            "mean_optimal_gamma_2": mean.gamma_2, "max_optimal_gamma": worst.gamma, "mean_optimal_gamma": mean.gamma}


def release_job(name: str) -> dict[str, Any]:
    import numpy as np

    import projmech as pm
    from projmech.datasets import adult

    if name == "Adult W1 on Adult":
        data = adult(attributes=None)
        built = pm.marginals(data.domain, ways=(0, 1, 2, 3), implicit=True)
    elif name == "Adult ranges on Adult":
        from projmech.workloads import range_marginals

        data = adult(attributes=None)
        ordinal = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
        built = range_marginals(data.domain, 2, {attribute: "prefix" for attribute in ordinal})
    elif name == SMOKE_ROW:
        domain = _domain([3] * 4)
        data = pm.Dataset(np.random.default_rng(0).integers(0, 3, size=(500, 4)), domain)
        built = pm.marginals(domain, ways=(0, 1, 2), implicit=True)
    else:
        domain = _domain([5] * 100)
        data = pm.Dataset(np.random.default_rng(0).integers(0, 5, size=(50_000, 100)), domain)
        built = pm.marginals(domain, 2, implicit=True)
    with bench.Timer() as timer:
        mechanism = pm.FactorizationMechanism(built, pm.ZCDP(0.5))
        released = mechanism.release(data, rng=np.random.default_rng(0))
    truth = built.answer_data(data)
    return {"k": f"{built.num_queries:.4g}", "m": f"{built.universe_size:.4g}",
            "method": mechanism.factorization.stats.solver, "gamma": mechanism.factorization.gamma,
            "seconds": timer.seconds, "peak_mb": bench.peak_memory_mb(),
            "rmse": float(np.sqrt(np.mean((released.answers - truth) ** 2))),
            "expected_rmse": mechanism.expected_error(data.n), "answers_hash": bench.answers_digest(released.answers)}


def run_worker(part: str, name: str, threads: int, tol: float) -> dict[str, Any]:
    """One job in a fresh process with ``threads`` BLAS threads; its row, or its failure."""
    return {"part": part, "workload": name, "threads": threads,
            **bench.run_in_process(__file__, [part, name, tol], threads)}


def format_rows(results: pd.DataFrame) -> str:
    lines = []
    for row in results.itertuples():
        hdmm = HDMM.get(row.workload)
        # At HDMM's published precision (four decimals).
        compared = "" if hdmm is None or row.part != "gamma" or not isinstance(row.gamma, float) else (
            f"{hdmm[0]:g} {'yes' if round(row.gamma, 4) <= hdmm[0] else 'NO'}")
        lines.append(f"{row.part:<8} {row.workload:<20} {row.threads:>2} {str(row.method):<14} "
                     f"{bench.cell(row.gamma, '11.6f'):>11}"
                     f" {bench.cell(getattr(row, 'lower_bound', None), '11.6f'):>11} "
                     f"{bench.cell(getattr(row, 'relative_gap', None), '9.1e'):>9}"
                     f" {bench.cell(row.seconds, '8.2f'):>8} "
                     f"{bench.cell(row.peak_mb, '7.0f'):>7} {compared:>12}  {row.status}")
    header = (f"{'part':<8} {'workload':<20} {'th':>2} {'method':<14} {'gamma':>11} {'bound':>11} {'gap':>9} "
              f"{'seconds':>8} {'peak MB':>7} {'<= HDMM':>12}  status")
    return bench.ruled(header, lines)


def build_parser() -> Any:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--parts", type=bench.name_list, default=["gamma", "worst", "release"],
                        help="gamma, worst, release")
    parser.add_argument("--workloads", type=lambda text: [part.strip() for part in text.split(";")], default=None,
                        help=f"';'-separated gamma rows (default all: {'; '.join(GAMMA_ROWS)})")
    parser.add_argument("--threads", type=bench.int_list, default=[1, 2], help="BLAS thread counts (default 1,2)")
    parser.add_argument("--tol", type=float, default=1e-6, help="relative gap asked of factorization_norm")
    parser.add_argument("--quick", action="store_true", help=f"gamma rows {', '.join(QUICK_GAMMA_ROWS)}; 1 thread")
    parser.add_argument("--out", default="results/multidimensional.csv")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    bench.add_smoke_option(
        parser, f"each part on {SMOKE_ROW} marginals of 4 attributes x 3 values (500 records); 1 thread")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.worker:
        part, name, tol = json.loads(args.worker)
        jobs_of: dict[str, Callable[[], dict[str, Any]]] = {
            "gamma": lambda: gamma_job(name, tol), "worst": lambda: worst_job(name, tol),
            "release": lambda: release_job(name)}
        job = jobs_of[part]
        print(json.dumps(job()))
        return 0
    rows = args.workloads or (QUICK_GAMMA_ROWS if args.quick else GAMMA_ROWS)
    threads = [1] if args.quick else args.threads
    jobs = [("gamma", name) for name in rows] if "gamma" in args.parts else []
    jobs += [("worst", name) for name in WORST_ROWS if name in rows] if "worst" in args.parts else []
    jobs += [("release", name) for name in RELEASE_ROWS] if "release" in args.parts and not args.quick else []
    if args.smoke:
        threads, args.out = [1], bench.smoke_path(args.out)
        jobs = [(part, SMOKE_ROW) for part in ("gamma", "worst", "release") if part in args.parts]
    results = []
    for part, name in jobs:
        for count in threads:
            row = run_worker(part, name, count, args.tol)
            results.append(row)
            print(f"  {part} {name} threads={count}: {row.get('gamma', '')} {row['status']}", flush=True)
    frame = pd.DataFrame(results)
    print(format_rows(frame))
    for row in frame[(frame.part == "worst") & (frame.status == "ok")].itertuples():
        print(f"worst query, {row.workload} threads={row.threads}: gamma_2 {row.gamma:.4f} (bound "
              f"{row.lower_bound:.4f}) "
              f"against the mean-optimal strategy's {row.mean_optimal_gamma_2:.4f}, "
              f"{row.mean_optimal_gamma_2 / row.gamma:.2f}x lower; its gamma {row.max_optimal_gamma:.4f} against "
              f"{row.mean_optimal_gamma:.4f}")
    for part, name in jobs:
        column = "answers_hash" if part == "release" else "strategy_hash"
        rows_of = frame[(frame.part == part) & (frame.workload == name) & (frame.status == "ok")]
        if len(threads) > 1 and column in rows_of and len(rows_of) == len(threads):
            same = rows_of[column].nunique() == 1
            print(f"{name}: {'the same' if same else 'DIFFERENT'} {'answers' if part == 'release' else 'strategy'} "
                  f"with {', '.join(map(str, threads))} BLAS threads")
    path = bench.write_csv(frame, args.out)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
