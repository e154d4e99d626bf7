"""MWEM's updates per round: error and time of ``OfflinePMW`` against ``updates_per_round``.

The 180 two-way marginal cells of 10 binarized Adult attributes (``ADULT_DEMO_ATTRIBUTES``), under
``PureDP(1)``, ``PureDP(0.1)`` and ``PureDP(0.01)``, for ``T`` rounds and ``u`` updates per round
(every measurement so far re-applied ``u`` times a round, post-processing), ``--seeds`` releases
each with continuous noise from seeds ``0 .. seeds-1``: the mean RMSE on fractions, its standard
error, and the seconds per release. The default ``updates_per_round=10`` rests on this table.

Run from the repository root: ``.venv/bin/python benchmarks/mwem_updates.py [--smoke]``.
"""

from __future__ import annotations

import sys
import time

import _common as bench
import numpy as np
import pandas as pd

import projmech as pm


def main(argv: list[str] | None = None) -> int:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--epsilons", type=bench.float_list, default=[1.0, 0.1, 0.01], help="pure-DP epsilons")
    parser.add_argument("--rounds", type=bench.int_list, default=[10, 30, 100], help="rounds T")
    parser.add_argument("--updates", type=bench.int_list, default=[1, 3, 10, 30], help="updates per round u")
    parser.add_argument("--seeds", type=int, default=10, help="releases per setting (default 10)")
    parser.add_argument("--out", default=str(bench.RESULTS / "mwem_updates.csv"), help="CSV file written")
    bench.add_smoke_option(parser, "epsilon 1, T = 10, u = 1 and 3, 2 seeds")
    args = parser.parse_args(argv)
    if args.smoke:
        args.epsilons, args.rounds, args.updates, args.seeds = [1.0], [10], [1, 3], 2
        args.out = bench.smoke_path(args.out)
    data = pm.datasets.adult(binary=True, attributes=pm.datasets.ADULT_DEMO_ATTRIBUTES)
    workload = pm.marginals(data.domain, 2)
    truth = workload.answer_counts(data) / data.n
    uniform = workload.answer(np.full(workload.universe_size, 1 / workload.universe_size))
    print(f"n = {data.n}; the uniform distribution's RMSE: {np.sqrt(np.mean((uniform - truth) ** 2)):.3f}")
    rows = []
    for epsilon in args.epsilons:
        for rounds in args.rounds:
            for updates in args.updates:
                mechanism = pm.OfflinePMW(workload, pm.PureDP(epsilon), rounds=rounds, updates_per_round=updates,
                                          noise="continuous")
                start = time.perf_counter()
                errors = [np.sqrt(np.mean((mechanism.release(data, rng=seed).answers - truth) ** 2))
                          for seed in range(args.seeds)]
                seconds = (time.perf_counter() - start) / args.seeds
                rows.append({"epsilon": epsilon, "rounds": rounds, "updates_per_round": updates,
                             "rmse": float(np.mean(errors)),
                             "standard_error": float(np.std(errors, ddof=1) / np.sqrt(args.seeds)),
                             "seconds": seconds})
                print(f"epsilon {epsilon:g}  T {rounds:3d}  u {updates:2d}  RMSE {rows[-1]['rmse']:.3f} "
                      f"± {rows[-1]['standard_error']:.3f}  {seconds:.2f} s", flush=True)
    frame = pd.DataFrame(rows)
    table = frame.pivot_table(index=["epsilon", "rounds"], columns="updates_per_round", sort=False,
                              values=["rmse", "standard_error", "seconds"])
    print()
    print(bench.markdown(["privacy", "T", *(f"u = {u}" for u in args.updates)],
                         [[f"PureDP({epsilon:g})", str(rounds),
                           *(f"{table.loc[(epsilon, rounds), ('rmse', u)]:.3f} ± "
                             f"{table.loc[(epsilon, rounds), ('standard_error', u)]:.3f} "
                             f"({table.loc[(epsilon, rounds), ('seconds', u)]:.2f} s)" for u in args.updates)]
                          for epsilon, rounds in table.index]))
    print(f"\nwrote {bench.write_csv(frame, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
