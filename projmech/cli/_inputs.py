"""Input flags shared by the commands (``--data``, ``--domain``, ``--engine``): regular files only
(a pipe or a device would hang the read), read into a data set with every failure naming the flag
and the file."""

from __future__ import annotations

import argparse
import glob
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path

from ..data import Dataset, Domain, is_parquet, read_frame
from ..errors import ArgumentError
from ._files import non_regular_kind
from ._messages import one_line
from ._outputs import Outputs, output_paths

__all__ = ["IN_MEMORY_BYTES", "data_files", "domain_file", "choose_engine", "read_inputs", "open_files"]


def _regular_file(flag: str, path: Path, what: str) -> None:
    """Refuse an input that is not a regular file before it is opened: reading a pipe waits for a
    writer and a device such as /dev/zero never ends."""
    kind = non_regular_kind(path)
    if kind is not None:
        raise ValueError(f"{flag}: {path} is {kind}, not a regular file; give {what}")


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


def domain_file(text: str) -> Path:
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


def read_inputs(args: argparse.Namespace, files: Sequence[str]) -> Dataset:
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
        raise ValueError(f"--data: {args.data}: {engine} could not read it ({type(error).__name__}: "
                         f"{one_line(error)[:500]})") from None


def open_files(args: argparse.Namespace) -> tuple[Dataset, Outputs]:
    """``--data`` and ``--domain`` read, once the outputs are checked (never an input)."""
    files = data_files(args.data)
    inputs = [("--data", Path(file)) for file in files] + [("--domain", domain_file(args.domain))]
    outputs = output_paths(args, inputs)
    return read_inputs(args, files), outputs
