"""Data sets over a :class:`~projmech.data.Domain` (every loader checks codes in :class:`Dataset`) and histograms."""

from __future__ import annotations

import functools
import itertools
import os
import sys
from collections.abc import Mapping, Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any, Literal, cast, overload

import numpy as np
import scipy.sparse as sp

from .._sparse import issparse
from ..privacy import Neighbouring, SizePolicy
from ..validation import (
    FLAG,
    POSITIVE_INT,
    SEED,
    InstanceOf,
    Integral,
    Interval,
    OrNone,
    as_array,
    validate_params,
)
from ._codes import Codes
from ._counting import check_marginal_cells, check_table_cells, marginal_counts, table_counts
from ._domain import Domain
from ._encoding_base import MISSING_VALUE_HINT
from ._frames import (
    CHANGED_ROWS,
    GROUP_BY_TABLES,
    FrameRows,
    check_csv_header,
    frame_records,
    is_frame,
    is_lazy_frame,
    pandas_csv_options,
)
from ._histograms import DEFAULT_MAX_UNIVERSE, check_normalized_histogram, histogram_counts

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Dataset",
    "histogram",
    "check_normalized_histogram",
    "histogram_counts",
    "resolve_rows",
    "DEFAULT_MAX_UNIVERSE",
    "MW_MAX_UNIVERSE",
]

#: Default cap on the universe of the multiplicative weights and sparse-vector mechanisms, which
#: hold dense vectors over it (the distribution and its log-weights, the private histogram):
#: 2^22 elements, 32 MB per float64 vector, the same size as
#: :data:`projmech.mechanisms._additive.HULL_MAX_UNIVERSE`.
MW_MAX_UNIVERSE = 2**22

_DOMAIN = InstanceOf(Domain, what="a Domain")


def _is_dataframe(value: Any) -> bool:
    """Whether ``value`` is a pandas DataFrame, without importing pandas."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, pandas.DataFrame)


class Dataset:
    """``n`` rows over a :class:`Domain`: integer codes in memory, or a frame kept in its engine.

    Parameters
    ----------
    records : array_like of int, shape (n, d)
        Column ``i`` holds the codes of ``domain.attributes[i]`` (masked entries are refused).
    domain : Domain
        The universe the rows belong to.

    Examples
    --------
    >>> data = pm.Dataset([[0, 6], [1, 3], [1, 3], [0, 0]], pm.Domain(["sex", "PID"], [2, 7]))
    >>> data.table([0]), data.cell_counts()
    (array([2, 2]), (array([ 0,  6, 10]), array([1, 1, 2])))
    """

    _rows: FrameRows | None = None

    @validate_params(domain=_DOMAIN)
    def __init__(self, records: Any, domain: Domain) -> None:
        # Arrays and lists, the usual records, are told apart without asking Narwhals.
        if not isinstance(records, (np.ndarray, list, tuple)) and is_frame(records):
            raise TypeError(
                f"records: got a {type(records).__name__}, whose columns would be matched by position; "
                "use Dataset.from_frame(frame, domain), which matches them by name"
            )
        if records is None or isinstance(records, (str, bytes, Mapping)):
            raise TypeError(f"records: expected an (n, d) array of integer codes, got {type(records).__name__}")
        masked = None
        if isinstance(records, np.ma.MaskedArray):  # NumPy's asarray would drop the mask silently
            masked, records = np.ma.getmaskarray(records), np.ma.getdata(records)
        array = as_array("records", records)
        if array.ndim != 2 or array.shape[1] != len(domain):
            raise ValueError(
                f"records: expected shape (n, {len(domain)}) for domain {domain.attributes}, "
                f"got {array.shape}"
            )
        if masked is not None and masked.any():
            # A masked entry is a missing value, which no code stands for.
            row, column = (int(i) for i in np.argwhere(masked)[0])
            raise ValueError(f"column {domain.attributes[column]!r}: masked value at row {row}; {MISSING_VALUE_HINT}")
        # No rows is a data set too: under add/remove neighbours it is the neighbour of every
        # one-row data set, and a mechanism with a declared or estimated size releases it.
        self._records: np.ndarray | None = _validate_codes(array, domain)
        self._domain = domain
        self._n = int(array.shape[0])

    @classmethod
    @validate_params(domain=_DOMAIN)
    def from_frame(cls, frame: Any, domain: Domain) -> Dataset:
        """A data set from the domain's columns of a data frame; a lazy frame's rows stay in its engine.

        Parameters
        ----------
        frame : data frame
            Holds a column named after each attribute (others are ignored).
        domain : Domain
            The universe; its encodings code the columns.

        Returns
        -------
        Dataset
        """
        if frame is None or isinstance(frame, (str, bytes, Mapping, np.ndarray, list, tuple)):
            raise TypeError(f"frame: expected a data frame (pandas, Polars, PyArrow, DuckDB, PySpark or Dask), "
                            f"got {type(frame).__name__}; for a code matrix use Dataset(records, domain)")
        dataset = cls.__new__(cls)
        dataset._domain = domain
        if is_lazy_frame(frame):
            dataset._rows = FrameRows(frame, domain)
            dataset._records = None
            dataset._n = dataset._rows.n
        else:
            dataset._records = frame_records(frame, domain)  # coded and checked
            dataset._n = int(dataset._records.shape[0])
        return dataset

    @classmethod
    @validate_params(domain=_DOMAIN)
    def from_dataframe(cls, frame: pd.DataFrame, domain: Domain) -> Dataset:
        """A data set from a pandas DataFrame, as :meth:`from_frame`.

        Parameters
        ----------
        frame : pandas.DataFrame
            Holds a column named after each attribute.
        domain : Domain
            The universe.

        Returns
        -------
        Dataset
        """
        import pandas as pd

        InstanceOf(pd.DataFrame, what="a pandas DataFrame").check("frame", frame)
        return cls.from_frame(frame, domain)

    @classmethod
    def from_csv(cls, data_path: str | PathLike[str], domain: Domain | str | PathLike[str]) -> Dataset:
        """Read a CSV file with a header row into memory (a larger file: scan it, then :meth:`from_frame`).

        Parameters
        ----------
        data_path : str or os.PathLike
            The CSV file; its header row names the columns.
        domain : Domain, str or os.PathLike
            The universe, or the path of its JSON domain file.

        Returns
        -------
        Dataset
        """
        import pandas as pd

        InstanceOf(str, PathLike, what="a file path (str or os.PathLike)").check("data_path", data_path)
        InstanceOf(Domain, str, PathLike, what="a Domain or the path of a JSON domain file").check("domain", domain)
        if not isinstance(domain, Domain):
            domain = Domain.from_json(domain)
        shown = os.fspath(data_path)
        if os.path.isdir(data_path):
            raise ValueError(f"{shown}: is a directory; expected a CSV file")
        # Categories are read as text: labels such as "01" would otherwise become numbers, and
        # integer categories match text by its exact decimal text ("01" is not 1), as in every
        # engine (frames.read_frame); only an empty field is a missing label ("NA" is a label).
        check_csv_header(shown, domain)  # pandas would rename a repeated x to x.1 and count one of them
        try:
            frame = pd.read_csv(data_path, **pandas_csv_options(domain))
        except pd.errors.EmptyDataError:
            raise ValueError(f"{shown}: is empty; expected a header row naming {list(domain.attributes)}") from None
        except ValueError as error:  # pandas' ParserError, UnicodeDecodeError: neither names the file
            raise ValueError(f"{shown}: could not be read as CSV ({error})") from None
        try:
            return cls.from_frame(frame, domain)
        except (TypeError, ValueError) as error:
            hint = ""
            if all(_is_number(column) for column in frame.columns):
                hint = " (the first row looks like data: the CSV needs a header row naming the attributes)"
            raise (TypeError if isinstance(error, TypeError) else ValueError)(f"{shown}: {error}{hint}") from None

    @property
    def records(self) -> np.ndarray:
        """The validated ``(n, d)`` int64 code matrix (read-only; :meth:`collect` first for rows in an engine)."""
        records = self._in_memory("records")
        view = records.view()
        view.flags.writeable = False
        return view

    def _in_memory(self, what: str) -> np.ndarray:
        if self._records is None:
            raise TypeError(f"{what}: the rows of this data set stay in its {self.engine} engine, where they are "
                            "counted; call .collect() to bring the coded rows into memory first")
        return self._records

    @property
    def engine(self) -> str:
        """Where the rows are: ``numpy`` (in memory), or a lazy frame's engine (``polars``, ``duckdb`` ...)."""
        return "numpy" if self._rows is None else self._rows.engine

    @property
    def domain(self) -> Domain:
        """The universe the rows belong to."""
        return self._domain

    @property
    def n(self) -> int:
        """The number of rows."""
        return self._n

    def __len__(self) -> int:
        return self.n

    # --- counting: the only access to the rows a release needs ---------------------------------

    def table(self, axes: Sequence[int]) -> np.ndarray:
        """The contingency table of some attributes: the rows counted per combination of codes.

        Parameters
        ----------
        axes : sequence of int
            Distinct attribute positions, in the table's axis order; ``()`` gives the row count.

        Returns
        -------
        numpy.ndarray of int64
        """
        d = len(self._domain)
        if isinstance(axes, (str, bytes)) or not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool)
                                                     for a in axes):
            raise TypeError(f"axes: expected attribute positions (ints), got {axes!r}")
        axes = [int(a) for a in axes]
        if any(not 0 <= a < d for a in axes) or len(set(axes)) != len(axes):
            raise ValueError(f"axes: expected distinct positions in 0..{d - 1}, got {axes}")
        if self._rows is None:
            return table_counts(self._in_memory("table"), self._domain.sizes, axes)
        check_table_cells(self._domain.sizes, axes)
        return self._rows.table(axes)

    def marginal_counts(self, way: int) -> np.ndarray:
        """The cell counts of every ``way``-way marginal table, concatenated.

        Parameters
        ----------
        way : int
            The number of attributes of each table, ``0 .. d``.

        Returns
        -------
        numpy.ndarray of float64
            In the layout of :func:`~projmech.workloads.marginals`.
        """
        sizes = self._domain.sizes
        way = cast(int, Interval(Integral, 0, len(sizes)).check("way", way))  # 0: the total
        if self._rows is None:
            return marginal_counts(self._in_memory("marginal_counts"), sizes, way)
        check_marginal_cells(sizes, way)
        subsets = list(itertools.combinations(range(len(sizes)), way))
        if len(subsets) <= GROUP_BY_TABLES:
            return np.concatenate([self._rows.table(subset).ravel() for subset in subsets]).astype(float)
        counts = self._rows.reduce(functools.partial(marginal_counts, sizes=sizes, way=way))
        if counts.sum() != len(subsets) * self.n:  # every table counts every row once
            raise ValueError(CHANGED_ROWS)
        return counts

    def cell_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """The occupied universe cells and the number of rows in each.

        Returns
        -------
        cells : numpy.ndarray of int64
            Row-major universe indices, increasing.
        counts : numpy.ndarray of int64
        """
        if self._rows is None:
            cells, counts = np.unique(self._domain.index(self._in_memory("cell_counts")), return_counts=True)
            return cells, counts.astype(np.int64)
        cells, counts = self._rows.cell_counts()
        order = np.argsort(cells)
        return cells[order], counts[order]

    def collect(self) -> Dataset:
        """This data set with its coded rows in memory.

        Returns
        -------
        Dataset
        """
        if self._rows is None:
            return self
        return Dataset(self._rows.collect_codes(), self._domain)

    def project(self, attributes: list[str]) -> Dataset:
        """The data set restricted to some attributes (its histogram is their marginal).

        Parameters
        ----------
        attributes : list of str
            Unique names of the domain's attributes, in the order wanted.

        Returns
        -------
        Dataset
        """
        projected = self._domain.project(attributes)  # checks the names before any copy
        if self._rows is not None:
            return Dataset.from_frame(self._rows.native, projected)
        positions = [self._domain.position(a) for a in projected.attributes]
        return Dataset(self._in_memory("project")[:, positions], projected)

    @validate_params(rng=SEED)
    def subsample(self, n: int, rng: np.random.Generator | int | None) -> Dataset:
        """Rows drawn uniformly without replacement, for experiments that sweep the data size.

        Parameters
        ----------
        n : int
            The number of rows, ``1 .. self.n``.
        rng : numpy.random.Generator, int or None
            The randomness, as for :func:`projmech.validation.as_generator`.

        Returns
        -------
        Dataset
        """
        records = self._in_memory("subsample")
        n = cast(int, Interval(Integral, 1, self.n).check("n", n))  # an Integral interval returns an int
        assert isinstance(rng, np.random.Generator)  # made one by validate_params(rng=SEED)
        chosen = rng.choice(self.n, size=n, replace=False)
        return Dataset(records[chosen], self._domain)

    def to_dataframe(self) -> pd.DataFrame:
        """The codes as a pandas DataFrame.

        Returns
        -------
        pandas.DataFrame
        """
        import pandas as pd

        return pd.DataFrame(self._in_memory("to_dataframe"), columns=list(self._domain.attributes))

    def __repr__(self) -> str:
        where = "" if self._rows is None else f", engine={self.engine!r}"
        return f"Dataset(n={self.n}, domain={self._domain!r}{where})"


@overload
def histogram(data: Dataset | pd.DataFrame | np.ndarray, domain: Domain | None = None, *, normalize: bool = True,
              sparse: Literal[False] = False, max_universe: int = DEFAULT_MAX_UNIVERSE) -> np.ndarray: ...


@overload
def histogram(data: Dataset | pd.DataFrame | np.ndarray, domain: Domain | None = None, *, normalize: bool = True,
              sparse: Literal[True], max_universe: int = DEFAULT_MAX_UNIVERSE) -> sp.csr_array: ...


@overload
def histogram(data: Dataset | pd.DataFrame | np.ndarray, domain: Domain | None = None, *, normalize: bool = True,
              sparse: bool, max_universe: int = DEFAULT_MAX_UNIVERSE) -> np.ndarray | sp.csr_array: ...


@validate_params(domain=OrNone(_DOMAIN), normalize=FLAG, sparse=FLAG, max_universe=POSITIVE_INT)
def histogram(
    data: Dataset | pd.DataFrame | np.ndarray,
    domain: Domain | None = None,
    *,
    normalize: bool = True,
    sparse: bool = False,
    max_universe: int = DEFAULT_MAX_UNIVERSE,
) -> np.ndarray | sp.csr_array:
    """The histogram of a data set over the universe, ``h[u] = #{j : x_j = u} / n`` :cite:p:`DR14`.

    Parameters
    ----------
    data : Dataset, DataFrame or integer ndarray
        A DataFrame or array also needs ``domain``.
    domain : Domain, optional
        Required unless ``data`` is a :class:`Dataset`.
    normalize : bool
        Divide the counts by ``n``.
    sparse : bool
        Return a ``scipy.sparse.csr_array`` of shape ``(1, m)``, of memory ``O(n)``.
    max_universe : int
        A dense histogram over a larger universe is refused.

    Returns
    -------
    numpy.ndarray of shape (m,) or scipy.sparse.csr_array of shape (1, m)

    Examples
    --------
    >>> data = pm.Dataset([[0, 6], [1, 3], [1, 3], [0, 0]], pm.Domain(["sex", "PID"], [2, 7]))
    >>> pm.histogram(data, sparse=True).data
    array([0.25, 0.25, 0.5 ])
    """
    dataset = _as_dataset(data, domain)
    universe = dataset.domain.size
    if not sparse and universe > max_universe:
        raise ValueError(
            f"domain: the universe has {universe:.3e} elements, above max_universe={max_universe:.1e}; "
            "a dense histogram would not fit in memory (pass sparse=True)"
        )
    if normalize and dataset.n == 0:
        raise ValueError("data: the data set has no rows, so it has no normalized histogram (normalize=False "
                         "gives its counts, all 0)")
    cells, counts = dataset.cell_counts()
    values = counts / dataset.n if normalize else counts.astype(float)
    if sparse:
        return sp.csr_array(
            (values, (np.zeros_like(cells), cells)), shape=(1, universe)
        )
    dense = np.zeros(universe)
    dense[cells] = values
    return dense




_REPLACE_ONE = SizePolicy(Neighbouring.REPLACE_ONE)


@validate_params(universe_size=OrNone(POSITIVE_INT), max_universe=OrNone(POSITIVE_INT),
                 policy=InstanceOf(SizePolicy, what="a SizePolicy"))
def resolve_rows(data_or_histogram: Any, n: Any, *, universe_size: int | None = None,
                 max_universe: int | None = None,
                 policy: SizePolicy = _REPLACE_ONE) -> tuple[Dataset | np.ndarray, int]:
    """The private input of a mechanism, resolved once: a Dataset, or a histogram's counts and ``n``.

    Parameters
    ----------
    data_or_histogram : Dataset or array_like
        A Dataset, or a normalized histogram (:func:`check_normalized_histogram`).
    n : int or None
        The row count: required beside a histogram; beside a Dataset checked by ``policy``.
    universe_size : int, optional
        The universe the caller's queries index.
    max_universe : int, optional
        A larger universe is refused.
    policy : SizePolicy
        The caller's neighbouring relation.

    Returns
    -------
    (Dataset or ndarray of shape (m,), int)
        The Dataset or the exact counts ``n h``; the row count.

    Examples
    --------
    >>> pm.data.resolve_rows([0.25, 0.75, 0.0], 4)
    (array([1., 3., 0.]), 4)
    """
    resolved: Dataset | np.ndarray
    if isinstance(data_or_histogram, Dataset):
        policy.check_dataset_n(n, data_or_histogram.n)
        universe = data_or_histogram.domain.size
        if universe_size is not None and universe != universe_size:
            raise ValueError(
                f"data_or_histogram: the data set's universe has {universe:,} elements, expected {universe_size:,}"
            )
        resolved, rows = data_or_histogram, data_or_histogram.n
    else:
        resolved, rows = histogram_counts(data_or_histogram, n, size=universe_size)
        universe = resolved.size
    if max_universe is not None and universe > max_universe:
        raise ValueError(
            f"data_or_histogram: its universe has {universe:,} elements, above max_universe={max_universe:,}"
        )
    return resolved, rows


def _as_dataset(data: Any, domain: Domain | None) -> Dataset:
    if isinstance(data, Dataset):
        if domain is not None and domain != data.domain:
            raise ValueError("domain: differs from the Dataset's own domain")
        return data
    if data is None or isinstance(data, (str, bytes, Mapping)) or issparse(data):
        raise TypeError(f"data: expected a Dataset, DataFrame or (n, d) array of codes, got {type(data).__name__}")
    if domain is None:
        raise TypeError("domain: required when data is not a Dataset")
    if _is_dataframe(data):
        return Dataset.from_dataframe(data, domain)
    return Dataset(data, domain)


def _is_number(text: Any) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def _validate_codes(array: np.ndarray, domain: Domain) -> np.ndarray:
    if array.dtype.kind in "cmMV":
        # Complex codes would lose their imaginary part in the cast, datetimes become integers.
        raise TypeError(f"records: expected integer codes, got dtype {array.dtype}")
    # One rule for codes, whatever they come from: the Codes encoding of each attribute's size
    # (the records are codes even where the domain declares categories or bins). Column-major,
    # so that each attribute's codes are checked and later counted contiguously.
    records = np.empty(array.shape, dtype=np.int64, order="F")
    for i, (name, size) in enumerate(zip(domain.attributes, domain.sizes)):
        records[:, i] = Codes(size).encode(array[:, i], name)
    return records
