"""Gaussian widths of K_Q and of its relaxations L for 2-way marginals (issue 4; the geometry of [NTZ13], [DNT15]).

For ``d`` binary attributes (``--dims``, default 4 … 10), the workload ``F = marginals(domain, 2)``
(``k = 4 C(d, 2)`` queries, ``m = 2^d`` cells) and ``K_Q = conv(columns of F)``, a Monte Carlo
estimate of the Gaussian width ``l*(K) = E h_K(G)``, ``G ~ N(0, I_k)`` [Ver18],
of ``K_Q`` and of each relaxation L (``--relaxations``, default ``sdp+local,sdp,local``;
:mod:`projmech.bodies._relaxation`). All bodies of one ``d`` share the same ``--samples`` draws
(common random numbers), so each ratio ``l*(L) / l*(K_Q)`` has its own paired interval
(:func:`projmech.analysis.geometry.compare_widths`). ``h_{K_Q}`` is a maximum over the ``2^d`` columns
(:func:`projmech.analysis.geometry.support_function`); ``h_L`` is one SDP/LP per draw
(:func:`projmech.bodies.relaxation_support`, Clarabel by default), each with a
certified upper bound from its multipliers.

Columns beside the widths: the finite-class bound (docs/theory/geometry.md)
``l*(K_Q) <= √(2 ln m) · max_u ||F[:, u]||_2`` and its stated form ``√(2 k ln |X|)`` (twice the
former here: every column of F has ``C(d, 2)`` ones); the constant ``2 K_G < 3.565`` that bounds
``l*(L) / l*(K_Q)`` for the SDP relaxations (module docstring of :mod:`projmech.analysis.geometry`); and
the lower bound ``C(d, 2) / √(2π)`` on ``l*(L)`` for ``local``. [DNT15] promises
``(1/C)·L ⊆ K_Q ⊆ L`` for a constant ``C``, hence a width ratio at most ``C``.

A relaxation whose solver fails is a row with status ``failed: <reason>`` (``retries`` counts
the draws solved a second time after a non-optimal first status). Checks, printed: for every
draw, the certified upper bound of ``h_L`` is at least ``h_{K_Q}`` (``K_Q ⊆ L``; a failure is a
bug, exit code 1); for the record, whether every SDP ratio lies below ``2 K_G`` and every
``l*(K_Q)`` below the seed's bound.

Run from the repository root: ``.venv/bin/python benchmarks/widths.py [--quick | --smoke]``.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from typing import Any

import _common as bench
import numpy as np
import pandas as pd

from projmech import marginals
from projmech.analysis import format_number
from projmech.analysis.geometry import (
    WidthEstimate,
    compare_widths,
    gaussian_width,
    gaussian_width_bound,
    support_function,
)
from projmech.bodies import RELAXATIONS, RelaxationError, RelaxationSupport, relaxation_support

DEFAULT_DIMS: tuple[int, ...] = (4, 5, 6, 7, 8, 9, 10)
QUICK_DIMS: tuple[int, ...] = (4, 5, 6)
DEFAULT_SAMPLES = 3000
QUICK_SAMPLES = 200
HULL = "hull"
#: Krivine's bound on the Grothendieck constant, K_G <= pi / (2 ln(1 + sqrt 2)).
KRIVINE = math.pi / (2 * math.log(1 + math.sqrt(2)))
#: Tolerance of the containment check h_L >= h_{K_Q} on certified upper bounds (rounding only).
CONTAINMENT_TOL = 1e-9
COLUMNS: tuple[str, ...] = (
    "d", "k", "m", "body", "samples", "width", "standard_error", "ci_low", "ci_high", "half_width",
    "ratio", "ratio_ci_low", "ratio_ci_high", "difference", "difference_ci_low", "difference_ci_high",
    "correlation", "upper_bound_mean", "max_gap", "max_violation", "retries", "containment_failures", "time_s",
    "seed_bound_sharp", "seed_bound_stated", "solver", "status",
)


def widths_for(d: int, relaxations: Sequence[str], samples: int, seed: int, confidence: float,
               solver: str) -> list[dict[str, Any]]:
    """One row per body (the hull, then each relaxation) for ``d`` binary attributes.

    A relaxation whose solver fails (:class:`RelaxationError`) becomes a row with status
    ``failed: <reason>``; the others are then estimated again on the same draws (the same seed;
    the supports already computed are reused)."""
    domain = bench.binary_domain(d)
    workload = marginals(domain, 2)
    k, m = workload.shape
    hull_values: dict[str, np.ndarray] = {}
    supports: dict[str, RelaxationSupport] = {}
    times: dict[str, float] = {}
    failed: dict[str, str] = {}

    def hull(G: np.ndarray) -> np.ndarray:
        with bench.Timer() as timer:
            hull_values["values"] = support_function(workload, G)
        times[HULL] = timer.seconds
        return hull_values["values"]

    def relaxed(name: str):
        def support(G: np.ndarray) -> np.ndarray:
            if name not in supports:
                timer = bench.Timer()
                try:
                    supports[name] = relaxation_support(domain, G, relaxation=name, solver=solver)
                except RelaxationError as error:
                    failed[name] = str(error)
                    raise
                times[name] = timer.seconds
            return supports[name].values
        return support

    while True:
        functions = {HULL: hull, **{name: relaxed(name) for name in relaxations if name not in failed}}
        try:
            estimates: dict[str, WidthEstimate] = gaussian_width(functions, k, samples,
                                                                 np.random.default_rng([seed, d]),
                                                                 confidence=confidence)
            break
        except RelaxationError:
            continue  # recorded in failed; estimate the others on the same draws
    base = {"d": d, "k": k, "m": m, "samples": samples, "seed_bound_sharp": gaussian_width_bound(workload),
            "seed_bound_stated": math.sqrt(2 * k * math.log(m))}
    rows = []
    for name, estimate in estimates.items():
        row = {**base, "body": name, "width": estimate.estimate, "standard_error": estimate.standard_error,
               "ci_low": estimate.low, "ci_high": estimate.high, "half_width": estimate.half_width,
               "time_s": times[name], "status": "ok"}
        if name == HULL:
            row.update(ratio=1.0, difference=0.0, solver="-", containment_failures=0, retries=0)
        else:
            comparison = compare_widths(estimate, estimates[HULL])
            result = supports[name]
            failures = int(np.sum(result.upper_bounds < hull_values["values"] - CONTAINMENT_TOL))
            row.update(ratio=comparison.ratio, ratio_ci_low=comparison.ratio_low, ratio_ci_high=comparison.ratio_high,
                       difference=comparison.difference, difference_ci_low=comparison.difference_low,
                       difference_ci_high=comparison.difference_high, correlation=comparison.correlation,
                       upper_bound_mean=float(result.upper_bounds.mean()), max_gap=result.max_gap,
                       max_violation=result.max_violation, retries=result.retries, containment_failures=failures,
                       solver=result.solver)
        rows.append(row)
    for name, reason in failed.items():
        rows.append({**base, "body": name, "solver": solver, "status": f"failed: {reason}", "containment_failures": 0})
    return rows


def format_results(results: pd.DataFrame, relaxations: Sequence[str]) -> str:
    """A markdown table, one row per d: widths ± CI half-widths, paired ratios ± half-widths."""
    header = ["d", "k", "ℓ*(K_Q)"]
    for name in relaxations:
        header += [f"ℓ*(L) {name}", f"ratio {name}"]
    header += ["√(2 ln m)·max‖col‖", "√(2k ln m)", "time"]
    lines = []
    for d, group in results.groupby("d", sort=True):
        rows = {row.body: row for row in group.itertuples(index=False)}
        hull = rows[HULL]
        cells = [str(d), str(hull.k), f"{format_number(hull.width, '1.3f')} ± {format_number(hull.half_width, '1.3f')}"]
        for name in relaxations:
            row = rows[name]
            if row.status != "ok":
                cells += ["failed", "-"]
                continue
            half = (row.ratio_ci_high - row.ratio_ci_low) / 2
            cells += [f"{format_number(row.width, '1.3f')} ± {format_number(row.half_width, '1.3f')}",
                      f"{format_number(row.ratio, '1.4f')} ± {format_number(half, '1.4f')}"]
        cells += [format_number(hull.seed_bound_sharp, "1.2f"), format_number(hull.seed_bound_stated, "1.2f"),
                  f"{group['time_s'].sum():.1f} s"]
        lines.append(cells)
    return bench.markdown(header, lines)


def build_parser() -> argparse.ArgumentParser:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--dims", type=bench.int_list, default=None,
                        help="comma-separated numbers d of binary attributes (default "
                             + ",".join(map(str, DEFAULT_DIMS)) + ")")
    parser.add_argument("--samples", type=int, default=None,
                        help=f"Gaussian draws per d, shared by all bodies (default {DEFAULT_SAMPLES})")
    parser.add_argument("--relaxations", type=bench.name_list, default=list(RELAXATIONS),
                        help="comma-separated relaxations (default " + ",".join(RELAXATIONS) + ")")
    parser.add_argument("--solver", default="CLARABEL", help="CVXPY solver of the support SDP/LP (default CLARABEL)")
    parser.add_argument("--confidence", type=float, default=0.95, help="level of the intervals (default 0.95)")
    parser.add_argument("--seed", type=int, default=0, help="draws of dimension d come from default_rng([seed, d])")
    parser.add_argument("--quick", action="store_true",
                        help=f"dims {','.join(map(str, QUICK_DIMS))} and {QUICK_SAMPLES} samples")
    parser.add_argument("--out", default="results/widths.csv", help="CSV output (default results/widths.csv)")
    bench.add_smoke_option(parser, "d = 3, 5 samples")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.smoke:
        args.dims, args.samples, args.out = [3], 5, bench.smoke_path(args.out)
    dims = args.dims if args.dims is not None else list(QUICK_DIMS if args.quick else DEFAULT_DIMS)
    samples = args.samples if args.samples is not None else (QUICK_SAMPLES if args.quick else DEFAULT_SAMPLES)
    if not dims or min(dims) < 2:
        return bench.usage_error("--dims must be at least 2")
    if samples < 2:
        return bench.usage_error("--samples must be at least 2 (for a confidence interval)")
    unknown = [name for name in args.relaxations if name not in RELAXATIONS]
    if unknown or not args.relaxations:
        return bench.usage_error(f"--relaxations must be among {','.join(RELAXATIONS)}, got {unknown}")
    if not 0 < args.confidence < 1:
        return bench.usage_error("--confidence must lie in (0, 1)")

    print(f"Gaussian widths of 2-way marginals: d = {','.join(map(str, dims))}, {samples} common draws per d, "
          f"relaxations {','.join(args.relaxations)} ({args.solver}), {args.confidence:.0%} intervals, "
          f"seed {args.seed}", flush=True)
    timer = bench.Timer()
    rows: list[dict[str, Any]] = []
    for d in dims:
        rows += widths_for(d, args.relaxations, samples, args.seed, args.confidence, args.solver)
        done = [row for row in rows if row["d"] == d]
        print(f"  d={d:<3} " + "  ".join(f"{row['body']} {row['width']:.3f} ({row['time_s']:.1f} s)"
                                        if row["status"] == "ok" else f"{row['body']} failed" for row in done),
              flush=True)
    results = pd.DataFrame(rows).reindex(columns=list(COLUMNS))
    print()
    print(format_results(results, args.relaxations))

    relaxed = results[(results["body"] != HULL) & (results["status"] == "ok")]
    hull = results[results["body"] == HULL]
    print()
    for row in results[results["status"] != "ok"].itertuples():
        print(f"FAILED: d={row.d} {row.body}: {row.status}")
    print(f"relaxation solves: {len(relaxed) * samples} in all, {int(relaxed['retries'].sum())} solved a second time "
          f"(first status not optimal); largest certified gap (upper bound - value) {relaxed['max_gap'].max():.1e}, "
          f"largest constraint violation {relaxed['max_violation'].max():.1e}")
    print("largest relative difference of the mean certified upper bound and the width: "
          f"{((relaxed['upper_bound_mean'] - relaxed['width']) / relaxed['width']).max():.1e}")
    failures = int(relaxed["containment_failures"].sum())
    print(f"K_Q ⊆ L on every draw (certified h_L >= h_K_Q): "
          f"{'yes' if failures == 0 else f'NO, {failures} draws'}")
    sdp = relaxed[relaxed["body"].isin(["sdp", "sdp+local"])]
    if not sdp.empty:
        worst = sdp["ratio_ci_high"].max()
        print(f"SDP ratios below 2 K_G = {2 * KRIVINE:.3f}: {'yes' if worst < 2 * KRIVINE else 'NO'} "
              f"(largest upper CI end {worst:.4f})")
    local = relaxed[relaxed["body"] == "local"]
    if not local.empty:
        floors = local["d"].map(lambda d: math.comb(d, 2) / math.sqrt(2 * math.pi))
        print("local widths above C(d,2)/√(2π): " + ", ".join(
            f"d={row.d}: {row.width:.2f} >= {floor:.2f}" for row, floor in zip(local.itertuples(), floors)))
    print(f"l*(K_Q) below the seed's bound √(2 ln m)·max‖col‖: "
          f"{'yes' if bool((hull['ci_high'] <= hull['seed_bound_sharp']).all()) else 'NO'}")

    out = bench.write_csv(results, args.out)
    print(f"\nwrote {out} in {timer.seconds:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
