"""``projmech demo``: the Gaussian and projection mechanisms' error against the data's size on the
embedded binarized Adult data, as a CSV and a figure."""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

import numpy as np

from .. import datasets, workloads
from ..analysis import error_vs_n, format_table, plot_error_vs_n, pyplot
from ..mechanisms import BudgetWarning, GaussianMechanism, ProjectionMechanism
from ..privacy import ApproxDP
from . import _budget as budget
from ._files import staged_outputs
from ._outputs import check_new_file, check_output_folder, output_path, refuse_overlaps

__all__ = ["DEMO_OUTPUTS", "add_parser", "run"]

#: What ``projmech demo`` writes into ``--out-dir``.
DEMO_OUTPUTS = ("error_vs_n.csv", "error_vs_n.png")


def run(args: argparse.Namespace) -> int:
    """``projmech demo``: exit status 0."""
    if args.trials < 2:
        raise ValueError(f"--trials: must be at least 2 (for a confidence interval), got {args.trials}")
    privacy = ApproxDP(budget.positive("--epsilon", args.epsilon), budget.fraction("--delta", args.delta))
    budget.check_seed(args.seed)
    try:  # the figure is one of the outputs: refuse before the minute of work, not after it
        pyplot()
    except ModuleNotFoundError as error:
        raise ValueError(f"demo: {error}") from None
    out_dir = output_path("--out-dir", args.out_dir, "a folder")
    check_output_folder("--out-dir", out_dir)
    outputs = [("--out-dir", out_dir / name) for name in DEMO_OUTPUTS]
    refuse_overlaps(outputs, [])  # the demo reads no file of the user's; its two outputs are two files
    if out_dir.is_dir():  # a folder still to be created holds no earlier results
        for flag, path in outputs:  # checked before the minute of work, like every output
            check_new_file(flag, path, args.force)
    start = time.perf_counter()
    data = datasets.adult(binary=True, attributes=datasets.ADULT_DEMO_ATTRIBUTES)
    workload = workloads.marginals(data.domain, 2)
    gaussian = GaussianMechanism(workload, privacy)
    projection = ProjectionMechanism(workload, privacy)
    mechanisms = {"gaussian": gaussian, "projection": projection}
    sizes = [s for s in (100, 300, 1000, 3000, 10000, data.n) if s <= data.n]
    print(f"projmech demo: Adult, {len(data.domain)} binary attributes, {workload.num_queries} two-way "
          f"marginal cells, {privacy}, replace-one neighbours, {args.trials} trials per n; projection onto "
          f"{'the relaxation L' if projection.body.name == 'relaxed' else 'K_Q'} (body 'auto')")
    with warnings.catch_warnings():  # the figure shows the error at every size, the swamped ones included
        warnings.simplefilter("ignore", BudgetWarning)
        results = error_vs_n(data, mechanisms, sizes, args.trials, np.random.default_rng(args.seed))
    print(format_table(results))
    # The measured figure is the mean over trials of each release's RMSE: the "mean" measure.
    expected = [gaussian.expected_error(n, measure="mean") for n in sizes]
    bounds = {"Gaussian E[RMSE] (closed form)": (sizes, expected)}
    with staged_outputs() as staged:  # the folder is created here, and removed again if a write fails
        staged.write("--out-dir", out_dir / DEMO_OUTPUTS[0], lambda path: results.to_csv(path, index=False))
        staged.write("--out-dir", out_dir / DEMO_OUTPUTS[1],
                     lambda path: plot_error_vs_n(results, str(path), f"Adult 2-way marginals, {privacy}",
                                                  bounds=bounds))
    print(f"wrote {out_dir / DEMO_OUTPUTS[0]} and {out_dir / DEMO_OUTPUTS[1]} "
          f"in {time.perf_counter() - start:.1f} s")
    return 0


def add_parser(commands: Any) -> None:
    """``projmech demo`` and its flags, among ``projmech``'s subcommands."""
    demo = commands.add_parser("demo", help="Gaussian vs projection on the embedded binarized Adult data")
    demo.add_argument("--trials", type=int, default=20)
    demo.add_argument("--epsilon", type=float, default=1.0)
    demo.add_argument("--delta", type=float, default=1e-6)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--out-dir", default="demo_output",
                      help=f"folder of the results ({' and '.join(DEMO_OUTPUTS)}; default demo_output)")
    demo.add_argument("--force", action="store_true", help="overwrite the results of an earlier run")
    demo.set_defaults(handler=run)
