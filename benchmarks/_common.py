"""What the benchmark scripts share: arguments, data, a timer, tables, and their output files.

Not a benchmark: the scripts import it (``from _common import ...``; each runs as
``python benchmarks/NAME.py``, which puts this folder first on ``sys.path``).

- **Arguments**: :func:`argument_parser` (the script's docstring as its ``--help``),
  :func:`int_list` and :func:`name_list` for comma-separated options, :func:`usage_error` for
  an invalid combination (``NAME.py: error: ...`` on stderr, exit status 2), :func:`unknown_names`
  for names an option does not know.
- **Smoke runs**: :func:`add_smoke_option` gives a script ``--smoke``, its whole code path on tiny
  sizes in seconds (a check that it runs, not a measurement); :func:`smoke_path` puts an output
  file of such a run into a fresh temporary folder instead of ``results/``.
- **Data**: :func:`binary_domain`, the ``d`` binary attributes ``x0 ... x{d-1}`` of the
  synthetic workloads; :func:`chain_records`, categorical records with dependent attributes.
- **Time**: :class:`Timer`, wall-clock seconds from :func:`time.perf_counter`.
- **Memory**: :func:`peak_memory_mb`, a process's peak resident memory (``VmHWM`` on Linux, not
  ``ru_maxrss``, which a worker inherits from its parent), and :func:`vm_status_mb`.
- **Tables**: :func:`ruled` (fixed width: header, a rule of dashes, rows), :func:`column_table`
  (a ruled table from column specifications) and :func:`markdown`.
- **Output**: :func:`write_csv` writes a result table (its folder created on demand) and, beside
  it, ``NAME.run.json``: the record of the run (:func:`run_record`: the command line, the machine,
  the BLAS thread settings and the package versions), so that a table can be traced to what
  produced it. (What only a run record needs is imported when one is written: the solvers'
  worker processes measure their memory with this module loaded.) :data:`RESULTS` is the repository's ``results/``
  folder.

BLAS threads: no script sets them; each runs with the environment's settings (as ``make
benchmarks`` does), which :func:`blas_threads` reports and every run record carries. To time
single-threaded BLAS, set ``OMP_NUM_THREADS=1`` (and ``OPENBLAS_NUM_THREADS`` / ``MKL_NUM_THREADS``)
in the environment: they must be set before numpy is first imported, so not from here.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import math
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from projmech import Domain

#: The repository's ``results/`` folder (git-ignored), where the scripts write by default.
RESULTS = Path(__file__).resolve().parent.parent / "results"
#: Environment variables that size the thread pools of the BLAS numpy and scipy link to.
THREAD_VARIABLES: tuple[str, ...] = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: Packages whose versions :func:`package_versions` reports (those installed).
PACKAGES: tuple[str, ...] = ("projmech", "numpy", "scipy", "cvxpy", "scs", "clarabel", "mbi", "jax")


# --- arguments ----------------------------------------------------------------------------------

def argument_parser(doc: str | None) -> argparse.ArgumentParser:
    """A parser whose ``--help`` is the script's docstring ``doc``, line breaks kept."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def int_list(text: str) -> list[int]:
    """``"1,2, 3"`` -> ``[1, 2, 3]``; empty parts are skipped, so ``""`` is the empty list."""
    return [int(part) for part in text.split(",") if part.strip()]


def float_list(text: str) -> list[float]:
    """``"0.1,1, 10"`` -> ``[0.1, 1.0, 10.0]``; empty parts are skipped."""
    return [float(part) for part in text.split(",") if part.strip()]


def name_list(text: str) -> list[str]:
    """``"a, b"`` -> ``["a", "b"]``; empty parts are skipped."""
    return [part.strip() for part in text.split(",") if part.strip()]


def aim_error(tables: dict[tuple[int, ...], np.ndarray], truth: dict[tuple[int, ...], np.ndarray],
              among: Iterable[tuple[int, ...]] | None = None) -> float:
    """AIM's error metric: the mean over the tables of ``truth`` (or those ``among`` them) of half
    the L1 distance between the normalized tables."""
    keys = list(truth if among is None else among)
    return float(np.mean([0.5 * np.abs(tables[t] - truth[t]).sum() for t in keys]))


def add_smoke_option(parser: argparse.ArgumentParser, sizes: str) -> None:
    """Give ``parser`` the flag ``--smoke``: the script's whole code path on the tiny ``sizes``
    (described in its help), its outputs written by :func:`smoke_path`."""
    parser.add_argument("--smoke", action="store_true",
                        help=f"check that the script runs, in seconds: {sizes}; outputs go to a new temporary "
                             "folder (not results/); the numbers mean nothing and no target sets the exit status")


_smoke_folder: Path | None = None


def smoke_folder() -> Path:
    """The folder of a smoke run's outputs: made once per process, ``projmech-smoke-*`` in the
    system's temporary directory (``TMPDIR``)."""
    global _smoke_folder
    if _smoke_folder is None:
        _smoke_folder = Path(tempfile.mkdtemp(prefix="projmech-smoke-"))
    return _smoke_folder


def smoke_path(path: str | Path) -> Path:
    """Where a smoke run writes the output ``path``: its file name in :func:`smoke_folder`."""
    return smoke_folder() / Path(path).name


def not_installed(*packages: str) -> str | None:
    """Why a comparison with an external package cannot run here: the first of ``packages`` not
    installed (``"mbi is not installed ..."``), or None. Found without importing it."""
    import importlib.util

    for package in packages:
        if importlib.util.find_spec(package) is None:
            return f"{package} is not installed (pip install -e '.[benchmarks]')"
    return None


def usage_error(message: str) -> int:
    """Print ``NAME.py: error: message`` to stderr (``NAME.py`` the running script); return 2,
    the exit status of a usage error."""
    print(f"{Path(sys.argv[0]).name}: error: {message}", file=sys.stderr)
    return 2


def unknown_names(flag: str, given: Iterable[str], known: Iterable[str], *, at_least_one: bool = False) -> int | None:
    """The :func:`usage_error` of an option naming rows, tables, parts ... that the script does not
    have (``FLAG: unknown [...]; choose among [...]``, each unknown name once, in the order given),
    or of none named where ``at_least_one``; None where the names are fine."""
    given, known = list(given), list(known)
    unknown = list(dict.fromkeys(name for name in given if name not in known))
    if unknown:
        return usage_error(f"{flag}: unknown {unknown}; choose among {known}")
    if at_least_one and not given:
        return usage_error(f"{flag}: name at least one; choose among {known}")
    return None


# --- data ----------------------------------------------------------------------------------------

def binary_domain(d: int) -> Domain:
    """``d`` binary attributes named ``x0``, ..., ``x{d-1}``."""
    return Domain([f"x{i}" for i in range(d)], [2] * d)


def chain_records(sizes: Sequence[int], rows: int, rng: np.random.Generator) -> np.ndarray:
    """``rows`` records over attributes of ``sizes`` from a chain Bayesian network: the first
    attribute uniform, each next one drawn given the previous from Dirichlet(0.5) tables (drawn
    first, from ``rng``), so that the pair tables are far from independent and sparse."""
    records = np.zeros((rows, len(sizes)), dtype=np.int64)
    records[:, 0] = rng.integers(0, sizes[0], rows)
    for i in range(1, len(sizes)):
        table = rng.dirichlet(np.full(sizes[i], 0.5), size=sizes[i - 1])
        cumulative = np.cumsum(table[records[:, i - 1]], axis=1)
        records[:, i] = np.minimum((rng.random(rows)[:, None] > cumulative).sum(axis=1), sizes[i] - 1)
    return records


# --- time ----------------------------------------------------------------------------------------

class Timer:
    """Wall-clock seconds by :func:`time.perf_counter`, from when it was made or entered.

    ``timer = Timer()`` starts it and ``timer.seconds`` is the time elapsed so far; as a context
    manager (``with Timer() as timer: ...``) it restarts on entry and ``timer.seconds`` stays the
    block's duration after the block.
    """

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.stop: float | None = None

    def __enter__(self) -> Timer:
        self.start, self.stop = time.perf_counter(), None
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop = time.perf_counter()

    @property
    def seconds(self) -> float:
        return (time.perf_counter() if self.stop is None else self.stop) - self.start


# --- tables --------------------------------------------------------------------------------------

def run_in_process(script: str, job: Any, threads: int, timeout: float | None = None) -> dict[str, Any]:
    """Run ``script --worker JSON(job)`` in a fresh process whose BLAS uses ``threads`` threads
    (set before numpy loads); the JSON object its last line of output prints, with ``status``
    ``"ok"``, or only the ``status`` of its failure or timeout."""
    import json
    import subprocess

    environment = {**os.environ, **{variable: str(threads) for variable in THREAD_VARIABLES}}
    command = [sys.executable, script, "--worker", json.dumps(job)]
    try:
        done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": f"killed after {timeout:g} s"}
    if done.returncode != 0:
        return {"status": f"failed: {done.stderr.strip().splitlines()[-1] if done.stderr else done.returncode}"}
    return {"status": "ok", **json.loads(done.stdout.strip().splitlines()[-1])}


def run_aim(python: str, aim_path: str, data: Path, domain: Path, epsilon: float, seed: int, max_model_size: float,
            timeout: float, attributes: Sequence[str] | None = None) -> dict[str, Any]:
    """AIM by ``_aim_runner.py`` in a process of its own (``python``, the checkout ``aim_path``), at
    ``(epsilon, 1e-9)`` on the records ``data`` with the attribute sizes ``domain``: its error, model
    error, seconds, peak MB, rounds and ``status`` (or only the status of a failure or timeout)."""
    import json
    import subprocess

    command = [python, str(Path(__file__).with_name("_aim_runner.py")), "--aim-path", aim_path,
               "--data", str(data), "--domain", str(domain), "--epsilon", str(epsilon), "--delta", "1e-9",
               "--seed", str(seed), "--max-model-size", str(max_model_size), "--compat-shim"]
    if attributes:
        command += ["--attributes", ",".join(attributes)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": f"killed after {timeout:g} s"}
    lines = done.stdout.strip().splitlines()
    if not lines:
        return {"status": f"failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}"}
    result = json.loads(lines[-1])
    return {key: result.get(key) for key in ("error", "error_model", "seconds", "peak_mb", "rounds", "status")}


def cell(value: Any, spec: str) -> str:
    """``value`` formatted by ``spec``; empty for a missing value (None or NaN)."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def ruled(header: str, rows: Iterable[str]) -> str:
    """A fixed-width table: ``header``, a rule of dashes as long as it, then the formatted rows."""
    return "\n".join([header, "-" * len(header), *rows])


def column_table(rows: Iterable[Any], columns: Sequence[tuple[str, str, str | Callable[[Any], Any]]]) -> str:
    """A :func:`ruled` table of ``rows`` (named tuples), then each row's ``status`` after two spaces.

    A column is ``(title, spec, value)``: ``value`` a field name or a function of the row; an
    alignment ``spec`` (``"<16"``, ``">5"``) formats any value, a number ``spec`` (``"10.5f"``)
    a number, a missing one as ``-`` (``format_number``).
    """
    from projmech.analysis import format_number

    def formatted(row: Any, spec: str, field: str | Callable[[Any], Any]) -> str:
        value = getattr(row, field) if isinstance(field, str) else field(row)
        return format(value, spec) if spec[0] in "<>" else format_number(value, spec)

    titles = [format(title, spec if spec[0] in "<>" else f">{spec.split('.')[0]}") for title, spec, _ in columns]
    lines = (" ".join(formatted(row, spec, field) for _, spec, field in columns) + f"  {row.status}" for row in rows)
    return ruled(" ".join(titles) + "  status", lines)


def markdown(header: Sequence[str], rows: Iterable[Sequence[str]], align: Sequence[str] | None = None) -> str:
    """A markdown table of string cells; ``align`` holds each column's rule (default ``---:``,
    right-aligned)."""
    align = align or ["---:"] * len(header)
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# --- the run and its output files ----------------------------------------------------------------

# --- memory ------------------------------------------------------------------------------------

def vm_status_mb(field: str) -> float | None:
    """A ``Vm*`` line of ``/proc/self/status`` (kernel kB) in MB (10^6 bytes); None off Linux."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024 / 1e6
    except OSError:
        pass
    return None


def answers_digest(values: Any) -> str:
    """The first 12 hex digits of the SHA-256 of an array's float64 bytes: equal answers across runs and threads."""
    import numpy as np

    return hashlib.sha256(np.ascontiguousarray(values, dtype=float).tobytes()).hexdigest()[:12]


def peak_memory_mb() -> float:
    """Peak resident memory of this process in MB (10^6 bytes): ``VmHWM`` on Linux.

    Not ``ru_maxrss`` there: the kernel carries the parent's high-water mark across fork and exec
    into it (measured: a worker of a 1.2 GB parent read 1.2 GB), so a worker would report the
    main process's size. It is the fallback elsewhere (bytes on macOS, KiB on other systems).
    """
    peak = vm_status_mb("VmHWM")
    if peak is not None:
        return peak
    import resource  # POSIX only, and only needed off Linux

    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss / 1e6 if sys.platform == "darwin" else maxrss * 1024 / 1e6


def blas_threads() -> dict[str, str]:
    """Each of :data:`THREAD_VARIABLES` as the environment sets it, or ``"unset"``."""
    return {name: os.environ.get(name, "unset") for name in THREAD_VARIABLES}


def package_versions(packages: Sequence[str] = PACKAGES) -> dict[str, str]:
    """The Python version and that of each installed package of ``packages``."""
    import importlib.metadata
    import platform

    found = {"python": platform.python_version()}
    for package in packages:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


def run_record() -> dict[str, Any]:
    """What produced a result: the command line, when, on which machine, with which threads and
    package versions."""
    import datetime
    import platform
    import shlex

    return {
        "command": shlex.join([Path(sys.executable).name, *sys.argv]),
        "cwd": os.getcwd(),
        "finished": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                    "cpu_count": os.cpu_count()},
        "blas_threads": blas_threads(),
        "versions": package_versions(),
    }


def write_csv(frame: pd.DataFrame, path: str | Path, *, index: bool = False) -> Path:
    """Write ``frame`` to the CSV file ``path`` (creating its folder) and the run's record
    (:func:`run_record`) beside it as ``<stem>.run.json``, each through a temporary file renamed
    over it, so that a reader never sees half a file; the path of the CSV."""
    import json

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    _replace(out, frame.to_csv(index=index))
    _replace(out.with_name(out.stem + ".run.json"), json.dumps(run_record(), indent=2) + "\n")
    return out


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file of its own beside ``path``, then rename it over ``path``."""
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=path.name + ".", suffix=".part",
                                     delete=False) as handle:
        handle.write(text)
    os.replace(handle.name, path)


def import_mbi() -> tuple[Any, str]:
    """``(mbi module, version)``, or ``(None, why)`` when it cannot be used."""
    try:
        import jax
    except ImportError:
        return None, "jax is not installed"
    # Before mbi touches an array: float64 (mbi warns that float32 stalls on large totals) and no
    # persistent compilation cache (mbi warns it is counterproductive).
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import mbi
            from mbi import approximate_oracles, estimation, marginal_loss  # noqa: F401
    except ImportError as error:
        return None, f"mbi is not installed ({error}); pip install -e '.[benchmarks]'"
    version = importlib.metadata.version("mbi")
    if int(version.split(".")[0]) < 2:
        return None, f"mbi {version} is installed; this script needs the 2.x API (mbi>=2.0)"
    return mbi, version
