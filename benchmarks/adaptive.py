"""The adaptive mechanism beside AIM and beside projmech's non-adaptive best, on AIM's benchmark.

AIM's benchmark: the embedded Adult data (14 attributes, 48,842 rows), the workload of all 3-way
marginals (364 tables), ``(epsilon, 1e-9)``-DP, the error of a release the mean over the
workload's tables of ``0.5 ||mu_hat - mu||_1`` (each table normalized to sum 1). Rows:

* ``adaptive``: :class:`projmech.AdaptiveProjectionMechanism` under add/remove neighbours (AIM's
  relation) with the size estimated privately (``size="estimate"``), its other defaults, and
  continuous noise so that a seed fixes a run; the released tables (with its default estimator:
  the regularized joint distribution where the universe fits, 7 attributes, else the tables);
* ``adaptive_joint``: the same with ``estimator="joint"`` (the maximum-entropy distribution with
  the certified projection's tables): what the regularization changes;
* ``adaptive_tables``: the same with ``estimator="tables"`` (the local projection's tables, an
  unmeasured one fitted to its measured parts): what a joint changes;
* ``residual``: projmech's non-adaptive best that runs at this size,
  :class:`projmech.FactorizationMechanism` (the optimal residual strategy for all 3-way tables,
  add/remove, size estimated),
  its answers unprojected (the local polytope of 364 tables does not certify in minutes yet:
  ``benchmarks/marginal_tables.py``), and each table clipped at 0 and renormalized
  (``error_clipped``);
* ``residual_local``: the same answers projected onto the local polytope of the tables
  (``project=True, body="local"``), where it certifies (7 attributes);
* ``aim``: AIM's reference implementation (Private-PGM's ``mechanisms/aim.py`` on mbi 2.0.0),
  run by ``benchmarks/_aim_runner.py`` in its own process with the interpreter ``--aim-python``
  and the checkout ``--aim-path`` (never copied here; how to get it, a public repository at a
  fixed commit, is in the runner's docstring), at ``--max-model-size`` MB, on the data
  ``--data``/``--domain`` (default: the Adult files embedded in the package, ``projmech/datasets``).

Each run is its own process (time and peak memory its own), one per (row, epsilon, seed).

Usage::

    .venv/bin/python benchmarks/adaptive.py --epsilons 0.1,1,10 --seeds 5 \\
        --aim-path private-pgm-src   # Private-PGM's checkout: see _aim_runner.py
    .venv/bin/python benchmarks/adaptive.py --smoke   # does it run (seconds; AIM only with --aim-path)

Writes ``results/adaptive.csv`` and prints each row's mean error, time and peak memory; for the
adaptive rows also the mean and largest wall time of a selecting round (``round_seconds`` in the
CSV lists them) and the final estimate's time after the rounds.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

import _common as bench
import numpy as np
import pandas as pd

ROWS = ("adaptive", "adaptive_joint", "adaptive_tables", "residual", "residual_local", "aim")
#: What a smoke run measures: one row of each kind of job, on a few small attributes.
SMOKE_ROWS = ("adaptive_tables", "residual_local", "aim")
SMOKE_ATTRIBUTES = ("workclass", "race", "sex", "income>50K")


def embedded_adult() -> tuple[Path, Path]:
    """The package's own Adult files: the records (integer codes, gzipped CSV) and the domain."""
    from importlib import resources

    folder = resources.files("projmech.datasets")
    return Path(str(folder.joinpath("adult.csv.gz"))), Path(str(folder.joinpath("adult-domain.json")))


def _job(kind: str, epsilon: float, seed: int, attributes: list[str] | None) -> dict[str, Any]:
    import projmech as pm

    data = pm.datasets.adult(attributes=attributes) if attributes else pm.datasets.adult()
    sizes = data.domain.sizes
    triples = list(itertools.combinations(range(len(sizes)), 3))
    truth = {t: np.asarray(data.table(list(t)), dtype=float) / len(data) for t in triples}
    workload = pm.marginals(data.domain, 3, implicit=True)
    privacy = pm.ApproxDP(epsilon, 1e-9)
    start = time.perf_counter()
    if kind in ("adaptive", "adaptive_joint", "adaptive_tables"):
        # AIM's guarantee is for add/remove neighbours (a table's sensitivity 1) and releases no
        # size: the same relation here, the size estimated from the budget's default share.
        estimator = {"adaptive_tables": {"estimator": "tables"}, "adaptive_joint": {"estimator": "joint"}}.get(kind, {})
        # The wall time of every round, from the progress callback (called as each round ends).
        ends: list[float] = []
        run = pm.AdaptiveProjectionMechanism(workload, privacy, neighbouring="add-remove", size="estimate",
                                             noise="continuous", **estimator).run(
            data, rng=seed, progress=lambda number, latest, spent: ends.append(time.perf_counter()))
        seconds = time.perf_counter() - start
        tables = {t: run.table(t) for t in triples}
        extra = {"rounds": len(run.rounds), "rho_spent": run.privacy_spent.rho,
                 **_round_times(run, start, ends, seconds)}
        extra["estimator"] = run.release.summary()["estimate"]["estimator"]
        if run.joint is not None:
            extra.update(fit_status=str(run.joint.fit.stats.status), fit_iterations=run.joint.fit.stats.iterations)
            if run.joint.projection is not None:
                extra["projection_status"] = str(run.joint.projection.stats.status)
    else:
        # "residual_local": the same answers projected onto the local polytope of the tables
        # (exact and consistent; it certifies in seconds on 7 attributes, not on 14).
        projected = {"project": True, "body": "local"} if kind == "residual_local" else {}
        release = pm.FactorizationMechanism(workload, privacy, neighbouring="add-remove", size="estimate",
                                            noise="continuous", **projected).release(data, rng=seed)
        seconds = time.perf_counter() - start
        answers, tables, row = release.answers, {}, 0
        for t in triples:  # marginals(domain, 3) lays the tables out in this order
            cells = int(np.prod([sizes[a] for a in t]))
            tables[t] = answers[row:row + cells].reshape([sizes[a] for a in t])
            row += cells
        # Each table's negative cells clipped and the rest renormalized (cheap post-processing,
        # inconsistent across tables): in AIM's L1 metric the residual noise on the ~10^6 cells
        # of the largest tables, most of them empty, dominates the unprojected error.
        clipped = {t: np.maximum(table, 0.0) / max(float(np.maximum(table, 0.0).sum()), 1e-300)
                   for t, table in tables.items()}
        extra = {"min_cell": float(answers.min()), "error_clipped": bench.aim_error(clipped, truth)}
        if kind == "residual_local":
            extra["projection_status"] = str(release.projection.stats.status)
    return {"error": bench.aim_error(tables, truth), "seconds": seconds, "peak_mb": bench.peak_memory_mb(), **extra}


def _round_times(run: Any, start: float, ends: list[float], seconds: float) -> dict[str, Any]:
    """The selecting rounds' wall times (each from the end of the round before: its scores, its
    measurement and its estimate from every measurement so far; the first also estimates from
    the one-way tables), their mean and largest, and the final estimate's time after the rounds."""
    times = np.diff([start, *ends])
    selecting = [float(t) for t, r in zip(times, run.rounds) if r.selection_rho > 0]
    return {"round_seconds_mean": float(np.mean(selecting)) if selecting else float("nan"),
            "round_seconds_max": max(selecting, default=float("nan")),
            "final_seconds": seconds - (ends[-1] - start),
            "round_seconds": json.dumps([round(t, 4) for t in selecting])}


def _aim(args: Any, epsilon: float, seed: int) -> dict[str, Any]:
    if args.aim_path is None:
        print("AIM: skipped: no --aim-path (Private-PGM's checkout; see _aim_runner.py)", flush=True)
        return {"status": "skipped: no --aim-path"}
    data, domain = embedded_adult()
    return bench.run_aim(args.aim_python, args.aim_path, args.data or data, args.domain or domain, epsilon, seed,
                         args.max_model_size, args.aim_timeout, args.attributes)


def main() -> int:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--epsilons", type=bench.float_list, default=[0.1, 1.0, 10.0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0 .. seeds-1, unless --seed-list")
    parser.add_argument("--seed-list", type=bench.int_list, default=None, help="these seeds instead (to add runs)")
    parser.add_argument("--out", default="adaptive.csv", help="the CSV's name in results/")
    parser.add_argument("--rows", type=bench.name_list, default=list(ROWS))
    parser.add_argument("--attributes", type=bench.name_list, default=None, help="Adult's attributes (default all 14)")
    parser.add_argument("--aim-path", default=None, help="the Private-PGM checkout (see _aim_runner.py)")
    parser.add_argument("--data", type=Path, default=None,
                        help="AIM's records: CSV of integer codes (default: the package's embedded Adult)")
    parser.add_argument("--domain", type=Path, default=None,
                        help="AIM's domain: JSON attribute -> number of values (default: the package's Adult)")
    parser.add_argument("--aim-python", default=sys.executable, help="an interpreter with mbi 2.0 and jax")
    parser.add_argument("--max-model-size", type=float, default=80.0)
    parser.add_argument("--aim-timeout", type=float, default=3600.0)
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads of the projmech rows")
    parser.add_argument("--worker", help="(internal) run one job")
    bench.add_smoke_option(parser, f"rows {', '.join(SMOKE_ROWS)}; attributes {', '.join(SMOKE_ATTRIBUTES)}; "
                                   "epsilon 1, seed 0")
    args = parser.parse_args()
    if args.worker:
        job = json.loads(args.worker)
        print(json.dumps(_job(job["kind"], job["epsilon"], job["seed"], job["attributes"])))
        return 0
    refused = bench.unknown_names("--rows", args.rows, ROWS)
    if refused is not None:
        return refused
    out = bench.RESULTS / args.out
    if args.smoke:
        args.epsilons, args.seeds, args.seed_list, args.rows = [1.0], 1, None, list(SMOKE_ROWS)
        args.attributes, out = list(SMOKE_ATTRIBUTES), bench.smoke_path(args.out)
    records = []
    for epsilon in args.epsilons:
        for seed in (args.seed_list if args.seed_list is not None else range(args.seeds)):
            for row in args.rows:
                if row == "aim":
                    result = _aim(args, epsilon, seed)
                else:
                    result = bench.run_in_process(__file__, {"kind": row, "epsilon": epsilon, "seed": seed,
                                                             "attributes": args.attributes}, args.threads, timeout=3600)
                records.append({"row": row, "epsilon": epsilon, "seed": seed, **result})
                print(json.dumps(records[-1]), flush=True)
    frame = pd.DataFrame(records)
    path = bench.write_csv(frame, out)
    ok = frame[frame["status"] == "ok"]
    print(f"\n{'row':<16} {'epsilon':>7} {'runs':>4} {'error':>16} {'clipped':>8} {'seconds':>9} {'peak MB':>8} "
          f"{'s/round':>8} {'max':>7} {'final s':>8}")
    for (row, epsilon), group in ok.groupby(["row", "epsilon"], sort=False):
        clipped = group["error_clipped"].mean() if "error_clipped" in group else float("nan")
        per_round = [group[c].mean() if c in group else float("nan")
                     for c in ("round_seconds_mean", "round_seconds_max", "final_seconds")]
        print(f"{row:<16} {epsilon:>7g} {len(group):>4} {group['error'].mean():>8.4f} ± {group['error'].std():<6.4f}"
              f"{clipped:>8.4f} {group['seconds'].mean():>9.1f} {group['peak_mb'].max():>8.0f} "
              f"{per_round[0]:>8.3f} {per_round[1]:>7.3f} {per_round[2]:>8.2f}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
