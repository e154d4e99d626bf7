"""Error against data size: every mechanism of projmech beside its theoretical bound (docs/theory/bounds.md).

Binarized Adult restricted to ``ADULT_DEMO_ATTRIBUTES`` (10 binary attributes, 1024 cells), the
workload of all 2-way marginals (180 queries) and a sweep of the data size ``n`` by subsampling
without replacement. For each ``n``, ``--trials`` independent releases of each mechanism give the
mean RMSE with a 95% Student-t interval and the mean time per release
(:func:`projmech.analysis._experiments.error_vs_n`). Mechanisms (``--mechanisms``):

* ``gaussian``, ``projection`` (onto K_Q), ``relaxed`` (onto the relaxation L, ``sdp+local``),
  ``factorization`` (the optimal strategy of ``factorization_norm``): ``ApproxDP(--epsilon,
  --delta)``, replace-one neighbours;
* ``offline_pmw`` (MWEM) and ``online_pmw`` (Hardt–Rothblum, the workload's queries asked in
  order): ``PureDP(--epsilon)``, a stronger guarantee than the others' (it implies
  ``(epsilon, delta)``-DP for every delta). Their parameters are public functions of ``n``: the
  number of rounds ``T`` minimizing
  :func:`~projmech.mechanisms.multiplicative_weights.offline_pmw_error_bound`, and the smallest
  ``alpha`` on a grid whose accuracy guarantee
  (:func:`~projmech.mechanisms.online_pmw.online_pmw_accuracy`, per-draw
  ``epsilon / (4k)`` so that the total is ``PureDP(epsilon)``) fails with probability at most 5%.
  Online PMW draws its default noise (``--online-noise auto``: OpenDP's exact discrete Laplace,
  which no seed drives, so its cells below n = 1000, where it updates, vary from run to run);
  ``--online-noise continuous`` makes them reproducible from ``--seed``.

Bounds (the column ``bound``; drawn dashed in the plot), each an upper bound on ``E[RMSE]``:

* ``gaussian``: ``sigma`` (the RMS error exactly);
* ``projection``: the projection mechanism's bound [NTZ13], ``sqrt(sigma l*(K_Q) / k)``, with the upper end of a 95%
  Monte Carlo interval of ``l*(K_Q)`` (``--width-samples`` directions);
* ``relaxed``: the same with ``l*(L)`` (Theorem 8 needs only a convex body containing the truth);
* ``factorization``: ``sigma ||R||_F / sqrt(k)``, its RMS error exactly [ENU20];
* ``offline_pmw``: the max-error bound of
  :func:`~projmech.mechanisms.multiplicative_weights.offline_pmw_error_bound` (probability 95%),
  capped at 1 (every answer lies in [0, 1]);
* ``online_pmw``: ``4 alpha`` (:func:`projmech.mechanisms.online_pmw.online_pmw_accuracy`, probability 95%).

Checks, printed: the projection mechanism is below the Gaussian one at every ``n`` (the upper end
of its interval below the lower end of the Gaussian's; exit code 1 otherwise), the ratio Gaussian
/ projection grows as ``n`` shrinks, and every measured mean RMSE lies below its bound within its
confidence interval (the interval's lower end at most the bound; exit code 1 otherwise).

Run from the repository root: ``.venv/bin/python benchmarks/error_vs_n.py [--quick | --smoke]``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import _common as bench
import numpy as np
import pandas as pd

from projmech import (
    ApproxDP,
    FactorizationMechanism,
    GaussianMechanism,
    MechanismHalted,
    OfflinePMW,
    OnlinePMW,
    ProjectionMechanism,
    PureDP,
    Workload,
    bounds,
    datasets,
    factorization_norm,
    marginals,
)
from projmech.analysis import error_vs_n, format_table, plot_error_vs_n
from projmech.analysis.geometry import gaussian_width
from projmech.bodies import relaxation_support
from projmech.mechanisms.multiplicative_weights import mw_update_bound, offline_pmw_error_bound
from projmech.mechanisms.online_pmw import online_pmw_accuracy

MECHANISMS: tuple[str, ...] = ("gaussian", "projection", "relaxed", "factorization", "offline_pmw", "online_pmw")
#: Rounds tried for offline PMW, and the alphas tried for online PMW (public, data-independent).
ROUND_GRID = range(1, 201)
ALPHA_GRID = np.geomspace(0.01, 0.5, 200)
#: Failure probability of the PMW guarantees drawn as bounds.
FAILURE_PROBABILITY = 0.05

DEFAULT_SIZES: tuple[int, ...] = (50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 48842)
QUICK_SIZES: tuple[int, ...] = (100, 1000, 48842)


class OfflinePMWForN:
    """:class:`OfflinePMW` with the number of rounds that minimizes its error bound at each ``n``
    (a public function of ``n``, the universe, the workload and the budget: no privacy cost)."""

    mechanism_name = "offline_pmw"

    def __init__(self, workload: Workload, epsilon: float) -> None:
        self.workload, self.privacy = workload, PureDP(epsilon)

    def rounds(self, n: int) -> int:
        return min(ROUND_GRID, key=lambda t: self._bound(n, t))

    def bound(self, n: int) -> float:
        return min(1.0, self._bound(n, self.rounds(n)))

    def _bound(self, n: int, rounds: int) -> float:
        k, m = self.workload.num_queries, self.workload.universe_size
        return offline_pmw_error_bound(n, m, k, rounds, self.privacy, failure_probability=FAILURE_PROBABILITY)

    def release(self, data: Any, n: int | None = None, rng: Any = None) -> Any:
        size = data.n if n is None else n
        # One update per round: the error bound this benchmark plots beside it is proven for that.
        mechanism = OfflinePMW(self.workload, self.privacy, rounds=self.rounds(size), updates_per_round=1)
        return mechanism.release(data, n=n, rng=rng)


class OnlinePMWOnWorkload:
    """:class:`OnlinePMW` asked the workload's queries in order, with total guarantee
    ``PureDP(epsilon)``: ``k`` copies of its sparse-vector component at ``epsilon / (4k)`` each.

    ``alpha`` is the smallest on :data:`ALPHA_GRID` whose accuracy guarantee fails with probability
    at most :data:`FAILURE_PROBABILITY` (``k`` the mechanism's default ``ln|D|/alpha^2 + 1``, so it
    never halts on the good event); answers after a halt, should one happen, come from the public
    distribution (post-processing).
    """

    mechanism_name = "online_pmw"

    def __init__(self, workload: Workload, epsilon: float, noise: str = "auto") -> None:
        self.workload, self.epsilon, self.noise = workload, epsilon, noise
        self.rows = workload.toarray()

    def settings(self, n: int) -> tuple[float, int, float, bool]:
        """``(alpha, k, per-draw epsilon, guaranteed)``: the smallest alpha of the grid whose
        guarantee holds, or the grid's largest with ``guaranteed=False`` (the bound is then 1)."""
        k_queries, m = self.workload.num_queries, self.workload.universe_size
        for alpha in ALPHA_GRID:
            copies = mw_update_bound(m, float(alpha)) + 1
            per_draw = self.epsilon / (4 * copies)
            # The guarantee of the noise drawn: discrete draws' tails carry the factor 2/(1+e^-eps).
            if online_pmw_accuracy(float(alpha), per_draw, n, k_queries, copies, noise=self.noise).failure_probability \
                    <= FAILURE_PROBABILITY:
                return float(alpha), copies, per_draw, True
        return float(alpha), copies, per_draw, False

    def bound(self, n: int) -> float:
        alpha, _, _, guaranteed = self.settings(n)
        return min(1.0, 4 * alpha) if guaranteed else 1.0

    def release(self, data: Any, n: int | None = None, rng: Any = None) -> Any:
        alpha, copies, per_draw, _ = self.settings(data.n if n is None else n)
        mechanism = OnlinePMW(data, alpha, per_draw, k=copies, n=n, rng=rng, noise=self.noise)
        answers = []
        for row in self.rows:
            try:
                answers.append(mechanism.answer(row))
            except MechanismHalted:
                answers.append(float(row @ mechanism.public_distribution))
        return SimpleNamespace(answers=np.asarray(answers))


def build_mechanisms(names: Sequence[str], workload: Workload, privacy: ApproxDP, solver: str,
                     width_samples: int, rng: np.random.Generator, online_noise: str = "auto",
                     ) -> tuple[dict[str, Any], dict[str, Callable[[int], float]]]:
    """The mechanisms by name, and each one's bound on ``E[RMSE]`` as a function of ``n``
    (``online_noise``: online PMW's ``noise``)."""
    k = workload.num_queries
    gaussian = GaussianMechanism(workload, privacy)
    widths: dict[str, float] = {}
    bodies = {"projection": "K_Q", "relaxed": "L"}
    supports = {}
    if "projection" in names:
        supports["K_Q"] = workload
    if "relaxed" in names:
        supports["L"] = lambda G: relaxation_support(workload.domain, G).upper_bounds
    if supports:
        # The upper end of each width's interval: the bound must hold for the true width.
        estimates = gaussian_width(supports, k, width_samples, rng)
        widths = {name: estimate.high for name, estimate in estimates.items()}
        for name, estimate in estimates.items():
            print(f"  l*({name}) = {estimate.estimate:.3f} (95% CI {estimate.low:.3f} .. {estimate.high:.3f}, "
                  f"{width_samples} directions)")
    mechanisms: dict[str, Any] = {}
    bound_of: dict[str, Callable[[int], float]] = {}
    for name in names:
        if name == "gaussian":
            mechanisms[name], bound_of[name] = gaussian, gaussian.noise_scale
        elif name in bodies:
            body = "hull" if name == "projection" else "relaxed"
            mechanisms[name] = ProjectionMechanism(workload, privacy, solver=solver if body == "hull" else "auto",
                                                   body=body)
            width = widths[bodies[name]]
            bound_of[name] = lambda n, width=width: bounds.projection_error(gaussian.noise_scale(n), k, width=width)
        elif name == "factorization":
            mechanism = FactorizationMechanism(workload, privacy, factorization=factorization_norm(workload))
            mechanisms[name], bound_of[name] = mechanism, mechanism.expected_error
        elif name == "offline_pmw":
            mechanism = OfflinePMWForN(workload, privacy.epsilon)
            mechanisms[name], bound_of[name] = mechanism, mechanism.bound
        elif name == "online_pmw":
            mechanism = OnlinePMWOnWorkload(workload, privacy.epsilon, online_noise)
            mechanisms[name], bound_of[name] = mechanism, mechanism.bound
        else:
            raise ValueError(f"--mechanisms: unknown mechanism {name!r}; expected some of {MECHANISMS}")
    return mechanisms, bound_of


def check_bounds(results: pd.DataFrame) -> pd.DataFrame:
    """Rows where the measured mean RMSE is above its bound beyond its confidence interval."""
    return results[results["rmse_ci_low"] > results["bound"]]


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
    return bench.ruled(header, (
        f"{n:>7} | {row.gaussian_expected_rmse:>30.6f} | {row.gaussian_ci_low:>15.6f} | "
        f"{row.projection_ci_high:>18.6f} | {row.ratio:>9.2f} | {'yes' if row.projection_below else 'NO'}"
        for n, row in table.iterrows()))


def ratio_trend(table: pd.DataFrame) -> tuple[bool, list[tuple[int, int]]]:
    """Whether the ratio Gaussian / projection is non-increasing in ``n`` (grows as ``n`` shrinks),
    and the consecutive pairs ``(n_small, n_large)`` where it is not."""
    sizes = list(table.index)
    ratios = table["ratio"].to_numpy()
    violations = [(sizes[i], sizes[i + 1]) for i in range(len(sizes) - 1) if ratios[i] < ratios[i + 1]]
    return not violations, violations


def build_parser() -> argparse.ArgumentParser:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--sizes", type=bench.int_list, default=None,
                        help="comma-separated data sizes n (default " + ",".join(map(str, DEFAULT_SIZES)) + ")")
    parser.add_argument("--trials", type=int, default=None, help="releases per mechanism and n (default 30)")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--solver", default="auto", help="projection solver: auto, fast, CLARABEL, ECOS, OSQP or SCS")
    parser.add_argument("--mechanisms", type=bench.name_list, default=list(MECHANISMS),
                        help="comma-separated, some of " + ",".join(MECHANISMS))
    parser.add_argument("--width-samples", type=int, default=1000,
                        help="Gaussian directions for the widths of K_Q and L in the projection bounds (default 1000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--online-noise", choices=("auto", "discrete", "continuous"), default="auto",
                        help="online PMW's noise (default auto, its default: exact discrete, not reproducible from "
                             "--seed; continuous is)")
    parser.add_argument("--quick", action="store_true",
                        help=f"sizes {','.join(map(str, QUICK_SIZES))} and 3 trials")
    parser.add_argument("--out", default="results/error_vs_n.csv",
                        help="CSV output; the plot goes next to it with .png (default results/error_vs_n.csv)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    bench.add_smoke_option(parser, "n = 100 and 400, 2 trials, 20 width samples")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.smoke:
        args.sizes, args.trials, args.width_samples, args.out = [100, 400], 2, 20, bench.smoke_path(args.out)
    sizes = sorted(set(args.sizes if args.sizes is not None else (QUICK_SIZES if args.quick else DEFAULT_SIZES)))
    trials = args.trials if args.trials is not None else (3 if args.quick else 30)
    data = datasets.adult(binary=True, attributes=datasets.ADULT_DEMO_ATTRIBUTES)
    if not sizes or sizes[0] < 1 or sizes[-1] > data.n:
        return bench.usage_error(f"--sizes must lie in [1, {data.n}], got {sizes}")
    if trials < 2:
        return bench.usage_error("--trials must be at least 2 (for a confidence interval)")
    refused = bench.unknown_names("--mechanisms", args.mechanisms, MECHANISMS, at_least_one=True)
    if refused is not None:
        return refused
    privacy = ApproxDP(args.epsilon, args.delta)
    workload = marginals(data.domain, 2)
    print(f"error vs n: Adult, {len(data.domain)} binary attributes, {workload.num_queries} two-way marginal "
          f"cells, {privacy} (PMW: {PureDP(args.epsilon)}), replace-one neighbours, {trials} trials per n, "
          f"mechanisms {', '.join(args.mechanisms)}", flush=True)
    timer = bench.Timer()
    rng = np.random.default_rng(args.seed)
    mechanisms, bound_of = build_mechanisms(args.mechanisms, workload, privacy, args.solver, args.width_samples, rng,
                                            args.online_noise)
    results = error_vs_n(data, mechanisms, sizes, trials, rng, progress=not args.no_progress)
    results["bound"] = [bound_of[name](int(n)) for name, n in zip(results["mechanism"], results["n"])]
    if "gaussian" in mechanisms:
        results["gaussian_expected_rmse"] = results["n"].map(
            lambda n: mechanisms["gaussian"].expected_error(n, measure="mean"))
    print(format_table(results))
    print()
    print(format_bounds(results))

    ok = True
    if {"gaussian", "projection"} <= set(mechanisms):
        table = compare(results)
        print()
        print(format_comparison(table))
        below = bool(table["projection_below"].all())
        monotone, violations = ratio_trend(table)
        print()
        failing = [int(n) for n in table.index[~table["projection_below"]]]
        print(f"projection below Gaussian at every n (upper CI < lower CI): "
              f"{'yes' if below else f'NO, at n={failing}'}")
        print(f"ratio Gaussian/projection grows as n shrinks: {'yes' if monotone else 'no'} "
              f"(from {table['ratio'].iloc[-1]:.2f} at n={table.index[-1]} to {table['ratio'].iloc[0]:.2f} "
              f"at n={table.index[0]}"
              + ("" if monotone else "; exceptions: " + ", ".join(f"ratio(n={a}) < ratio(n={b})" for a,
                                                                  b in violations))
              + ")")
        ok = below
    above = check_bounds(results)
    print("every mean RMSE below its bound (CI lower end <= bound): "
          + ("yes" if above.empty else "NO: " + ", ".join(f"{r.mechanism} at n={r.n}" for r in above.itertuples())))
    ok = ok and above.empty

    out = bench.write_csv(results, args.out)
    plot = out.with_suffix(".png")
    curves = {f"{name} bound": (sizes, [bound_of[name](n) for n in sizes]) for name in mechanisms}
    plot_error_vs_n(results, str(plot), f"Adult 2-way marginals, {privacy}", bounds=curves)
    print(f"\nwrote {out} and {plot} in {timer.seconds:.1f} s")
    return 0 if ok or args.smoke else 1


def format_bounds(results: pd.DataFrame) -> str:
    """One row per mechanism and n: mean RMSE, its interval and the bound."""
    header = f"{'mechanism':<14} {'n':>7} {'RMSE':>10} {'CI low':>10} {'CI high':>10} {'bound':>10}  below"
    return bench.ruled(header, (
        f"{row.mechanism:<14} {row.n:>7} {row.rmse_mean:>10.5f} {row.rmse_ci_low:>10.5f} "
        f"{row.rmse_ci_high:>10.5f} {row.bound:>10.5f}  {'yes' if row.rmse_ci_low <= row.bound else 'NO'}"
        for row in results.sort_values(["mechanism", "n"]).itertuples()))


if __name__ == "__main__":
    sys.exit(main())
