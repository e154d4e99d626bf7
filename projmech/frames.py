"""Rows in a dataframe engine, counted inside it.

Counting is the only step of a release that reads the rows, and every workload's counts are
group-by tables of them. This module reads frames of any engine through Narwhals, the
compatibility layer written for libraries that accept pandas, Polars, PyArrow, DuckDB, PySpark
and Dask frames alike: the columns are coded by the domain's encodings as engine expressions
(:mod:`projmech.encodings`), checked by one aggregate query, and counted by group-by queries
whose results alone leave the engine.

Two kinds of frame:

- **in memory** (a pandas or Polars DataFrame, a PyArrow Table): the coded columns are taken
  into a NumPy code matrix, the embedded default (:func:`frame_records`);
- **lazy or distributed** (a Polars LazyFrame such as ``pl.scan_parquet``, a DuckDB relation, a
  PySpark or Dask DataFrame): the rows stay in the engine (:class:`FrameRows`). A few tables are
  counted by group-by queries; many tables at once (all 2-way marginals of 81 attributes) by one
  pass that counts each partition's coded rows where the partition lives (Polars' and DuckDB's
  streamed batches, Spark's ``mapInArrow``, Dask's partitions) and sums the partial counts.
  Narwhals has no per-partition map, so that pass has one short adapter per engine.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .encodings import Bins, Categories, Codes, Encoding, _is_text

if TYPE_CHECKING:
    import narwhals as nw

    from .domain import Domain

__all__ = ["ENGINES", "FrameRows", "engine_name", "frame_records", "infer_encodings", "is_lazy_frame",
           "read_frame"]

#: The engines :func:`read_frame` reads files with (``auto`` picks one).
ENGINES = ("pandas", "polars", "duckdb", "spark", "dask")

#: Rows per batch streamed from Polars and DuckDB: 2^16 rows of a few dozen int64 codes, a few MB.
BATCH_ROWS = 2**16

#: Most tables counted by separate group-by queries; more are counted in one pass over the
#: partitions (a query per table would scan the data once per table).
GROUP_BY_TABLES = 8

_COUNT = "__projmech_count__"
_ROW = "__projmech_row__"


def _narwhals() -> Any:
    try:
        import narwhals as nw
    except ImportError:  # pragma: no cover - narwhals is a dependency
        raise ImportError("reading data frames needs narwhals (pip install narwhals)") from None
    return nw


def _as_narwhals(frame: Any, argument: str = "frame") -> Any:
    nw = _narwhals()
    from narwhals.exceptions import DuplicateError

    try:
        with warnings.catch_warnings():
            # Narwhals announces that its Dask support will move to a separate package, which is
            # not published yet: nothing a user of projmech can act on.
            warnings.filterwarnings("ignore", message=".*narwhals-dask.*", category=FutureWarning)
            wrapped = nw.from_native(frame, pass_through=True)
    except DuplicateError as error:
        raise ValueError(f"{argument}: repeated column names, so which one holds an attribute is ambiguous "
                         f"({error})".replace("\n", " ")) from None
    if not isinstance(wrapped, (nw.DataFrame, nw.LazyFrame)):
        raise TypeError(f"{argument}: expected a data frame (pandas, Polars, PyArrow, DuckDB, PySpark or Dask), "
                        f"got {type(frame).__name__}")
    return wrapped


def is_lazy_frame(frame: Any) -> bool:
    """Whether ``frame`` is a lazy or distributed frame whose rows stay in its engine."""
    return isinstance(_as_narwhals(frame), _narwhals().LazyFrame)


def engine_name(frame: Any) -> str:
    """The engine a frame belongs to, as Narwhals names it (``polars``, ``pyspark`` ...)."""
    return str(_as_narwhals(frame).implementation).lower().replace("implementation.", "")


def _check_columns(columns: Sequence[str], domain: Domain, argument: str) -> None:
    missing = [name for name in domain.attributes if name not in columns]
    if missing:
        raise ValueError(f"{argument}: columns {missing} of the domain are missing; the frame has {list(columns)}")
    repeated = [name for name in domain.attributes if list(columns).count(name) > 1]
    if repeated:
        raise ValueError(f"{argument}: columns {repeated} appear more than once; which one holds the codes is ambiguous")


def frame_records(frame: Any, domain: Domain, argument: str = "frame") -> np.ndarray:
    """The ``(n, d)`` int64 codes of an in-memory frame's domain columns, taken by name (extra
    columns ignored) and coded by the domain's encodings; errors name the column and row."""
    wrapped = _as_narwhals(frame, argument)
    nw = _narwhals()
    if isinstance(wrapped, nw.LazyFrame):
        raise TypeError(f"{argument}: a lazy frame keeps its rows in its engine; pass it to Dataset.from_frame")
    _check_columns(wrapped.columns, domain, argument)
    # Column-major: each attribute's codes are written, and later counted, contiguously.
    records = np.empty((wrapped.shape[0], len(domain)), dtype=np.int64, order="F")
    for i, (name, encoding) in enumerate(zip(domain.attributes, domain.encodings)):
        series = wrapped[name]
        dtype = series.dtype
        if dtype.is_temporal():
            # Datetimes would become integers.
            raise TypeError(f"column {name!r}: expected {encoding.describe()}, got dtype {dtype}")
        records[:, i] = encoding.encode(series.to_numpy(), name)
    return records


class FrameRows:
    """The rows of a lazy or distributed frame, coded and counted inside its engine.

    Construction checks the domain's columns and their types, and runs one aggregate query for
    the row count and, per attribute, the number of values with no code; a bad value is then
    fetched to name it (with its row number where the engine keeps a row order).
    """

    def __init__(self, frame: Any, domain: Domain, argument: str = "frame") -> None:
        nw = _narwhals()
        wrapped = _as_narwhals(frame, argument)
        if isinstance(wrapped, nw.DataFrame):
            wrapped = wrapped.lazy()
        schema = wrapped.collect_schema()
        _check_columns(list(schema.names()), domain, argument)
        self.engine = engine_name(frame)
        self.domain = domain
        self.native = frame
        self._frame = wrapped
        floating = {}
        for name, encoding in zip(domain.attributes, domain.encodings):
            dtype = schema[name]
            if not encoding.accepts_dtype(dtype):
                hint = (f"; declare the attribute's categories in the domain to code text (e.g. {name!r}: [...])"
                        if isinstance(encoding, Codes) and dtype == nw.String else "")
                raise TypeError(f"column {name!r}: expected {encoding.describe()}, got dtype {dtype}{hint}")
            floating[name] = bool(dtype.is_float())
        self._floating = floating
        checks = [encoding.invalid(nw.col(name), floating[name]).cast(nw.Int64).sum().alias(name)
                  for name, encoding in zip(domain.attributes, domain.encodings)]
        summary = wrapped.select(nw.len().alias(_COUNT), *checks).collect().rows(named=True)[0]
        self.n = int(summary[_COUNT])
        for name, encoding in zip(domain.attributes, domain.encodings):
            if summary[name]:
                self._raise_invalid(name, encoding, int(summary[name]))
        # The narrowest integer type that holds every code: the coded rows are what the engine
        # materializes batch by batch, so their width sets the memory of an out-of-core count.
        largest = max(domain.sizes)
        dtype = nw.Int16 if largest <= 2**15 else nw.Int32 if largest <= 2**31 else nw.Int64
        self._coded = wrapped.select(*[encoding.code(nw.col(name), dtype).alias(name)
                                       for name, encoding in zip(domain.attributes, domain.encodings)])

    def _raise_invalid(self, name: str, encoding: Encoding, count: int) -> None:
        nw = _narwhals()
        invalid = encoding.invalid(nw.col(name), self._floating[name])
        where = ""
        if self.engine == "polars":
            # Polars keeps the row order of its sources, so the row number means something.
            native = self._frame.to_native().with_row_index(_ROW)
            first = nw.from_native(native).filter(invalid).select(_ROW, name).head(1).collect().rows()[0]
            row, value = first
            where = f" at row {row}"
        else:
            (value,) = self._frame.filter(invalid).select(name).head(1).collect().rows()[0]
            where = f" ({self.engine} keeps no row order, so no row number)"
        what = "missing value" if value is None or (isinstance(value, float) and math.isnan(value)) \
            else f"value {value!r}"
        raise ValueError(f"column {name!r}: {what}{where} is not {encoding.describe()}; "
                         f"{count:,} row{'s' if count != 1 else ''} of the column have no code in the domain")

    # --- counting -------------------------------------------------------------------------------

    def table(self, axes: Sequence[int]) -> np.ndarray:
        """The int64 count table of the attributes at ``axes`` (in that order), by one group-by
        query; only the occupied cells leave the engine."""
        nw = _narwhals()
        sizes = [self.domain.sizes[a] for a in axes]
        table = np.zeros(math.prod(sizes), dtype=np.int64)
        if not axes:
            return np.array(self.n, dtype=np.int64)
        names = [self.domain.attributes[a] for a in axes]
        grouped = self._coded.group_by(*names).agg(nw.len().alias(_COUNT)).collect()
        columns = {name: grouped[name].to_numpy().astype(np.int64) for name in names + [_COUNT]}
        index = np.ravel_multi_index(tuple(columns[name] for name in names), sizes) if grouped.shape[0] else \
            np.zeros(0, dtype=np.int64)
        np.add.at(table, index, columns[_COUNT])
        return table.reshape(sizes)

    def cell_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """The occupied universe cells (row-major indices) and their counts, by one group-by over
        every attribute."""
        nw = _narwhals()
        names = list(self.domain.attributes)
        grouped = self._coded.group_by(*names).agg(nw.len().alias(_COUNT)).collect()
        if not grouped.shape[0]:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        codes = np.column_stack([grouped[name].to_numpy().astype(np.int64) for name in names])
        return self.domain.index(codes), grouped[_COUNT].to_numpy().astype(np.int64)

    def collect_codes(self) -> np.ndarray:
        """The coded rows, brought into memory as an ``(n, d)`` int64 matrix."""
        collected = self._coded.collect()
        return _stack([collected[name].to_numpy() for name in self.domain.attributes], len(self.domain))

    def reduce(self, kernel: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """``sum over partitions of kernel(codes of the partition)``: each partition's coded rows
        (an ``(r, d)`` int64 matrix) are counted where they live and only the results come back.
        ``kernel`` must be additive over rows and picklable (a module-level function, or a
        ``functools.partial`` of one) for the distributed engines."""
        native = self._coded.to_native()
        adapter = _PARTITION_SUMS.get(self.engine)
        if adapter is None:
            raise TypeError(f"frame: counting many tables at once is not supported for {self.engine} frames; "
                            f"supported: {sorted(_PARTITION_SUMS)}")
        return adapter(native, kernel, self.domain)


def _stack(columns: Sequence[np.ndarray], d: int) -> np.ndarray:
    """Code columns as an ``(r, d)`` int64 matrix, column-major (each column written
    contiguously; the kernels take row blocks of it)."""
    rows = len(columns[0]) if len(columns) else 0
    records = np.empty((rows, d), dtype=np.int64, order="F")
    for i, column in enumerate(columns):
        records[:, i] = column
    return records


def _total(parts: Iterator[np.ndarray], kernel: Callable[[np.ndarray], np.ndarray], d: int) -> np.ndarray:
    """The sum of the partitions' counts, starting from the kernel's zeros (so that a frame with
    no rows, or no partitions, gives zero counts of the right shape)."""
    total = kernel(np.zeros((0, d), dtype=np.int64))
    for part in parts:
        total = total + part
    return total


def _polars_sums(native: Any, kernel: Callable[[np.ndarray], np.ndarray], domain: Domain) -> np.ndarray:
    # The streaming engine reads the source in batches: a Parquet scan never holds all its rows.
    d = len(domain)
    batches = native.collect_batches(chunk_size=BATCH_ROWS, engine="streaming")
    return _total((kernel(_stack([batch[column].to_numpy() for column in batch.columns], d)) for batch in batches),
                  kernel, d)


def _duckdb_sums(native: Any, kernel: Callable[[np.ndarray], np.ndarray], domain: Domain) -> np.ndarray:
    d = len(domain)
    reader = native.to_arrow_reader(BATCH_ROWS)
    return _total((kernel(_stack([batch.column(i).to_numpy(zero_copy_only=False) for i in range(d)], d))
                   for batch in reader), kernel, d)


def _dask_sums(native: Any, kernel: Callable[[np.ndarray], np.ndarray], domain: Domain) -> np.ndarray:
    import dask

    # Each partition is counted by a task where it lives (on a distributed cluster's workers,
    # under an active dask.distributed Client); only the count vectors come back.
    tasks = [dask.delayed(_partition_counts)(partition, kernel, len(domain)) for partition in native.to_delayed()]
    (parts,) = dask.compute(tasks)
    return _total(iter(parts), kernel, len(domain))


def _partition_counts(partition: Any, kernel: Callable[[np.ndarray], np.ndarray], d: int) -> np.ndarray:
    """One pandas partition's counts (run by a Dask worker), :data:`BATCH_ROWS` rows at a time:
    a partition may be a whole file, and its int64 codes several times its own size."""
    columns = [partition[column].to_numpy() for column in partition.columns]
    rows = len(partition)
    return _total((kernel(_stack([column[start:start + BATCH_ROWS] for column in columns], d))
                   for start in range(0, rows, BATCH_ROWS)), kernel, d)


def _spark_sums(native: Any, kernel: Callable[[np.ndarray], np.ndarray], domain: Domain) -> np.ndarray:
    # mapInArrow runs on the executors (DataFrame API, so Spark Connect too): each partition's
    # counts leave them as one binary value. The executors need projmech installed.
    d = len(domain)
    rows = native.mapInArrow(functools.partial(_arrow_partition_counts, kernel=kernel, d=d),
                             "counts binary").collect()
    dtype = kernel(np.zeros((0, d), dtype=np.int64)).dtype
    return _total((np.frombuffer(row[0], dtype=dtype) for row in rows), kernel, d)


def _arrow_partition_counts(batches: Iterator[Any], kernel: Callable[[np.ndarray], np.ndarray],
                            d: int) -> Iterator[Any]:
    """The counts of one Spark partition's Arrow batches, as one binary value (run by an executor)."""
    import pyarrow as pa

    total: np.ndarray | None = None
    for batch in batches:
        part = kernel(_stack([batch.column(i).to_numpy(zero_copy_only=False) for i in range(d)], d))
        total = part if total is None else total + part
    if total is not None:
        yield pa.RecordBatch.from_arrays([pa.array([total.tobytes()], type=pa.binary())], names=["counts"])


_PARTITION_SUMS: dict[str, Callable[[Any, Callable[[np.ndarray], np.ndarray], Any], np.ndarray]] = {
    "polars": _polars_sums,
    "duckdb": _duckdb_sums,
    "dask": _dask_sums,
    "pyspark": _spark_sums,
    "pyspark_connect": _spark_sums,
}


# --- inferring a domain ------------------------------------------------------------------------

def infer_encodings(frame: Any, *, max_categories: int, bins: int) -> tuple[list[str], list[Encoding]]:
    """The columns of ``frame`` and a proposed encoding for each (see :meth:`Domain.infer`)."""
    nw = _narwhals()
    wrapped = _as_narwhals(frame)
    lazy = wrapped.lazy() if isinstance(wrapped, nw.DataFrame) else wrapped
    schema = lazy.collect_schema()
    names = list(schema.names())
    summary = lazy.select(nw.len().alias(_COUNT), *[nw.col(name).null_count().alias(name) for name in names]) \
        .collect().rows(named=True)[0]
    if not summary[_COUNT]:
        raise ValueError("frame: has no rows to infer a domain from")
    encodings: list[Encoding] = []
    for name in names:
        dtype = schema[name]
        if summary[name]:
            raise ValueError(f"column {name!r}: has {summary[name]:,} missing values; a domain has no code for them")
        if _is_text(dtype) or dtype.is_boolean():
            values = lazy.select(nw.col(name)).unique().head(max_categories + 1).collect()[name].to_list()
            if len(values) > max_categories:
                raise ValueError(f"column {name!r}: more than max_categories={max_categories} distinct values")
            if dtype.is_boolean():
                encodings.append(Codes(2))
            else:
                encodings.append(Categories(sorted(str(value) for value in values)))
        elif dtype.is_numeric():
            low, high = lazy.select(nw.col(name).min().alias("low"), nw.col(name).max().alias("high")) \
                .collect().rows()[0]
            integral = dtype.is_integer() or lazy.select((nw.col(name) != nw.col(name).round(0)).cast(nw.Int64)
                                                        .sum()).collect().item() == 0
            if integral and low >= 0 and high < 2**31:
                encodings.append(Codes(int(high) + 1))
            else:
                start, stop = math.floor(low), math.ceil(high)
                stop = stop if stop > start else start + 1
                edges = np.linspace(start, stop, bins + 1).tolist()
                encodings.append(Bins([int(e) if float(e).is_integer() else e for e in edges]))
        else:
            raise TypeError(f"column {name!r}: cannot propose an encoding for dtype {dtype}")
    return names, encodings


# --- reading files -----------------------------------------------------------------------------

def read_frame(path: str, engine: str, *, spark: Any = None) -> Any:
    """A frame over a CSV or Parquet file (or a glob of them) in ``engine``: pandas reads it into
    memory; Polars and DuckDB scan it lazily (out-of-core); Spark and Dask read it as a
    distributed frame (Spark in the active session, else a ``local[*]`` one)."""
    import glob as globbing
    import os

    parquet = path.lower().endswith((".parquet", ".pq")) or (os.path.isdir(path) and bool(
        globbing.glob(os.path.join(path, "*.parquet"))))
    if engine == "pandas":
        import pandas as pd

        files = sorted(globbing.glob(path)) if globbing.has_magic(path) else [path]
        if not files:
            raise FileNotFoundError(f"{path}: no file matches")
        frames = [pd.read_parquet(file) if parquet else pd.read_csv(file) for file in files]
        return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    if engine == "polars":
        import polars as pl

        return pl.scan_parquet(path) if parquet else pl.scan_csv(path)
    if engine == "duckdb":
        import duckdb

        return duckdb.read_parquet(path) if parquet else duckdb.read_csv(path, header=True)
    if engine == "dask":
        import dask.dataframe as dd

        return dd.read_parquet(path) if parquet else dd.read_csv(path)
    if engine == "spark":
        import sys

        from pyspark.sql import SparkSession

        # A local session's Python workers count the partitions, with projmech: they must run the
        # interpreter this process runs unless the user chose another.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        session = spark or SparkSession.builder.getOrCreate()
        reader = session.read
        return reader.parquet(path) if parquet else reader.csv(path, header=True, inferSchema=True)
    raise ValueError(f"engine: expected one of {ENGINES}, got {engine!r}")
