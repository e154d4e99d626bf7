"""``projmech release``: a workload's answers on a CSV or Parquet data set, privately released, with
a JSON summary (and synthetic rows drawn from the projection with ``--synthetic``)."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Mapping
from typing import Any, TextIO

import numpy as np

from ..bodies import BODIES, HULL_MAX_UNIVERSE, HULL_PREFERENCE, RELAXATIONS, NegativeCellsWarning, body_fit
from ..data import ENGINES, Domain
from ..mechanisms import (
    CountingMechanism,
    FactorizationMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    ProjectionMechanism,
)
from ..privacy import ESTIMATE_SIZE, NOISE_KINDS
from ..synthetic import check_rows_fit, synthetic_data
from ..validation import DEFAULT_MAX_ENTRIES, format_count
from ..workloads import Workload
from . import _budget as budget
from ._files import staged_outputs
from ._inputs import IN_MEMORY_BYTES, open_files
from ._outputs import json_writer, labelled_rows
from ._projection import Projection, check_body, projection_flags, solver_help
from ._workload import WORKLOAD_FORMS, parse_ranges, parse_workload

__all__ = ["MECHANISMS_BY_NAME", "RELEASE_EXAMPLES", "add_parser", "run"]

#: ``--mechanism``'s choices and the class of each.
MECHANISMS_BY_NAME: dict[str, type[CountingMechanism]] = {
    "gaussian": GaussianMechanism,
    "laplace": LaplaceMechanism,
    "projection": ProjectionMechanism,
    "factorization": FactorizationMechanism,
    "factorization+projection": FactorizationMechanism,
}


def _workload(args: argparse.Namespace, domain: Domain, mechanism_class: type[CountingMechanism],
              options: Mapping[str, Any], projection: Projection | None) -> Workload:
    """``--workload`` over ``domain``, with its explicit matrix only where the mechanism needs it;
    every refusal in the command's words."""
    ranges = parse_ranges(args.ranges)
    # Without its matrix first: cheap, and it checks the spec; a failure to build the matrix
    # below then can only be its size.
    workload = parse_workload(args.workload, domain, implicit=True, ranges=ranges)
    k, m = workload.shape
    if k > DEFAULT_MAX_ENTRIES:
        raise ValueError(f"--workload: {args.workload} has {format_count(k)} queries, more than the "
                         f"{DEFAULT_MAX_ENTRIES:,} answers the command counts and writes; use marginals:WAY, or "
                         "fewer or coarser attributes in --domain")
    if not mechanism_class.needs_matrix(**options):
        return workload
    cvxpy = projection is not None and body_fit(workload, "hull", solver=projection.solver).body.needs_matrix
    try:
        explicit: Workload | None = parse_workload(args.workload, domain, ranges=ranges)
    except ValueError:
        explicit = None
    # A Kronecker workload too large for its matrix is built implicit instead of refused.
    if explicit is not None and not (cvxpy and explicit.is_implicit):
        return explicit
    matrix = f"the explicit matrix of --workload {args.workload} ({format_count(k)} x {format_count(m)})"
    if projection is not None and cvxpy:
        relaxed = projection.body == "auto" and body_fit(workload, "relaxed").blocker is None
        raise ValueError(f"--solver {projection.solver}: a CVXPY solver projects onto the hull K_Q through {matrix}, "
                         "which is too large to build; use --solver fast or auto, which need only products with it"
                         + (f", or --body relaxed --solver {projection.solver} (the relaxation L)" if relaxed else ""))
    raise ValueError(f"--mechanism {args.mechanism}: needs {matrix}, which is too large to build; use --mechanism "
                     "gaussian, projection or factorization, which never build it")


def run(args: argparse.Namespace) -> int:
    """``projmech release``: exit status 0."""
    projection = projection_flags(args)
    size = budget.size(args)
    privacy = budget.privacy(args, args.mechanism)
    budget.check_seed(args.seed)
    if args.noise == "discrete" and args.seed is not None:
        raise ValueError("--seed: --noise discrete is drawn by OpenDP from OS entropy, which no seed reproduces")
    if args.metric is not None and args.mechanism != "factorization+projection":
        raise ValueError(f"--metric: applies only to --mechanism factorization+projection, not {args.mechanism}")
    if args.synthetic is not None and args.metric == "precision":
        raise ValueError("--synthetic: rows are drawn from projected tables or answers; --metric precision projects "
                         "the strategy's measurements in their noise metric (use --metric tables or answers, or "
                         "'projmech synthesize')")
    if args.objective is not None and not args.mechanism.startswith("factorization"):
        raise ValueError(f"--objective: only --mechanism factorization or factorization+projection optimizes a "
                         f"strategy; --mechanism {args.mechanism} has none")
    if args.intervals is not None:
        budget.fraction("--intervals", args.intervals)
    if args.synthetic_rows is not None and args.synthetic is None:
        raise ValueError("--synthetic-rows: applies only with --synthetic FILE")
    if args.synthetic is not None and projection is None:
        raise ValueError(f"--synthetic: rows are drawn from a projection; --mechanism {args.mechanism} does not "
                         "project (use --mechanism projection or factorization+projection)")
    if args.synthetic_rows is not None and args.synthetic_rows < 1:
        raise ValueError(f"--synthetic-rows: must be a positive integer, got {args.synthetic_rows}")
    dataset, (out, summary_path, summary_flag, synthetic_path) = open_files(args)
    if dataset.n == 0 and args.neighbouring == "replace-one":
        raise ValueError(f"--data: {args.data} has no rows; under replace-one neighbours n is public and must be "
                         "at least 1 (--neighbouring add-remove with --size releases an empty data set)")
    # The rows to draw, before the release spends anything: those asked for, or the declared size.
    if synthetic_path is not None and args.synthetic_rows is not None:
        check_rows_fit(args.synthetic_rows, dataset.domain, "synthetic_rows")
    elif synthetic_path is not None and isinstance(size, int):
        check_rows_fit(size, dataset.domain, "size")
    # "discrete" is asked of the mechanism as "auto" (discrete exactly on integer counts) and
    # checked below: whether a factorization's strategy is integral is known only once it is built.
    options: dict[str, Any] = {"neighbouring": args.neighbouring, "size": size, "size_share": args.size_share,
                               "noise": "auto" if args.noise == "discrete" else args.noise}
    if projection is not None:
        options.update(body=projection.body, solver=projection.solver, relaxation=projection.relaxation)
    if args.mechanism.startswith("factorization"):
        options.update(project=projection is not None, objective=args.objective)
    if args.metric is not None:
        options.update(metric=args.metric)
    mechanism_class = MECHANISMS_BY_NAME[args.mechanism]
    workload = _workload(args, dataset.domain, mechanism_class, options, projection)
    if projection is not None:
        check_body(workload, args.workload, projection)
    mechanism = mechanism_class(workload, privacy, **options)
    if args.noise == "discrete" and not mechanism.noise.discrete:
        raise ValueError(f"--noise: discrete noise needs integer counts, and the {args.mechanism} mechanism measures "
                         "an optimized strategy's counts, which are not; use --noise auto or continuous")
    if mechanism.noise.discrete and args.seed is not None:
        raise ValueError(
            "--seed: the counts are integers, so the noise is OpenDP's exact discrete noise (--noise "
            f"{args.noise}), drawn from OS entropy, which no seed reproduces; add --noise continuous for a "
            "reproducible release"
        )
    negative_cells: list[Warning | str] = []
    shown = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        # Other warnings (a budget too small for the data, before anything is spent) are shown as
        # they come; the negative cells are said below, in the command's words.
        if issubclass(category, NegativeCellsWarning):
            negative_cells.append(message)
        else:
            shown(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.simplefilter("always", NegativeCellsWarning)
        warnings.showwarning = show
        released = mechanism.release(dataset, rng=np.random.default_rng(args.seed))
    if negative_cells:
        negative = released.answers[released.answers < 0]
        print(f"projmech release: warning: {negative.size} of {len(released.answers)} released cells are "
              f"negative (minimum {negative.min(initial=0.0):.3g}): --relaxation sdp lacks the local "
              "constraints; --relaxation sdp+local (the default) keeps every cell nonnegative", file=sys.stderr)
    table = released.to_frame()[["query", "answer"]]
    intervals = ""
    if args.intervals is not None:
        bounds = released.confidence_intervals(args.intervals)
        table["lower"], table["upper"] = bounds.lower, bounds.upper
        intervals = f"; {args.intervals:g} intervals ({bounds.method}), mean width {bounds.mean_width:.3g}"
    summary = released.summary()
    rows_note = ""
    if synthetic_path is not None:
        rows = _synthetic_rows(args, dataset.domain, released)
        summary["synthetic"] = {"rows": int(rows.data.n), "method": rows.method,
                                "marginal_rmse": rows.marginal_rmse, "marginal_max_error": rows.marginal_max_error}
        rows_note = (f"; {rows.data.n} synthetic rows ({rows.method}, their answers within "
                     f"{rows.marginal_max_error:.3g} of the released ones, RMSE {rows.marginal_rmse:.3g}): "
                     f"{synthetic_path}")
    with staged_outputs() as outputs:  # all complete, or none replaced
        outputs.write("--out", out, lambda path: table.to_csv(path, index=False))
        outputs.write(summary_flag, summary_path,
                      json_writer(summary))
        if synthetic_path is not None:
            outputs.write("--synthetic", synthetic_path,
                          lambda path: labelled_rows(dataset.domain, rows.data.records).to_csv(path, index=False))
    projected = f", projected onto {summary['body']}" if released.projection is not None else ""
    scale = f"answers: counts / {released.size_source} size {released.size:g}"
    if isinstance(mechanism, FactorizationMechanism):
        # The answers' noise R Z is the strategy's noise mixed by R: its root mean square per
        # answer, in counts, then on the answers (the release's own figure: error_bound refuses a
        # projection in the measurements' metric, which it does not bound).
        assert released.answer_sigma_rms is not None, "a factorization release carries its answers' noise"
        rms = released.answer_sigma_rms * released.size
        noise = (f"the strategy's {released.noise.name} noise of std sigma = {released.noise.std:.3g} on each of "
                 f"its {mechanism.factorization.strategy.num_queries} measured counts, the answers' RMS noise"
                 f"{' before projection' if projected else ''} sigma ||R||_F / sqrt(k) = {rms:.3g} per count, "
                 f"{rms / released.size:.3g} on the answers ({scale})")
    else:
        noise = f"{released.noise.name} noise of std {released.noise.std:.3g} on each measured count ({scale})"
    # Only an engine the user named is printed: auto's choice follows the files' size, which
    # depends on the private row count.
    counted = f", counted in {args.engine}" if args.engine != "auto" else ""
    count = len(released.answers)
    print(f"released {count} answer{'s' if count != 1 else ''} with {released.privacy} ({released.neighbouring.value} "
          f"neighbours), {noise}{projected}{counted}{intervals}: {out}; summary: {summary_path}{rows_note}")
    return 0


def _synthetic_rows(args: argparse.Namespace, domain: Domain, released: Any) -> Any:
    """``--synthetic``: rows drawn from the release's projection (post-processing), as many as
    ``--synthetic-rows`` or the release's public size (never the private row count)."""
    count = args.synthetic_rows if args.synthetic_rows is not None else max(1, round(released.size))
    generator = np.random.default_rng(None if args.seed is None else [args.seed, 1])
    return synthetic_data(domain, released, count, generator)  # the release knows its projection and workload


#: ``projmech release --help``'s worked examples: what each does, and its flags besides the files
#: (one per workload form and per mechanism; the tests run every one).
RELEASE_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("2-way marginals, projection mechanism, (epsilon, delta)-DP",
     "--workload marginals:2 --mechanism projection --epsilon 1 --delta 1e-6"),
    ("the total and every 1- and 2-way marginal, Gaussian mechanism, zCDP",
     "--workload marginals:0-2 --mechanism gaussian --rho 0.5"),
    ("every cell of the universe, Laplace mechanism (pure epsilon-DP: no --delta)",
     "--workload identity --mechanism laplace --epsilon 1"),
    ("the CDF of an ordinal attribute, optimal factorization",
     "--workload prefix:age --mechanism factorization --rho 0.5"),
    ("the CDF with the worst query's error minimized, and each answer's 95% confidence interval",
     "--workload prefix:age --mechanism factorization --objective max --rho 0.5 --intervals 0.95"),
    ("every range of an ordinal attribute, factorization then projection (onto K_Q, which --body auto picks here)",
     "--workload all_range:age --mechanism factorization+projection --epsilon 1 --delta 1e-6"),
    ("2-way tables with range queries on the ordinal attributes",
     "--workload range-marginals:2 --ranges age=prefix,hours=all_range --mechanism factorization --rho 0.5"),
    ("2-way marginals projected onto the relaxation L (for many attributes)",
     "--workload marginals:2 --mechanism projection --body relaxed --rho 0.5"),
    ("add/remove neighbours (the row count stays private): answers divided by a published total",
     "--neighbouring add-remove --size 1000 --mechanism gaussian --rho 0.5"),
    ("... or by a private estimate of the row count (5% of the budget unless --size-share)",
     "--neighbouring add-remove --size estimate --mechanism projection --epsilon 1 --delta 1e-6"),
    ("a reproducible release: continuous noise with a seed",
     "--mechanism gaussian --rho 0.5 --noise continuous --seed 7"),
)

#: The input and output files of every example.
EXAMPLE_FILES = "--data rows.csv --domain domain.json --out answers.csv"


def _release_epilog() -> str:
    examples = "\n\n".join(f"  # {what}\n  projmech release {EXAMPLE_FILES} \\\n      {flags}"
                            for what, flags in RELEASE_EXAMPLES)
    return ("examples: rows.csv has a header row and one row per person; domain.json declares its columns,\n"
            'e.g. {"age": {"bins": [18, 30, 45, 65, 100]}, "hours": {"bins": [0, 20, 40, 60, 100]}, "sex": ["F", "M"]}'
            f"\n\n{examples}\n\n"
            "Every error names the flag (and the file) at fault; an existing output is overwritten only with --force.")


def add_parser(commands: Any) -> None:
    """``projmech release`` and its flags, among ``projmech``'s subcommands."""
    release = commands.add_parser("release", help="privately release a workload's answers on a CSV or Parquet data set",
                                  description="Privately release a workload's answers on a CSV or Parquet data set: "
                                              "a CSV of query labels and answers (--out) and a JSON summary of the "
                                              "guarantee, the noise and the solver (--summary).",
                                  epilog=_release_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    release.add_argument("--data", required=True,
                         help="CSV file with a header row naming the attributes, or Parquet file; a glob "
                              "('part-*.parquet') or a folder of Parquet files; one row per person, each "
                              "attribute's column holding what --domain declares (extra columns are ignored)")
    release.add_argument("--domain", required=True,
                         help='JSON file of the attributes in order, each a size (integer codes 0..size-1), a list '
                              'of category labels, or {"bins": [edges]}: '
                              '{"vote": ["Clinton", "Dole"], "age": {"bins": [18, 25, 35, 50, 65, 100]}, "x": 3}')
    release.add_argument("--engine", choices=("auto",) + ENGINES, default="auto",
                         help="what reads and counts --data: pandas (in memory), polars or duckdb (out of core, "
                              "streaming), spark (the active or a local session) or dask (the active client or "
                              f"local threads); auto: pandas up to {IN_MEMORY_BYTES // 2**20} MiB of files, else "
                              "polars or duckdb")
    release.add_argument("--workload", default="marginals:2", help=WORKLOAD_FORMS)
    release.add_argument("--ranges", help="for range-marginals:WAY: ATTR=prefix|all_range[,...], the ordinal "
                                          "attributes and their range queries (identity on the others)")
    release.add_argument("--mechanism", default="projection", choices=list(MECHANISMS_BY_NAME),
                         help="gaussian; laplace (pure epsilon-DP); projection (default: Gaussian noise, then the "
                              "nearest consistent answers, on the body --body names); factorization (the matrix "
                              "mechanism with an optimized strategy: less noise on correlated queries such as "
                              "ranges); factorization+projection (then projected as by projection, onto the body "
                              "--body names)")
    release.add_argument("--objective", choices=("mean", "max"), default=None,
                         help="--mechanism factorization[+projection]: the strategy minimizes the root-mean-square "
                              "error over the queries (mean, the default) or the worst query's error (max)")
    release.add_argument("--metric", choices=("answers", "tables", "precision"), default=None,
                         help="--mechanism factorization+projection: what the projection measures distance in: "
                              "answers (default: the answers onto --body, never farther from the true answers), "
                              "tables or precision (the strategy's measurements of a marginal workload's tables onto "
                              "the local polytope, in the tables' norm or weighed by their noise; --body local or "
                              "auto)")
    release.add_argument("--intervals", type=float, default=None, metavar="LEVEL",
                         help="add columns lower and upper to --out: per-query confidence intervals for the true "
                              "answers at LEVEL (e.g. 0.95), exact for unprojected Gaussian, Laplace and "
                              "factorization answers, valid bounds after projection (the summary names the method)")
    release.add_argument("--epsilon", type=float,
                         help="privacy parameter epsilon: (epsilon, delta)-DP with --delta, pure epsilon-DP for "
                              "--mechanism laplace")
    release.add_argument("--delta", type=float, help="privacy parameter delta, in (0, 1), with --epsilon")
    release.add_argument("--rho", type=float, help="zCDP parameter, instead of --epsilon/--delta")
    release.add_argument("--neighbouring", choices=["replace-one", "add-remove"], default="replace-one",
                         help="replace-one (n public; default) or add-remove (n private: needs --size)")
    release.add_argument("--size", default=None,
                         help="with --neighbouring add-remove: a public size N the counts are divided by "
                              f"(e.g. a published total), or {ESTIMATE_SIZE!r} to estimate it privately")
    release.add_argument("--size-share", type=float, default=None,
                         help="with --size estimate: the share of the budget spent on the size (default 0.05)")
    release.add_argument("--noise", choices=NOISE_KINDS, default="auto",
                         help="auto (default): exact discrete noise from OpenDP on integer counts, numpy's "
                              "continuous noise otherwise; discrete; continuous (reproducible with --seed)")
    release.add_argument("--solver", default=None, help=solver_help())
    release.add_argument("--body", choices=BODIES, default=None,
                         help="--mechanism projection or factorization+projection projects onto: hull (K_Q, the "
                              "convex hull of every data set's answers), relaxed (the relaxation L, which contains "
                              "K_Q: --workload marginals:2 only), tables (K_Q of disjoint tables: marginals:1, "
                              "prefix:ATTR), local (the local polytope of marginal tables of any order: consistent, "
                              "non-negative tables; K_Q where they are acyclic), or auto (default: the hull up to "
                              f"{HULL_MAX_UNIVERSE:,} universe elements, and within this machine's memory, unless its "
                              f"estimated time is over {HULL_PREFERENCE:g}x L's, L for marginals:2 beyond, then "
                              "tables, then local; other workloads beyond are refused); --relaxation alone means "
                              "relaxed")
    release.add_argument("--relaxation", choices=RELAXATIONS, default=None,
                         help="the constraints of the relaxation L (implies --body relaxed unless --body auto): "
                              "sdp+local (default), sdp (positive semidefinite moments only: it can release "
                              "negative cells, and warns when it does), local (every 2-way table nonnegative, "
                              "summing to 1; solved by a CVXPY solver, not admm); sdp+local and local keep every "
                              "cell nonnegative")
    release.add_argument("--seed", type=int, default=None,
                         help="seed of continuous noise (--noise continuous; default: fresh OS entropy)")
    release.add_argument("--out", required=True, help="CSV of query labels and released answers (a new file)")
    release.add_argument("--summary", help="JSON summary path (default: --out with .json)")
    release.add_argument("--synthetic", default=None,
                         help="with a projecting --mechanism: also write synthetic rows drawn from the projection "
                              "(post-processing, no extra budget) to this CSV, one column per attribute, each value "
                              "its label; the rows' error against the released answers goes to the summary. When "
                              "rows are what you want, use 'projmech synthesize': it measures the tables that "
                              "matter instead of all at once, and at small budgets its rows come closer to the "
                              "truth (benchmarks/README.md compares the two)")
    release.add_argument("--synthetic-rows", type=int, default=None,
                         help="how many synthetic rows (default: the release's public size)")
    release.add_argument("--force", action="store_true", help="overwrite existing output files (never an input)")
    release.set_defaults(handler=run)
