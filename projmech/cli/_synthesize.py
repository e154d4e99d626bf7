"""``projmech synthesize``: synthetic rows from the adaptive mechanism's release of marginal tables,
with a JSON summary of its rounds."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..data import ENGINES
from ..mechanisms.adaptive import (
    ESTIMATORS,
    JOINT_AUTO_MAX_CELLS,
    JOINT_AUTO_MAX_MEASURED,
    TREE_AUTO_MAX_CELLS,
    AdaptiveProjectionMechanism,
    AdaptiveRound,
)
from ..privacy import ESTIMATE_SIZE, NOISE_KINDS, PureDP
from ..tables import MAXIMUM_ENTROPY_MAX_CELLS
from . import _budget as budget
from ._files import staged_outputs
from ._inputs import open_files
from ._outputs import json_writer, labelled_rows
from ._workload import parse_workload

__all__ = ["PROGRESS_INTERVAL", "add_parser", "run"]

#: Seconds between two progress lines of a long ``projmech synthesize`` run (none before the first
#: interval has passed, so a run of a few seconds prints none).
PROGRESS_INTERVAL = 5.0


def _round_printer(start: float, names: Sequence[str]) -> Callable[[int, AdaptiveRound, float], None]:
    """A progress callback printing a round (its table by the attributes' ``names``) to stderr at
    most every :data:`PROGRESS_INTERVAL` s."""
    last = [start]

    def progress(number: int, latest: AdaptiveRound, spent: float) -> None:
        now = time.perf_counter()
        if now - last[0] >= PROGRESS_INTERVAL:
            last[0] = now
            table = ", ".join(names[a] for a in latest.attributes)
            print(f"round {number}: measured the table of {table} (noise sigma {latest.sigma:.3g}); "
                  f"{100 * spent:.0f}% of the rounds' budget spent, {now - start:.0f} s", file=sys.stderr, flush=True)

    return progress


def run(args: argparse.Namespace) -> int:
    """``projmech synthesize``: the adaptive mechanism's release on --workload, then synthetic rows
    drawn from its estimate, written as a labelled CSV (--out) with a JSON summary."""
    if args.neighbouring == "add-remove" and args.size is None:
        args.size = ESTIMATE_SIZE  # the row count stays private; its estimate sizes the rows
    size = budget.size(args)
    privacy = budget.privacy(args, "adaptive")
    assert not isinstance(privacy, PureDP)  # pure DP only for --mechanism laplace
    budget.check_seed(args.seed)
    if args.rows is not None and args.rows < 1:
        raise ValueError(f"--rows: must be a positive integer, got {args.rows}")
    if args.noise != "continuous" and args.seed is not None:
        raise ValueError("--seed: the counts are integers, so the noise is OpenDP's exact discrete noise, drawn from "
                         "OS entropy, which no seed reproduces; add --noise continuous for a reproducible run")
    dataset, (out, summary_path, summary_flag, _) = open_files(args)
    workload = parse_workload(args.workload, dataset.domain, implicit=True)
    # Refused before anything is counted, each error naming its flag (messages.in_flags).
    mechanism = AdaptiveProjectionMechanism(workload, privacy, neighbouring=args.neighbouring, size=size,
                                            size_share=args.size_share, noise=args.noise, estimator=args.estimator)
    synthesis = mechanism.synthesize(dataset, args.rows, rng=np.random.default_rng(args.seed),
                                     progress=_round_printer(time.perf_counter(), dataset.domain.attributes))
    summary = synthesis.run.release.summary()
    summary["synthetic"] = {"rows": int(synthesis.data.n), "rows_rmse": synthesis.rows_rmse,
                            "rows_max_error": synthesis.rows_max_error}
    with staged_outputs() as outputs:  # both complete, or neither replaced
        outputs.write("--out", out, lambda path: labelled_rows(dataset.domain, synthesis.data.records).to_csv(
            path, index=False))
        outputs.write(summary_flag, summary_path,
                      json_writer(summary))
    rounds = synthesis.run.rounds
    print(f"wrote {synthesis.data.n} synthetic rows with {synthesis.run.release.privacy} ({args.neighbouring} "
          f"neighbours) from {len(rounds)} rounds ({sum(1 for r in rounds if r.selection_rho > 0)} selected tables); "
          f"their answers to --workload within {synthesis.rows_max_error:.3g} of the released ones (RMSE "
          f"{synthesis.rows_rmse:.3g}): {out}; summary: {summary_path}")
    return 0


def add_parser(commands: Any) -> None:
    """``projmech synthesize`` and its flags, among ``projmech``'s subcommands."""
    dense = f"{MAXIMUM_ENTROPY_MAX_CELLS / 10**6:g} million"
    synth = commands.add_parser(
        "synthesize", help="synthetic rows from an adaptive select-measure-project release of marginal tables",
        description="Run the adaptive mechanism (select a table privately, measure it, project every measurement "
                    "onto the local polytope; projmech.AdaptiveProjectionMechanism) on --workload, then draw "
                    "synthetic rows from its final estimate (--estimator): a labelled CSV (--out) and a JSON "
                    "summary of the rounds, their budgets, the estimate's solvers and the rows' error (--summary).")
    synth.add_argument("--data", required=True, help="CSV or Parquet data, as for release --data")
    synth.add_argument("--domain", required=True, help="JSON domain, as for release --domain")
    synth.add_argument("--engine", choices=("auto",) + ENGINES, default="auto", help="as for release --engine")
    synth.add_argument("--workload", default="marginals:3",
                       help="marginal tables to release: marginals:WAY or marginals:LOW-HIGH (default marginals:3)")
    synth.add_argument("--epsilon", type=float, help="(epsilon, delta)-DP with --delta")
    synth.add_argument("--delta", type=float, help="privacy parameter delta, in (0, 1), with --epsilon")
    synth.add_argument("--rho", type=float, help="zCDP parameter, instead of --epsilon/--delta")
    synth.add_argument("--neighbouring", choices=["add-remove", "replace-one"], default="add-remove",
                       help="add-remove (default: the row count stays private, estimated unless --size N) or "
                            "replace-one (n public)")
    synth.add_argument("--size", default=None,
                       help=f"with add-remove: a public size N, or {ESTIMATE_SIZE!r} (the default)")
    synth.add_argument("--size-share", type=float, default=None,
                       help="with --size estimate: the share of the budget spent on the size (default 0.05)")
    synth.add_argument("--rows", type=int, default=None,
                       help="how many synthetic rows (default: the release's public size)")
    synth.add_argument("--noise", choices=NOISE_KINDS, default="auto",
                       help="auto (default) and discrete: OpenDP's exact discrete Gaussian on the counts; "
                            "continuous (reproducible with --seed)")
    synth.add_argument("--seed", type=int, default=None, help="seed, with --noise continuous")
    synth.add_argument("--estimator", choices=ESTIMATORS, default="auto",
                       help="the final estimate the answers and rows come from: regularized (one distribution "
                            "fitted to the measurements, stopped where its estimated risk is least; over the "
                            f"universe, or held by a junction tree of the measured tables beyond {dense} cells), "
                            f"joint (the maximum-entropy distribution with the certified projection's tables; up to "
                            f"{dense} cells), tables (the local projection's tables, completed one by one), auto "
                            f"(default: regularized up to {JOINT_AUTO_MAX_MEASURED:,} measured cells, over the "
                            f"universe up to {JOINT_AUTO_MAX_CELLS:,} cells, else on a junction tree of at most "
                            f"{TREE_AUTO_MAX_CELLS:,} cells; else tables)")
    synth.add_argument("--out", required=True, help="CSV of the synthetic rows, each value its label (a new file)")
    synth.add_argument("--summary", help="JSON summary path (default: --out with .json)")
    synth.add_argument("--force", action="store_true", help="overwrite existing output files (never an input)")
    synth.set_defaults(handler=run, synthetic=None, ranges=None)
