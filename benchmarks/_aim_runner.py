"""Run AIM, the reference implementation from Private-PGM, in its own process; print one JSON line.

Not a benchmark by itself: the comparison of projmech's adaptive mechanism with AIM calls it as a
subprocess, one run per (epsilon, seed), so that AIM's time and peak memory are its own. No AIM
code lives in this repository: the runner imports ``mechanisms/aim.py`` (with its neighbours
``mechanism.py`` and ``cdp2adp.py``) from a checkout named by ``--aim-path`` (the file, the
``mechanisms/`` folder or the repository root) and runs its ``AIM`` class against the ``mbi``
installed in the interpreter (mbi 2.0.0, JAX 0.10.2, on the CPU).

Getting the reference code (read-only, outside this repository; any folder will do)::

    git clone https://github.com/ryan112358/private-pgm private-pgm-src   # Private-PGM
    git -C private-pgm-src checkout 4d2b3c566b148da3ef800ce76e6189c548f2da22
    git clone https://github.com/ryan112358/mbi mbi-src                   # its successor
    git -C mbi-src checkout 361705d7f05f8c0ac4d5b3640e688eb4f692346e

and an interpreter with mbi 2.0.0 and JAX (``pip install -e '.[benchmarks]'`` installs both).

The files run so far (SHA-256 of ``aim.py``, which the output repeats): private-pgm 4d2b3c5,
``d7f551f45ea9c3de8a44420ad32b0cac3100c7713d46d23d249936776b351c81``; mbi 361705d,
``17a1a1b6d40d1e30e79c6e32149113fd26037b1266d50f9298047d2461db25b0``.

Compatibility with mbi 2.0.0 (checked by :func:`preflight` on every run; see ``--compat-shim``):

- private-pgm 4d2b3c5 (2025-08-08) ``aim.py`` targets mbi 1.0: it calls
  ``estimation.mirror_descent`` (removed in 2.0: ``estimation.MirrorDescent().estimate``), warm-starts
  with ``potentials=`` (2.0: ``warm_start=``) and computes ``model.cliques + [cl]`` (2.0:
  ``cliques`` is a tuple, so tuple + list raises ``TypeError``); its ``__main__`` also loads the
  data with ``Dataset.load`` (gone in 2.0; the runner loads the data itself).
- mbi 361705d (2026-07-22) ``aim.py`` targets the class-based API; its only incompatibility is the
  ``potentials=`` keyword of ``MirrorDescent().estimate``, deprecated in that commit's library and
  removed in 2.0.0.

Without ``--compat-shim`` an incompatible ``aim.py`` is reported in ``status`` and not run. With
it, the runner patches the installed mbi *in this process only* with call translations
(:data:`SHIMS`): the file is never edited and the estimator, its iterations and step sizes are
mbi 2.0.0's own. The shims used are listed in the output's ``shims``.

Workload and error (as ``aim.py``'s ``__main__`` builds and scores them): every ``--degree``-way
marginal of the chosen attributes with weight 1 (``--max-cells`` drops the larger ones, as the
reference's own ``--max_cells``, default 10000 there, does; here the default keeps them all), and
the mean over the workload of ``0.5 * ||mu_hat - mu||_1``, each marginal normalized to sum 1,
``mu_hat`` from AIM's synthetic records (``error``) and from its model (``error_model``). That
scoring sits inline in the reference's ``__main__``, which cannot be called, so
:func:`workload_error` computes it with mbi's own ``project(...).datavector()``.

Randomness: AIM draws its Gaussian noise and its exponential-mechanism choices from
``Mechanism.prng``, which is the global ``np.random`` (private-pgm's ``AIM.__init__`` passes its
``prng`` argument into ``Mechanism``'s ``bounded`` slot, so ``np.random`` is used whatever is given;
mbi's uses ``prng or np.random``), and mbi's ``synthetic_data`` rounds with ``np.random`` too. JAX's
mirror descent draws nothing. So the runner calls ``np.random.seed(seed)`` right before ``run`` and
passes no ``prng``. That alone does not fix a run: ``aim.py`` orders its candidates by iterating
sets of attribute-name tuples, so the order, and with it the candidate a sampled index picks,
follows Python's per-process string hashing. The runner therefore re-executes itself with
``PYTHONHASHSEED=0`` unless the caller set one (:func:`pin_hash_seed`; reported as ``hash_seed``).
With both, two runs of one seed gave bit-identical output on this machine; without the hash seed,
two runs of seed 0 diverged at the fifth selection.

Output (one line on stdout; AIM's own progress prints go to stderr): ``epsilon``, ``delta``,
``seed``, ``max_model_size``, ``error``, ``error_model``, ``seconds`` (wall time of ``AIM.run``,
JAX compilation included, data loading and scoring excluded), ``peak_mb`` (``ru_maxrss``),
``vmhwm_mb`` (``VmHWM``: this process image only, whereas ``ru_maxrss`` also counts what a
forking parent handed over), ``rounds`` (adaptive selections), ``measurements`` (with the one-way
marginals), ``workload`` (marginals), ``rows``, ``reference`` (the file and its SHA-256), ``mbi``,
``shims``, ``hash_seed``, ``jax_cache_clears`` and ``status`` ("ok", or the exception, and then
exit status 1; a run stopped by SIGTERM, e.g. by ``timeout``, still prints its rounds and time).

Data: ``--data`` (a CSV of integer codes, gzipped or not) and ``--domain`` (JSON: attribute ->
number of values); by default the Adult files embedded in projmech (``projmech/datasets``), where
projmech is importable.

Usage (``--aim-path mbi-src`` runs the successor's file the same way)::

    .venv/bin/python benchmarks/_aim_runner.py --aim-path private-pgm-src \\
        --epsilon 1 --delta 1e-9 --seed 0 --max-model-size 80 --compat-shim \\
        [--data CSV --domain JSON] [--attributes a,b,c] [--degree 3] [--max-rows N] [--max-cells N]
    .venv/bin/python benchmarks/_aim_runner.py --smoke [--aim-path private-pgm-src]

``--smoke`` runs AIM on 3 attributes, all 2-way, the first 2,000 rows, epsilon 1 and a model of at
most 1 MB, and prints a line saying it skipped AIM where mbi or ``--aim-path`` is missing (exit 0).

Measured on the project's 2-core machine (CPU, mbi 2.0.0, JAX 0.10.2, Adult 48,842 rows, seed 0,
``PYTHONHASHSEED=0``; the full case with private-pgm's ``aim.py``, the small one with both files,
which gave bit-identical output):

- 5 attributes (``--attributes age,workclass,education-num,sex,race``; the domain has
  ``education-num``, no ``education``), all 2-way (10 marginals), epsilon 1, max-model-size 10:
  13 rounds, ``error`` 0.02638 (``error_model`` 0.02524), ``AIM.run`` 31 s on an idle machine and
  47-49 s beside other jobs, peak 1.1 GB (seed 1: 12 rounds, error 0.02815).
- all 14 attributes, all 3-way (364 marginals, 469 candidates), epsilon 1, max-model-size 80:
  does not finish in 20 minutes. A round takes 290-395 s, apparently mostly compiling one XLA
  program per candidate projection (the process's code mappings grow steadily through a round);
  after 4 rounds (1,177 s) AIM had spent 7.9 % of its budget (rho 0.00118 of 0.01497) and held
  4.1 GB, growing. Its schedule allows up to 16 x 14 = 224 rounds at this noise, fewer as it
  halves the noise, so a run takes hours (50 rounds at 5 min: about 4 h). Without dropping JAX's
  compiled programs it died in round 2, at 495 s.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import functools
import gzip
import hashlib
import importlib.metadata
import importlib.util
import inspect
import itertools
import json
import os
import resource
import signal
import sys
import time
import traceback
import types
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

Clique = tuple[str, ...]
Workload = list[tuple[Clique, float]]


# --- locating and importing the reference ------------------------------------------------------

def resolve_aim_file(path: Path) -> Path:
    """``aim.py`` given as the file, the ``mechanisms/`` folder or the repository root."""
    for candidate in (path, path / "aim.py", path / "mechanisms" / "aim.py"):
        if candidate.is_file() and candidate.name == "aim.py":
            return candidate.resolve()
    raise FileNotFoundError(f"no aim.py at {path}, {path}/aim.py or {path}/mechanisms/aim.py")


def import_reference(aim_file: Path) -> types.ModuleType:
    """Import ``aim.py`` as the module ``aim`` (so its ``__main__`` block does not run).

    Its folder goes first on ``sys.path`` because ``aim.py`` imports its neighbours by bare name
    (``from mechanism import Mechanism``, which imports ``cdp2adp``).
    """
    sys.path.insert(0, str(aim_file.parent))
    spec = importlib.util.spec_from_file_location("aim", aim_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["aim"] = module
    spec.loader.exec_module(module)
    return module


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- checking the reference against the installed mbi ------------------------------------------

class _Missing:
    """A name the installed mbi lacks (kept so that the report can say which)."""

    def __init__(self, name: str) -> None:
        self.name = name


def _mbi_imports(tree: ast.Module) -> dict[str, tuple[Any, int]]:
    """The names ``aim.py`` imports from mbi (``from mbi import X``): the installed object (or
    :class:`_Missing`) and the line of the import."""
    import mbi

    names: dict[str, tuple[Any, int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "mbi":
            for alias in node.names:
                found = getattr(mbi, alias.name, _Missing(alias.name))
                names[alias.asname or alias.name] = (found, node.lineno)
    return names


def _resolve(node: ast.expr, names: dict[str, Any]) -> Any:
    """The mbi object an expression names, or None where it is not statically an mbi object.

    Handles ``name``, ``name.attr`` and ``Class(...).method`` (a call of a class stands for an
    instance, whose methods are looked up on the class), which covers how ``aim.py`` uses mbi.
    """
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Call):
        callee = _resolve(node.func, names)
        return callee if inspect.isclass(callee) else None
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, names)
        if base is None or isinstance(base, _Missing):
            return base
        return getattr(base, node.attr, _Missing(node.attr))
    return None


def _unknown_keywords(func: Any, call: ast.Call) -> list[str]:
    """Keyword arguments of ``call`` that ``func``'s signature does not accept."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return []
    return [kw.arg for kw in call.keywords if kw.arg is not None and kw.arg not in params]


def _without_main_block(tree: ast.Module) -> ast.Module:
    """The module without its ``if __name__ == "__main__":`` block, which the runner never runs."""
    def is_main_guard(node: ast.stmt) -> bool:
        return isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)

    tree.body = [node for node in tree.body if not is_main_guard(node)]
    return tree


def preflight(aim_file: Path) -> list[str]:
    """Uses of mbi in ``aim.py`` that the installed mbi cannot honour, one line each.

    A static check (names and keyword arguments), so that an incompatible reference fails at once
    rather than after minutes of estimation; what it cannot see (e.g. a tuple where a list was
    expected) still surfaces as the run's exception.
    """
    tree = _without_main_block(ast.parse(aim_file.read_text(), filename=str(aim_file)))
    imports = _mbi_imports(tree)
    names = {name: found for name, (found, _) in imports.items()}
    problems = [f"line {line}: mbi has no {found.name!r}"
                for found, line in imports.values() if isinstance(found, _Missing)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            target = _resolve(node, names)
            base = _resolve(node.value, names)
            if isinstance(target, _Missing) and base is not None and not isinstance(base, _Missing):
                problems.append(f"line {node.lineno}: {ast.unparse(node)}: "
                                f"mbi has no attribute {node.attr!r}")
        elif isinstance(node, ast.Call):
            func = _resolve(node.func, names)
            if func is not None and not isinstance(func, _Missing) and callable(func):
                for kw in _unknown_keywords(func, node):
                    problems.append(f"line {node.lineno}: {ast.unparse(node.func)}() takes no keyword {kw!r}")
    return sorted(set(problems), key=lambda p: int(p.split(":")[0].split()[1]))


# --- opt-in call translations for a reference written against an older mbi ---------------------

def _shim_warm_start_keyword() -> None:
    """``Estimator.estimate(..., potentials=P)`` (mbi <= 1.x) -> ``warm_start=P`` (2.0).

    mbi 2.0's ``warm_start`` takes a CliqueVector of potentials and expands it to the loss's
    cliques, which is what the removed keyword did.
    """
    from mbi import estimation

    original = estimation.Estimator.estimate

    @functools.wraps(original)
    def estimate(self: Any, *args: Any, potentials: Any = None, **kwargs: Any) -> Any:
        if potentials is not None:
            kwargs.setdefault("warm_start", potentials)
        return original(self, *args, **kwargs)

    estimation.Estimator.estimate = estimate


def _shim_mirror_descent_function() -> None:
    """``estimation.mirror_descent(domain, loss, ...)`` (mbi 1.0) -> ``MirrorDescent(...).estimate``."""
    from mbi import estimation

    if hasattr(estimation, "mirror_descent"):
        return

    def mirror_descent(domain: Any, loss_fn: Any, *, known_total: float | None = None,
                       potentials: Any = None, iters: int = 1000, stepsize: float | None = None,
                       callback_fn: Callable[..., None] | None = None, **_unused: Any) -> Any:
        return estimation.MirrorDescent(stepsize=stepsize).estimate(
            domain, loss_fn, known_total=known_total, iters=iters,
            callback_fn=callback_fn, warm_start=potentials)

    estimation.mirror_descent = mirror_descent


def _shim_cliques_as_list() -> None:
    """``MarkovRandomField.cliques`` as a list (mbi 1.0), so that ``model.cliques + [cl]`` works."""
    from mbi import MarkovRandomField

    MarkovRandomField.cliques = property(lambda self: list(self.potentials.cliques))


#: name -> patch; each is a call translation only (no numerics change), applied with --compat-shim.
SHIMS: dict[str, Callable[[], None]] = {
    "estimate(potentials=) -> warm_start=": _shim_warm_start_keyword,
    "estimation.mirror_descent -> MirrorDescent().estimate": _shim_mirror_descent_function,
    "MarkovRandomField.cliques -> list": _shim_cliques_as_list,
}


def apply_shims(problems: Sequence[str], aim_source: str) -> list[str]:
    """Apply the shims that the preflight ``problems`` (and, for the tuple that a list was, the
    source, which the static check cannot type) call for; return their names."""
    report = "\n".join(problems)
    needed = {
        "estimate(potentials=) -> warm_start=": "keyword 'potentials'" in report,
        "estimation.mirror_descent -> MirrorDescent().estimate": "'mirror_descent'" in report,
        "MarkovRandomField.cliques -> list": "model.cliques +" in aim_source,
    }
    used = [name for name, wanted in needed.items() if wanted]
    for name in used:
        SHIMS[name]()
    return used


# --- data and workload --------------------------------------------------------------------------

def load_data(csv_path: Path, domain_path: Path, attributes: Sequence[str] | None,
              max_rows: int | None) -> Any:
    """An ``mbi.Dataset`` of the chosen attributes (domain order), the first ``max_rows`` rows.

    The first rows, not a sample, so that every seed sees the same data.
    """
    from mbi import Dataset, Domain

    sizes: dict[str, int] = json.loads(domain_path.read_text())
    chosen = list(sizes) if attributes is None else [a for a in sizes if a in set(attributes)]
    unknown = sorted(set(attributes or ()) - set(sizes))
    if unknown:
        raise ValueError(f"unknown attributes {unknown}; the domain has {list(sizes)}")
    with (gzip.open(csv_path, "rt", newline="") if csv_path.suffix == ".gz" else csv_path.open(newline="")) as handle:
        header = next(csv.reader(handle))
    columns = [header.index(a) for a in chosen]
    table = np.loadtxt(csv_path, delimiter=",", skiprows=1, usecols=columns, dtype=np.int64,
                       max_rows=max_rows, ndmin=2)
    domain = Domain.fromdict({a: sizes[a] for a in chosen})
    data = {a: table[:, i] for i, a in enumerate(chosen)}
    for a, column in data.items():
        if column.min() < 0 or column.max() >= sizes[a]:
            raise ValueError(f"{a}: codes outside 0..{sizes[a] - 1}")
    return Dataset(data, domain)


def build_workload(domain: Any, degree: int, max_cells: int | None) -> Workload:
    """Every ``degree``-way marginal with weight 1, those over ``max_cells`` cells dropped."""
    cliques = itertools.combinations(domain.attributes, degree)
    return [(cl, 1.0) for cl in cliques if max_cells is None or domain.size(cl) <= max_cells]


def workload_error(data: Any, estimate: Any, workload: Workload) -> float:
    """Mean over the workload of ``0.5 * w * ||x/|x| - y/|y| ||_1`` (the reference's scoring)."""
    errors = []
    for clique, weight in workload:
        x = np.asarray(data.project(clique).datavector(), dtype=np.float64)
        y = np.asarray(estimate.project(clique).datavector(), dtype=np.float64)
        errors.append(0.5 * weight * np.linalg.norm(x / x.sum() - y / y.sum(), 1))
    return float(np.mean(errors))


# --- running ------------------------------------------------------------------------------------

@contextlib.contextmanager
def progress_to_stderr() -> Iterator[None]:
    """AIM prints its progress with ``print``; keep stdout for the one JSON line."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def count_calls(obj: Any, method: str, before: Callable[[int], None] | None = None) -> list[int]:
    """Wrap ``obj.method`` (on the instance only) to count its calls; the count is ``[n]``.

    ``before(n)``, if given, runs ahead of the ``n``-th call.
    """
    counter = [0]
    inner = getattr(obj, method)

    @functools.wraps(inner)
    def counted(*args: Any, **kwargs: Any) -> Any:
        counter[0] += 1
        if before is not None:
            before(counter[0])
        return inner(*args, **kwargs)

    setattr(obj, method, counted)
    return counter


def mapping_count() -> int:
    """The memory mappings this process holds (lines of ``/proc/self/maps``; 0 off Linux)."""
    try:
        with open("/proc/self/maps", "rb") as handle:
            return sum(1 for _ in handle)
    except OSError:
        return 0


def mapping_limit() -> int:
    """Linux's ``vm.max_map_count``: past it, mmap fails (JAX's compiler then crashes)."""
    try:
        return int(Path("/proc/sys/vm/max_map_count").read_text())
    except (OSError, ValueError):
        return 65530


def drop_compiled_programs(policy: str) -> bool:
    """``jax.clear_caches()`` if ``policy`` is "always", or "auto" and the process holds over a
    quarter of the mapping limit (see :func:`round_hook`); whether it did."""
    import jax

    if policy == "always" or (policy == "auto" and mapping_count() > mapping_limit() // 4):
        jax.clear_caches()
        return True
    return False


def round_hook(start: float, policy: str, record: dict[str, Any]) -> Callable[[int], None]:
    """What runs ahead of each selection: the rounds begun and the time so far, into ``record``
    (so that a run stopped by a time limit still reports its progress) and as a line on stderr,
    and, as ``policy`` says, dropping JAX's compiled programs (counted in ``jax_cache_clears``).

    Why drop them: each round ``aim.py`` projects the model onto every candidate (469 on Adult
    3-way), and each projection of a new model structure is a new XLA program whose machine code
    holds its own memory mappings. On the full Adult workload the process passed 42,000 mappings
    within the first round, gained up to 47,000 in a round, and died in the second (LLVM "Cannot
    allocate memory", then SIGSEGV) at Linux's default ``vm.max_map_count`` of 65,530. The
    structures change every round, so the dropped programs would not have been reused, and the
    results are unchanged (bit for bit on the small case); but where the mappings stay few,
    dropping costs recompiling the estimator (49 s -> 96 s on the small case, side by side). So
    ``auto`` drops them only once the process holds over a quarter of the limit (the small case
    peaks at 8,600).
    """
    record["jax_cache_clears"] = 0

    def hook(n: int) -> None:
        record["jax_cache_clears"] += drop_compiled_programs(policy)
        elapsed = time.perf_counter() - start
        record.update(rounds=n, seconds=round(elapsed, 3))
        print(f"[aim-runner] round {n} at {elapsed:.1f} s, {mapping_count()} mappings",
              file=sys.stderr, flush=True)

    return hook


def run_aim(aim: types.ModuleType, data: Any, workload: Workload, args: argparse.Namespace,
            record: dict[str, Any]) -> None:
    """Run ``AIM.run`` once, timed; score its synthetic records and its model into ``record``."""
    mechanism = aim.AIM(args.epsilon, args.delta, max_model_size=args.max_model_size)
    start = time.perf_counter()
    # One adaptive round = one exponential-mechanism selection (the reference does not return it).
    hook = round_hook(start, args.clear_jax_caches, record)
    rounds = count_calls(mechanism, "worst_approximated", hook)
    noise_draws = count_calls(mechanism, "gaussian_noise")
    np.random.seed(args.seed)
    try:
        with progress_to_stderr():
            model, synth = mechanism.run(data, workload)
    finally:  # also when stopped: the time and rounds so far
        record.update(seconds=round(time.perf_counter() - start, 3), rounds=rounds[0],
                      measurements=noise_draws[0])
    record["error"] = workload_error(data, synth, workload)
    # Projecting the model compiles one program per workload marginal (364 on Adult 3-way).
    record["jax_cache_clears"] += drop_compiled_programs(args.clear_jax_caches)
    record["error_model"] = workload_error(data, model, workload)


class Terminated(Exception):
    """The process was asked to stop (e.g. by ``timeout``), so that the JSON line still comes out."""


def _raise_terminated(signum: int, _frame: Any) -> None:
    raise Terminated(f"stopped by signal {signal.Signals(signum).name}")


def vmhwm_mb() -> float | None:
    """Peak resident memory from ``/proc/self/status`` (Linux), in MB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--aim-path", type=Path, default=None,
                        help="aim.py, its mechanisms/ folder, or the repository root (required but with --smoke)")
    parser.add_argument("--data", type=Path, default=None,
                        help="CSV of integer codes, one column per attribute, gzipped or not "
                             "(default: projmech's embedded Adult)")
    parser.add_argument("--domain", type=Path, default=None,
                        help="JSON: attribute -> number of values (default: projmech's embedded Adult's)")
    parser.add_argument("--epsilon", type=float, default=None, help="required but with --smoke")
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-model-size", type=float, default=80.0, help="AIM's limit, in MB")
    parser.add_argument("--attributes", type=lambda s: [a.strip() for a in s.split(",") if a.strip()],
                        default=None, help="comma-separated; default: every attribute of the domain")
    parser.add_argument("--degree", type=int, default=3)
    parser.add_argument("--max-rows", type=int, default=None, help="use the first N rows")
    parser.add_argument("--max-cells", type=int, default=None,
                        help="drop workload marginals with more cells (default: keep all)")
    parser.add_argument("--clear-jax-caches", choices=("auto", "always", "never"), default="auto",
                        help="drop JAX's compiled programs before a round (see round_hook)")
    parser.add_argument("--compat-shim", action="store_true",
                        help="translate calls an older aim.py makes to the installed mbi (see SHIMS)")
    parser.add_argument("--smoke", action="store_true",
                        help="check that the runner works, in a minute: AIM on 3 attributes, 2-way, 2,000 rows, "
                             "epsilon 1, max model 1 MB, with --compat-shim; skipped (exit 0) without mbi or "
                             "--aim-path")
    args = parser.parse_args(argv)
    if args.smoke:
        args.epsilon = 1.0 if args.epsilon is None else args.epsilon
        args.attributes, args.degree, args.max_rows = ["workclass", "race", "sex"], 2, 2000
        args.max_model_size, args.compat_shim = 1.0, True
    elif args.aim_path is None or args.epsilon is None:
        parser.error("--aim-path and --epsilon are required (but with --smoke)")
    if args.data is None or args.domain is None:
        data, domain = embedded_adult()
        if data is None:
            parser.error("--data and --domain are required where projmech is not installed")
        args.data, args.domain = args.data or data, args.domain or domain
    return args


def embedded_adult() -> tuple[Path, Path] | tuple[None, None]:
    """projmech's embedded Adult files (records, domain), or ``(None, None)`` where projmech is
    not installed in this interpreter."""
    try:
        from importlib import resources

        folder = resources.files("projmech.datasets")
    except ModuleNotFoundError:
        return None, None
    return Path(str(folder.joinpath("adult.csv.gz"))), Path(str(folder.joinpath("adult-domain.json")))


def smoke_skip(args: argparse.Namespace) -> str | None:
    """Why a smoke run cannot run AIM here (mbi not installed, no checkout), or None."""
    if importlib.util.find_spec("mbi") is None:
        return "mbi is not installed (pip install -e '.[benchmarks]')"
    if args.aim_path is None:
        return "no --aim-path (Private-PGM's checkout; how to get it is in --help)"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.smoke and (why := smoke_skip(args)):
        print(f"AIM: skipped: {why}", flush=True)
        return 0
    # `timeout` sends SIGTERM: report the rounds done and the time so far rather than nothing.
    signal.signal(signal.SIGTERM, _raise_terminated)
    record: dict[str, Any] = {
        "epsilon": args.epsilon, "delta": args.delta, "seed": args.seed,
        "max_model_size": args.max_model_size, "degree": args.degree,
        "error": None, "error_model": None, "seconds": None, "peak_mb": None, "vmhwm_mb": None,
        "rounds": None, "measurements": None, "workload": None, "rows": None,
        "jax_cache_clears": None, "reference": None, "mbi": importlib.metadata.version("mbi"), "shims": [],
        "hash_seed": os.environ.get("PYTHONHASHSEED"), "status": "ok",
    }
    try:
        aim_file = resolve_aim_file(args.aim_path)
        record["reference"] = {"path": str(aim_file), "sha256": sha256(aim_file)}
        with progress_to_stderr():  # importing mbi and JAX may print
            problems = preflight(aim_file)
            if problems and not args.compat_shim:
                raise RuntimeError(f"aim.py is incompatible with mbi {record['mbi']} "
                                   f"(rerun with --compat-shim): " + "; ".join(problems))
            if args.compat_shim:
                record["shims"] = apply_shims(problems, aim_file.read_text())
            aim = import_reference(aim_file)
            data = load_data(args.data, args.domain, args.attributes, args.max_rows)
        workload = build_workload(data.domain, args.degree, args.max_cells)
        if not workload:
            raise ValueError("empty workload")
        record.update(workload=len(workload), rows=int(data.records))
        run_aim(aim, data, workload, args, record)
    except Exception as exc:  # the caller reads the failure from the JSON line
        traceback.print_exc(file=sys.stderr)
        record["status"] = f"{type(exc).__name__}: {exc}"
    record["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    record["vmhwm_mb"] = vmhwm_mb()
    print(json.dumps(record), flush=True)
    return 0 if record["status"] == "ok" else 1


def pin_hash_seed() -> None:
    """Re-execute this script with ``PYTHONHASHSEED=0`` unless the caller fixed one.

    ``aim.py`` orders its candidate marginals by iterating sets of attribute-name tuples, and its
    exponential mechanism maps a sampled index to a candidate through that order; with Python's
    per-process hash randomization the same numpy seed then selects different marginals (seen
    here: runs of one seed diverging at the fifth round). The variable is only read at start-up.
    """
    if os.environ.get("PYTHONHASHSEED", "random") == "random":
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        os.execve(sys.executable, [sys.executable, *sys.argv], env)


if __name__ == "__main__":
    pin_hash_seed()
    sys.exit(main())
