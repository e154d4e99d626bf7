"""Command line: ``projmech release`` on a CSV file, ``projmech demo`` on the embedded Adult data.

Every error reaches the user as one line on stderr, naming the flag (and the file) at fault, and a
non-zero exit status; ``PROJMECH_TRACEBACK=1`` shows the traceback of an unexpected one. No output
ever overwrites an input, and an existing file is overwritten only with ``--force``.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import datasets, workloads
from .data import Dataset
from .domain import Domain
from .frames import ENGINES, is_parquet, read_frame
from .experiments import error_vs_n, format_table, plot_error_vs_n
from .bodies.body import BODIES, HULL_MAX_UNIVERSE, Hull, Relaxation
from .bodies.cost import HULL_PREFERENCE
from .bodies.relaxation import RELAXATIONS
from .mechanisms import (
    FactorizationMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    ProjectionMechanism,
    _CountingMechanism,
)
from .audit import format_audit_table
from .noise import NOISE_KINDS
from .privacy import ESTIMATE_SIZE, ApproxDP, PureDP, ZCDP
from .self_audit import MECHANISMS, audit_cases, run_audits
from .workloads import Workload

__all__ = ["main", "parse_workload", "parse_ranges", "WORKLOAD_FORMS"]


#: ``--mechanism``'s choices and the class of each.
MECHANISMS_BY_NAME: dict[str, type[_CountingMechanism]] = {
    "gaussian": GaussianMechanism,
    "laplace": LaplaceMechanism,
    "projection": ProjectionMechanism,
    "factorization": FactorizationMechanism,
    "factorization+projection": FactorizationMechanism,
}


#: The forms ``--workload`` accepts.
WORKLOAD_FORMS = ("marginals:WAY, marginals:LOW-HIGH (every table of LOW to HIGH attributes), range-marginals:WAY "
                  "(with --ranges), identity, prefix:ATTR, all_range:ATTR")


def parse_workload(spec: str, domain: Domain, implicit: bool = False, *,
                   ranges: Mapping[str, str] | None = None) -> Workload:
    """The workload ``--workload`` names over ``domain``: ``marginals:WAY``, ``marginals:LOW-HIGH``,
    ``range-marginals:WAY`` (with ``ranges``, ``--ranges``' mapping of attribute to block),
    ``identity`` (every cell), ``prefix:ATTR`` or ``all_range:ATTR`` (on one attribute, the
    others summed out; ``ATTR`` may be left out over a single attribute). Labels name the
    attributes. ``implicit``: never build the explicit matrix."""
    name, _, argument = spec.partition(":")
    if ranges and name != "range-marginals":
        raise ValueError(f"--ranges: applies only to --workload range-marginals:WAY, not {spec!r}")
    structure = True if implicit else None
    if name == "marginals":
        low, _, high = argument.partition("-")
        try:
            ways = tuple(range(int(low), int(high) + 1)) if high else (int(low),)
        except ValueError:
            raise ValueError(f"--workload: expected marginals:WAY or marginals:LOW-HIGH with integers, got {spec!r}") \
                from None
        if len(ways) == 1 and ways[0] >= 1:
            return workloads.marginals(domain, ways[0], implicit=implicit)
        if not ways:
            raise ValueError(f"--workload: marginals:LOW-HIGH needs LOW <= HIGH, got {spec!r}")
        return workloads.marginals(domain, ways=ways, implicit=implicit)
    if name == "range-marginals":
        try:
            way = int(argument)
        except ValueError:
            raise ValueError(f"--workload: expected range-marginals:WAY with an integer WAY, got {spec!r}") from None
        if not ranges:
            raise ValueError("--ranges: range-marginals:WAY needs --ranges ATTR=prefix|all_range[,...]")
        return workloads.range_marginals(domain, way, ranges, implicit=bool(implicit))
    if name in ("prefix", "all_range"):
        if not argument and len(domain) > 1:
            raise ValueError(f"--workload: {name} over {len(domain)} attributes needs one: {name}:ATTR, ATTR one of "
                             f"{', '.join(domain.attributes)}")
        attribute = argument or domain.attributes[0]
        if attribute not in domain:
            raise ValueError(f"--workload: {spec!r} names no attribute of the domain ({', '.join(domain.attributes)})")
        builder = workloads.prefix if name == "prefix" else workloads.all_range
        blocks = [builder(size) if attribute == other else workloads.total(size)
                  for other, size in zip(domain.attributes, domain.sizes)]
        return workloads.kron(blocks, domain=domain, name=f"{name}:{attribute}", implicit=structure)
    if name == "identity":
        if argument:
            raise ValueError(f"--workload: 'identity' takes no argument, got {spec!r}")
        return workloads.kron([workloads.identity(size) for size in domain.sizes], domain=domain, name="identity",
                              implicit=structure)
    raise ValueError(f"--workload: expected {WORKLOAD_FORMS}; got {spec!r}")


def parse_ranges(text: str | None) -> dict[str, str] | None:
    """``--ranges age=prefix,hours=all_range`` as a mapping of attribute to block name."""
    if text is None:
        return None
    ranges: dict[str, str] = {}
    for item in text.split(","):
        attribute, sign, block = item.partition("=")
        if not sign or not attribute or not block:
            raise ValueError(f"--ranges: expected ATTR=BLOCK[,ATTR=BLOCK...], got {text!r}")
        if attribute in ranges:
            raise ValueError(f"--ranges: {attribute!r} is given twice")
        ranges[attribute.strip()] = block.strip()
    return ranges


def _privacy(args: argparse.Namespace, mechanism: str) -> ZCDP | ApproxDP | PureDP:
    if args.rho is not None:
        if args.epsilon is not None or args.delta is not None:
            raise ValueError("--rho: give either --rho or --epsilon/--delta, not both")
        return ZCDP(args.rho)
    if args.epsilon is None:
        raise ValueError("--epsilon: required (or --rho for zCDP)")
    if mechanism == "laplace":
        if args.delta is not None:
            raise ValueError("--delta: the Laplace mechanism is pure epsilon-DP; omit --delta")
        return PureDP(args.epsilon)
    if args.delta is None:
        raise ValueError("--delta: required for the Gaussian, projection and factorization mechanisms (or use --rho)")
    return ApproxDP(args.epsilon, args.delta)


def _body(args: argparse.Namespace) -> str | None:
    """The projection mechanism's ``body`` (``None`` for the other mechanisms)."""
    if args.mechanism != "projection":
        for flag, value in (("--body", args.body), ("--relaxation", args.relaxation)):
            if value is not None:
                raise ValueError(f"{flag}: applies only to --mechanism projection, not {args.mechanism}")
        return None
    if args.body == "hull" and args.relaxation is not None:
        raise ValueError("--relaxation: applies only with --body relaxed or auto, not hull")
    return args.body or "auto"


def _size(args: argparse.Namespace) -> int | str | None:
    """``--size``: a declared public size (an int) or ``estimate``; only under add/remove."""
    if args.size is None:
        if args.size_share is not None:
            raise ValueError("--size-share: applies only with --size estimate")
        return None
    if args.neighbouring != "add-remove":
        raise ValueError("--size: applies only with --neighbouring add-remove (under replace-one n is public)")
    if args.size == ESTIMATE_SIZE:
        return ESTIMATE_SIZE
    try:
        size = int(args.size)
    except ValueError:
        raise ValueError(f"--size: expected a positive integer or {ESTIMATE_SIZE!r}, got {args.size!r}") from None
    if args.size_share is not None:
        raise ValueError("--size-share: applies only with --size estimate, not to a declared size")
    return size


def _solver(args: argparse.Namespace, body: str | None) -> str:
    """``--solver``, refused where the mechanism solves nothing."""
    if args.solver is None:
        return "auto"
    if args.mechanism not in ("projection", "factorization+projection"):
        raise ValueError(
            f"--solver: applies only to --mechanism projection or factorization+projection, not {args.mechanism}"
        )
    # The bodies say which solvers they take: the hull's for factorization+projection and
    # --body hull, the relaxation's for --body relaxed, either for auto.
    bodies = {"hull": (Hull,), "relaxed": (Relaxation,)}.get(body or "hull", (Hull, Relaxation))
    refusals = []
    for candidate in bodies:
        try:
            candidate(solver=args.solver)
        except ValueError as error:
            refusals.append(str(error))
        else:
            return args.solver
    raise ValueError("--" + "; ".join(refusals))


def _output_paths(args: argparse.Namespace) -> tuple[Path, Path]:
    """The answers' and the summary's paths, checked before anything is computed: never an
    input file, never each other, an existing folder, and no existing file without --force."""
    out = Path(args.out)
    summary = Path(args.summary) if args.summary else out.with_suffix(".json")
    flags = {"--out": out, "--summary" if args.summary else "--out (its .json summary)": summary}
    inputs = [("--data", Path(file)) for file in data_files(args.data)] + [("--domain", Path(args.domain))]
    for flag, path in flags.items():
        for input_flag, input_path in inputs:
            if path.resolve() == input_path.resolve():
                raise ValueError(f"{flag}: {path} is the {input_flag} file; refusing to overwrite an input")
        _check_new_file(flag, path, args.force)
    if out.resolve() == summary.resolve():
        raise ValueError(f"--summary: {summary} is also the --out file")
    return out, summary


def _check_new_file(flag: str, path: Path, force: bool) -> None:
    """An output path: a file (not a folder) in an existing folder, not there yet unless --force."""
    if path.is_dir():
        raise ValueError(f"{flag}: {path} is a directory; give a file path")
    if not path.parent.is_dir():
        raise ValueError(f"{flag}: the folder {path.parent} does not exist")
    if path.exists() and not force:
        raise ValueError(f"{flag}: {path} exists; pass --force to overwrite it")


def data_files(pattern: str) -> list[str]:
    """The files ``--data`` names: a file, a glob (``part-*.parquet``) or a folder of Parquet
    files; a ValueError naming the flag if there are none."""
    if glob.has_magic(pattern):
        files = sorted(file for file in glob.glob(pattern) if os.path.isfile(file))
        if not files:
            raise ValueError(f"--data: no file matches {pattern}")
        return files
    path = Path(pattern)
    if not path.exists():
        raise ValueError(f"--data: {path} does not exist")
    if path.is_dir():
        files = sorted(str(file) for file in path.iterdir() if is_parquet(str(file)))
        if not files:
            raise ValueError(f"--data: {path} is a directory with no .parquet files; give a CSV or Parquet file")
        return files
    return [pattern]


#: Above this many bytes of input files, ``--engine auto`` scans the data out of core (Polars,
#: else DuckDB) instead of reading it into memory with pandas: in memory each value becomes an
#: 8-byte code, several times its size in a CSV or Parquet file.
IN_MEMORY_BYTES = 2**28


def choose_engine(engine: str, files: Sequence[str]) -> str:
    """``--engine``: as given, or for ``auto`` pandas (in memory) up to :data:`IN_MEMORY_BYTES`
    of input, else Polars or DuckDB, whichever is installed (out of core)."""
    if engine != "auto":
        return engine
    if sum(os.path.getsize(file) for file in files) <= IN_MEMORY_BYTES:
        return "pandas"
    for candidate in ("polars", "duckdb"):
        if importlib.util.find_spec(candidate) is not None:
            return candidate
    raise ValueError(f"--engine: the --data files hold over {IN_MEMORY_BYTES // 2**20} MiB, too much to read into "
                     "memory, and neither polars nor duckdb is installed to scan them (pip install polars)")


def _in_flag(flag: str, path: str, error: BaseException) -> str:
    """An input's error in CLI words: the flag and the file once (the loaders name the file
    themselves), and no API argument name (``frame:``)."""
    message = str(error)
    for prefix in (f"{path}: ", "frame: "):
        message = message.removeprefix(prefix)
    return f"{flag}: {path}: {message}"


def _read_inputs(args: argparse.Namespace) -> Dataset:
    """The data set from ``--data`` and ``--domain``, with every failure naming the flag and file."""
    domain_path = Path(args.domain)
    if not domain_path.exists():
        raise ValueError(f"--domain: {domain_path} does not exist")
    if domain_path.is_dir():
        raise ValueError(f"--domain: {domain_path} is a directory, not a file")
    files = data_files(args.data)
    try:
        domain = Domain.from_json(args.domain)
    except (ValueError, TypeError, OSError) as error:
        raise ValueError(_in_flag("--domain", args.domain, error)) from None
    engine = choose_engine(args.engine, files)
    if importlib.util.find_spec("pyspark" if engine == "spark" else engine) is None:
        raise ValueError(f"--engine: {engine} is not installed (pip install 'projmech[engines]')")
    kinds = {is_parquet(file) for file in files}
    if len(kinds) > 1:
        raise ValueError(f"--data: {args.data} mixes CSV and Parquet files")
    try:
        if engine == "pandas" and len(files) == 1 and not is_parquet(files[0]):
            return Dataset.from_csv(files[0], domain)  # row numbers in errors count the CSV's rows
        return Dataset.from_frame(read_frame(files, engine, domain), domain)
    except (ValueError, TypeError, OSError) as error:
        raise ValueError(_in_flag("--data", args.data, error)) from None
    except Exception as error:  # an engine's own error (a CSV Polars cannot parse, Spark's analysis ...)
        message = " ".join(str(error).split())[:500]
        raise ValueError(f"--data: {args.data}: {engine} could not read it ({type(error).__name__}: {message})") \
            from None


def _release(args: argparse.Namespace) -> int:
    body = _body(args)
    solver = _solver(args, body)
    size = _size(args)
    privacy = _privacy(args, args.mechanism)
    if args.noise == "discrete" and args.seed is not None:
        raise ValueError("--seed: --noise discrete is drawn by OpenDP from OS entropy, which no seed reproduces")
    out, summary_path = _output_paths(args)
    dataset = _read_inputs(args)
    if dataset.n == 0 and args.neighbouring == "replace-one":
        raise ValueError(f"--data: {args.data} has no rows; under replace-one neighbours n is public and must be "
                         "at least 1 (--neighbouring add-remove with --size releases an empty data set)")
    options: dict[str, Any] = {"neighbouring": args.neighbouring, "size": size, "size_share": args.size_share,
                               "noise": args.noise}
    if args.mechanism == "projection":
        options.update(body=body, solver=solver)
        if args.relaxation is not None:
            options["relaxation"] = args.relaxation
    elif args.mechanism.startswith("factorization"):
        options.update(project=args.mechanism == "factorization+projection", solver=solver)
    mechanism_class = MECHANISMS_BY_NAME[args.mechanism]
    # Workloads are built without their k x m matrix wherever the mechanism says it never needs it.
    implicit = not mechanism_class.needs_matrix(**options)
    workload = parse_workload(args.workload, dataset.domain, implicit=implicit, ranges=parse_ranges(args.ranges))
    mechanism = mechanism_class(workload, privacy, **options)
    if mechanism.noise.discrete and args.seed is not None:
        raise ValueError(
            "--seed: the counts are integers, so the noise is OpenDP's exact discrete noise (--noise "
            f"{args.noise}), drawn from OS entropy, which no seed reproduces; add --noise continuous for a "
            "reproducible release"
        )
    released = mechanism.release(dataset, rng=np.random.default_rng(args.seed))
    released.to_frame()[["query", "answer"]].to_csv(out, index=False)
    summary_path.write_text(released.to_json() + "\n", encoding="utf-8")
    projected = f", projected onto {released.summary()['body']}" if released.projection is not None else ""
    noise = (f"{released.noise.name} noise of std {released.noise.std:.3g} on each measured count "
             f"(answers: counts / {released.size_source} size {released.size:g})")
    # Only an engine the user named is printed: auto's choice follows the files' size, which
    # depends on the private row count.
    counted = f", counted in {args.engine}" if args.engine != "auto" else ""
    print(f"released {len(released.answers)} answers with {released.privacy} ({released.neighbouring.value} "
          f"neighbours), {noise}{projected}{counted}: {out}; summary: {summary_path}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    data = datasets.adult(binary=True, attributes=datasets.ADULT_DEMO_ATTRIBUTES)
    workload = workloads.marginals(data.domain, 2)
    privacy = ApproxDP(args.epsilon, args.delta)
    gaussian = GaussianMechanism(workload, privacy)
    projection = ProjectionMechanism(workload, privacy)
    mechanisms = {"gaussian": gaussian, "projection": projection}
    sizes = [s for s in (100, 300, 1000, 3000, 10000, data.n) if s <= data.n]
    print(f"projmech demo: Adult, {len(data.domain)} binary attributes, {workload.num_queries} two-way "
          f"marginal cells, {privacy}, replace-one neighbours, {args.trials} trials per n; projection onto "
          f"{'the relaxation L' if isinstance(projection.body, Relaxation) else 'K_Q'} (body 'auto')")
    results = error_vs_n(data, mechanisms, sizes, args.trials, np.random.default_rng(args.seed))
    print(format_table(results))
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results.to_csv(out_dir / "error_vs_n.csv", index=False)
    # The measured figure is the mean over trials of each release's RMSE: the "mean" measure.
    expected = [gaussian.expected_error(n, measure="mean") for n in sizes]
    plot_error_vs_n(results, str(out_dir / "error_vs_n.png"),
                    f"Adult 2-way marginals, {privacy}", bounds={"Gaussian E[RMSE] (closed form)": (sizes, expected)})
    print(f"wrote {out_dir / 'error_vs_n.csv'} and {out_dir / 'error_vs_n.png'} "
          f"in {time.perf_counter() - start:.1f} s")
    return 0


def _audit(args: argparse.Namespace) -> int:
    """Audit the library's own mechanisms; exit 1 when a correct mechanism's bound exceeds its claim."""
    if args.releases < 2:
        raise ValueError(f"--releases: must be at least 2, got {args.releases}")
    if not 0 < args.confidence < 1:
        raise ValueError(f"--confidence: must lie in (0, 1), got {args.confidence}")
    out = Path(args.out) if args.out else None
    if out is not None:
        _check_new_file("--out", out, args.force)
    mechanisms = MECHANISMS if args.mechanism == "all" else (args.mechanism,)
    relations = ("replace-one", "add-remove") if args.neighbouring == "both" else (args.neighbouring,)
    cases = audit_cases(mechanisms, relations, planted_bug=args.planted_bug, noise=args.noise, delta=args.delta)
    start = time.perf_counter()
    results = run_audits(cases, args.releases, confidence=args.confidence, rng=np.random.default_rng(args.seed))
    print(format_audit_table(results))
    if out is not None:
        import pandas as pd

        pd.DataFrame([result.as_row() for result in results]).to_csv(out, index=False)
        print(f"wrote {out}")
    exceeded = [result.name for result in results if result.passed is False]
    verdict = ("planted bugs detected" if args.planted_bug else "bounds above the claim (privacy violations)")
    print(f"{len(results)} audits in {time.perf_counter() - start:.0f} s; {verdict}: "
          f"{', '.join(exceeded) if exceeded else 'none'}")
    return 1 if exceeded and not args.planted_bug else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="projmech", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    release = commands.add_parser("release", help="privately release a workload's answers on a CSV or Parquet data set")
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
    release.add_argument("--mechanism", default="projection",
                         choices=list(MECHANISMS_BY_NAME))
    release.add_argument("--epsilon", type=float)
    release.add_argument("--delta", type=float)
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
    release.add_argument("--solver", default=None,
                         help="projection only: auto (default), fast (the active-set solver for K_Q), admm "
                              "(the relaxation L), or a CVXPY solver: CLARABEL, ECOS, OSQP, SCS")
    release.add_argument("--body", choices=BODIES, default=None,
                         help="projection mechanism: the hull K_Q, the relaxation L of 2-way marginals, or auto "
                              f"(default: the hull up to {HULL_MAX_UNIVERSE} universe elements unless its estimated "
                              f"time is over {HULL_PREFERENCE:g}x L's; L for 2-way marginals otherwise)")
    release.add_argument("--relaxation", choices=RELAXATIONS, default=None,
                         help="projection onto L: its constraints (default: ProjectionMechanism's, sdp+local)")
    release.add_argument("--seed", type=int, default=None,
                         help="seed of continuous noise (--noise continuous; default: fresh OS entropy)")
    release.add_argument("--out", required=True, help="CSV of query labels and released answers (a new file)")
    release.add_argument("--summary", help="JSON summary path (default: --out with .json)")
    release.add_argument("--force", action="store_true", help="overwrite existing output files (never an input)")
    release.set_defaults(handler=_release)

    audit = commands.add_parser(
        "audit", help="statistical lower bounds on the epsilon of projmech's own mechanisms (projmech.self_audit)")
    audit.add_argument("--mechanism", choices=("all", *MECHANISMS), default="all")
    audit.add_argument("--neighbouring", choices=("both", "replace-one", "add-remove"), default="both")
    audit.add_argument("--releases", type=int, default=100_000, help="releases per data set (default 100,000)")
    audit.add_argument("--confidence", type=float, default=0.99, help="of every bound (default 0.99)")
    audit.add_argument("--planted-bug", action="store_true",
                       help="halve every noise scale while keeping the claim: shows the audit's power")
    audit.add_argument("--noise", choices=NOISE_KINDS, default="auto")
    audit.add_argument("--delta", type=float, default=1e-5,
                       help="delta of the (epsilon, delta) mechanisms audited (default 1e-5)")
    audit.add_argument("--seed", type=int, default=None, help="seed of the auditor's own randomness")
    audit.add_argument("--out", default=None, help="CSV of the results (a new file)")
    audit.add_argument("--force", action="store_true", help="overwrite --out")
    audit.set_defaults(handler=_audit)

    demo = commands.add_parser("demo", help="Gaussian vs projection on the embedded binarized Adult data")
    demo.add_argument("--trials", type=int, default=20)
    demo.add_argument("--epsilon", type=float, default=1.0)
    demo.add_argument("--delta", type=float, default=1e-6)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--out-dir", default="demo_output")
    demo.set_defaults(handler=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (ValueError, TypeError, OSError) as error:
        print(f"projmech {args.command}: error: {_one_line(error)}", file=sys.stderr)
        return 2
    except Exception as error:  # a solver failure, or a bug: still one line, unless asked
        if os.environ.get("PROJMECH_TRACEBACK"):
            raise
        print(f"projmech {args.command}: error: {type(error).__name__}: {_one_line(error)} "
              "(set PROJMECH_TRACEBACK=1 for the traceback)", file=sys.stderr)
        return 1


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


if __name__ == "__main__":
    sys.exit(main())
