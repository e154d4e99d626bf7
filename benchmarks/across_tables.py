"""Synthetic rows beside AIM's, across tables: Adult and public tables never tuned on.

For each table, epsilon and seed, all 3-way marginals at ``(epsilon, 1e-9)``-DP under add/remove
neighbours (AIM's relation; the size stays private), three rows:

* ``synthesize``: :func:`projmech.synthesize` with its defaults, except ``noise="continuous"``
  with ``--noise continuous`` (the default here), so that a seed fixes the whole run (the noise,
  the selections and the rows) and two versions of the code compare seed by seed; ``--noise auto``
  is the package's default, exact discrete noise, which is not reproducible from the seed;
* ``synthesize_16d``: the same with AIM's 16 notional rounds per attribute always, where
  ``synthesize`` may take fewer (few rows at a small budget): the schedule's own effect, paired
  by seed in a second summary;
* ``aim``: AIM's reference implementation (Private-PGM's ``mechanisms/aim.py`` on mbi 2.0.0),
  run by ``_aim_runner.py`` with ``--aim-python`` and ``--aim-path`` (never copied here; how to
  get it is in the runner's docstring), at ``--max-model-size`` MB. Skipped with a message
  where either is missing.

The error is AIM's metric on the synthetic rows (the mean over the workload of half the L1
distance between normalized tables); AIM's model is scored too (``error_model``). Tables: Adult's
10 attributes where AIM finishes (``adult10``), the six tables of ``benchmarks/data`` (see its
README), and ``wide30``, 30 generated columns of 2 to 6 values on 20,000 rows (:func:`wide_table`;
the time per round is in the CSV, ``seconds_per_round``; AIM is not run on it). Each run is its
own process. The CSV keeps every run; a rerun with the same ``--out`` skips the runs already
there (``--again`` repeats them), so AIM's slow runs add up over several invocations.

The summary, per table and epsilon: each row's mean and standard error, their difference with
the standard error of the difference (unpaired: the two mechanisms draw different noise), the
ratio of the means and of the times, and whether ``synthesize`` is ahead (more than two standard
errors below), behind (two above) or level; then the mean ratio over the cells where both ran (the
target's other reading: at least 5 % lower on average).
Usage::

    .venv/bin/python benchmarks/across_tables.py --seeds 10 --rows synthesize
    .venv/bin/python benchmarks/across_tables.py --seeds 3 --rows aim \\
        --aim-python aim-venv/bin/python --aim-path private-pgm-src
    .venv/bin/python benchmarks/across_tables.py --summary     # the table from the CSV, nothing run
    .venv/bin/python benchmarks/across_tables.py --smoke

Writes ``results/across_tables.csv``.
"""

from __future__ import annotations

import fcntl
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common as bench
import numpy as np
import pandas as pd
from _public_tables import DATA, PUBLIC_TABLES, SMALL_TABLES

ADULT10 = ("age", "workclass", "education-num", "marital-status", "occupation", "relationship", "race", "sex",
           "hours-per-week", "income>50K")
TABLES = ("adult10", *PUBLIC_TABLES, *SMALL_TABLES, "wide30")
ROWS = ("synthesize", "aim", "synthesize_16d")
KEYS = ["table", "row", "noise", "epsilon", "seed"]


def wide_table(columns: int = 30, rows: int = 20_000, seed: int = 0) -> Any:
    """A generated wide table: ``columns`` attributes of 2 to 6 values, each a Gaussian of four shared
    factors plus noise cut at random quantiles, so that every column depends on the others."""
    import projmech as pm

    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 7, columns)
    values = rng.standard_normal((rows, 4)) @ rng.standard_normal((4, columns)) + rng.standard_normal((rows, columns))
    records = np.empty((rows, columns), dtype=np.int64)
    for j, size in enumerate(sizes):
        cuts = np.quantile(values[:, j], np.sort(rng.uniform(0.05, 0.95, size - 1)))
        records[:, j] = np.searchsorted(cuts, values[:, j])
    return pm.Dataset(records, pm.Domain([f"c{j}" for j in range(columns)], [int(size) for size in sizes]))


def load(table: str) -> Any:
    """The table as a projmech Dataset."""
    from _public_tables import public_table

    import projmech as pm

    if table == "wide30":
        return wide_table()
    return pm.datasets.adult(attributes=list(ADULT10)) if table == "adult10" else public_table(table)


def _job(table: str, epsilon: float, seed: int, noise: str, aim_rounds: bool = False) -> dict[str, Any]:
    import itertools
    import warnings

    import projmech as pm

    data = load(table)
    d = len(data.domain.sizes)
    triples = list(itertools.combinations(range(d), 3))
    truth = {t: np.asarray(data.table(list(t)), dtype=float) / data.n for t in triples}
    ends: list[float] = []
    began = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.BudgetWarning)  # the low budgets are the point here
        if aim_rounds:  # synthesize's defaults spelled out, with AIM's 16 d notional rounds always
            mechanism = pm.AdaptiveProjectionMechanism(
                pm.marginals(data.domain, min(3, d), implicit=True), pm.ApproxDP(epsilon, 1e-9),
                neighbouring="add-remove", size="estimate", noise=noise, rounds=16 * d)
            synthesis = mechanism.synthesize(data, rng=seed,
                                             progress=lambda number, latest, spent: ends.append(time.perf_counter()))
        else:
            synthesis = pm.synthesize(data, pm.ApproxDP(epsilon, 1e-9), noise=noise, rng=seed,
                                      progress=lambda number, latest, spent: ends.append(time.perf_counter()))
    seconds = time.perf_counter() - began
    rows = synthesis.data
    drawn = {t: np.asarray(rows.table(list(t)), dtype=float) / max(rows.n, 1) for t in triples}
    run = synthesis.run
    released = {t: run.table(t) for t in triples}
    return {"error": bench.aim_error(drawn, truth), "error_model": bench.aim_error(released, truth),
            "seconds": seconds, "rounds": len(run.rounds), "rows_drawn": rows.n,
            "seconds_per_round": float(np.mean(np.diff([began, *ends]))) if ends else float("nan"),
            "peak_mb": bench.peak_memory_mb()}


def _aim(args: Any, table: str, epsilon: float, seed: int) -> dict[str, Any]:
    import projmech as pm

    if args.aim_path is None:
        return {"status": "skipped: no --aim-path (Private-PGM's checkout; see _aim_runner.py)"}
    if table == "wide30":
        return {"status": "skipped: the generated table is not written for AIM"}
    data = load(table)
    if table == "adult10":
        folder = Path(pm.datasets.__file__).parent
        records, attributes = folder / "adult.csv.gz", list(ADULT10)
    else:
        records, attributes = DATA / f"{table}.csv.gz", []
    with tempfile.TemporaryDirectory() as folder:
        # The runner reads attribute sizes (the tables' domain files hold labels and bin edges).
        domain = Path(folder) / "domain.json"
        if table == "adult10":
            domain = Path(pm.datasets.__file__).parent / "adult-domain.json"
        else:
            domain.write_text(json.dumps(dict(zip(data.domain.attributes, map(int, data.domain.sizes)))))
        return bench.run_aim(args.aim_python, args.aim_path, records, domain, epsilon, seed, args.max_model_size,
                             args.aim_timeout, attributes)


Key = tuple[str, str, str, float, int]


def _merged(out: Path, records: dict[Key, dict[str, Any]], key: Key, smoke: bool) -> dict[Key, dict[str, Any]]:
    """The runs in ``out`` now (another invocation may have added some) with the run ``key`` of
    ``records``, written back to ``out``."""
    merged = dict(records)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # read, merge and write as one step
        if out.exists() and not smoke:
            merged = {_key(record): record for record in pd.read_csv(out).to_dict("records")}
            merged[key] = records[key]
        bench.write_csv(pd.DataFrame(list(merged.values())), out)
    return merged


def _key(record: dict[str, Any]) -> Key:
    """A run's key: table, row, noise, epsilon and seed."""
    return (str(record["table"]), str(record["row"]), str(record["noise"]), float(record["epsilon"]),
            int(record["seed"]))


def summary(frame: pd.DataFrame) -> tuple[str, float | None]:
    """The table of means per table and epsilon, and the mean ratio synthesize / AIM over the cells
    where both ran."""
    ok = frame[frame["status"] == "ok"]
    lines, ratios = [], []
    for (table, epsilon), group in ok.groupby(["table", "epsilon"], sort=True):
        cells: dict[str, Any] = {}
        for row in ROWS:
            runs = group[group["row"] == row]
            errors = runs["error"].to_numpy(dtype=float)
            cells[row] = (errors.mean() if len(errors) else math.nan,
                          errors.std(ddof=1) / math.sqrt(len(errors)) if len(errors) > 1 else math.nan,
                          len(errors), runs["seconds"].mean() if len(errors) else math.nan)
        (ours, our_se, our_n, our_s), (aim, aim_se, aim_n, aim_s) = cells["synthesize"], cells["aim"]
        both = bool(our_n and aim_n)
        difference, se = ours - aim, math.hypot(our_se, aim_se)
        ratio = ours / aim if both else math.nan
        if both:
            ratios.append(ratio)
        verdict = ("" if not both else "n/a (under 2 runs)" if math.isnan(se) else
                   "ahead" if difference < -2 * se else "behind" if difference > 2 * se else "level")
        lines.append([table, f"{epsilon:g}", f"{ours:.4f} ± {our_se:.4f} ({our_n})",
                      f"{aim:.4f} ± {aim_se:.4f} ({aim_n})" if aim_n else "–",
                      f"{difference:+.4f} ± {se:.4f}" if both else "–", bench.cell(ratio, ".3f"),
                      bench.cell(our_s, ".1f"), bench.cell(aim_s, ".0f"),
                      bench.cell(our_s / aim_s if both else math.nan, ".4f"), verdict])
    table = bench.markdown(["table", "epsilon", "synthesize (runs)", "AIM rows (runs)", "difference", "ratio",
                            "seconds", "AIM seconds", "time ratio", "verdict"], lines,
                           ["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---"])
    return table, (float(np.mean(ratios)) if ratios else None)


def schedule_summary(frame: pd.DataFrame) -> str:
    """Per table and epsilon where both ran: ``synthesize`` (its default schedule) beside
    ``synthesize_16d`` (AIM's rounds), paired by seed (continuous noise: the same seed draws the same
    noise until the schedules part), the mean paired difference with its standard error, and the
    ratio of the means; empty where no cell has both."""
    ok = frame[frame["status"] == "ok"]
    lines = []
    for (table, epsilon), group in ok.groupby(["table", "epsilon"], sort=True):
        ours = group[group["row"] == "synthesize"].set_index("seed")
        fixed = group[group["row"] == "synthesize_16d"].set_index("seed")
        seeds = sorted(set(ours.index) & set(fixed.index))
        if not seeds:
            continue
        a, b = ours.loc[seeds, "error"].to_numpy(dtype=float), fixed.loc[seeds, "error"].to_numpy(dtype=float)
        difference = a - b
        se = difference.std(ddof=1) / math.sqrt(len(seeds)) if len(seeds) > 1 else math.nan
        lines.append([table, f"{epsilon:g}", f"{a.mean():.4f}", f"{b.mean():.4f}",
                      f"{ours.loc[seeds, 'rounds'].mean():.1f}", f"{fixed.loc[seeds, 'rounds'].mean():.1f}",
                      f"{difference.mean():+.4f} ± {bench.cell(se, '.4f')}", f"{a.mean() / b.mean():.3f}",
                      str(len(seeds))])
    if not lines:
        return ""
    return bench.markdown(["table", "epsilon", "synthesize", "16 d rounds", "rounds", "rounds, 16 d",
                           "paired difference", "ratio", "seeds"], lines,
                          ["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:"])


def main(argv: list[str] | None = None) -> int:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--tables", type=bench.name_list, default=list(TABLES), help=f"default {','.join(TABLES)}")
    parser.add_argument("--epsilons", type=bench.float_list, default=[0.1, 1.0, 10.0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0 .. seeds-1 (default 10)")
    parser.add_argument("--rows", type=bench.name_list, default=list(ROWS))
    parser.add_argument("--noise", choices=("continuous", "auto"), default="continuous",
                        help="synthesize's noise: continuous (reproducible, default) or auto (exact discrete)")
    parser.add_argument("--again", action="store_true",
                        help="repeat the runs already in --out (finished or killed at their time limit)")
    parser.add_argument("--summary", action="store_true", help="print the summary of --out; run nothing")
    parser.add_argument("--out", default=str(bench.RESULTS / "across_tables.csv"), help="the CSV kept and extended")
    parser.add_argument("--aim-path", default=None, help="the Private-PGM checkout (see _aim_runner.py)")
    parser.add_argument("--aim-python", default=sys.executable, help="an interpreter with mbi 2.0 and jax")
    parser.add_argument("--max-model-size", type=float, default=80.0)
    parser.add_argument("--aim-timeout", type=float, default=3600.0)
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads of the projmech runs")
    parser.add_argument("--worker", help="(internal) run one job")
    bench.add_smoke_option(parser, "health_insurance, epsilon 1, seed 0, both rows (AIM where --aim-path is given)")
    args = parser.parse_args(argv)
    if args.worker:
        job = json.loads(args.worker)
        print(json.dumps(_job(job["table"], job["epsilon"], job["seed"], job["noise"], job.get("aim_rounds", False))))
        return 0
    for flag, given, known in (("--tables", args.tables, TABLES), ("--rows", args.rows, ROWS)):
        refused = bench.unknown_names(flag, given, known)
        if refused is not None:
            return refused
    out = Path(args.out)
    if args.smoke:
        args.tables, args.epsilons, args.seeds, out = ["health_insurance"], [1.0], 1, bench.smoke_path(out)
    kept = pd.read_csv(out) if out.exists() and not args.smoke else pd.DataFrame(columns=[*KEYS, "status"])
    # Every run by its key, the latest kept: a rerun replaces a run only with --again or after a failure.
    records = {_key(record): record for record in kept.to_dict("records")}
    if not args.summary:
        for table in args.tables:
            for epsilon in args.epsilons:
                for seed in range(args.seeds):
                    for row in args.rows:
                        noise = args.noise if row != "aim" else "continuous"
                        key = (table, row, noise, float(epsilon), seed)
                        # Runs that finished, or were killed at their time limit, are kept unless --again.
                        status = str(records[key]["status"]) if key in records else ""
                        if (status == "ok" or status.startswith("killed")) and not args.again:
                            continue
                        if row == "aim":
                            result = _aim(args, table, epsilon, seed)
                        else:
                            result = bench.run_in_process(__file__, {"table": table, "epsilon": epsilon,
                                                                     "seed": seed, "noise": noise,
                                                                     "aim_rounds": row == "synthesize_16d"},
                                                          args.threads, timeout=3600)
                        records[key] = dict(zip(KEYS, key), **result)
                        print(json.dumps(records[key]), flush=True)
                        records = _merged(out, records, key, args.smoke)
    frame = pd.DataFrame(list(records.values()), columns=list(kept.columns) if not records else None)
    table, mean_ratio = summary(frame[(frame["row"] == "aim") | (frame["noise"] == args.noise)])
    print()
    print(table)
    if mean_ratio is not None:
        print(f"\nmean ratio synthesize / AIM over the cells where both ran: {mean_ratio:.3f}")
    schedule = schedule_summary(frame[frame["noise"] == "continuous"])
    if schedule:
        print("\nThe schedule: synthesize beside the same with AIM's 16 d notional rounds, paired by seed\n")
        print(schedule)
    print(f"CSV: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
