"""The cost of exact discrete noise (OpenDP) against numpy's continuous noise, side by side.

Two workloads:

- **demo**: the 180 two-way marginal cells of the 10 binarized Adult attributes of ``make demo``,
  at n = 1,000 and n = 48,842 (the whole data set);
- **d=20**: all 760 two-way marginal cells of 20 binary attributes, 50,000 synthetic rows
  (implicit workload, projection by the active-set solver).

For each, the Gaussian and the projection mechanism at ``ApproxDP(1, 1e-6)`` and at ``ZCDP(0.5)``
with ``noise="discrete"`` and ``noise="continuous"``: the calibrated sigma on counts, the mean RMSE
against the true answers over the trials (± 95 % CI half-width) and the median time per release.
Under zCDP both calibrations give the same sigma; under (epsilon, delta) the discrete Gaussian is
calibrated through its zCDP guarantee and needs a few percent more noise.

Usage::

    .venv/bin/python benchmarks/noise.py               # 40 trials per cell
    .venv/bin/python benchmarks/noise.py --trials 5    # quick

Writes ``results/noise.csv``. Run single-threaded BLAS or not, as the environment sets it; the
table reports both with ``OMP_NUM_THREADS``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import projmech as pm

from _common import RESULTS, Timer, argument_parser, binary_domain, blas_threads, write_csv


def _workloads(seed: int) -> list[tuple[str, pm.Dataset, pm.Workload]]:
    adult = pm.datasets.adult(binary=True, attributes=pm.datasets.ADULT_DEMO_ATTRIBUTES)
    rng = np.random.default_rng(seed)
    demo = [(f"demo n={n}", adult.subsample(n, rng) if n < adult.n else adult, pm.marginals(adult.domain, 2))
            for n in (1000, adult.n)]
    d = 20
    domain = binary_domain(d)
    rows = (rng.random((50_000, d)) < rng.uniform(0.1, 0.9, d)).astype(np.int64)
    return demo + [("d=20 n=50000", pm.Dataset(rows, domain), pm.marginals(domain, 2, implicit=True))]


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 trials per cell")
    args = parser.parse_args()
    if args.quick:
        args.trials = 3
    rng = np.random.default_rng(args.seed)
    rows = []
    for name, data, workload in _workloads(args.seed):
        truth = workload.answer_data(data)
        for privacy in (pm.ApproxDP(1.0, 1e-6), pm.ZCDP(0.5)):
            for kind in ("gaussian", "projection"):
                for noise in ("continuous", "discrete"):
                    factory = pm.GaussianMechanism if kind == "gaussian" else pm.ProjectionMechanism
                    mechanism = factory(workload, privacy, noise=noise)
                    mechanism.release(data, rng=rng)  # warm: OpenDP's measurement, caches
                    errors, times = [], []
                    for _ in range(args.trials):
                        with Timer() as timer:
                            released = mechanism.release(data, rng=rng)
                        times.append(timer.seconds)
                        errors.append(pm.rmse(released.answers, truth))
                    mean, low, high = pm.evaluation.mean_confidence_interval(errors)
                    rows.append({"workload": name, "k": workload.num_queries, "privacy": str(privacy),
                                 "mechanism": kind, "noise": noise, "sigma_counts": mechanism.noise.scale,
                                 "rmse": mean, "rmse_half_width": (high - low) / 2,
                                 "time_median_s": float(np.median(times)), "trials": args.trials})
                    print(f"{name:<16} {str(privacy):<14} {kind:<10} {noise:<10} sigma {mechanism.noise.scale:8.3f}  "
                          f"RMSE {mean:.6f} ± {(high - low) / 2:.6f}  time {np.median(times) * 1e3:8.2f} ms",
                          flush=True)
    frame = pd.DataFrame(rows)
    write_csv(frame, RESULTS / "noise.csv")
    paired = frame.pivot_table(index=["workload", "privacy", "mechanism"], columns="noise",
                               values=["sigma_counts", "rmse", "time_median_s"])
    print("\ndiscrete / continuous (sigma, RMSE, time per release):")
    for key, row in paired.iterrows():
        print(f"{' | '.join(key):<48} sigma {row[('sigma_counts', 'discrete')] / row[('sigma_counts', 'continuous')]:.4f}  "
              f"RMSE {row[('rmse', 'discrete')] / row[('rmse', 'continuous')]:.3f}  "
              f"time {row[('time_median_s', 'discrete')] * 1e3:.2f} vs {row[('time_median_s', 'continuous')] * 1e3:.2f} ms")
    print(f"\nOMP_NUM_THREADS={blas_threads()['OMP_NUM_THREADS']}; wrote {RESULTS / 'noise.csv'}")


if __name__ == "__main__":
    main()
