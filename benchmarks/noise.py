"""The cost of exact discrete noise (OpenDP) against numpy's continuous noise, side by side.

Two parts (``--parts``, both by default):

- **releases**: the Gaussian and the projection mechanism at ``ApproxDP(1, 1e-6)`` and at
  ``ZCDP(0.5)`` with ``noise="discrete"`` and ``noise="continuous"`` on two workloads: the 180
  two-way marginal cells of the 10 binarized Adult attributes of ``make demo``, at n = 1,000 and
  n = 48,842 (the whole data set); and all 760 two-way marginal cells of 20 binary attributes,
  50,000 synthetic rows (implicit workload, projection by the active-set solver). For each: the
  calibrated sigma on counts, the mean RMSE against the true answers over the trials (± 95 % CI
  half-width) and the median time per release. Under zCDP both calibrations give the same sigma;
  under (epsilon, delta) the discrete Gaussian is calibrated through its zCDP guarantee and needs
  a few percent more noise. Writes ``results/noise.csv``.
- **draws**: the sampler alone, ``Noise(...).sample(size)`` from an empty pool, at sigma (or b) =
  1, 10 and 10^4 (and at a calibrated, non-integer scale, 1.026 = 1/sqrt(0.95)), for the discrete
  Gaussian and the discrete Laplace on 1 sampler thread and on the default (one per usable
  core), beside numpy's continuous draws: microseconds per draw of wall-clock time (which is also
  seconds per 10^6 noisy counts) and of CPU time (all threads), with the 1-minute load average
  when the row was measured (the machine may be shared: the wall-clock gain of threads needs
  idle cores, the CPU time does not depend on them). Writes ``results/noise_draws.csv``.

Usage::

    .venv/bin/python benchmarks/noise.py                          # both parts, 40 trials per cell
    .venv/bin/python benchmarks/noise.py --trials 5               # quick
    .venv/bin/python benchmarks/noise.py --smoke                  # does it run (seconds)
    .venv/bin/python benchmarks/noise.py --parts draws --draws 200000 --repeats 3

Run single-threaded BLAS or not, as the environment sets it; the table reports both with
``OMP_NUM_THREADS``.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import _common as bench
import numpy as np
import pandas as pd

import projmech as pm
from projmech.privacy import _noise as noise_module

PARTS = ("releases", "draws")


def _workloads(seed: int, smoke: bool = False) -> list[tuple[str, pm.Dataset, pm.Workload]]:
    """The demo's Adult at n = 1,000 and whole, and d = 20 binary attributes of 50,000 rows (smoke:
    n = 200 only, and d = 4 of 200 rows)."""
    adult = pm.datasets.adult(binary=True, attributes=pm.datasets.ADULT_DEMO_ATTRIBUTES)
    rng = np.random.default_rng(seed)
    demo = [(f"demo n={n}", adult.subsample(n, rng) if n < adult.n else adult, pm.marginals(adult.domain, 2))
            for n in ((200,) if smoke else (1000, adult.n))]
    d, n = (4, 200) if smoke else (20, 50_000)
    domain = bench.binary_domain(d)
    rows = (rng.random((n, d)) < rng.uniform(0.1, 0.9, d)).astype(np.int64)
    return demo + [(f"d={d} n={n}", pm.Dataset(rows, domain), pm.marginals(domain, 2, implicit=True))]


def releases(trials: int, seed: int, out: Path = bench.RESULTS / "noise.csv", smoke: bool = False) -> None:
    """The mechanisms with discrete and continuous noise, side by side (``results/noise.csv``)."""
    rng = np.random.default_rng(seed)
    rows = []
    for name, data, workload in _workloads(seed, smoke):
        truth = workload.answer_data(data)
        for privacy in (pm.ApproxDP(1.0, 1e-6), pm.ZCDP(0.5)):
            for kind in ("gaussian", "projection"):
                for noise in ("continuous", "discrete"):
                    factory = pm.GaussianMechanism if kind == "gaussian" else pm.ProjectionMechanism
                    mechanism = factory(workload, privacy, noise=noise)
                    mechanism.release(data, rng=rng)  # warm: OpenDP's measurement, caches
                    errors, times = [], []
                    for _ in range(trials):
                        with bench.Timer() as timer:
                            released = mechanism.release(data, rng=rng)
                        times.append(timer.seconds)
                        errors.append(pm.rmse(released.answers, truth))
                    mean, low, high = pm.evaluation.mean_confidence_interval(errors)
                    rows.append({"workload": name, "k": workload.num_queries, "privacy": str(privacy),
                                 "mechanism": kind, "noise": noise, "sigma_counts": mechanism.noise.scale,
                                 "rmse": mean, "rmse_half_width": (high - low) / 2,
                                 "time_median_s": float(np.median(times)), "trials": trials})
                    print(f"{name:<16} {str(privacy):<14} {kind:<10} {noise:<10} sigma {mechanism.noise.scale:8.3f}  "
                          f"RMSE {mean:.6f} ± {(high - low) / 2:.6f}  time {np.median(times) * 1e3:8.2f} ms",
                          flush=True)
    frame = pd.DataFrame(rows)
    bench.write_csv(frame, out)
    paired = frame.pivot_table(index=["workload", "privacy", "mechanism"], columns="noise",
                               values=["sigma_counts", "rmse", "time_median_s"])
    print("\ndiscrete / continuous (sigma, RMSE, time per release):")
    for key, row in paired.iterrows():
        print(f"{' | '.join(key):<48} sigma "
              f"{row[('sigma_counts', 'discrete')] / row[('sigma_counts', 'continuous')]:.4f}  "
              f"RMSE {row[('rmse', 'discrete')] / row[('rmse', 'continuous')]:.3f}  "
              f"time {row[('time_median_s', 'discrete')] * 1e3:.2f} vs "
              f"{row[('time_median_s', 'continuous')] * 1e3:.2f} ms")
    print(f"\nOMP_NUM_THREADS={bench.blas_threads()['OMP_NUM_THREADS']}; wrote {out}")


def _time_draws(noise: pm.Noise, size: int, threads: int | None) -> tuple[float, float]:
    """Wall-clock and CPU seconds of ``size`` draws from an empty pool, on ``threads`` sampler
    threads (None: the library's default)."""
    noise_module._pools.clear()
    default = noise_module._SAMPLER_THREADS
    noise_module._SAMPLER_THREADS = default if threads is None else threads
    try:
        cpu = time.process_time()
        with bench.Timer() as timer:
            draws = noise.sample(size, np.random.default_rng(0))
        cpu = time.process_time() - cpu
    finally:
        noise_module._SAMPLER_THREADS = default
        noise_module._pools.clear()
    assert draws.shape == (size,)
    return timer.seconds, cpu


def draws(size: int, repeats: int, out: Path = bench.RESULTS / "noise_draws.csv", smoke: bool = False) -> None:
    """Microseconds per draw of each sampler (``results/noise_draws.csv``)."""
    threads = noise_module._SAMPLER_THREADS
    rows = []
    for distribution in ("gaussian", "laplace"):
        for scale in (1.0, 1e4) if smoke else (1.0, 1.0 / math.sqrt(0.95), 10.0, 1e4):
            settings = [("continuous (numpy)", False, 1), ("discrete, 1 thread", True, 1)]
            if threads > 1:
                settings.append((f"discrete, {threads} threads (default)", True, None))
            for setting, discrete, count in settings:
                noise = pm.Noise(distribution, scale, discrete=discrete)
                noise.sample(8, np.random.default_rng(0))  # warm: OpenDP's measurement
                measured = [_time_draws(noise, size, count) for _ in range(repeats)]
                wall, cpu = min(measured)  # the least disturbed run, on a shared machine
                rows.append({"distribution": noise.name, "scale": scale, "setting": setting,
                             "threads": count or threads, "draws": size, "repeats": repeats,
                             "us_per_draw": wall / size * 1e6, "cpu_us_per_draw": cpu / size * 1e6,
                             "load_1min": os.getloadavg()[0]})
                print(f"{noise.name:<18} scale {scale:<10.4g} {setting:<30} {rows[-1]['us_per_draw']:8.3f} us/draw  "
                      f"(CPU {rows[-1]['cpu_us_per_draw']:8.3f})  load {rows[-1]['load_1min']:.2f}", flush=True)
    frame = pd.DataFrame(rows)
    print()
    print(bench.markdown(["distribution", "scale", "setting", "us per draw", "CPU us per draw", "load"],
                         [[r.distribution, f"{r.scale:.4g}", r.setting, f"{r.us_per_draw:.3f}",
                           f"{r.cpu_us_per_draw:.3f}", f"{r.load_1min:.2f}"] for r in frame.itertuples()],
                         ["---", "---:", "---", "---:", "---:", "---:"]))
    print(f"\n{os.cpu_count()} cores, {threads} sampler threads by default; wrote "
          f"{bench.write_csv(frame, out)}")


def main() -> int:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--parts", type=bench.name_list, default=list(PARTS), help="comma-separated: releases, draws")
    parser.add_argument("--trials", type=int, default=40, help="releases: trials per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--draws", type=int, default=100_000, help="draws: draws per measurement")
    parser.add_argument("--repeats", type=int, default=3, help="draws: measurements per row (the least is kept)")
    parser.add_argument("--quick", action="store_true", help="a short run: 3 trials per cell, 20,000 draws once")
    bench.add_smoke_option(parser, "2 trials per cell, Adult at n = 200 and 4 binary attributes, 1,000 draws once")
    args = parser.parse_args()
    unknown = sorted(set(args.parts) - set(PARTS))
    if unknown:
        return bench.usage_error(f"--parts: unknown {', '.join(unknown)} (choose from {', '.join(PARTS)})")
    if args.quick:
        args.trials, args.draws, args.repeats = 3, 20_000, 1
    if args.smoke:
        args.trials, args.draws, args.repeats = 2, 1000, 1
    folder = bench.smoke_folder() if args.smoke else bench.RESULTS
    if "releases" in args.parts:
        releases(args.trials, args.seed, folder / "noise.csv", args.smoke)
    if "draws" in args.parts:
        draws(args.draws, args.repeats, folder / "noise_draws.csv", args.smoke)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
