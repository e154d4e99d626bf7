"""Coverage and width of the per-query confidence intervals (``Release.confidence_intervals``).

Each mechanism releases the ``m`` prefix sums of ``--rows`` records drawn uniformly over ``m``
values, ``--seeds`` times (continuous noise: seeds ``0 .. seeds-1``; discrete noise comes from
OpenDP's own generator). Per mechanism: the method the intervals name, whether they claim exact
coverage, the coverage over all (seed, query) pairs, the fraction of seeds where every interval
covers (simultaneous coverage), and the mean width. Exact intervals should cover within
``[94 %, 96 %]`` at level 0.95; bounds at least 95 %.

Run from the repository root: ``.venv/bin/python benchmarks/intervals.py [--quick | --smoke]``.
"""

from __future__ import annotations

import sys
from typing import Any

import _common as bench
import numpy as np
import pandas as pd

import projmech as pm


def mechanisms(workload: pm.Workload, m: int) -> dict[str, Any]:
    """The mechanisms compared, by name."""
    return {
        "gaussian": pm.GaussianMechanism(workload, pm.ZCDP(0.5), noise="continuous"),
        "laplace": pm.LaplaceMechanism(workload, pm.PureDP(1.0), noise="continuous"),
        "factorization (mean)": pm.FactorizationMechanism(workload, pm.ZCDP(0.5), noise="continuous"),
        "factorization (max)": pm.FactorizationMechanism(workload, pm.ZCDP(0.5), noise="continuous", objective="max"),
        "discrete gaussian": pm.GaussianMechanism(workload, pm.ZCDP(0.5), noise="discrete"),
        "discrete laplace": pm.LaplaceMechanism(workload, pm.PureDP(1.0), noise="discrete"),
        "factorization, tree, discrete": pm.FactorizationMechanism(
            workload, pm.ZCDP(0.5), noise="discrete", factorization=pm.Factorization(workload,
                                                                                     pm.hierarchical_strategy(m))),
        "projection": pm.ProjectionMechanism(workload, pm.ZCDP(0.5), noise="continuous"),
        "factorization+projection": pm.FactorizationMechanism(workload, pm.ZCDP(0.5), noise="continuous",
                                                              project=True),
    }


def main(argv: list[str] | None = None) -> int:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--m", type=int, default=48, help="prefix sums over m values (default 48)")
    parser.add_argument("--rows", type=int, default=1000, help="records (default 1000)")
    parser.add_argument("--seeds", type=int, default=2000, help="releases per mechanism (default 2000)")
    parser.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")
    parser.add_argument("--quick", action="store_true", help="m = 24, 400 rows, 200 seeds")
    parser.add_argument("--out", default=str(bench.RESULTS / "intervals.csv"), help="CSV file written")
    bench.add_smoke_option(parser, "m = 8, 50 rows, 3 seeds")
    args = parser.parse_args(argv)
    if args.quick:
        args.m, args.rows, args.seeds = 24, 400, 200
    if args.smoke:
        args.m, args.rows, args.seeds, args.out = 8, 50, 3, bench.smoke_path(args.out)
    rng = np.random.default_rng(5)
    records = rng.integers(0, args.m, size=(args.rows, 1))
    data = pm.Dataset(records, pm.Domain(["x"], [args.m]))
    workload = pm.prefix(args.m)
    truth = workload.answer(np.bincount(records[:, 0], minlength=args.m) / args.rows)
    rows = []
    for name, mechanism in mechanisms(workload, args.m).items():
        covered, together, widths = [], [], []
        intervals = None
        for seed in range(args.seeds):
            intervals = mechanism.release(data, rng=np.random.default_rng(seed)).confidence_intervals(args.level)
            hits = intervals.covers(truth)
            covered.append(hits.mean())
            together.append(hits.all())
            widths.append(intervals.mean_width)
        assert intervals is not None
        rows.append({"mechanism": name, "method": intervals.method, "exact": intervals.exact,
                     "coverage": float(np.mean(covered)), "simultaneous_coverage": float(np.mean(together)),
                     "mean_width": float(np.mean(widths))})
        print(f"{name:31} coverage {rows[-1]['coverage']:.4f}  all at once {rows[-1]['simultaneous_coverage']:.3f}  "
              f"width {rows[-1]['mean_width']:.4f}  {'exact' if intervals.exact else 'bound'}", flush=True)
    frame = pd.DataFrame(rows)
    print()
    print(bench.markdown(["mechanism", "exact", "coverage", "all at once", "mean width"],
                         [[row.mechanism, "yes" if row.exact else "bound", f"{row.coverage:.4f}",
                           f"{row.simultaneous_coverage:.3f}", f"{row.mean_width:.4f}"]
                          for row in frame.itertuples()], align=["---", "---", "---:", "---:", "---:"]))
    bad = frame[(frame.exact & ((frame.coverage < 0.94) | (frame.coverage > 0.96)))
                | (~frame.exact & (frame.coverage < args.level))]
    path = bench.write_csv(frame, args.out)
    print(f"\nwrote {path}")
    if not bad.empty and not args.smoke:
        print(f"coverage outside its target: {', '.join(bad.mechanism)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
