"""Command line: ``projmech release`` on a CSV file, ``projmech demo`` on the embedded Adult data.

Every error reaches the user as one line on stderr, naming the flag (and the file) at fault, and a
non-zero exit status, argument errors included (with the closest flag or command to a mistyped one);
``PROJMECH_TRACEBACK=1`` shows the traceback of an unexpected one. Every warning is one line too.
Inputs must be regular files (a pipe or a device would hang the read). No output ever overwrites an
input, compared by identity (device and inode), so not through a link either, and an existing file
is overwritten only with ``--force``. Outputs are written whole or not at all: each to a temporary
file beside it, all moved into place once all are complete (``projmech.cli._files``).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import glob
import importlib.util
import json
import math
import os
import re
import sys
import time
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, NoReturn, TextIO

import numpy as np

from .. import datasets, workloads
from ..analysis.experiments import error_vs_n, format_table, plot_error_vs_n, pyplot
from ..audit.auditor import format_audit_table
from ..audit.self_audit import AUDIT_DELTA, MECHANISMS, PLANTED_BUG_DELTA, audit_cases, run_audits
from ..bodies import hull as hull_module
from ..bodies import relaxation as relaxation_module
from ..bodies.body import BODIES, HULL_MAX_UNIVERSE, Hull, Local, Relaxation, Tables, choose_body
from ..bodies.cost import HULL_PREFERENCE
from ..bodies.relaxation import RELAXATIONS, NegativeCellsWarning
from ..data.dataset import Dataset
from ..data.domain import Domain
from ..data.frames import ENGINES, is_parquet, read_frame
from ..errors import ArgumentError
from ..mechanisms.adaptive import ESTIMATORS, AdaptiveProjectionMechanism, AdaptiveRound
from ..mechanisms.additive import (
    CountingMechanism,
    FactorizationMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    ProjectionMechanism,
)
from ..mechanisms.budget import BudgetWarning
from ..privacy.guarantees import DEFAULT_SIZE_SHARE, ESTIMATE_SIZE, ZCDP, ApproxDP, PureDP
from ..privacy.noise import NOISE_KINDS
from ..synthetic.rounding import check_rows_fit, synthetic_data
from ..validation import DEFAULT_MAX_ENTRIES, format_count
from ..workloads import Workload
from ..workloads.marginal_tables import RANGE_BLOCKS
from ._files import file_identity, non_regular_kind, staged_outputs

__all__ = ["main", "parse_workload", "parse_ranges", "WORKLOAD_FORMS"]


#: What ``projmech demo`` writes into ``--out-dir``.
DEMO_OUTPUTS = ("error_vs_n.csv", "error_vs_n.png")

#: ``--mechanism``'s choices and the class of each.
MECHANISMS_BY_NAME: dict[str, type[CountingMechanism]] = {
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
    attributes = len(domain)
    has = f"--domain has {'only ' if attributes > 1 else ''}{attributes} attribute{'s' if attributes > 1 else ''}"
    if name == "marginals":
        low, _, high = argument.partition("-")
        try:
            ways = tuple(range(int(low), int(high) + 1)) if high else (int(low),)
        except ValueError:
            raise ValueError(f"--workload: expected marginals:WAY or marginals:LOW-HIGH with integers, got {spec!r}") \
                from None
        if not ways:
            raise ValueError(f"--workload: marginals:LOW-HIGH needs LOW <= HIGH, got {spec!r}")
        if ways[-1] > attributes:
            raise ValueError(f"--workload: {spec!r} asks for {ways[-1]}-way tables, but {has}; use "
                             f"{'HIGH' if high else 'WAY'} <= {attributes}")
        if len(ways) == 1 and ways[0] >= 1:
            return workloads.marginals(domain, ways[0], implicit=implicit)
        return workloads.marginals(domain, ways=ways, implicit=implicit)
    if name == "range-marginals":
        try:
            way = int(argument)
        except ValueError:
            raise ValueError(f"--workload: expected range-marginals:WAY with an integer WAY, got {spec!r}") from None
        if not 1 <= way <= attributes:
            raise ValueError(f"--workload: {spec!r}: WAY must lie between 1 and the number of attributes ({has})")
        if not ranges:
            raise ValueError("--ranges: range-marginals:WAY needs --ranges ATTR=prefix|all_range[,...]")
        for attribute, block in ranges.items():
            if attribute not in domain:
                raise ValueError(f"--ranges: {attribute!r} names no attribute of the domain "
                                 f"({', '.join(domain.attributes)})")
            if block not in RANGE_BLOCKS:
                raise ValueError(f"--ranges: {attribute}={block}: expected one of {', '.join(sorted(RANGE_BLOCKS))} "
                                 "after the '='")
            _check_ordered("--ranges", f"{attribute}={block}", attribute, domain)
        return workloads.range_marginals(domain, way, ranges, implicit=bool(implicit))
    if name in ("prefix", "all_range"):
        if not argument and len(domain) > 1:
            raise ValueError(f"--workload: {name} over {len(domain)} attributes needs one: {name}:ATTR, ATTR one of "
                             f"{', '.join(domain.attributes)}")
        attribute = argument or domain.attributes[0]
        if attribute not in domain:
            raise ValueError(f"--workload: {spec!r} names no attribute of the domain ({', '.join(domain.attributes)})")
        _check_ordered("--workload", spec, attribute, domain)
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
        attribute, sign, block = (part.strip() for part in item.partition("="))
        if not sign or not attribute or not block:
            raise ValueError(f"--ranges: expected ATTR=BLOCK[,ATTR=BLOCK...], got {text!r}")
        if attribute in ranges:
            raise ValueError(f"--ranges: {attribute!r} is given twice")
        ranges[attribute] = block
    return ranges


def _positive(flag: str, value: float) -> float:
    """A flag's value that must be a positive finite number."""
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{flag}: must be a positive finite number, got {value:g}")
    return value


def _fraction(flag: str, value: float) -> float:
    """A flag's value that must lie strictly between 0 and 1."""
    if not 0 < value < 1:  # NaN fails too
        raise ValueError(f"{flag}: must lie strictly between 0 and 1, got {value:g}")
    return value


def _check_seed(seed: int | None) -> None:
    """``--seed``: numpy takes only a non-negative integer."""
    if seed is not None and seed < 0:
        raise ValueError(f"--seed: expected a non-negative integer, got {seed}")


def _privacy(args: argparse.Namespace, mechanism: str) -> ZCDP | ApproxDP | PureDP:
    if args.rho is not None:
        if args.epsilon is not None or args.delta is not None:
            raise ValueError("--rho: give either --rho or --epsilon/--delta, not both")
        if mechanism == "laplace":
            raise ValueError("--rho: the Laplace mechanism is pure epsilon-DP; give --epsilon alone (or use "
                             "--mechanism gaussian for zCDP)")
        return ZCDP(_positive("--rho", args.rho))
    if args.epsilon is None:
        raise ValueError("--epsilon: required (or --rho for zCDP)")
    epsilon = _positive("--epsilon", args.epsilon)
    if mechanism == "laplace":
        if args.delta is not None:
            raise ValueError("--delta: the Laplace mechanism is pure epsilon-DP; omit --delta")
        return PureDP(epsilon)
    if args.delta is None:
        if mechanism == "adaptive":
            raise ValueError("--delta: required with --epsilon (or use --rho)")
        raise ValueError("--delta: required for the Gaussian, projection and factorization mechanisms (or use --rho)")
    return ApproxDP(epsilon, _fraction("--delta", args.delta))


#: ``--solver``'s values for each body, as the help lists them and the command accepts them (case
#: aside), from the library's lists: the hull K_Q takes the active-set solver and the CVXPY solvers
#: of ``project_to_hull``; the relaxation L, the solvers of ``projmech.bodies.relaxation.SOLVERS``.
HULL_SOLVERS: tuple[str, ...] = ("auto", hull_module.FAST, *hull_module.SOLVERS)
RELAXATION_SOLVERS: dict[str, tuple[str, ...]] = {
    relaxation: ("auto", *solvers) for relaxation, solvers in relaxation_module.SOLVERS.items()}

class _Projection(NamedTuple):
    """What ``--body``, ``--relaxation`` and ``--solver`` ask of a mechanism that projects."""

    body: str  # "auto", "hull", "relaxed", "tables" or "local", as ProjectionMechanism's body takes it
    solver: str
    relaxation: str
    flag: str  # the flag(s) that chose the body, which its errors name


def _canonical_solver(solver: str) -> str:
    lowered = solver.lower()
    return lowered if lowered in ("auto", hull_module.FAST, "admm") else solver.upper()


def _projection(args: argparse.Namespace) -> _Projection | None:
    """``--body``, ``--relaxation`` and ``--solver``, refused where the mechanism does not project
    (``None`` then) or the body does not take the solver. ``--relaxation`` without ``--body``
    projects onto L, and with ``--body auto`` a solver that only one body runs picks that body."""
    projects_onto = ("projection", "factorization+projection")
    for flag, value in (("--body", args.body), ("--relaxation", args.relaxation), ("--solver", args.solver)):
        if value is not None and args.mechanism not in projects_onto:
            raise ValueError(f"{flag}: applies only to --mechanism {' or '.join(projects_onto)}, not {args.mechanism}")
    if args.mechanism not in projects_onto:
        return None
    # Both mechanisms choose their body alike (the library's body=, auto by default).
    relaxation = args.relaxation or RELAXATIONS[0]
    if args.body == "hull" and args.relaxation is not None:
        raise ValueError("--relaxation: applies only with --body relaxed or auto, not hull")
    elif args.body is not None:
        body, flag = args.body, f"--body {args.body}"
    elif args.relaxation is not None:
        body, flag = "relaxed", f"--relaxation {args.relaxation}"
    else:
        body, flag = "auto", "--body auto"
    solver = "auto" if args.solver is None else _canonical_solver(args.solver)
    if body in ("tables", "local") and args.relaxation is not None:
        raise ValueError(f"--relaxation: applies only with --body relaxed or auto, not {body}")
    # The bodies "auto" may fall back to (tables, local) run the hull's solvers and their own
    # solver "auto"; they do not pick the body for a solver.
    offered = {"hull": HULL_SOLVERS, "relaxed": RELAXATION_SOLVERS[relaxation], "tables": HULL_SOLVERS,
               "local": ("auto",)}
    takers = [name for name in ("hull", "relaxed") if body == "auto" and solver in offered[name]]
    if body != "auto" and solver in offered[body]:
        takers = [body]
    if not takers:
        accepted = offered[body] if body != "auto" else tuple(dict.fromkeys(HULL_SOLVERS + offered["relaxed"]))
        onto = {"hull": "the hull K_Q", "relaxed": f"the relaxation L ({relaxation})",
                "tables": "K_Q of disjoint tables, table by table",
                "local": "the local polytope of the tables (its own dual L-BFGS)",
                "auto": f"the hull K_Q or the relaxation L ({relaxation})"}[body]
        raise ValueError(f"--solver: {flag} projects onto {onto}, which takes {', '.join(accepted)}; "
                         f"got {args.solver!r}")
    if body == "auto" and len(takers) == 1:
        # A solver only one body runs picks it (as for the library's body "auto"), and errors
        # below then speak of that body.
        body, flag = takers[0], f"--solver {solver}"
    return _Projection(body, solver, relaxation, flag)


def _size(args: argparse.Namespace) -> int | str | None:
    """``--size``: a declared public size (an int) or ``estimate``; only under add/remove."""
    if args.size is None:
        if args.size_share is not None:
            raise ValueError("--size-share: applies only with --size estimate")
        if args.neighbouring == "add-remove":
            raise ValueError("--size: --neighbouring add-remove keeps the row count private; give --size N (a public "
                             "size, e.g. a published total: answers are counts / N) or --size estimate (a noisy count, "
                             f"spending --size-share, default {DEFAULT_SIZE_SHARE:g}, of the budget)")
        return None
    if args.neighbouring != "add-remove":
        raise ValueError("--size: applies only with --neighbouring add-remove (under replace-one n is public)")
    if args.size == ESTIMATE_SIZE:
        if args.size_share is not None:
            _fraction("--size-share", args.size_share)
        return ESTIMATE_SIZE
    try:
        size = int(args.size)
    except ValueError:
        size = 0
    if size < 1:
        raise ValueError(f"--size: expected a positive integer or {ESTIMATE_SIZE!r}, got {args.size!r}")
    if args.size_share is not None:
        raise ValueError("--size-share: applies only with --size estimate, not to a declared size")
    return size


def _workload(args: argparse.Namespace, domain: Domain, mechanism_class: type[CountingMechanism],
              options: Mapping[str, Any], projection: _Projection | None) -> Workload:
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
    cvxpy = projection is not None and projection.solver in hull_module.SOLVERS
    try:
        explicit: Workload | None = parse_workload(args.workload, domain, ranges=ranges)
    except ValueError:
        explicit = None
    # A Kronecker workload too large for its matrix is built implicit instead of refused.
    if explicit is not None and not (cvxpy and explicit.is_implicit):
        return explicit
    matrix = f"the explicit matrix of --workload {args.workload} ({format_count(k)} x {format_count(m)})"
    if projection is not None and cvxpy:
        relaxed = projection.body == "auto" and Relaxation().blocker(workload) is None
        raise ValueError(f"--solver {projection.solver}: a CVXPY solver projects onto the hull K_Q through {matrix}, "
                         "which is too large to build; use --solver fast or auto, which need only products with it"
                         + (f", or --body relaxed --solver {projection.solver} (the relaxation L)" if relaxed else ""))
    raise ValueError(f"--mechanism {args.mechanism}: needs {matrix}, which is too large to build; use --mechanism "
                     "gaussian, projection or factorization, which never build it")


def _check_body(workload: Workload, spec: str, projection: _Projection) -> None:
    """Refuse, in the command's words, a projection no body takes or this machine's memory cannot
    hold (before any long computation), by the library's rules and memory model
    (``Body.blocker``, ``Body.memory_blocker``)."""
    m = workload.universe_size
    unprojected = "--mechanism gaussian or factorization (answers without projection)"
    # The memory of the hull with the solver given, or its automatic one for a solver only L runs.
    hull_solver = projection.solver if projection.solver in HULL_SOLVERS else "auto"
    hull_memory = Hull(solver=hull_solver).memory_blocker(workload) if workload.has_adjoint else None
    relaxed = Relaxation(relaxation=projection.relaxation)
    relaxed_fits = relaxed.blocker(workload) is None and relaxed.memory_blocker(workload) is None
    if projection.body == "hull" and hull_memory is not None:
        alternative = ", or --body relaxed (the relaxation L)" if relaxed_fits else ""
        raise ValueError(f"{projection.flag}: {hull_memory}; use {unprojected}{alternative}")
    if projection.body == "relaxed" and relaxed.blocker(workload) is None:
        relaxed_memory = relaxed.memory_blocker(workload)
        if relaxed_memory is not None:
            raise ValueError(f"{projection.flag}: {relaxed_memory}; use {unprojected}")
    try:
        choose_body(workload, projection.body, solver=projection.solver, relaxation=projection.relaxation)
    except ValueError:  # the flags were checked above: what is left is a body that cannot take the workload
        pass
    else:
        return
    hull_fits = workload.has_adjoint and hull_memory is None
    if projection.body == "relaxed":
        hull = {"--solver": "--solver auto or fast", "--relaxation": "--body hull without --relaxation"}.get(
            projection.flag.split()[0], "--body hull") + " (the hull K_Q), or "
        raise ValueError(f"{projection.flag}: the relaxation L holds only all 2-way marginals of a domain "
                         f"(--workload marginals:2), not {spec}; use {hull if hull_fits else ''}{unprojected}")
    if projection.body == "auto":
        hull = ", or --body hull to project onto the hull K_Q regardless" if hull_fits else ""
        hull_out = (f"the hull K_Q is chosen only up to {HULL_MAX_UNIVERSE:,} universe elements (--domain has "
                    f"{format_count(m)})" if m > HULL_MAX_UNIVERSE or hull_memory is None else hull_memory)
        relaxed_out = ("the relaxation L holds only --workload marginals:2" if relaxed.blocker(workload) is not None
                       else relaxed.memory_blocker(workload))
        tables = Tables()
        tables_out = (f"the tables body takes only disjoint tables (--workload marginals:1, identity or "
                      f"prefix:ATTR), not {spec}" if tables.blocker(workload) is not None
                      else tables.memory_blocker(workload))
        local = Local()
        local_out = (f"the local body takes only marginal tables (--workload marginals:WAY), not {spec}"
                     if local.blocker(workload) is not None else local.memory_blocker(workload))
        if local_out is None:
            local_out = f"the local body runs only --solver auto, not {projection.solver}"
        raise ValueError(f"--body auto: no body to project {spec} onto: {hull_out}, {relaxed_out}, {tables_out}, "
                         f"and {local_out}; use {unprojected}{hull}")
    if projection.body in ("tables", "local"):
        chosen = Tables() if projection.body == "tables" else Local()
        if chosen.blocker(workload) is None:
            raise ValueError(f"{projection.flag}: {chosen.memory_blocker(workload)}; use {unprojected}")
        if projection.body == "tables":
            other = ", or --body local (overlapping marginal tables)" if Local().blocker(workload) is None else ""
            raise ValueError(f"{projection.flag}: takes only disjoint tables (--workload marginals:1, identity or "
                             f"prefix:ATTR), not {spec}; use {unprojected}{other}")
        raise ValueError(f"{projection.flag}: takes only marginal tables (--workload marginals:WAY or "
                         f"marginals:LOW-HIGH), not {spec}; use {unprojected}")
    raise ValueError(f"{projection.flag}: the hull K_Q cannot take {spec}; use {unprojected}")


class _Outputs(NamedTuple):
    """``projmech release``'s outputs, each with the flag its errors name."""

    out: Path
    summary: Path
    summary_flag: str  # --summary, or --out where the summary's path derives from it
    synthetic: Path | None  # --synthetic, the rows drawn from the projection


def _output_paths(args: argparse.Namespace, inputs: Sequence[tuple[str, Path]]) -> _Outputs:
    """The answers' and the summary's paths, checked before anything is computed: never an
    input file or each other (by identity, so no link to one either), an existing folder, and
    no existing file without --force."""
    out = _output_path("--out", args.out)
    summary = _output_path("--summary", args.summary) if args.summary is not None else out.with_suffix(".json")
    summary_flag = "--summary" if args.summary is not None else "--out (its .json summary)"
    outputs = [("--out", out), (summary_flag, summary)]
    if args.summary is None and summary == out:  # the summary would be the answers' file itself
        _refuse_overlaps(outputs[:1], inputs)  # an input is the graver fault: named first
        raise ValueError(f"--out: {out} ends in .json, the suffix its summary takes; give --out a .csv path, "
                         "or --summary another path")
    synthetic = _output_path("--synthetic", args.synthetic) if args.synthetic is not None else None
    if synthetic is not None:
        outputs.append(("--synthetic", synthetic))
    _refuse_overlaps(outputs, inputs)
    for flag, path in outputs:
        _check_new_file(flag, path, args.force)
    return _Outputs(out, summary, summary_flag, synthetic)


def _output_path(flag: str, text: str, what: str = "a file path") -> Path:
    """An output flag's path: refused when empty (which would name the current folder) or
    ``-`` (which commands often take for standard output, and which this one does not offer)."""
    if text == "-":
        raise ValueError(f"{flag}: '-' (standard output) is not supported; give {what}")
    if not text.strip():
        raise ValueError(f"{flag}: empty; give {what}")
    return Path(text)


def _alias(path: Path, other: Path) -> str:
    """`` <other> under another name (a link)``, where two paths of one file are spelt differently
    (and lead to one file by different names: not the same name seen through ``..`` or ``./``)."""
    return "" if path.resolve() == other.resolve() else f" {other} under another name (a link)"


def _refuse_overlaps(outputs: Sequence[tuple[str, Path]], inputs: Sequence[tuple[str, Path]]) -> None:
    """Refuse an output that is an input, or an earlier output, under any name (a hard or
    symbolic link to it, or a path through a linked folder): files are compared by device and
    inode, not by name. Each pair is (flag, path)."""
    seen = {file_identity(path): (flag, path, True) for flag, path in inputs}
    for flag, path in outputs:
        identity = file_identity(path)
        if identity in seen:
            other_flag, other, is_input = seen[identity]
            if is_input:
                raise ValueError(f"{flag}: {path} is the {other_flag} file{_alias(path, other)}; refusing to "
                                 "overwrite an input")
            raise ValueError(f"{flag}: {path} is also the {other_flag} file{_alias(path, other)}; give "
                             f"{flag.split()[0]} another path")
        seen[identity] = (flag, path, False)


def _check_output_folder(flag: str, folder: Path) -> None:
    """A folder that outputs go into, created when they are written if missing: refused only
    where a file stands in its place or on its way (``--out-dir results.csv/run1``)."""
    for part in (folder, *folder.parents):
        if part.exists():
            if not part.is_dir():
                raise ValueError(f"{flag}: {part} is a file; give a folder (created if missing)")
            return


def _check_new_file(flag: str, path: Path, force: bool) -> None:
    """An output path: a file (not a folder) in an existing folder, not there yet unless --force,
    and never a pipe or a device (replacing one would remove it; writing to one is no output)."""
    if path.is_dir():
        raise ValueError(f"{flag}: {path} is a directory; give a file path")
    kind = non_regular_kind(path)
    if kind is not None:
        raise ValueError(f"{flag}: {path} is {kind}, not a regular file; give a file path")
    if not path.parent.is_dir():
        raise ValueError(f"{flag}: the folder {path.parent} does not exist")
    if path.exists() and not force:
        raise ValueError(f"{flag}: {path} exists; pass --force to overwrite it")


def _regular_file(flag: str, path: Path, what: str) -> None:
    """Refuse an input that is not a regular file before it is opened: reading a pipe waits for a
    writer and a device such as /dev/zero never ends."""
    kind = non_regular_kind(path)
    if kind is not None:
        raise ValueError(f"{flag}: {path} is {kind}, not a regular file; give {what}")


def _check_ordered(flag: str, spec: str, attribute: str, domain: Domain) -> None:
    """Ranges over ``attribute`` need its values in an order: bins, a size, or categories the
    domain file declares ordered (the library refuses the same, in its own words)."""
    if not domain.encoding(attribute).ordered:
        raise ValueError(f"{flag}: {spec!r} takes ranges of {attribute!r}, whose categories have no order; declare "
                         f"them ordered in the domain file ({{\"{attribute}\": {{\"categories\": [...], \"ordered\": "
                         f"true}}}}), or give {attribute!r} bins or a size")


def data_files(pattern: str) -> list[str]:
    """The files ``--data`` names: a file, a glob (``part-*.parquet``) or a folder of Parquet
    files, each a regular file; a ValueError naming the flag if there are none, or if one is a
    pipe, a device or (matched by a glob) a folder."""
    what = "CSV or Parquet files"
    if glob.has_magic(pattern):
        files = sorted(glob.glob(pattern))
        if not files:
            raise ValueError(f"--data: no file matches {pattern}")
    else:
        path = Path(pattern)
        if not path.exists():
            raise ValueError(f"--data: {path} does not exist")
        if not path.is_dir():
            _regular_file("--data", path, "a CSV or Parquet file")
            return [pattern]
        files = sorted(str(file) for file in path.iterdir() if is_parquet(str(file)))
        if not files:
            raise ValueError(f"--data: {path} is a directory with no .parquet files; give a CSV or Parquet file")
    for file in files:
        _regular_file("--data", Path(file), what)
    return files


def _domain_file(text: str) -> Path:
    """``--domain``'s path: there, and a regular file."""
    domain = Path(text)
    if not domain.exists():
        raise ValueError(f"--domain: {domain} does not exist")
    if domain.is_dir():
        raise ValueError(f"--domain: {domain} is a directory, not a file")
    _regular_file("--domain", domain, "the domain's JSON file")
    return domain


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
    themselves), and no API argument name (an :class:`~projmech.errors.ArgumentError`'s, or the
    ``frame:``, ``sizes:`` and ``attributes:`` of the loaders and the Domain constructor)."""
    message = error.describe() if isinstance(error, ArgumentError) else str(error)
    for prefix in (f"{path}: ", "frame: ", "sizes: ", "attributes: "):
        message = message.removeprefix(prefix)
    return f"{flag}: {path}: {message}"


def _read_inputs(args: argparse.Namespace, files: Sequence[str]) -> Dataset:
    """The data set from ``--data`` (its ``files``, as :func:`data_files` found them) and
    ``--domain``, with every failure naming the flag and file."""
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
    projection = _projection(args)
    size = _size(args)
    privacy = _privacy(args, args.mechanism)
    _check_seed(args.seed)
    if args.noise == "discrete" and args.seed is not None:
        raise ValueError("--seed: --noise discrete is drawn by OpenDP from OS entropy, which no seed reproduces")
    if args.objective is not None and not args.mechanism.startswith("factorization"):
        raise ValueError(f"--objective: only --mechanism factorization or factorization+projection optimizes a "
                         f"strategy; --mechanism {args.mechanism} has none")
    if args.intervals is not None:
        _fraction("--intervals", args.intervals)
    if args.synthetic_rows is not None and args.synthetic is None:
        raise ValueError("--synthetic-rows: applies only with --synthetic FILE")
    if args.synthetic is not None and projection is None:
        raise ValueError(f"--synthetic: rows are drawn from a projection; --mechanism {args.mechanism} does not "
                         "project (use --mechanism projection or factorization+projection)")
    if args.synthetic_rows is not None and args.synthetic_rows < 1:
        raise ValueError(f"--synthetic-rows: must be a positive integer, got {args.synthetic_rows}")
    files = data_files(args.data)
    inputs = [("--data", Path(file)) for file in files] + [("--domain", _domain_file(args.domain))]
    out, summary_path, summary_flag, synthetic_path = _output_paths(args, inputs)
    dataset = _read_inputs(args, files)
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
    mechanism_class = MECHANISMS_BY_NAME[args.mechanism]
    workload = _workload(args, dataset.domain, mechanism_class, options, projection)
    if projection is not None:
        _check_body(workload, args.workload, projection)
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
                      lambda path: path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8"))
        if synthetic_path is not None:
            outputs.write("--synthetic", synthetic_path,
                          lambda path: _labelled_rows(dataset.domain, rows.data.records).to_csv(path, index=False))
    projected = f", projected onto {summary['body']}" if released.projection is not None else ""
    scale = f"answers: counts / {released.size_source} size {released.size:g}"
    if isinstance(mechanism, FactorizationMechanism):
        # The answers' noise R Z is the strategy's noise mixed by R: its root mean square per
        # answer, at public size 1 in counts, then on the answers.
        rms = mechanism.error_bound(1)
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


def _labelled_rows(domain: Domain, rows: np.ndarray) -> Any:
    """The rows as a table with the attributes' names and each code's label (a category, a bin)."""
    import pandas as pd

    return pd.DataFrame({name: np.asarray(domain.labels(name), dtype=object)[rows[:, position]]
                         for position, name in enumerate(domain.attributes)})


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


def _synthesize(args: argparse.Namespace) -> int:
    """``projmech synthesize``: the adaptive mechanism's release on --workload, then synthetic rows
    drawn from its estimate, written as a labelled CSV (--out) with a JSON summary."""
    if args.neighbouring == "add-remove" and args.size is None:
        args.size = ESTIMATE_SIZE  # the row count stays private; its estimate sizes the rows
    size = _size(args)
    privacy = _privacy(args, "adaptive")
    assert not isinstance(privacy, PureDP)  # pure DP only for --mechanism laplace
    _check_seed(args.seed)
    if args.rows is not None and args.rows < 1:
        raise ValueError(f"--rows: must be a positive integer, got {args.rows}")
    if args.noise != "continuous" and args.seed is not None:
        raise ValueError("--seed: the counts are integers, so the noise is OpenDP's exact discrete noise, drawn from "
                         "OS entropy, which no seed reproduces; add --noise continuous for a reproducible run")
    files = data_files(args.data)
    inputs = [("--data", Path(file)) for file in files] + [("--domain", _domain_file(args.domain))]
    out, summary_path, summary_flag, _ = _output_paths(args, inputs)
    dataset = _read_inputs(args, files)
    workload = parse_workload(args.workload, dataset.domain, implicit=True)
    # Refused before anything is counted, each error naming its flag (see _in_flags).
    mechanism = AdaptiveProjectionMechanism(workload, privacy, neighbouring=args.neighbouring, size=size,
                                            size_share=args.size_share, noise=args.noise, estimator=args.estimator)
    synthesis = mechanism.synthesize(dataset, args.rows, rng=np.random.default_rng(args.seed),
                                     progress=_round_printer(time.perf_counter(), dataset.domain.attributes))
    summary = synthesis.run.release.summary()
    summary["synthetic"] = {"rows": int(synthesis.data.n), "rows_rmse": synthesis.rows_rmse,
                            "rows_max_error": synthesis.rows_max_error}
    with staged_outputs() as outputs:  # both complete, or neither replaced
        outputs.write("--out", out, lambda path: _labelled_rows(dataset.domain, synthesis.data.records).to_csv(
            path, index=False))
        outputs.write(summary_flag, summary_path,
                      lambda path: path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8"))
    rounds = synthesis.run.rounds
    print(f"wrote {synthesis.data.n} synthetic rows with {synthesis.run.release.privacy} ({args.neighbouring} "
          f"neighbours) from {len(rounds)} rounds ({sum(1 for r in rounds if r.selection_rho > 0)} selected tables); "
          f"their answers to --workload within {synthesis.rows_max_error:.3g} of the released ones (RMSE "
          f"{synthesis.rows_rmse:.3g}): {out}; summary: {summary_path}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    if args.trials < 2:
        raise ValueError(f"--trials: must be at least 2 (for a confidence interval), got {args.trials}")
    privacy = ApproxDP(_positive("--epsilon", args.epsilon), _fraction("--delta", args.delta))
    _check_seed(args.seed)
    try:  # the figure is one of the outputs: refuse before the minute of work, not after it
        pyplot()
    except ModuleNotFoundError as error:
        raise ValueError(f"demo: {error}") from None
    out_dir = _output_path("--out-dir", args.out_dir, "a folder")
    _check_output_folder("--out-dir", out_dir)
    outputs = [("--out-dir", out_dir / name) for name in DEMO_OUTPUTS]
    _refuse_overlaps(outputs, [])  # the demo reads no file of the user's; its two outputs are two files
    if out_dir.is_dir():  # a folder still to be created holds no earlier results
        for flag, path in outputs:  # checked before the minute of work, like every output
            _check_new_file(flag, path, args.force)
    start = time.perf_counter()
    data = datasets.adult(binary=True, attributes=datasets.ADULT_DEMO_ATTRIBUTES)
    workload = workloads.marginals(data.domain, 2)
    gaussian = GaussianMechanism(workload, privacy)
    projection = ProjectionMechanism(workload, privacy)
    mechanisms = {"gaussian": gaussian, "projection": projection}
    sizes = [s for s in (100, 300, 1000, 3000, 10000, data.n) if s <= data.n]
    print(f"projmech demo: Adult, {len(data.domain)} binary attributes, {workload.num_queries} two-way "
          f"marginal cells, {privacy}, replace-one neighbours, {args.trials} trials per n; projection onto "
          f"{'the relaxation L' if isinstance(projection.body, Relaxation) else 'K_Q'} (body 'auto')")
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


def _audit(args: argparse.Namespace) -> int:
    """Audit the library's own mechanisms; exit 1 when a correct mechanism's bound exceeds its claim."""
    if args.releases < 2:
        raise ValueError(f"--releases: must be at least 2, got {args.releases}")
    if not 0 < args.confidence < 1:
        raise ValueError(f"--confidence: must lie in (0, 1), got {args.confidence}")
    if args.delta is None:
        # A planted bug shows only through events well above delta (see PLANTED_BUG_DELTA).
        args.delta = PLANTED_BUG_DELTA if args.planted_bug else AUDIT_DELTA
    _fraction("--delta", args.delta)
    _check_seed(args.seed)
    out = _output_path("--out", args.out) if args.out is not None else None
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

        table = pd.DataFrame([result.as_row() for result in results])
        with staged_outputs() as staged:
            staged.write("--out", out, lambda path: table.to_csv(path, index=False))
        print(f"wrote {out}")
    exceeded = [result.name for result in results if result.passed is False]
    verdict = ("planted bugs detected" if args.planted_bug else "bounds above the claim (privacy violations)")
    print(f"{len(results)} audits in {time.perf_counter() - start:.0f} s; {verdict}: "
          f"{', '.join(exceeded) if exceeded else 'none'}")
    return 1 if exceeded and not args.planted_bug else 0


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


def _solver_help() -> str:
    hull, sdp, local = HULL_SOLVERS, RELAXATION_SOLVERS["sdp+local"], RELAXATION_SOLVERS["local"]
    assert RELAXATION_SOLVERS["sdp"] == sdp
    return (f"the projection's solver (--mechanism projection or factorization+projection; any case): onto the "
            f"hull K_Q (--body hull, factorization+projection) one of {', '.join(hull)} (fast: the active-set "
            f"solver, which needs no matrix; the others are CVXPY's, on the workload's explicit matrix); onto the "
            f"relaxation L (--body relaxed) one of {', '.join(sdp)}, or with --relaxation local one of "
            f"{', '.join(local)}; --body auto (default) takes all of these, and a solver only one body runs "
            "picks that body (with the default relaxation: fast, ECOS and OSQP pick K_Q, admm picks L). "
            "Default: auto")


def _did_you_mean(given: str, offered: Sequence[str]) -> str:
    """``; did you mean X?``: the offered words that a shortened one begins (flags are never
    taken abbreviated), else the one closest to a mistyped one, if any is close."""
    begun = [word for word in offered if word.startswith(given)] if len(given.lstrip("-")) >= 1 else []
    close = begun[:3] or difflib.get_close_matches(given, offered, n=1)
    return f"; did you mean {' or '.join(close)}?" if close else ""


#: argparse's messages, and the command's own words for them: each error names its flag first.
_PARSER_MESSAGES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"the following arguments are required: (?P<flags>.*)"), r"\g<flags>: required"),
    (re.compile(r"argument (?P<flag>\S+): invalid float value: (?P<value>.*)"),
     r"\g<flag>: expected a number, got \g<value>"),
    (re.compile(r"argument (?P<flag>\S+): invalid int value: (?P<value>.*)"),
     r"\g<flag>: expected an integer, got \g<value>"),
    (re.compile(r"argument (?P<flag>\S+): expected one argument"), r"\g<flag>: expected a value after it"),
    (re.compile(r"argument (?P<flag>\S+): (?P<message>.*)"), r"\g<flag>: \g<message>"),
)


class _Parser(argparse.ArgumentParser):
    """argparse, with every error on one line in the command's words (``projmech release: error:
    --epsilon: expected a number, got 'one'``), naming the flag, and for a mistyped flag, choice
    or command the closest one, instead of the usage; the subcommands' parsers are of this class
    too."""

    #: The subcommands' parsers by name (set on the top-level parser by :func:`build_parser`).
    commands: Mapping[str, _Parser] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # No abbreviated flags: `demo --out x` silently meant --out-dir, and an abbreviation that
        # a later flag makes ambiguous would break a user's script; a prefix gets "did you mean".
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        if self.commands and message == "the following arguments are required: command":
            message = (f"give a command: {', '.join(self.commands)} ('{self.prog} COMMAND --help' describes "
                       "each)")
        for pattern, words in _PARSER_MESSAGES:
            if pattern.fullmatch(message):
                message = pattern.sub(words, message)
                break
        self.exit(2, f"{self.prog}: error: {_one_line(message)}\n")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # argparse's check of a value against a flag's choices (or of the command's name), whose
        # message, lists in quotes with no suggestion, differs from one Python to the next.
        choices = action.choices
        if choices is None or value in choices:
            return
        offered = [str(choice) for choice in choices]
        if action.dest == "command":
            raise argparse.ArgumentError(None, f"{value}: no such command{_did_you_mean(str(value), offered)} "
                                               f"(the commands: {', '.join(offered)})")
        raise argparse.ArgumentError(action, f"expected one of {', '.join(offered)}, got {value!r}"
                                             f"{_did_you_mean(str(value), offered)}")

    def parse_command_line(self, argv: Sequence[str] | None) -> argparse.Namespace:
        """The arguments of ``projmech COMMAND ...``; an unknown flag is refused by its command's
        parser, which suggests the closest of its own flags."""
        args, extras = self.parse_known_args(argv)
        if extras:
            self.commands.get(getattr(args, "command", None) or "", self).refuse_extras(extras)
        return args

    def flags(self) -> set[str]:
        """The parser's long flags (``--epsilon``)."""
        return {option for option in self._option_string_actions if option.startswith("--")}

    def refuse_extras(self, extras: Sequence[str]) -> NoReturn:
        """Refuse what the parser did not take: a flag it does not have, or a value no flag took."""
        flags = [extra for extra in extras if extra.startswith("-") and extra != "-"]
        if not flags:
            self.error(f"{extras[0]!r}: a value no flag takes (each flag takes at most one value; quote one "
                       "with spaces)")
        flag = flags[0].partition("=")[0]
        suggestion = _did_you_mean(flag, sorted(self.flags()))
        self.error(f"{flag}: no such flag{suggestion or f' ({self.prog} --help lists them)'}")


def build_parser() -> _Parser:
    parser = _Parser(
        prog="projmech", description="Differentially private release of linear queries. Every error is one line "
        "naming the flag (and the file) at fault, with a non-zero exit status; no output overwrites an input, and "
        "an existing output is replaced only with --force. 'projmech COMMAND --help' describes each command.")
    commands = parser.add_subparsers(dest="command", required=True)

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
    release.add_argument("--solver", default=None, help=_solver_help())
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
                              "matter instead of all at once, and on Adult's 3-way tables at epsilon 0.3-1 the rows "
                              "here were 1.1-1.6x as far from the truth as its rows")
    release.add_argument("--synthetic-rows", type=int, default=None,
                         help="how many synthetic rows (default: the release's public size)")
    release.add_argument("--force", action="store_true", help="overwrite existing output files (never an input)")
    release.set_defaults(handler=_release)

    audit = commands.add_parser(
        "audit", help="statistical lower bounds on the epsilon of projmech's own mechanisms "
                      "(projmech.audit.self_audit)")
    audit.add_argument("--mechanism", choices=("all", *MECHANISMS), default="all",
                       help="the mechanism to audit, each on its own pair of neighbouring data sets (default: all)")
    audit.add_argument("--neighbouring", choices=("both", "replace-one", "add-remove"), default="both")
    audit.add_argument("--releases", type=int, default=100_000, help="releases per data set (default 100,000)")
    audit.add_argument("--confidence", type=float, default=0.99, help="of every bound (default 0.99)")
    audit.add_argument("--planted-bug", action="store_true",
                       help="divide every noise scale by 2 (4 where the pair attains half the claim) while keeping "
                            "the claim: shows the audit's power")
    audit.add_argument("--noise", choices=NOISE_KINDS, default="auto",
                       help="the audited mechanisms' noise, as for release --noise (default auto: exact discrete "
                            "noise on counts, drawn from OS entropy)")
    audit.add_argument("--delta", type=float, default=None,
                       help="delta of the (epsilon, delta) mechanisms audited (default 1e-5; 1e-3 with "
                            "--planted-bug, where a planted bug shows at 20,000 releases)")
    audit.add_argument("--seed", type=int, default=None,
                       help="seed of the auditor's own randomness and of continuous noise; discrete noise draws "
                            "from OS entropy, so a run repeats exactly only with --noise continuous")
    audit.add_argument("--out", default=None, help="CSV of the results (a new file)")
    audit.add_argument("--force", action="store_true", help="overwrite --out")
    audit.set_defaults(handler=_audit)

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
                            "universe, or held by a junction tree of the measured tables beyond 4 million cells), "
                            "joint (the maximum-entropy distribution with the certified projection's tables; up to "
                            "4 million cells), tables (the local projection's tables, completed one by one), auto "
                            "(default: regularized up to 15,000 measured cells, over the universe up to 250,000 "
                            "cells, else on a junction tree of at most 1,000,000 cells; else tables)")
    synth.add_argument("--out", required=True, help="CSV of the synthetic rows, each value its label (a new file)")
    synth.add_argument("--summary", help="JSON summary path (default: --out with .json)")
    synth.add_argument("--force", action="store_true", help="overwrite existing output files (never an input)")
    synth.set_defaults(handler=_synthesize, synthetic=None, ranges=None)

    demo = commands.add_parser("demo", help="Gaussian vs projection on the embedded binarized Adult data")
    demo.add_argument("--trials", type=int, default=20)
    demo.add_argument("--epsilon", type=float, default=1.0)
    demo.add_argument("--delta", type=float, default=1e-6)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--out-dir", default="demo_output",
                      help=f"folder of the results ({' and '.join(DEMO_OUTPUTS)}; default demo_output)")
    demo.add_argument("--force", action="store_true", help="overwrite the results of an earlier run")
    demo.set_defaults(handler=_demo)
    parser.commands = commands.choices
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_command_line(argv)
    try:
        with _warnings_in_one_line(f"projmech {args.command}", parser.commands[args.command].flags()):
            return args.handler(args)
    except KeyboardInterrupt:  # outputs being written were removed, earlier ones left as they were
        print(f"projmech {args.command}: interrupted", file=sys.stderr)
        return 130
    except (ValueError, TypeError, OSError) as error:
        message = _in_flags(error, args, parser.commands[args.command].flags())
        print(f"projmech {args.command}: error: {_one_line(message)}", file=sys.stderr)
        return 2
    except Exception as error:  # a solver failure, or a bug: still one line, unless asked
        if os.environ.get("PROJMECH_TRACEBACK"):
            raise
        print(f"projmech {args.command}: error: {type(error).__name__}: {_one_line(error)} "
              "(set PROJMECH_TRACEBACK=1 for the traceback)", file=sys.stderr)
        return 1


#: The flag of each library argument that a command passes on from a flag of its own, for the
#: errors that name the argument (:class:`projmech.errors.ArgumentError`); a budget (``privacy``)
#: is named by the flag of its part at fault (``rho``, ``epsilon``, ``delta``) where the user gave
#: it, else by the budget's flag the user gave.
ARGUMENT_FLAGS = {
    "rho": "--rho", "epsilon": "--epsilon", "delta": "--delta", "rows": "--rows", "workload": "--workload",
    "estimator": "--estimator", "noise": "--noise", "size": "--size", "size_share": "--size-share",
    "neighbouring": "--neighbouring", "objective": "--objective", "body": "--body", "solver": "--solver",
    "relaxation": "--relaxation", "synthetic_rows": "--synthetic-rows",
    # The adaptive mechanism's max_cells has no flag: a workload none of whose tables fits in it is
    # the workload's to change.
    "max_cells": "--workload",
}


def _flag_of(argument: str, part: str | None, args: argparse.Namespace, flags: Collection[str]) -> str | None:
    """The command's flag for a library argument (and its part), or None where it has none."""
    if argument == "privacy":
        given = [flag for flag in ("--rho", "--epsilon", "--delta")
                 if flag in flags and getattr(args, flag[2:], None) is not None]
        preferred = ARGUMENT_FLAGS.get(part or "")
        return preferred if preferred in given else (given[0] if given else None)
    flag = ARGUMENT_FLAGS.get(argument)
    return flag if flag in flags else None


def _in_flags(error: BaseException, args: argparse.Namespace, flags: Collection[str]) -> str:
    """An error in the command's words: one from the library that names its argument as data
    (:class:`projmech.errors.ArgumentError`) names the flag that gave that argument instead, and
    the other flags it suggests; any other error as it is (the command's own name their flags)."""
    if not isinstance(error, ArgumentError):
        return str(error)
    flag = _flag_of(error.argument, error.part, args, flags)
    if flag is None:
        return str(error)

    def setting(argument: str, value: str) -> str:
        other = _flag_of(argument, None, args, flags)
        return f"{other} {value}" if other is not None else f"{argument}={value!r}"

    return f"{flag}: {error.describe(setting)}"


def _one_line(message: object) -> str:
    return " ".join(str(message).split())


@contextlib.contextmanager
def _warnings_in_one_line(prog: str, flags: Collection[str]) -> Iterator[None]:
    """Every warning shown while a command runs as one line on stderr, ``projmech release:
    warning: <message>``, without Python's file and line (a warning meant for developers, not a
    UserWarning, keeps its category's name); the command runs on. A message that opens with
    the library's argument (``delta: ...``) names the command's flag instead (``--delta: ...``),
    where ``flags`` has it."""
    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        kind = "" if issubclass(category, UserWarning) else f"{category.__name__}: "
        text = _one_line(message)
        argument, colon, rest = text.partition(": ")
        flag = "--" + argument.replace("_", "-")
        if colon and flag in flags:
            text = f"{flag}: {rest}"
        print(f"{prog}: warning: {kind}{text}", file=sys.stderr)

    with warnings.catch_warnings():  # restores the previous showwarning on the way out
        warnings.showwarning = show
        yield


if __name__ == "__main__":
    sys.exit(main())
