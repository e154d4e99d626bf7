"""What bounds the adaptive mechanism's error on all 14 attributes of Adult: the tables it measures.

On AIM's benchmark (the embedded Adult, all 364 3-way marginals, ``(epsilon, 1e-9)``-DP under
add/remove, the size estimated, AIM's error metric: the mean over the workload's tables of
``0.5 ||mu_hat - mu||_1``), the universe is far too large for a joint estimate, and the
adaptive mechanism reads the tables estimate where the junction tree of its measured tables is
too large (at epsilon 10): the local projection of its measurements, a table no measurement
contains fitted to its measured parts starting from the decomposable model of an acyclic set of
them (:class:`projmech.mechanisms.adaptive.DecomposableModel`). For each epsilon and seed this script runs
:meth:`projmech.AdaptiveProjectionMechanism.synthesize` once and reports

* ``error``: the release's error, and its parts on the tables inside a measured table
  (``error_covered``, ``covered`` of them) and on the rest (``error_uncovered``);
* ``error_rows``: the synthetic rows' error;
* ``exact_same``: the error if the same tables had been measured without noise (each the true
  table, completed as the tables estimate completes them): what the choice of tables alone allows;
* ``exact_pairs``: the error of every 3-way table fitted by maximum entropy to the true 2-way
  tables, all 91 of them: what measuring every pair exactly would allow.

The two oracles read the private data and are for diagnosis only. Usage::

    .venv/bin/python benchmarks/adaptive_coverage.py --epsilons 0.1,1,10 --seeds 3
    .venv/bin/python benchmarks/adaptive_coverage.py --smoke   # does it run (seconds)

Writes ``results/adaptive-coverage.csv`` and prints the means.
"""

from __future__ import annotations

import itertools
import math
import sys
import time

import _common as bench
import numpy as np
import pandas as pd

import projmech as pm
from projmech.mechanisms.adaptive import DecomposableModel, Measurement, estimate_tables, table_estimate

#: A smoke run's attributes of Adult (all 14 otherwise).
SMOKE_ATTRIBUTES = ("workclass", "race", "sex", "relationship", "income>50K")
#: A standard deviation small enough that the local projection returns exact tables unchanged.
_EXACT_SIGMA = 1e-6


def _exact_completion(data: pm.Dataset, measured: list[tuple[int, ...]], tables: list[tuple[int, ...]], *,
                      decomposable: bool = True) -> dict[tuple[int, ...], np.ndarray]:
    """Every workload table completed from the true tables on ``measured``: as the tables
    estimate completes them, or, without ``decomposable``, by maximum entropy (from uniform)."""
    sizes = tuple(data.domain.sizes)
    exact = [Measurement(t, np.asarray(data.table(list(t)), dtype=float).ravel() / data.n, _EXACT_SIGMA)
             for t in measured]
    estimate = estimate_tables(sizes, exact)
    if decomposable:
        model = DecomposableModel(estimate, sizes)
        return {t: model.complete(t) for t in tables}
    return {t: table_estimate(estimate, t, sizes) for t in tables}


def main() -> int:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--epsilons", type=bench.float_list, default=[0.1, 1.0, 10.0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", default="adaptive-coverage.csv", help="the CSV's name in results/")
    bench.add_smoke_option(parser, f"epsilon 1, one seed, Adult's {', '.join(SMOKE_ATTRIBUTES)}")
    args = parser.parse_args()
    out = bench.RESULTS / args.out
    if args.smoke:
        args.epsilons, args.seeds, out = [1.0], 1, bench.smoke_path(args.out)
    data = pm.datasets.adult(attributes=SMOKE_ATTRIBUTES) if args.smoke else pm.datasets.adult()
    sizes = tuple(data.domain.sizes)
    tables = list(itertools.combinations(range(len(sizes)), 3))
    truth = {t: np.asarray(data.table(list(t)), dtype=float) / data.n for t in tables}
    start = time.perf_counter()
    exact_pairs = bench.aim_error(_exact_completion(data, list(itertools.combinations(range(len(sizes)), 2)), tables,
                                                    decomposable=False), truth)
    print(f"every 2-way table exact, 3-way tables by maximum entropy: {exact_pairs:.4f} "
          f"({time.perf_counter() - start:.1f} s)", flush=True)
    workload = pm.marginals(data.domain, 3, implicit=True)
    records = []
    for epsilon in args.epsilons:
        for seed in range(args.seeds):
            mechanism = pm.AdaptiveProjectionMechanism(workload, pm.ApproxDP(epsilon, 1e-9), neighbouring="add-remove",
                                                       size="estimate", noise="continuous")
            start = time.perf_counter()
            synthesis = mechanism.synthesize(data, rng=seed)
            seconds = time.perf_counter() - start
            run = synthesis.run
            measured = sorted({m.attributes for m in run.measurements})
            covered = [t for t in tables if any(set(t) <= set(m) for m in measured)]
            uncovered = [t for t in tables if t not in covered]
            released = {t: run.table(t) for t in tables}
            rows = {t: np.asarray(synthesis.data.table(list(t)), dtype=float) / synthesis.data.n for t in tables}
            exact_same = _exact_completion(data, measured, tables)
            record = {
                "epsilon": epsilon, "seed": seed, "seconds": seconds,
                "measured": len(measured), "measured_cells": sum(math.prod(sizes[a] for a in t) for t in measured),
                **{f"measured_{k}way": sum(len(t) == k for t in measured) for k in (1, 2, 3)},
                "covered": len(covered),
                "error": bench.aim_error(released, truth),
                "error_covered": bench.aim_error(released, truth, covered) if covered else math.nan,
                "error_uncovered": bench.aim_error(released, truth, uncovered),
                "error_rows": bench.aim_error(rows, truth),
                "exact_same": bench.aim_error(exact_same, truth),
                "exact_same_uncovered": bench.aim_error(exact_same, truth, uncovered),
                "exact_pairs": exact_pairs,
            }
            records.append(record)
            print(", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in record.items()),
                  flush=True)
    frame = pd.DataFrame(records)
    path = bench.write_csv(frame, out)
    columns = ["measured", "covered", "error", "error_uncovered", "error_rows", "exact_same", "exact_pairs", "seconds"]
    print(f"\n{'epsilon':>7} " + " ".join(f"{c:>15}" for c in columns))
    for epsilon, group in frame.groupby("epsilon"):
        print(f"{epsilon:>7g} " + " ".join(f"{group[c].mean():>15.4f}" for c in columns))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
