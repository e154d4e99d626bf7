"""Rows in a dataframe engine, read through Narwhals: in-memory frames become a code matrix
(:func:`frame_records`); lazy ones stay in their engine (:class:`FrameRows`), where only counts leave it.
"""

from __future__ import annotations

import functools
import math
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._categories import Categories
from ._codes import Bins, Codes
from ._encoding_base import (
    BYTES_HINT,
    FLOAT_LABELS_HINT,
    MISSING_VALUE_HINT,
    Encoding,
    NotANumberError,
    _is_text,
    _narwhals,
    refuse_value,
)

if TYPE_CHECKING:

    from ._domain import Domain

__all__ = ["ENGINES", "FrameRows", "check_csv_header", "engine_name", "frame_records", "infer_encodings", "is_frame",
           "is_lazy_frame", "is_parquet", "read_frame"]

#: The engines :func:`read_frame` reads files with (``auto`` picks one).
ENGINES = ("pandas", "polars", "duckdb", "spark", "dask")

#: Rows per batch streamed from Polars and DuckDB: 2^16 rows of a few dozen int64 codes, a few MB.
BATCH_ROWS = 2**16

#: Most tables counted by separate group-by queries; more are counted in one pass over the
#: partitions (a query per table would scan the data once per table).
GROUP_BY_TABLES = 8

_COUNT = "__projmech_count__"
_ROW = "__projmech_row__"


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


def is_frame(value: Any) -> bool:
    """Whether ``value`` is a data frame of an engine Narwhals knows (repeated column names too)."""
    try:
        _as_narwhals(value)
    except TypeError:
        return False
    except ValueError:
        return True
    return True


def is_lazy_frame(frame: Any) -> bool:
    """Whether ``frame`` is a lazy or distributed frame whose rows stay in its engine."""
    return isinstance(_as_narwhals(frame), _narwhals().LazyFrame)


def engine_name(frame: Any) -> str:
    """The engine a frame belongs to, as Narwhals names it (``polars``, ``pyspark`` ...)."""
    return _engine(_as_narwhals(frame))


def _engine(wrapped: Any) -> str:
    return str(wrapped.implementation.name).lower()


def is_parquet(path: str) -> bool:
    """Whether a file is Parquet, by its suffix (else it is read as CSV)."""
    return path.lower().endswith((".parquet", ".pq"))


def _check_columns(columns: Sequence[str], domain: Domain, argument: str) -> None:
    missing = [name for name in domain.attributes if name not in columns]
    if missing:
        raise ValueError(f"{argument}: columns {missing} of the domain are missing; the data has columns "
                         f"{list(columns)}")
    repeated = [name for name in domain.attributes if list(columns).count(name) > 1]
    if repeated:
        raise ValueError(f"{argument}: columns {repeated} appear more than once; which one holds the codes is "
                         "ambiguous")


def _dtype_error(name: str, encoding: Encoding, dtype: Any) -> TypeError:
    """The error for a column whose type cannot hold the attribute's values, with what to do."""
    nw = _narwhals()
    hint = ""
    if isinstance(encoding, Codes) and _is_text(dtype):
        hint = f"; declare the attribute's categories in the domain to code text (e.g. {name!r}: [...])"
    elif isinstance(encoding, Categories) and not encoding.is_text and dtype.is_float():
        hint = f"; {FLOAT_LABELS_HINT}"
    elif dtype == nw.Binary:
        hint = f"; {BYTES_HINT}"
    return TypeError(f"column {name!r}: expected {encoding.describe()}, got dtype {dtype}{hint}")


def frame_records(frame: Any, domain: Domain, argument: str = "frame") -> np.ndarray:
    """The ``(n, d)`` int64 codes of an in-memory frame's domain columns, taken by name."""
    nw = _narwhals()
    frame = _without_repeated_extra_columns(frame, domain, argument)
    wrapped = _as_narwhals(frame, argument)
    if isinstance(wrapped, nw.LazyFrame):
        raise TypeError(f"{argument}: a lazy frame keeps its rows in its engine; pass it to Dataset.from_frame")
    _check_columns(wrapped.columns, domain, argument)
    # Column-major: each attribute's codes are written, and later counted, contiguously.
    records = np.empty((wrapped.shape[0], len(domain)), dtype=np.int64, order="F")
    for i, (name, encoding) in enumerate(zip(domain.attributes, domain.encodings)):
        series = wrapped[name]
        dtype = series.dtype
        # One rule with lazy frames for declared categories and bins (an object column may hold
        # them too); integer codes in memory also parse numeric text, as CSV files hold it.
        # A frame with no rows holds no value to refuse (a header-only CSV reads as text columns).
        if len(records) and (dtype.is_temporal() or not (isinstance(encoding, Codes)
                                                         or encoding.accepts_dtype(dtype) or dtype == nw.Object)):
            raise _dtype_error(name, encoding, dtype)
        try:
            records[:, i] = encoding.encode(series.to_numpy(), name)
        except NotANumberError as error:
            if not isinstance(encoding, Codes):
                raise
            raise NotANumberError(f"{error}; to code text, declare the attribute's categories in the domain "
                                  f"(e.g. {name!r}: [\"label 0\", \"label 1\", ...])") from None
    return records


def _without_repeated_extra_columns(frame: Any, domain: Domain, argument: str) -> Any:
    """A pandas frame without the repeated columns the domain does not name (Narwhals refuses them)."""
    pandas = sys.modules.get("pandas")
    if pandas is None or not isinstance(frame, pandas.DataFrame) or not frame.columns.has_duplicates:
        return frame
    _check_columns(list(frame.columns), domain, argument)
    return frame[list(domain.attributes)]


class FrameRows:
    """The rows of a lazy or distributed frame, checked by one aggregate query, counted inside its engine."""

    def __init__(self, frame: Any, domain: Domain, argument: str = "frame") -> None:
        nw = _narwhals()
        wrapped = _as_narwhals(frame, argument)
        if not isinstance(wrapped, nw.LazyFrame):
            raise TypeError(f"{argument}: an in-memory frame is coded into memory (frame_records), not kept in an "
                            "engine")
        self.engine = _engine(wrapped)
        # A lazy scan reads its source here first (a corrupt Parquet file fails in the engine).
        schema = _engine_call(self.engine, argument, wrapped.collect_schema)
        _check_columns(list(schema.names()), domain, argument)
        self.domain = domain
        self.native = frame
        self._frame = wrapped
        self._floating: dict[str, bool] = {}
        self._text: dict[str, bool] = {}
        self._columns: dict[str, Any] = {}
        for name, encoding in zip(domain.attributes, domain.encodings):
            dtype = schema[name]
            if not encoding.accepts_dtype(dtype):
                raise _dtype_error(name, encoding, dtype)
            self._floating[name] = bool(dtype.is_float())
            self._text[name] = _is_text(dtype)
            # Booleans are the codes 0 and 1 in every engine: Spark compares no boolean with 0.
            self._columns[name] = nw.col(name).cast(nw.Int8) if dtype.is_boolean() else nw.col(name)
        checks = [self._invalid(name, encoding).cast(nw.Int64).sum().alias(name)
                  for name, encoding in zip(domain.attributes, domain.encodings)]
        summary = _engine_call(self.engine, argument,
                               lambda: wrapped.select(nw.len().alias(_COUNT), *checks).collect().rows(named=True)[0])
        self.n = int(summary[_COUNT])
        for name, encoding in zip(domain.attributes, domain.encodings):
            if summary[name]:
                self._raise_invalid(name, encoding)
        # The narrowest integer type that holds every code: the coded rows are what the engine
        # materializes batch by batch, so their width sets the memory of an out-of-core count.
        largest = max(domain.sizes)
        dtype = nw.Int16 if largest <= 2**15 else nw.Int32 if largest <= 2**31 else nw.Int64
        self._coded = wrapped.select(*[self._code(encoding, name, dtype) for name, encoding
                                       in zip(domain.attributes, domain.encodings)])

    def _code(self, encoding: Encoding, name: str, dtype: Any) -> Any:
        column = self._columns[name]
        if isinstance(encoding, Categories):
            # Narwhals has no lookup (replace_strict) for Spark Connect.
            return encoding.code(column, dtype, lookup=self.engine != "pyspark_connect",
                                 text=self._text[name]).alias(name)
        return encoding.code(column, dtype).alias(name)

    def _invalid(self, name: str, encoding: Encoding) -> Any:
        """The engine expression true on the rows of column ``name`` that have no code."""
        column = self._columns[name]
        if isinstance(encoding, Categories):
            return encoding.invalid(column, self._floating[name], text=self._text[name])
        return encoding.invalid(column, self._floating[name])

    def _raise_invalid(self, name: str, encoding: Encoding) -> None:
        nw = _narwhals()
        invalid = self._invalid(name, encoding)
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
        refuse_value(name, value, where, f"has no code: expected {encoding.describe()}{encoding._hint(value)}")

    # --- counting -------------------------------------------------------------------------------

    def table(self, axes: Sequence[int]) -> np.ndarray:
        """The int64 count table of the attributes at ``axes``, by one group-by query."""
        if not axes:
            return np.array(self.n, dtype=np.int64)
        sizes = [self.domain.sizes[a] for a in axes]
        codes, counts = self._grouped(axes)
        table = np.zeros(math.prod(sizes), dtype=np.int64)
        np.add.at(table, np.ravel_multi_index(tuple(codes.T), sizes), counts)
        if table.sum() != self.n:
            raise ValueError(CHANGED_ROWS)
        return table.reshape(sizes)

    def cell_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """The occupied universe cells (row-major indices) and their counts, by one group-by."""
        codes, counts = self._grouped(range(len(self.domain)))
        return self.domain.index(codes), counts

    def _grouped(self, axes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """One group-by query on the attributes at ``axes``: the occupied cells' codes and counts."""
        nw = _narwhals()
        names = [self.domain.attributes[a] for a in axes]
        grouped = self._coded.group_by(*names).agg(nw.len().alias(_COUNT)).collect()
        codes = _stack([grouped[name].to_numpy() for name in names], len(names))
        return codes, grouped[_COUNT].to_numpy().astype(np.int64)

    def collect_codes(self) -> np.ndarray:
        """The coded rows, brought into memory as an ``(n, d)`` int64 matrix."""
        collected = self._coded.collect()
        return _stack([collected[name].to_numpy() for name in self.domain.attributes], len(self.domain))

    def reduce(self, kernel: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """The sum over partitions of ``kernel(codes)``, counted where the rows live (``kernel`` picklable)."""
        native = self._coded.to_native()
        adapter = _PARTITION_SUMS.get(self.engine)
        if adapter is None:
            raise TypeError(f"frame: counting many tables at once is not supported for {self.engine} frames; "
                            f"supported: {sorted(_PARTITION_SUMS)}")
        return adapter(native, functools.partial(_checked, kernel=kernel, sizes=self.domain.sizes), self.domain)


def _engine_call(engine: str, argument: str, call: Callable[[], Any]) -> Any:
    """``call()``, with the engine's own error as a ValueError naming ``argument`` (the engine's does not)."""
    try:
        return call()
    except ImportError:  # the engine is not installed: not the file's fault
        raise
    except Exception as error:  # every engine has exceptions of its own
        raise ValueError(f"{argument}: {engine} could not read it ({_engine_message(error)})") from None


def _engine_message(error: BaseException) -> str:
    """An engine's error in one short line (a Spark error goes on with a Java stack)."""
    lines = str(error).strip().splitlines()
    first = " ".join(lines[0].split()) if lines else ""
    return f"{type(error).__name__}: {first[:300]}{'...' if len(first) > 300 else ''}"


def _checked(records: np.ndarray, kernel: Callable[[np.ndarray], np.ndarray], sizes: Sequence[int]) -> np.ndarray:
    """``kernel(records)`` after checking the codes again: a frame that reads differently must fail."""
    if records.shape[0] and ((records.min(axis=0) < 0).any() or (records.max(axis=0) >= np.asarray(sizes)).any()):
        raise ValueError(CHANGED_ROWS)
    return kernel(records)


#: The error when the rows counted differ from the rows checked.
CHANGED_ROWS = ("frame: the rows counted are not the rows checked (a code outside the domain, or another row "
                "count); a frame must give the same rows every time it is read (no growing table, no unseeded "
                "sample): collect it first, or write it to a file")


def _stack(columns: Sequence[np.ndarray], d: int) -> np.ndarray:
    """Code columns as an ``(r, d)`` int64 matrix, column-major."""
    rows = len(columns[0]) if len(columns) else 0
    records = np.empty((rows, d), dtype=np.int64, order="F")
    for i, column in enumerate(columns):
        records[:, i] = column
    return records


def _total(parts: Iterator[np.ndarray], kernel: Callable[[np.ndarray], np.ndarray], d: int) -> np.ndarray:
    """The sum of the partitions' counts, from the kernel's zeros (no partitions: zeros of the right shape)."""
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
    return _total((kernel(_arrow_codes(batch, d)) for batch in native.to_arrow_reader(BATCH_ROWS)), kernel, d)


def _arrow_codes(batch: Any, d: int) -> np.ndarray:
    """An Arrow record batch of ``d`` code columns as an int64 code matrix."""
    return _stack([batch.column(i).to_numpy(zero_copy_only=False) for i in range(d)], d)


def _dask_sums(native: Any, kernel: Callable[[np.ndarray], np.ndarray], domain: Domain) -> np.ndarray:
    import dask

    # Each partition is counted by a task where it lives (on a distributed cluster's workers,
    # under an active dask.distributed Client); only the count vectors come back.
    tasks = [dask.delayed(_partition_counts)(partition, kernel, len(domain)) for partition in native.to_delayed()]
    while len(tasks) > 1:  # summed in a tree on the workers: two count vectors per task
        tasks = [dask.delayed(np.add)(*tasks[i:i + 2]) if i + 1 < len(tasks) else tasks[i]
                 for i in range(0, len(tasks), 2)]
    if not tasks:
        return _total(iter(()), kernel, len(domain))
    (total,) = dask.compute(tasks[0])
    return np.asarray(total)


def _partition_counts(partition: Any, kernel: Callable[[np.ndarray], np.ndarray], d: int) -> np.ndarray:
    """One pandas partition's counts (on a Dask worker), :data:`BATCH_ROWS` rows at a time."""
    columns = [partition[column].to_numpy() for column in partition.columns]
    rows = len(partition)
    return _total((kernel(_stack([column[start:start + BATCH_ROWS] for column in columns], d))
                   for start in range(0, rows, BATCH_ROWS)), kernel, d)


def _spark_sums(native: Any, kernel: Callable[[np.ndarray], np.ndarray], domain: Domain) -> np.ndarray:
    # mapInArrow runs on the executors (DataFrame API, so Spark Connect too): each partition's
    # counts leave them as one binary value. The executors need projmech installed.
    d = len(domain)
    dtype = kernel(np.zeros((0, d), dtype=np.int64)).dtype
    try:
        rows = native.mapInArrow(functools.partial(_arrow_partition_counts, kernel=kernel, d=d),
                                 "counts binary").toLocalIterator()  # one partition's counts at a time
        return _total((np.frombuffer(row[0], dtype=dtype) for row in rows), kernel, d)
    except Exception as error:
        message = _spark_worker_hint(str(error))
        if message is None:
            raise
        # The Java stack trace (thousands of characters) buries the one line that matters.
        raise RuntimeError(message) from None


def _spark_worker_hint(error: str) -> str | None:
    """What to do when Spark's Python workers could not import a module (no ``PYSPARK_PYTHON``), or None."""
    missing = re.search(r"ModuleNotFoundError: No module named '([^']+)'", error)
    if missing is None:
        return None
    return (f"frame: Spark's Python workers cannot import {missing.group(1)!r}: they run another Python than this "
            f"one ({sys.executable}). Set the environment variable PYSPARK_PYTHON to an interpreter that has "
            f"projmech and pyarrow (this one: PYSPARK_PYTHON={sys.executable}) before the SparkSession starts, "
            f"or set spark.pyspark.python when building it; a cluster's executors need both installed")


def _arrow_partition_counts(batches: Iterator[Any], kernel: Callable[[np.ndarray], np.ndarray],
                            d: int) -> Iterator[Any]:
    """The counts of one Spark partition's Arrow batches, as one binary value (run by an executor)."""
    import pyarrow as pa

    total: np.ndarray | None = None
    for batch in batches:
        part = kernel(_arrow_codes(batch, d))
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
            raise ValueError(f"column {name!r}: has {summary[name]:,} missing values; {MISSING_VALUE_HINT}")
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
            # Few distinct integers far from 0 (years 2007-2009) are categories of exactly those
            # values: as codes 0..2009 they would make a universe of mostly empty cells. Only an
            # integer column can hold integer categories (a float column is refused for them).
            if integral and 0 <= low <= 1 and high < MAX_INFERRED_CODES:
                encodings.append(Codes(int(high) + 1))
                continue
            limit = min(MAX_INFERRED_INTEGER_CATEGORIES, max_categories)
            values = lazy.select(nw.col(name)).unique().head(limit + 1).collect()[name].to_list() \
                if dtype.is_integer() else []
            if values and len(values) <= limit:
                encodings.append(Categories(sorted(int(value) for value in values), ordered=True))
            else:
                encodings.append(Bins(_round_edges(low, high, bins, integral)))
        else:
            raise TypeError(f"column {name!r}: cannot propose an encoding for dtype {dtype}")
    return names, encodings


# --- reading files -----------------------------------------------------------------------------

#: Integral columns whose values start at 0 or 1 and stay below this are proposed as codes by
#: ``Domain.infer``; others as integer categories (few distinct integers) or bins.
MAX_INFERRED_CODES = 100

#: An integer column with at most this many distinct values (and at most ``max_categories``),
#: not proposed as codes, is proposed as ordered integer categories of exactly those values.
MAX_INFERRED_INTEGER_CATEGORIES = 20


def _round_edges(low: float, high: float, bins: int, integral: bool) -> list[float]:
    """``bins`` equal-width bins over ``[floor(low), ceil(high)]``, edges rounded to 10 significant digits."""
    start, stop = math.floor(low), math.ceil(high)
    stop = stop if stop > start else start + 1
    edges = np.linspace(start, stop, bins + 1)
    if integral:
        return [int(edge) for edge in np.unique(np.round(edges))]
    return [float(f"{edge:.10g}") for edge in edges]


def read_frame(files: Sequence[str], engine: str, domain: Domain, *, spark: Any = None) -> Any:
    """A frame over CSV or Parquet ``files`` in ``engine``; CSV categories are text (``"01"`` stays a label)."""
    if engine not in ENGINES:
        raise ValueError(f"engine: expected one of {ENGINES}, got {engine!r}")
    files = list(files)
    parquet = all(is_parquet(file) for file in files)
    for file in files:
        if parquet:
            _check_parquet(file)
        else:
            check_csv_header(file, domain)
    text = [name for name, encoding in zip(domain.attributes, domain.encodings) if isinstance(encoding, Categories)]
    shown = files[0] if len(files) == 1 else f"{files[0]} (and {len(files) - 1} more files)"
    if engine == "pandas":
        import pandas as pd

        options = pandas_csv_options(domain)

        def read() -> Any:
            frames = [pd.read_parquet(file) if parquet else pd.read_csv(file, **options) for file in files]
            return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    elif engine == "polars":
        import polars as pl

        def read() -> Any:
            scan = pl.scan_parquet(files) if parquet else \
                pl.scan_csv(files, schema_overrides={name: pl.String for name in text})
            scan.collect_schema()  # reads the files' footers (or first rows) now, where the error names them
            return scan
    elif engine == "duckdb":
        import duckdb

        # Codes are numbers, so "01" is the code 1 as pandas, Polars, Dask and Spark parse it;
        # DuckDB's sniffer reads a column with a leading zero as text, so their type is named
        # (DOUBLE: an integral float such as 1.0 is a code too; a fractional one is refused).
        numbers = {name: "DOUBLE" for name, encoding in zip(domain.attributes, domain.encodings)
                   if isinstance(encoding, Codes)}

        def read() -> Any:
            return duckdb.read_parquet(files) if parquet else \
                duckdb.read_csv(files, header=True, dtype={**numbers, **{name: "VARCHAR" for name in text}})
    elif engine == "dask":
        import dask.dataframe as dd

        def read() -> Any:
            return dd.read_parquet(files) if parquet else dd.read_csv(files, **pandas_csv_options(domain))
    else:
        from pyspark.sql import SparkSession

        # A local session's Python workers count the partitions, with projmech: they must run the
        # interpreter this process runs unless the user chose another.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        reader = (spark or SparkSession.builder.getOrCreate()).read

        def read() -> Any:
            if parquet:
                return reader.parquet(*files)
            # Inference would read labels such as "01" as numbers: name every column's type, the
            # categories and unknown columns as text, the others as numbers.
            header = reader.csv(files, header=True, inferSchema=False).columns
            kinds = {name: "STRING" if name in text else "DOUBLE" for name in domain.attributes}
            schema = ", ".join(f"`{name}` {kinds.get(name, 'STRING')}" for name in header)
            return reader.csv(files, header=True, schema=schema)
    return _engine_call(engine, shown, read)


#: The strings pandas reads as missing by default (its documented ``na_values`` defaults).
PANDAS_MISSING = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                  "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")


def pandas_csv_options(domain: Domain) -> dict[str, Any]:
    """``read_csv`` options: category columns as text, only an empty field missing ("NA" is a label)."""
    text = {name for name, encoding in zip(domain.attributes, domain.encodings) if isinstance(encoding, Categories)}
    return {"dtype": {name: str for name in text}, "keep_default_na": False,
            "na_values": {name: [""] if name in text else list(PANDAS_MISSING) for name in domain.attributes}}


def check_csv_header(file: str, domain: Domain) -> None:
    """A ValueError naming ``file`` if its header names an attribute twice (engines would count one)."""
    import pandas as pd

    try:
        # header=None: the header row as data, its names as written (no renaming).
        header = pd.read_csv(file, header=None, nrows=1, dtype=str, keep_default_na=False).iloc[0].tolist()
    except Exception:  # an empty, undecodable or remote file: its reader reports it
        return
    repeated = [name for name in domain.attributes if header.count(name) > 1]
    if repeated:
        names = ", ".join(repr(name) for name in repeated)
        raise ValueError(f"{file}: column{'s' if len(repeated) > 1 else ''} {names} "
                         f"appear{'' if len(repeated) > 1 else 's'} more than once in its header; which one holds "
                         "the attribute is ambiguous: rename or drop the others")


#: The first and last four bytes of a Parquet file (``PARE``: an encrypted footer).
_PARQUET_MAGIC = (b"PAR1", b"PARE")


def _check_parquet(file: str) -> None:
    """A ValueError naming ``file`` if a local file does not begin and end as a Parquet file."""
    if not os.path.isfile(file):
        return
    size = os.path.getsize(file)
    if size == 0:
        raise ValueError(f"{file}: is empty (0 bytes); expected a Parquet file")
    with open(file, "rb") as handle:
        head = handle.read(4)
        handle.seek(max(size - 4, 0))
        tail = handle.read(4)
    if size < 12 or head not in _PARQUET_MAGIC or tail not in _PARQUET_MAGIC:
        raise ValueError(f"{file}: is not a Parquet file (it does not begin and end with the bytes PAR1), or it "
                         "was cut short")
