"""Data sets over a :class:`~projmech.domain.Domain` and their histograms.

One validation layer: every loader funnels into :class:`Dataset`, which checks that each column
holds integer codes inside its attribute's range and names the column and first bad row otherwise.
"""

from __future__ import annotations

from os import PathLike
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .domain import Domain

__all__ = ["Dataset", "histogram", "check_normalized_histogram", "DEFAULT_MAX_UNIVERSE"]

#: Largest universe for which a dense histogram is materialized (about 800 MB of float64).
DEFAULT_MAX_UNIVERSE = 10**8


class Dataset:
    """``n`` rows of integer codes over a :class:`Domain`.

    Parameters
    ----------
    records : array_like of int, shape (n, d)
        Row ``j`` is the ``j``-th individual; column ``i`` holds codes of ``domain.attributes[i]``.
    domain : Domain

    Raises
    ------
    ValueError
        On a wrong shape, an empty data set, NaN or a code outside ``0 .. size - 1``; the
        message names the column and the first bad row.
    """

    def __init__(self, records: Any, domain: Domain) -> None:
        if not isinstance(domain, Domain):
            raise TypeError(f"domain: expected a Domain, got {type(domain).__name__}")
        array = np.asarray(records)
        if array.ndim != 2 or array.shape[1] != len(domain):
            raise ValueError(
                f"records: expected shape (n, {len(domain)}) for domain {domain.attributes}, "
                f"got {array.shape}"
            )
        if array.shape[0] == 0:
            raise ValueError("records: the data set has no rows (n must be positive)")
        self._records = _validate_codes(array, domain)
        self._domain = domain

    @classmethod
    def from_dataframe(cls, frame: pd.DataFrame, domain: Domain) -> Dataset:
        """Take the domain's columns from ``frame`` (extra columns are ignored)."""
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"frame: expected a pandas DataFrame, got {type(frame).__name__}")
        missing = [name for name in domain.attributes if name not in frame.columns]
        if missing:
            raise ValueError(
                f"frame: columns {missing} of the domain are missing; the frame has {list(frame.columns)}"
            )
        columns = []
        for name in domain.attributes:
            column = frame[name]
            if not (pd.api.types.is_numeric_dtype(column) or column.isna().all()):
                # An object or string column (e.g. a CSV column with one stray word) may still hold
                # numbers, or numeric strings: parse it and report the first entry that is not one.
                numeric = pd.to_numeric(column, errors="coerce")
                unparsable = (numeric.isna() & column.notna()).to_numpy(dtype=bool)
                if unparsable.any():
                    bad = _first_row(unparsable)
                    raise ValueError(
                        f"column {name!r}: expected integer codes, found {column.iloc[bad]!r} at row {bad}"
                    )
                column = numeric
            columns.append(column.to_numpy(dtype=float, na_value=np.nan))
        return cls(np.column_stack(columns), domain)

    @classmethod
    def from_csv(cls, data_path: str | PathLike[str], domain: Domain | str | PathLike[str]) -> Dataset:
        """Read a CSV with a header row; ``domain`` is a :class:`Domain` or a JSON domain file."""
        if not isinstance(domain, Domain):
            domain = Domain.from_json(domain)
        frame = pd.read_csv(data_path)
        return cls.from_dataframe(frame, domain)

    @property
    def records(self) -> np.ndarray:
        """The validated ``(n, d)`` int64 code matrix (read-only view)."""
        view = self._records.view()
        view.flags.writeable = False
        return view

    @property
    def domain(self) -> Domain:
        return self._domain

    @property
    def n(self) -> int:
        return int(self._records.shape[0])

    def __len__(self) -> int:
        return self.n

    def project(self, attributes: list[str]) -> Dataset:
        """The data set restricted to ``attributes`` (its histogram is the marginal)."""
        positions = [self._domain.position(a) for a in attributes]
        return Dataset(self._records[:, positions], self._domain.project(attributes))

    def subsample(self, n: int, rng: np.random.Generator) -> Dataset:
        """``n`` rows drawn without replacement (for experiments that sweep the data size)."""
        if not 1 <= n <= self.n:
            raise ValueError(f"n: must lie in [1, {self.n}], got {n}")
        chosen = rng.choice(self.n, size=n, replace=False)
        return Dataset(self._records[chosen], self._domain)

    def to_dataframe(self) -> pd.DataFrame:
        return pd.DataFrame(self._records, columns=list(self._domain.attributes))

    def __repr__(self) -> str:
        return f"Dataset(n={self.n}, domain={self._domain!r})"


def histogram(
    data: Dataset | pd.DataFrame | np.ndarray,
    domain: Domain | None = None,
    normalize: bool = True,
    sparse: bool = False,
    max_universe: int = DEFAULT_MAX_UNIVERSE,
) -> np.ndarray | sp.csr_array:
    """The histogram of a data set over the universe (seed 001, eq. 7).

    ``h[u] = #{j : x_j = u} / n`` with ``normalize=True`` (the default), raw counts otherwise.

    Parameters
    ----------
    data : Dataset, DataFrame or integer ndarray
        A DataFrame or array also needs ``domain``.
    domain : Domain, optional
        Required unless ``data`` is a :class:`Dataset`.
    normalize : bool
        Divide the counts by ``n``.
    sparse : bool
        Return a ``scipy.sparse.csr_array`` of shape ``(1, m)`` holding only the occupied cells;
        its memory is ``O(n)`` whatever the universe size.
    max_universe : int
        A dense histogram over a larger universe is refused (use ``sparse=True``).

    Returns
    -------
    numpy.ndarray of shape (m,) or scipy.sparse.csr_array of shape (1, m)
    """
    dataset = _as_dataset(data, domain)
    universe = dataset.domain.size
    if not sparse and universe > max_universe:
        raise ValueError(
            f"domain: the universe has {universe:.3e} elements, above max_universe={max_universe:.1e}; "
            "a dense histogram would not fit in memory (pass sparse=True)"
        )
    indices = dataset.domain.index(dataset.records)
    cells, counts = np.unique(indices, return_counts=True)
    values = counts / dataset.n if normalize else counts.astype(float)
    if sparse:
        return sp.csr_array(
            (values, (np.zeros_like(cells), cells)), shape=(1, universe)
        )
    dense = np.zeros(universe)
    dense[cells] = values
    return dense


def check_normalized_histogram(histogram: Any, n: Any, size: int | None = None) -> tuple[np.ndarray, int]:
    """A user-given normalized histogram and its data size ``n``, validated.

    The one check of every mechanism that accepts a histogram instead of a Dataset: ``n`` cannot
    be recovered from ``h``, so it is required and must be a positive integer; ``h`` (dense or
    sparse) must be finite, non-negative, sum to 1 and, where ``size`` is given, have ``size``
    entries (the workload's universe).

    Returns
    -------
    (ndarray of shape (m,), int)
    """
    if n is None:
        raise ValueError("n: required when a histogram is passed (it cannot be recovered from h)")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n: the data set size must be a positive integer, got {n!r}")
    h = np.asarray(histogram.toarray() if sp.issparse(histogram) else histogram, dtype=float).ravel()
    if size is not None and h.shape != (size,):
        raise ValueError(f"histogram: expected {size} entries to match the workload, got {h.size}")
    if h.size == 0:
        raise ValueError("histogram: is empty")
    if not np.all(np.isfinite(h)):
        raise ValueError("histogram: contains NaN or infinite entries")
    if h.min() < 0:
        raise ValueError("histogram: has negative entries")
    if abs(h.sum() - 1.0) > 1e-9:
        raise ValueError(f"histogram: must be normalized to sum 1 (got {h.sum():.6g}); pass histogram(data)")
    return h, int(n)


def _as_dataset(data: Any, domain: Domain | None) -> Dataset:
    if isinstance(data, Dataset):
        if domain is not None and domain != data.domain:
            raise ValueError("domain: differs from the Dataset's own domain")
        return data
    if domain is None:
        raise TypeError("domain: required when data is not a Dataset")
    if isinstance(data, pd.DataFrame):
        return Dataset.from_dataframe(data, domain)
    return Dataset(data, domain)


def _first_row(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _validate_codes(array: np.ndarray, domain: Domain) -> np.ndarray:
    if array.dtype == object or not np.issubdtype(array.dtype, np.number):
        try:
            array = array.astype(float)
        except (TypeError, ValueError):
            for i, name in enumerate(domain.attributes):
                for row, value in enumerate(array[:, i]):
                    try:
                        float(value)
                    except (TypeError, ValueError):
                        shown = value.item() if isinstance(value, np.generic) else value
                        raise ValueError(
                            f"column {name!r}: expected integer codes, found {shown!r} at row {row}"
                        ) from None
            raise ValueError("records: expected numeric integer codes") from None
    if not np.issubdtype(array.dtype, np.integer):
        for i, name in enumerate(domain.attributes):
            column = array[:, i]
            nonfinite = ~np.isfinite(column)
            if nonfinite.any():
                row = _first_row(nonfinite)
                raise ValueError(f"column {name!r}: missing or non-finite value {column[row]} at row {row}")
            fractional = column != np.round(column)
            if fractional.any():
                row = _first_row(fractional)
                raise ValueError(f"column {name!r}: non-integer code {column[row]} at row {row}")
    # Range check before the int64 cast, so that huge floats are reported as given instead of
    # overflowing in the cast.
    for i, (name, size) in enumerate(zip(domain.attributes, domain.sizes)):
        column = array[:, i]
        outside = (column < 0) | (column >= size)
        if outside.any():
            row = _first_row(outside)
            value = column[row]
            shown = f"{value:.15g}" if np.issubdtype(array.dtype, np.floating) else str(value)
            raise ValueError(
                f"column {name!r}: value {shown} at row {row} is outside the domain 0..{size - 1}"
            )
    return array.astype(np.int64)
