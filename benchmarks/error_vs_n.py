"""Error against data size: the Gaussian mechanism vs the projection mechanism (seed 001, §3).

Binarized Adult restricted to ``ADULT_DEMO_ATTRIBUTES`` (10 binary attributes, 1024 cells), the
workload of all 2-way marginals (180 queries), a fixed privacy guarantee (default
``ApproxDP(1, 1e-6)``, replace-one neighbours) and a sweep of the data size ``n`` by subsampling
without replacement. For each ``n``, ``--trials`` independent releases of each mechanism give the
mean RMSE with a 95% Student-t interval and the mean time per release
(:func:`projmech.experiments.error_vs_n`); the closed-form Gaussian expectation
``GaussianMechanism.expected_rmse(n)`` is added as a column.

Checks, printed: the projection mechanism is below the Gaussian one at every ``n`` (the upper end
of its interval is below the lower end of the Gaussian's), and the ratio Gaussian / projection
grows as ``n`` shrinks. Exit code 1 if the first check fails at some ``n``.

Run from the repository root: ``.venv/bin/python benchmarks/error_vs_n.py [--quick]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from projmech import ApproxDP, GaussianMechanism, ProjectionMechanism, datasets, marginals
from projmech.experiments import error_vs_n, format_table, plot_error_vs_n

DEFAULT_SIZES: tuple[int, ...] = (50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 48842)
QUICK_SIZES: tuple[int, ...] = (100, 1000, 48842)


def compare(results: pd.DataFrame) -> pd.DataFrame:
    """One row per ``n``: both mechanisms' mean RMSE and interval, the closed-form Gaussian
    expectation, the ratio Gaussian / projection and whether projection is certainly below."""
    wide = results.pivot(index="n", columns="mechanism", values=["rmse_mean", "rmse_ci_low", "rmse_ci_high"])
    table = pd.DataFrame({
        "gaussian_expected_rmse": results.groupby("n")["gaussian_expected_rmse"].first(),
        "gaussian_rmse": wide[("rmse_mean", "gaussian")],
        "gaussian_ci_low": wide[("rmse_ci_low", "gaussian")],
        "projection_rmse": wide[("rmse_mean", "projection")],
        "projection_ci_high": wide[("rmse_ci_high", "projection")],
    }).sort_index()
    table["ratio"] = table["gaussian_rmse"] / table["projection_rmse"]
    table["projection_below"] = table["projection_ci_high"] < table["gaussian_ci_low"]
    return table


def format_comparison(table: pd.DataFrame) -> str:
    """Fixed-width rendering of :func:`compare`'s table (the means are in ``format_table``'s)."""
    header = (f"{'n':>7} | {'Gaussian E[RMSE] (closed form)':>30} | {'Gaussian CI low':>15} | "
              f"{'projection CI high':>18} | {'ratio G/P':>9} | below")
    lines = [header, "-" * len(header)]
    for n, row in table.iterrows():
        lines.append(
            f"{n:>7} | {row.gaussian_expected_rmse:>30.6f} | {row.gaussian_ci_low:>15.6f} | "
            f"{row.projection_ci_high:>18.6f} | {row.ratio:>9.2f} | {'yes' if row.projection_below else 'NO'}"
        )
    return "\n".join(lines)


def ratio_trend(table: pd.DataFrame) -> tuple[bool, list[tuple[int, int]]]:
    """Whether the ratio Gaussian / projection is non-increasing in ``n`` (grows as ``n`` shrinks),
    and the consecutive pairs ``(n_small, n_large)`` where it is not."""
    sizes = list(table.index)
    ratios = table["ratio"].to_numpy()
    violations = [(sizes[i], sizes[i + 1]) for i in range(len(sizes) - 1) if ratios[i] < ratios[i + 1]]
    return not violations, violations


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=lambda s: [int(p) for p in s.split(",") if p.strip()], default=None,
                        help="comma-separated data sizes n (default " + ",".join(map(str, DEFAULT_SIZES)) + ")")
    parser.add_argument("--trials", type=int, default=None, help="releases per mechanism and n (default 30)")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--solver", default="auto", help="projection solver: auto, CLARABEL, ECOS, OSQP or SCS")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help=f"sizes {','.join(map(str, QUICK_SIZES))} and 3 trials")
    parser.add_argument("--out", default="results/error_vs_n.csv",
                        help="CSV output; the plot goes next to it with .png (default results/error_vs_n.csv)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    sizes = sorted(set(args.sizes if args.sizes is not None else (QUICK_SIZES if args.quick else DEFAULT_SIZES)))
    trials = args.trials if args.trials is not None else (3 if args.quick else 30)
    data = datasets.adult(binary=True, attributes=datasets.ADULT_DEMO_ATTRIBUTES)
    if not sizes or sizes[0] < 1 or sizes[-1] > data.n:
        print(f"error_vs_n.py: error: --sizes must lie in [1, {data.n}], got {sizes}", file=sys.stderr)
        return 2
    if trials < 2:
        print("error_vs_n.py: error: --trials must be at least 2 (for a confidence interval)", file=sys.stderr)
        return 2
    privacy = ApproxDP(args.epsilon, args.delta)
    workload = marginals(data.domain, 2)
    gaussian = GaussianMechanism(workload, privacy)
    mechanisms = {"gaussian": gaussian, "projection": ProjectionMechanism(workload, privacy, solver=args.solver)}

    print(f"error vs n: Adult, {len(data.domain)} binary attributes, {workload.num_queries} two-way marginal "
          f"cells, {privacy}, replace-one neighbours, {trials} trials per n, solver {args.solver}", flush=True)
    start = time.perf_counter()
    results = error_vs_n(data, mechanisms, sizes, trials, np.random.default_rng(args.seed),
                         progress=not args.no_progress)
    results["gaussian_expected_rmse"] = results["n"].map(gaussian.expected_rmse)
    print(format_table(results))
    table = compare(results)
    print()
    print(format_comparison(table))

    below = bool(table["projection_below"].all())
    monotone, violations = ratio_trend(table)
    print()
    failing = [int(n) for n in table.index[~table["projection_below"]]]
    print(f"projection below Gaussian at every n (upper CI < lower CI): {'yes' if below else f'NO, at n={failing}'}")
    print(f"ratio Gaussian/projection grows as n shrinks: {'yes' if monotone else 'no'} "
          f"(from {table['ratio'].iloc[-1]:.2f} at n={table.index[-1]} to {table['ratio'].iloc[0]:.2f} "
          f"at n={table.index[0]}"
          + ("" if monotone else "; exceptions: " + ", ".join(f"ratio(n={a}) < ratio(n={b})" for a, b in violations))
          + ")")

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    results.to_csv(out, index=False)
    plot = out.with_suffix(".png")
    plot_error_vs_n(results, str(plot), f"Adult 2-way marginals, {privacy}",
                    bounds={"Gaussian E[RMSE] (closed form)": (sizes, [gaussian.expected_rmse(n) for n in sizes])})
    print(f"\nwrote {out} and {plot} in {time.perf_counter() - start:.1f} s")
    return 0 if below else 1


if __name__ == "__main__":
    sys.exit(main())
