"""Projection of 2-way marginals onto the moment relaxation L (issue 4): accuracy on Adult, time
against the number of attributes, and Private-PGM side by side.

Three parts (``--parts``, default all three):

``adult``
    Accuracy against ``n`` at a fixed guarantee (``ApproxDP(1, 1e-6)``, replace-one): all 2-way
    marginals of Adult, ``n`` swept by subsampling without replacement (``--sizes``). On the
    binarized data (14 attributes, ``m = 16,384``, ``k = 364``): the Gaussian mechanism, the
    projection onto the hull ``K_Q`` (``ProjectionMechanism(body="hull")``, fewer trials:
    ``--hull-trials``, because one solve takes seconds) and onto each relaxation L (``sdp+local``,
    ``sdp``, ``local``; ``body="relaxed"``). On the full categorical data (sizes 85, 9, 100, ...,
    ``k = 148,137``, a universe of 6.4e17 elements): Gaussian against ``sdp+local`` (ADMM), on
    ``--categorical-sizes`` with ``--categorical-trials`` (about a minute per solve at
    ``n = 48,842``, far longer at small ``n``). Every mechanism of one trial sees the same
    noise (the trial's own generator; the projection mechanisms draw exactly the Gaussian's
    noise), so the ratio of a relaxation's RMSE to the hull's is paired, trial by trial.
``scaling``
    Time against ``d`` binary attributes (``--dims``): ``--rows`` rows of a seeded latent-factor
    model (3 Gaussian factors, so the marginals are correlated and not uniform), noise of the
    Gaussian mechanism for the same guarantee, then ``project_to_relaxation(..., "sdp+local")``
    with the certified ADMM (wall time of the whole call, median of ``--repeats``), and the
    CVXPY reference model with SCS up to ``--scs-max-d`` (one solve; its distance to the noisy
    point relative to the ADMM's). Targets of the issue (2 cores): ``d = 150`` within 2 s and
    ``d = 500`` within 30 s.
``pgm``
    Private-PGM (the ``mbi`` package, ``pip install -e '.[benchmarks]'``; skipped with a message
    when it is missing) and our projections fed the same noisy 2-way marginals (all pairs, the
    Gaussian mechanism's noise and sigma): RMSE against the true marginals, distance to the
    noisy answers, how inconsistent the estimated tables are (largest disagreement between two
    tables' 1-way marginals), and time from the noisy answers to the estimate. mbi gets counts
    (``n * answers``, standard deviation ``n * sigma``) and the public ``n`` as its total.
    Where the junction tree of all pairs (a single clique, the whole universe) has at most
    ``--pgm-exact-max`` cells, mbi's exact ``MirrorDescent`` (its recommended estimator, Armijo
    steps) runs ``--pgm-iters`` iterations; it then minimizes the same objective as the
    projection onto ``K_Q``. Beyond, ``ApproxMirrorDescent`` (convex generalized belief
    propagation, the local polytope; step size ``2 / (L n)`` as in the exact estimator's start,
    ``--pgm-oracle-iters`` message-passing rounds per step). Data: binarized Adult
    (``--pgm-sizes``, ``--pgm-trials``), categorical Adult (``--pgm-categorical-sizes``) and
    synthetic binary data of the ``scaling`` part (``--pgm-dims``), both with
    ``--pgm-approx-trials``. Releases already made by the ``adult`` part (same data, ``n`` and
    trial) are reused, not solved again. Timings of the first mbi call of each data set include
    JAX's compile time and are reported apart.

Outputs (``--output``, default ``results/``): ``relaxation_adult.csv`` (one row per data set,
``n`` and mechanism) and ``relaxation_adult_trials.csv`` (one row per trial),
``relaxation_scaling.csv``, ``relaxation_pgm.csv``, and ``relaxation.json`` (settings, versions,
times). Markdown tables are printed.

Checks, printed: no projection is farther from the truth than the noisy answers it projects (a
projection onto a convex set containing the truth cannot be; exit code 1 otherwise, a bug), and
the targets (PASS/FAIL, for the record).

Run from the repository root: ``.venv/bin/python benchmarks/relaxation.py [--quick | --smoke] [--parts adult]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _common as bench
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from projmech import ApproxDP, Dataset, Domain, GaussianMechanism, ProjectionMechanism, datasets, marginals
from projmech.analysis import format_number
from projmech.analysis.evaluation import max_error, mean_confidence_interval, rmse
from projmech.bodies import RelaxationError, project_to_relaxation
from projmech.synthetic import pair_tables

PARTS: tuple[str, ...] = ("adult", "scaling", "pgm")
RELAXATIONS: tuple[str, ...] = ("sdp+local", "sdp", "local")

DEFAULT_SIZES: tuple[int, ...] = (1000, 3000, 10000, 48842)
QUICK_SIZES: tuple[int, ...] = (1000, 48842)
DEFAULT_TRIALS, QUICK_TRIALS = 10, 2
DEFAULT_HULL_TRIALS, QUICK_HULL_TRIALS = 5, 2
DEFAULT_CATEGORICAL_SIZES: tuple[int, ...] = (48842,)
DEFAULT_CATEGORICAL_TRIALS = 3

DEFAULT_DIMS: tuple[int, ...] = (10, 30, 60, 100, 150, 300, 500)
QUICK_DIMS: tuple[int, ...] = (10, 30, 60)
DEFAULT_ROWS = 50_000
DEFAULT_SCS_MAX_D = 150
DEFAULT_REPEATS, QUICK_REPEATS = 3, 1
#: The issue's targets for sdp+local on 2 cores: seconds at d binary attributes.
TARGETS: dict[int, float] = {150: 2.0, 500: 30.0}
FACTORS = 3

DEFAULT_PGM_SIZES: tuple[int, ...] = (1000, 48842)
QUICK_PGM_SIZES: tuple[int, ...] = (48842,)
DEFAULT_PGM_TRIALS, QUICK_PGM_TRIALS = 5, 2
DEFAULT_PGM_APPROX_TRIALS = 3
DEFAULT_PGM_CATEGORICAL_SIZES: tuple[int, ...] = (48842,)
DEFAULT_PGM_DIMS: tuple[int, ...] = (30,)
DEFAULT_PGM_ITERS = 1000
#: Largest junction-tree clique (here: the universe) for which mbi runs exact inference.
DEFAULT_PGM_EXACT_MAX = 2**16
#: A smoke run's attributes of Adult (binarized and categorical), and its sizes: every part and
#: data set at n = 300 or d = 3 (500 rows), 2 trials, 1 repeat, 20 mbi iterations, mbi exact to 64 cells.
SMOKE_ATTRIBUTES: tuple[str, ...] = ("workclass", "race", "sex", "relationship", "income>50K")

#: Generator tags: (seed, tag, n or d, trial) name every random stream of the run.
TAGS = {"adult-binary": 1, "adult": 2, "synthetic": 3}
#: Slack of the check "projected error <= noisy error": ADMM answers are within sqrt(1e-4) * distance
#: of the exact projection, which can exceed the noisy error only if the projection barely moves.
CHECK_SLACK = 1e-6


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def latent_factor_data(d: int, rows: int, rng: np.random.Generator, factors: int = FACTORS) -> Dataset:
    """``rows`` binary rows ``1[Z W + b + E > 0]``: ``Z`` standard normal ``rows x factors``,
    loadings ``W`` normal with standard deviation 0.8, biases ``b`` uniform on [-1.5, 1.5] (some
    attributes rare, some common), idiosyncratic noise ``E`` standard normal."""
    loadings = rng.normal(0.0, 0.8, size=(factors, d))
    bias = rng.uniform(-1.5, 1.5, size=d)
    latent = rng.normal(size=(rows, factors)) @ loadings + bias + rng.normal(size=(rows, d))
    return Dataset((latent > 0).astype(np.int64), bench.binary_domain(d))


def inconsistency(domain: Domain, answers: np.ndarray) -> float:
    """Largest disagreement between two pair tables on a shared attribute's 1-way marginal (0 for
    any point of K_Q or L, whose tables all come from one moment matrix)."""
    ones: list[list[np.ndarray]] = [[] for _ in domain.sizes]
    for (i, j), table in pair_tables(domain, answers).items():
        ones[i].append(table.sum(axis=1))
        ones[j].append(table.sum(axis=0))
    return float(max(np.ptp(np.array(values), axis=0).max() for values in ones))


# --------------------------------------------------------------------------------------------
# Trials, shared by the parts (a trial's release is computed once per run)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One estimate of the 2-way marginals from one trial's noisy answers."""

    answers: np.ndarray
    noisy: np.ndarray
    time_s: float        # wall time of the release (mechanisms) or of the estimate (mbi)
    solve_time_s: float  # from the noisy answers to the estimate (0 for the Gaussian mechanism)
    solver: str
    iterations: float
    distance: float      # ||answers - noisy||_2
    info: str = ""


class Failure(RuntimeError):
    """A method failed on a trial (solver error); the row records why."""


class TrialCache:
    """Outcomes keyed by ``(data key, n, trial, method)``, so parts that share a trial's noise
    (the same generator) never solve it twice."""

    def __init__(self) -> None:
        self._outcomes: dict[tuple[str, int, int, str], Outcome] = {}

    def get(self, key: tuple[str, int, int, str], compute: Callable[[], Outcome]) -> Outcome:
        if key not in self._outcomes:
            self._outcomes[key] = compute()
        return self._outcomes[key]


def trial_rng(seed: int, data_key: str, n: int, trial: int) -> np.random.Generator:
    return np.random.default_rng([seed, TAGS[data_key.split(":")[0]], n, trial])


def release_outcome(mechanism: GaussianMechanism, data: Dataset, rng: np.random.Generator) -> Outcome:
    timer = bench.Timer()
    try:
        release = mechanism.release(data, rng=rng)
    except Exception as error:  # a solver failure is a result, not a crash
        raise Failure(f"{type(error).__name__}: {error}") from error
    elapsed = timer.seconds
    projection = release.projection
    return Outcome(
        answers=release.answers,
        noisy=release.noisy_answers,
        time_s=elapsed,
        solve_time_s=0.0 if projection is None else projection.stats.solve_time,
        solver="-" if projection is None else projection.stats.solver,
        iterations=float("nan") if projection is None or projection.stats.iterations is None
        else float(projection.stats.iterations),
        distance=float(np.linalg.norm(release.answers - release.noisy_answers)),
    )


def summarize(rows: list[dict[str, Any]], group: Sequence[str]) -> pd.DataFrame:
    """Mean RMSE with a 95% interval (2 or more trials), mean max error and times per group."""
    frame = pd.DataFrame(rows)
    out = []
    for key, part in frame.groupby(list(group), sort=False):
        ok = part[part["status"] == "ok"]
        row = dict(zip(group, key if isinstance(key, tuple) else (key,)))
        row["trials"] = len(ok)
        failures = part[part["status"] != "ok"]
        row["status"] = "ok" if failures.empty else str(failures["status"].iloc[0])
        if len(ok) >= 2:
            row["rmse_mean"], row["rmse_ci_low"], row["rmse_ci_high"] = mean_confidence_interval(ok["rmse"])
        elif len(ok) == 1:
            row["rmse_mean"] = float(ok["rmse"].iloc[0])
        for column in ("max_error", "time_s", "solve_time_s", "iterations", "distance", "inconsistency",
                       "min_cell"):
            if column in ok and len(ok):
                row[f"{column}_mean"] = float(ok[column].mean())
        if "solver" in ok and len(ok):
            counts = ok["solver"].value_counts()
            row["solvers"] = ", ".join(f"{name}×{count}" for name, count in counts.items())
        out.append(row)
    return pd.DataFrame(out)


def paired_ratios(trials: pd.DataFrame, reference: str, group: Sequence[str]) -> pd.DataFrame:
    """Per group and method, the mean over the reference's trials of RMSE / reference RMSE on the
    same noise, with a 95% interval (column ``ratio_to_<reference>``, ``+`` spelled ``_``)."""
    ok = trials[trials["status"] == "ok"]
    ref = ok[ok["method"] == reference].set_index([*group, "trial"])["rmse"]
    rows = []
    for key, part in ok[ok["method"] != reference].groupby([*group, "method"], sort=False):
        part = part.set_index([*group, "trial"])["rmse"]
        common = part.index.intersection(ref.index)
        ratios = (part.loc[common] / ref.loc[common]).to_numpy()
        row = dict(zip([*group, "method"], key))
        row["paired_trials"] = len(ratios)
        column = "ratio_to_" + reference.replace("+", "_")
        if len(ratios) >= 2:
            row[column], row["ratio_ci_low"], row["ratio_ci_high"] = mean_confidence_interval(ratios)
        elif len(ratios) == 1:
            row[column] = float(ratios[0])
        rows.append(row)
    return pd.DataFrame(rows)


def rmse_cell(row: Any, spec: str = "1.5f") -> str:
    if row is None or pd.isna(getattr(row, "rmse_mean", float("nan"))):
        return "failed" if row is not None and str(getattr(row, "status", "ok")) != "ok" else "-"
    mean = format_number(row.rmse_mean, spec)
    if pd.isna(getattr(row, "rmse_ci_high", float("nan"))):
        return mean
    return f"{mean} ± {format_number((row.rmse_ci_high - row.rmse_ci_low) / 2, spec)}"


def seconds(value: float) -> str:
    if pd.isna(value):
        return "-"
    if value < 0.1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.2f} s" if value < 10 else f"{value:.1f} s"


# --------------------------------------------------------------------------------------------
# Part a: accuracy against n on Adult
# --------------------------------------------------------------------------------------------


def adult_data(key: str, attributes: Sequence[str] | None = None) -> Dataset:
    return datasets.adult(binary=key == "adult-binary", attributes=attributes)


def subsample(data: Dataset, n: int, seed: int, key: str) -> Dataset:
    return data if n >= data.n else data.subsample(n, np.random.default_rng([seed, TAGS[key], n]))


def adult_methods(key: str, domain: Domain, privacy: ApproxDP, relaxations: Sequence[str],
                  hull: bool) -> dict[str, GaussianMechanism]:
    workload = marginals(domain, 2, implicit=key != "adult-binary")
    # Continuous noise: trial t of every method then gets the same draws (paired ratios); OpenDP's
    # discrete draws cannot be seeded.
    methods: dict[str, GaussianMechanism] = {"gaussian": GaussianMechanism(workload, privacy, noise="continuous")}
    if hull:
        methods["hull"] = ProjectionMechanism(workload, privacy, body="hull", noise="continuous")
    for name in relaxations:
        methods[name] = ProjectionMechanism(workload, privacy, body="relaxed", relaxation=name, noise="continuous")
    return methods


def run_trials(cache: TrialCache, key: str, data: Dataset, n: int, method: str, mechanism: GaussianMechanism,
               trials: int, seed: int, truth: np.ndarray, bar: Any) -> list[dict[str, Any]]:
    rows = []
    for trial in range(trials):
        row: dict[str, Any] = {"data": key, "n": n, "method": method, "trial": trial}
        try:
            outcome = cache.get((key, n, trial, method),
                                lambda trial=trial: release_outcome(mechanism, data, trial_rng(seed, key, n, trial)))
        except Failure as failure:
            rows.append({**row, "status": f"failed: {failure}"})
            bar.update(trials - trial)
            break
        rows.append({**row, "status": "ok", "rmse": rmse(outcome.answers, truth),
                     "noisy_rmse": rmse(outcome.noisy, truth), "max_error": max_error(outcome.answers, truth),
                     "time_s": outcome.time_s, "solve_time_s": outcome.solve_time_s, "solver": outcome.solver,
                     "iterations": outcome.iterations, "distance": outcome.distance})
        bar.update(1)
    return rows


def part_adult(args: argparse.Namespace, cache: TrialCache, privacy: ApproxDP) -> tuple[pd.DataFrame, pd.DataFrame]:
    plans = [("adult-binary", args.sizes, args.trials, True, list(RELAXATIONS))]
    if args.categorical_sizes:
        plans.append(("adult", args.categorical_sizes, args.categorical_trials, False,
                      list(args.categorical_relaxations)))
    total = 0
    for _, sizes, trials, hull, relaxations in plans:
        total += len(sizes) * ((1 + len(relaxations)) * trials + (args.hull_trials if hull else 0))
    rows: list[dict[str, Any]] = []
    with tqdm(total=total, desc="adult releases", disable=args.no_progress) as bar:
        for key, sizes, trials, hull, relaxations in plans:
            full = adult_data(key, SMOKE_ATTRIBUTES if args.smoke else None)
            for n in sizes:
                data = subsample(full, n, args.seed, key)
                methods = adult_methods(key, data.domain, privacy, relaxations, hull)
                truth = methods["gaussian"].workload.answer_data(data)
                for name, mechanism in methods.items():
                    count = args.hull_trials if name == "hull" else trials
                    bar.set_postfix_str(f"{key} n={n} {name}")
                    rows += run_trials(cache, key, data, n, name, mechanism, count, args.seed, truth, bar)
    trials_frame = pd.DataFrame(rows)
    summary = summarize(rows, ["data", "n", "method"])
    ratios = paired_ratios(trials_frame, "hull", ["data", "n"])
    if not ratios.empty:
        summary = summary.merge(ratios, on=["data", "n", "method"], how="left")
    return summary, trials_frame


def format_adult(summary: pd.DataFrame, key: str, methods: Sequence[str], trials: dict[str, int]) -> str:
    """RMSE table, then time and paired-ratio table, for one data set."""
    part = summary[summary["data"] == key]
    lookup = {(row.n, row.method): row for row in part.itertuples(index=False)}
    sizes = sorted(part["n"].unique())
    header = ["n"] + [f"{name} RMSE ({trials[name]} trials)" for name in methods]
    rmse_rows = [[str(n)] + [rmse_cell(lookup.get((n, name))) for name in methods] for n in sizes]
    tables = [bench.markdown(header, rmse_rows)]
    projections = [name for name in methods if name != "gaussian"]
    header = ["n"] + [f"{name} time" for name in methods]
    if "hull" in methods:
        header += [f"{name} / hull" for name in projections if name != "hull"]
    reference = next((name for name in ("sdp+local", *projections) if name in projections), None)
    if reference is not None:
        header.append(f"Gaussian / {reference}")
    time_rows = []
    for n in sizes:
        row = [str(n)] + [seconds(getattr(lookup.get((n, name)), "time_s_mean", float("nan"))) for name in methods]
        if "hull" in methods:
            for name in projections:
                if name == "hull":
                    continue
                entry = lookup.get((n, name))
                ratio = getattr(entry, "ratio_to_hull", float("nan"))
                half = (getattr(entry, "ratio_ci_high", float("nan")) - getattr(entry, "ratio_ci_low",
                                                                                float("nan"))) / 2
                row.append("-" if pd.isna(ratio) else f"{ratio:.4f}" + ("" if pd.isna(half) else f" ± {half:.4f}"))
        if reference is not None:
            gauss, entry = lookup.get((n, "gaussian")), lookup.get((n, reference))
            ratio = float("nan") if gauss is None or entry is None else gauss.rmse_mean / entry.rmse_mean
            row.append("-" if pd.isna(ratio) else f"{ratio:.2f}")
        time_rows.append(row)
    tables.append(bench.markdown(header, time_rows))
    return "\n\n".join(tables)


# --------------------------------------------------------------------------------------------
# Part b: time against d
# --------------------------------------------------------------------------------------------


def synthetic_release(d: int, rows: int, seed: int, privacy: ApproxDP, trial: int = 0
                      ) -> tuple[Dataset, np.ndarray, np.ndarray, float]:
    """The data set, the true answers, one trial's noisy answers and sigma, for ``d`` attributes."""
    data = latent_factor_data(d, rows, np.random.default_rng([seed, TAGS["synthetic"], d]))
    workload = marginals(data.domain, 2, implicit=True)
    truth = workload.answer_data(data)
    release = GaussianMechanism(workload, privacy, noise="continuous").release(data, rng=trial_rng(seed, "synthetic",
                                                                                                   d, trial))
    return data, truth, release.noisy_answers, release.sigma


def part_scaling(args: argparse.Namespace, privacy: ApproxDP) -> pd.DataFrame:
    rows = []
    for d in tqdm(args.dims, desc="scaling d", disable=args.no_progress):
        with bench.Timer() as timer:
            data, truth, noisy, sigma = synthetic_release(d, args.rows, args.seed, privacy)
        setup = timer.seconds
        row: dict[str, Any] = {"d": d, "k": truth.size, "rows": args.rows, "sigma": sigma, "setup_time_s": setup,
                               "noisy_rmse": rmse(noisy, truth), "mean_marginal": float(data.records.mean())}
        times, result = [], None
        try:
            for _ in range(args.repeats):
                with bench.Timer() as timer:
                    result = project_to_relaxation(data.domain, noisy, relaxation="sdp+local")
                times.append(timer.seconds)
            row.update(admm_time_s=float(np.median(times)), admm_time_min_s=float(np.min(times)),
                       admm_iterations=result.stats.iterations, admm_gap=result.stats.gap,
                       admm_distance=result.distance, admm_violation=result.constraint_violation,
                       admm_rmse=rmse(result.answers, truth), admm_status=result.stats.status.value)
        except RelaxationError as error:
            row.update(admm_status=f"failed: {error}")
        if d in TARGETS:
            row["target_s"] = TARGETS[d]
            row["target_met"] = bool(row.get("admm_time_s", math.inf) <= TARGETS[d])
        if d <= args.scs_max_d:
            timer = bench.Timer()
            try:
                scs = project_to_relaxation(data.domain, noisy, relaxation="sdp+local", solver="SCS")
                row.update(scs_time_s=timer.seconds, scs_distance=scs.distance,
                           scs_violation=scs.constraint_violation, scs_rmse=rmse(scs.answers, truth),
                           scs_status=scs.stats.status.value)
                if result is not None:
                    row["scs_relative_distance"] = scs.distance / result.distance - 1
            except RelaxationError as error:
                row.update(scs_time_s=timer.seconds, scs_status=f"failed: {error}")
        rows.append(row)
        tqdm.write(f"  d={d}: ADMM {seconds(row.get('admm_time_s', float('nan')))} "
                   f"({row.get('admm_iterations', '-')} iterations), SCS "
                   f"{seconds(row.get('scs_time_s', float('nan')))}")
    return pd.DataFrame(rows)


def format_scaling(frame: pd.DataFrame) -> str:
    header = ["d", "k", "ADMM time", "iterations", "certified gap", "noisy RMSE", "projected RMSE",
              "SCS time", "SCS distance / ADMM − 1", "target"]
    rows = []
    for row in frame.itertuples(index=False):
        ok = str(row.admm_status) == "optimal"
        scs_status = str(getattr(row, "scs_status", "nan"))
        if scs_status == "nan":
            scs_time, scs_rel = "not run", "-"
        elif scs_status.startswith("failed"):
            scs_time, scs_rel = f"failed ({seconds(row.scs_time_s)})", "-"
        else:
            scs_time, scs_rel = seconds(row.scs_time_s), f"{row.scs_relative_distance:+.1e}"
        target = "-"
        if not pd.isna(getattr(row, "target_s", float("nan"))):
            target = f"≤ {row.target_s:g} s: {'PASS' if row.target_met else 'FAIL'}"
        rows.append([
            str(row.d), f"{row.k:,}", seconds(row.admm_time_s) if ok else "failed",
            f"{row.admm_iterations:.0f}" if ok else "-", f"{row.admm_gap:.1e}" if ok else "-",
            format_number(row.noisy_rmse, "1.5f"), format_number(row.admm_rmse, "1.5f") if ok else "-",
            scs_time, scs_rel, target,
        ])
    return bench.markdown(header, rows)


# --------------------------------------------------------------------------------------------
# Part c: Private-PGM
# --------------------------------------------------------------------------------------------


class PrivatePGM:
    """mbi's estimate of all 2-way marginals of ``domain`` from noisy answers in our layout."""

    def __init__(self, mbi: Any, domain: Domain, iters: int, exact_max: int, oracle_iters: int) -> None:
        self.mbi, self.domain, self.iters, self.oracle_iters = mbi, domain, iters, oracle_iters
        self.names = list(domain.attributes)
        self.mbi_domain = mbi.Domain(self.names, list(domain.sizes))
        self.cliques = [(self.names[i], self.names[j]) for i, j in itertools.combinations(range(len(self.names)), 2)]
        self.exact = domain.size <= exact_max
        self.estimator = "MirrorDescent (exact)" if self.exact else \
            f"ApproxMirrorDescent (convex GBP, {oracle_iters} round{'s' if oracle_iters > 1 else ''}/step)"

    def measurements(self, noisy: np.ndarray, sigma: float, n: int) -> list[Any]:
        blocks = [table.ravel() for table in pair_tables(self.domain, noisy).values()]
        return [self.mbi.LinearMeasurement(block * n, clique, stddev=sigma * n)
                for block, clique in zip(blocks, self.cliques)]

    def estimate(self, noisy: np.ndarray, sigma: float, n: int) -> Outcome:
        from mbi import approximate_oracles, estimation, marginal_loss

        timer = bench.Timer()
        measurements = self.measurements(noisy, sigma, n)
        if self.exact:
            model = estimation.MirrorDescent().estimate(self.mbi_domain, measurements, known_total=float(n),
                                                        iters=self.iters)
            project = model.project
        else:
            loss = marginal_loss.from_linear_measurements(measurements, self.mbi_domain)
            stepsize = 2.0 / (loss.lipschitz * n)
            estimator = approximate_oracles.ApproxMirrorDescent(stepsize=stepsize, oracle_iters=self.oracle_iters)
            project = estimator.estimate(self.mbi_domain, loss, known_total=float(n), iters=self.iters).project
        answers = np.concatenate([np.asarray(project(clique).datavector(), dtype=float) for clique in self.cliques]) / n
        elapsed = timer.seconds
        return Outcome(answers=answers, noisy=noisy, time_s=elapsed, solve_time_s=elapsed, solver="mbi",
                       iterations=float(self.iters), distance=float(np.linalg.norm(answers - noisy)),
                       info=self.estimator)


def check_mbi_layout(mbi: Any) -> float:
    """Fit mbi to the exact 2-way marginals of a small data set with unequal sizes and return the
    largest error of the marginals read back in our layout (tiny if the cell orders agree; a
    transposed table would disagree with the other tables' 1-way marginals). Raises otherwise."""
    domain = Domain(["a", "b", "c"], [2, 3, 4])
    rng = np.random.default_rng(0)
    data = Dataset(np.column_stack([rng.integers(0, s, size=400) for s in domain.sizes]), domain)
    truth = marginals(domain, 2).answer_data(data)
    worst = 0.0
    for exact_max in (domain.size, 0):  # the exact estimator, then the approximate one
        pgm = PrivatePGM(mbi, domain, iters=1000, exact_max=exact_max, oracle_iters=1)
        worst = max(worst, max_error(pgm.estimate(truth, 1e-3, data.n).answers, truth))
    if worst > 1e-3:
        raise RuntimeError(f"mbi's marginals do not match ours on exact input (max error {worst:.2e}): "
                           "the cell order of mbi's cliques differs from marginals(domain, 2)")
    return worst


def part_pgm(args: argparse.Namespace, cache: TrialCache, privacy: ApproxDP, mbi: Any
             ) -> tuple[pd.DataFrame, pd.DataFrame]:
    plans: list[tuple[str, Dataset, int, list[str]]] = []
    for key, sizes, ours in (("adult-binary", args.pgm_sizes, ["hull", "sdp+local", "local"]),
                             ("adult", args.pgm_categorical_sizes, ["sdp+local", "local"])):
        if sizes:
            full = adult_data(key, SMOKE_ATTRIBUTES if args.smoke else None)
            plans += [(key, subsample(full, n, args.seed, key), n, ours) for n in sizes]
    for d in args.pgm_dims:
        plans.append((f"synthetic:{d}", latent_factor_data(d, args.rows, np.random.default_rng([args.seed,
                                                                                                TAGS["synthetic"], d])),
                      d, ["sdp+local"]))
    def trials_of(key: str) -> int:  # mbi's approximate estimator is the slow one
        return args.pgm_trials if key == "adult-binary" else args.pgm_approx_trials

    rows: list[dict[str, Any]] = []
    total = sum((len(ours) + 2) * trials_of(key) for key, _, _, ours in plans)
    with tqdm(total=total, desc="pgm", disable=args.no_progress) as bar:
        for key, data, n_or_d, ours in plans:
            trials = trials_of(key)
            synthetic = key.startswith("synthetic")
            methods = adult_methods("synthetic" if synthetic else key, data.domain, privacy,
                                    [r for r in ours if r != "hull"],
                                    hull="hull" in ours)
            truth = methods["gaussian"].workload.answer_data(data)
            pgm = PrivatePGM(mbi, data.domain, args.pgm_iters, args.pgm_exact_max, args.pgm_oracle_iters)
            label = "adult-binary" if key == "adult-binary" else ("adult" if key == "adult" else f"synthetic "
                                                                                                 f"d={n_or_d}")
            for trial in range(trials):
                rng_key = (key.split(":")[0], n_or_d, trial)
                outcomes: dict[str, Outcome | str] = {}
                for name, mechanism in methods.items():
                    bar.set_postfix_str(f"{label} n={data.n} {name}")
                    try:
                        def run(mechanism=mechanism, data=data, rng_key=rng_key, n_or_d=n_or_d, trial=trial):
                            return release_outcome(mechanism, data, trial_rng(args.seed, rng_key[0], n_or_d, trial))

                        outcomes[name] = cache.get((key, n_or_d, trial, name), run)
                    except Failure as failure:
                        outcomes[name] = f"failed: {failure}"
                    bar.update(1)
                gaussian = outcomes["gaussian"]
                assert isinstance(gaussian, Outcome)
                for name, outcome in outcomes.items():
                    if isinstance(outcome, Outcome) and not np.array_equal(outcome.noisy, gaussian.noisy):
                        raise RuntimeError(f"{name} saw other noise than the Gaussian mechanism on {label}")
                bar.set_postfix_str(f"{label} n={data.n} mbi")
                outcomes["private-pgm"] = pgm.estimate(gaussian.noisy, methods["gaussian"].noise_scale(data.n), data.n)
                bar.update(1)
                for name, outcome in outcomes.items():
                    row = {"data": label, "n": data.n, "k": truth.size, "method": name, "trial": trial}
                    if isinstance(outcome, str):
                        rows.append({**row, "status": outcome})
                        continue
                    rows.append({**row, "status": "ok", "rmse": rmse(outcome.answers, truth),
                                 "max_error": max_error(outcome.answers, truth), "distance": outcome.distance,
                                 "time_s": outcome.time_s, "solver": outcome.info or outcome.solver,
                                 "iterations": outcome.iterations,
                                 "inconsistency": inconsistency(data.domain, outcome.answers),
                                 "min_cell": float(outcome.answers.min()), "first_trial": trial == 0})
    frame = pd.DataFrame(rows)
    summary = summarize(rows, ["data", "n", "k", "method"])
    ratios = paired_ratios(frame, "sdp+local", ["data", "n", "k"])
    if not ratios.empty:
        summary = summary.merge(ratios, on=["data", "n", "k", "method"], how="left")
    # mbi's first call compiles its JAX programs: report it apart from the mean of the others.
    first = frame[(frame["method"] == "private-pgm") & (frame["trial"] == 0)].set_index(["data", "n"])["time_s"]
    rest = frame[(frame["method"] == "private-pgm") & (frame["trial"] > 0)].groupby(["data", "n"])["time_s"].mean()
    pgm_rows = summary["method"] == "private-pgm"
    keys = list(zip(summary.loc[pgm_rows, "data"], summary.loc[pgm_rows, "n"]))
    summary.loc[pgm_rows, "first_time_s"] = [first.get(key, float("nan")) for key in keys]
    summary.loc[pgm_rows, "time_s_mean"] = [rest.get(key, first.get(key, float("nan"))) for key in keys]
    return summary, frame


def format_pgm(summary: pd.DataFrame) -> str:
    header = ["data", "n", "k", "method", "RMSE", "RMSE / sdp+local (paired)", "distance to noisy",
              "inconsistency", "min cell", "time"]
    rows = []
    names = {"gaussian": "Gaussian (noisy input)", "hull": "ours: hull K_Q", "sdp+local": "ours: sdp+local (ADMM)",
             "local": "ours: local (SCS)", "sdp": "ours: sdp (ADMM)"}
    for row in summary.itertuples(index=False):
        if row.method == "private-pgm":
            name = f"Private-PGM: {row.solvers.split('×')[0]}, {row.iterations_mean:.0f} iterations"
            time_text = f"{seconds(row.time_s_mean)} (first: {seconds(row.first_time_s)})"
        else:
            name = names.get(row.method, row.method)
            time_text = "-" if row.method == "gaussian" else seconds(row.time_s_mean)
        ratio = getattr(row, "ratio_to_sdp_local", float("nan"))
        half = (getattr(row, "ratio_ci_high", float("nan")) - getattr(row, "ratio_ci_low", float("nan"))) / 2
        ratio_text = "1" if row.method == "sdp+local" else \
            ("-" if pd.isna(ratio) else f"{ratio:.4f}" + ("" if pd.isna(half) else f" ± {half:.4f}"))
        rows.append([row.data, str(row.n), f"{row.k:,}", name, rmse_cell(row, "1.6f"), ratio_text,
                     "-" if row.method == "gaussian" else format_number(row.distance_mean, "1.5f"),
                     f"{row.inconsistency_mean:.1e}", f"{row.min_cell_mean:+.1e}", time_text])
    return bench.markdown(header, rows, ["---", "---:", "---:", "---", "---:", "---:", "---:", "---:", "---:", "---:"])


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--parts", type=bench.name_list, default=list(PARTS),
                        help="comma-separated parts to run (default " + ",".join(PARTS) + ")")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--seed", type=int, default=0, help="every random stream derives from it")
    parser.add_argument("--quick", action="store_true", help="a short run: fewer sizes, trials and dimensions, "
                        "no categorical Adult, no synthetic data for Private-PGM")
    # adult
    parser.add_argument("--sizes", type=bench.int_list, default=None,
                        help="binarized Adult sizes n (default " + ",".join(map(str, DEFAULT_SIZES)) + ")")
    parser.add_argument("--trials", type=int, default=None,
                        help=f"releases per mechanism and n on binarized Adult (default {DEFAULT_TRIALS})")
    parser.add_argument("--hull-trials", type=int, default=None,
                        help=f"releases of the hull projection per n (default {DEFAULT_HULL_TRIALS}: 2-25 s each)")
    parser.add_argument("--categorical-sizes", type=bench.int_list, default=None,
                        help="categorical Adult sizes n (default " + ",".join(map(str, DEFAULT_CATEGORICAL_SIZES))
                             + "; none with --quick; '' for none)")
    parser.add_argument("--categorical-trials", type=int, default=DEFAULT_CATEGORICAL_TRIALS,
                        help=f"releases per mechanism and n on categorical Adult (default "
                             f"{DEFAULT_CATEGORICAL_TRIALS})")
    parser.add_argument("--categorical-relaxations", type=bench.name_list, default=list(RELAXATIONS),
                        help="relaxations on categorical Adult (default " + ",".join(RELAXATIONS) + ")")
    # scaling
    parser.add_argument("--dims", type=bench.int_list, default=None,
                        help="numbers d of binary attributes (default " + ",".join(map(str, DEFAULT_DIMS)) + ")")
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS, help=f"synthetic rows (default {DEFAULT_ROWS})")
    parser.add_argument("--repeats", type=int, default=None,
                        help=f"ADMM solves per d, median reported (default {DEFAULT_REPEATS})")
    parser.add_argument("--scs-max-d", type=int, default=DEFAULT_SCS_MAX_D,
                        help=f"largest d for the CVXPY+SCS reference (default {DEFAULT_SCS_MAX_D}; "
                             "it took 9.5 s at d = 300 and 1,122 s at d = 500 on 2 cores)")
    # pgm
    parser.add_argument("--pgm-sizes", type=bench.int_list, default=None,
                        help=f"binarized Adult sizes for Private-PGM (default {','.join(map(str, DEFAULT_PGM_SIZES))})")
    parser.add_argument("--pgm-categorical-sizes", type=bench.int_list, default=None,
                        help="categorical Adult sizes for Private-PGM (default "
                             + ",".join(map(str, DEFAULT_PGM_CATEGORICAL_SIZES)) + "; none with --quick)")
    parser.add_argument("--pgm-dims", type=bench.int_list, default=None,
                        help="synthetic d for Private-PGM (default " + ",".join(map(str, DEFAULT_PGM_DIMS))
                             + "; none with --quick)")
    parser.add_argument("--pgm-trials", type=int, default=None,
                        help=f"trials on binarized Adult (default {DEFAULT_PGM_TRIALS})")
    parser.add_argument("--pgm-approx-trials", type=int, default=None,
                        help="trials on categorical Adult and synthetic data, where mbi's approximate estimator "
                             f"takes 10-130 s per call (default {DEFAULT_PGM_APPROX_TRIALS})")
    parser.add_argument("--pgm-iters", type=int, default=DEFAULT_PGM_ITERS,
                        help=f"mbi iterations (default {DEFAULT_PGM_ITERS}, mbi's own default)")
    parser.add_argument("--pgm-exact-max", type=int, default=DEFAULT_PGM_EXACT_MAX,
                        help=f"largest universe for mbi's exact inference (default {DEFAULT_PGM_EXACT_MAX})")
    parser.add_argument("--pgm-oracle-iters", type=int, default=1,
                        help="message-passing rounds per step of mbi's approximate estimator (default 1, mbi's)")
    parser.add_argument("--output", default="results", help="directory of the CSV and JSON outputs (default results)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    bench.add_smoke_option(parser, f"Adult's {', '.join(SMOKE_ATTRIBUTES)} at n = 300 (binarized and categorical, "
                                   "Private-PGM too), d = 3 on 500 rows, 2 trials, 1 repeat, 20 mbi iterations")
    return parser


def resolve(args: argparse.Namespace) -> str | None:
    """Fill quick/full defaults; an error message for bad arguments, else None."""
    quick = args.quick
    args.sizes = args.sizes if args.sizes is not None else list(QUICK_SIZES if quick else DEFAULT_SIZES)
    args.trials = args.trials if args.trials is not None else (QUICK_TRIALS if quick else DEFAULT_TRIALS)
    args.hull_trials = args.hull_trials if args.hull_trials is not None else \
        (QUICK_HULL_TRIALS if quick else DEFAULT_HULL_TRIALS)
    if args.categorical_sizes is None:
        args.categorical_sizes = [] if quick else list(DEFAULT_CATEGORICAL_SIZES)
    args.dims = args.dims if args.dims is not None else list(QUICK_DIMS if quick else DEFAULT_DIMS)
    args.repeats = args.repeats if args.repeats is not None else (QUICK_REPEATS if quick else DEFAULT_REPEATS)
    if args.pgm_sizes is None:
        args.pgm_sizes = list(QUICK_PGM_SIZES if quick else DEFAULT_PGM_SIZES)
    if args.pgm_categorical_sizes is None:
        args.pgm_categorical_sizes = [] if quick else list(DEFAULT_PGM_CATEGORICAL_SIZES)
    if args.pgm_dims is None:
        args.pgm_dims = [] if quick else list(DEFAULT_PGM_DIMS)
    if args.pgm_trials is None:
        args.pgm_trials = QUICK_PGM_TRIALS if quick else DEFAULT_PGM_TRIALS
    if args.pgm_approx_trials is None:
        args.pgm_approx_trials = QUICK_PGM_TRIALS if quick else DEFAULT_PGM_APPROX_TRIALS
    unknown = [part for part in args.parts if part not in PARTS]
    if unknown or not args.parts:
        return f"--parts must be among {','.join(PARTS)}, got {args.parts}"
    adult_n = datasets.adult(binary=True).n
    for flag, sizes in (("--sizes", args.sizes), ("--categorical-sizes", args.categorical_sizes),
                        ("--pgm-sizes", args.pgm_sizes), ("--pgm-categorical-sizes", args.pgm_categorical_sizes)):
        if any(not 1 <= n <= adult_n for n in sizes):
            return f"{flag} must lie in [1, {adult_n}], got {sizes}"
    for flag, count in (("--trials", args.trials), ("--hull-trials", args.hull_trials),
                        ("--categorical-trials", args.categorical_trials), ("--pgm-trials", args.pgm_trials),
                        ("--pgm-approx-trials", args.pgm_approx_trials)):
        if count < 2:
            return f"{flag} must be at least 2 (for a confidence interval), got {count}"
    if any(d < 2 for d in [*args.dims, *args.pgm_dims]):
        return "--dims and --pgm-dims must be at least 2"
    bad = [name for name in args.categorical_relaxations if name not in RELAXATIONS]
    if bad:
        return f"--categorical-relaxations must be among {','.join(RELAXATIONS)}, got {bad}"
    if args.rows < 2 or args.repeats < 1 or args.pgm_iters < 1 or args.pgm_oracle_iters < 1:
        return "--rows must be at least 2, --repeats, --pgm-iters and --pgm-oracle-iters at least 1"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.smoke:
        args.sizes, args.trials, args.hull_trials = [300], 2, 2
        args.categorical_sizes, args.categorical_trials = [300], 2
        args.dims, args.rows, args.repeats = [3], 500, 1
        args.pgm_sizes, args.pgm_categorical_sizes, args.pgm_dims, args.pgm_trials = [300], [300], [3], 2
        args.pgm_approx_trials, args.pgm_iters, args.pgm_exact_max, args.output = 2, 20, 64, str(bench.smoke_folder())
    problem = resolve(args)
    if problem:
        return bench.usage_error(problem)
    privacy = ApproxDP(args.epsilon, args.delta)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    cache = TrialCache()
    report: dict[str, Any] = {"arguments": {key: value for key, value in vars(args).items()},
                              "privacy": str(privacy), "neighbouring": "replace-one", "cpu_count": os.cpu_count(),
                              "versions": bench.package_versions(), "time_s": {}}
    failures: list[str] = []
    total = bench.Timer()
    print(f"relaxation benchmark: parts {','.join(args.parts)}, {privacy}, replace-one, seed {args.seed}, "
          f"{os.cpu_count()} cores", flush=True)

    if "adult" in args.parts:
        with bench.Timer() as timer:
            summary, trials = part_adult(args, cache, privacy)
        report["time_s"]["adult"] = timer.seconds
        bench.write_csv(summary, out / "relaxation_adult.csv")
        bench.write_csv(trials, out / "relaxation_adult_trials.csv")
        ok = trials[trials["status"] == "ok"]
        projected = ok[ok["method"] != "gaussian"]
        worse = projected[projected["rmse"] > projected["noisy_rmse"] * (1 + CHECK_SLACK) + 1e-12]
        if not worse.empty:
            failures.append(f"adult: {len(worse)} projections farther from the truth than their noisy input")
        for row in summary[summary["status"] != "ok"].itertuples():
            print(f"FAILED: {row.data} n={row.n} {row.method}: {row.status}")
        counts = {"gaussian": args.trials, "hull": args.hull_trials, **{name: args.trials for name in RELAXATIONS}}
        print("\n## Accuracy against n: binarized Adult (14 attributes, 364 queries, m = 16,384)\n")
        print(format_adult(summary, "adult-binary", ["gaussian", "hull", *RELAXATIONS], counts))
        if args.categorical_sizes:
            counts = {name: args.categorical_trials for name in ["gaussian", *args.categorical_relaxations]}
            print("\n## Accuracy against n: categorical Adult (14 attributes, 148,137 queries)\n")
            print(format_adult(summary, "adult", ["gaussian", *args.categorical_relaxations], counts))
            for row in summary[(summary["data"] == "adult") & (summary["method"] != "gaussian")].itertuples():
                iterations = "" if pd.isna(row.iterations_mean) else f"mean {row.iterations_mean:.0f} ADMM iterations, "
                print(f"  n={row.n} {row.method} ({row.solvers}): {iterations}mean solve "
                      f"{seconds(row.solve_time_s_mean)}")
        hull = summary[summary["method"] == "hull"]
        if not hull.empty:
            print("  hull solvers: " + "; ".join(f"n={row.n}: {row.solvers}" for row in hull.itertuples()))
        print(f"  projections no farther from the truth than their noisy input: "
              f"{'yes' if worse.empty else f'NO ({len(worse)} of {len(projected)})'} ({len(projected)} releases)",
              flush=True)

    if "scaling" in args.parts:
        with bench.Timer() as timer:
            scaling = part_scaling(args, privacy)
        report["time_s"]["scaling"] = timer.seconds
        bench.write_csv(scaling, out / "relaxation_scaling.csv")
        print(f"\n## Time against d: sdp+local, {args.rows:,} synthetic rows, ADMM median of {args.repeats}\n")
        print(format_scaling(scaling))
        ok = scaling[scaling["admm_status"] == "optimal"]
        bad = ok[ok["admm_rmse"] > ok["noisy_rmse"] * (1 + CHECK_SLACK) + 1e-12]
        if not bad.empty:
            failures.append(f"scaling: projection farther from the truth than the noisy input at d={list(bad['d'])}")
        for d, limit in TARGETS.items():
            row = scaling[scaling["d"] == d]
            if not row.empty:
                met = bool(row["target_met"].iloc[0])
                print(f"  target d={d} within {limit:g} s: {'PASS' if met else 'FAIL'} "
                      f"({seconds(row['admm_time_s'].iloc[0])})")
        print(flush=True)

    if "pgm" in args.parts:
        mbi, version = bench.import_mbi()
        if mbi is None:
            print(f"\n## Private-PGM: skipped: {version}\n", flush=True)
            report["pgm_skipped"] = version
        else:
            timer = bench.Timer()
            layout_error = check_mbi_layout(mbi)
            print(f"\nmbi {version}: cell order of clique marginals matches marginals(domain, 2) "
                  f"(max error {layout_error:.1e} on exact input)", flush=True)
            summary, trials = part_pgm(args, cache, privacy, mbi)
            report["time_s"]["pgm"] = timer.seconds
            report["mbi_layout_error"] = layout_error
            bench.write_csv(summary, out / "relaxation_pgm.csv")
            bench.write_csv(trials, out / "relaxation_pgm_trials.csv")
            print(f"\n## Private-PGM (mbi {version}) and our projections on the same noisy 2-way marginals "
                  f"({args.pgm_trials} trials on binarized Adult, {args.pgm_approx_trials} elsewhere)\n")
            print(format_pgm(summary))

    report["time_s"]["total"] = total.seconds
    (out / "relaxation.json").write_text(json.dumps(report, indent=2, default=str))
    print(f"\nwrote {out}/relaxation_*.csv and relaxation.json in {report['time_s']['total']:.1f} s")
    for failure in failures:
        print(f"CHECK FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
