"""The numeric encodings: :class:`Codes` (the column holds the codes) and :class:`Bins` (declared edges)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..validation import first_true
from ._encoding_base import MISSING_VALUE_HINT, Encoding, _brief, _number, _numeric, is_missing

if TYPE_CHECKING:
    import narwhals as nw

__all__ = ["Codes", "Bins"]


class Codes(Encoding):
    """A column that already holds the integer codes ``0 .. size - 1`` (declared by a size: ``"PID": 7``).

    Parameters
    ----------
    size : int
        The number of codes.

    Examples
    --------
    >>> codes = pm.data.Codes(7)
    >>> codes.encode(np.array([0, 6, 3]), "PID"), codes.at_most("PID", 5)
    (array([0, 6, 3]), 'PID<=5')
    """

    def __init__(self, size: int) -> None:
        self.size = size

    def labels(self) -> tuple[str, ...]:
        return tuple(str(code) for code in range(self.size))

    def spec(self) -> int:
        return self.size

    def encode(self, values: np.ndarray, column: str) -> np.ndarray:
        values = _numeric(values, column, "integer codes")
        if values.dtype.kind == "f":
            missing = ~np.isfinite(values)
            if missing.any():
                row = first_true(missing)
                if is_missing(values[row]):
                    raise ValueError(f"column {column!r}: missing value at row {row}; {MISSING_VALUE_HINT}")
                raise ValueError(f"column {column!r}: non-finite value {values[row]} at row {row}")
            fractional = values != np.round(values)
            if fractional.any():
                row = first_true(fractional)
                raise ValueError(f"column {column!r}: non-integer code {values[row]} at row {row}")
        # Unsigned codes cannot be negative (and comparing them with 0 would only cost a pass).
        outside = values >= self.size if values.dtype.kind == "u" else (values < 0) | (values >= self.size)
        if outside.any():
            row = first_true(outside)
            value = values[row]
            shown = f"{value:.15g}" if values.dtype.kind == "f" else str(value)
            raise ValueError(f"column {column!r}: value {shown} at row {row} is outside the domain 0..{self.size - 1}")
        return values

    def code(self, column: nw.Expr, dtype: Any) -> nw.Expr:
        return column.cast(dtype)

    def invalid(self, column: nw.Expr, floating: bool) -> nw.Expr:
        outside = column.is_null() | ((column < 0) | (column >= self.size)).fill_null(False)
        if not floating:
            return outside
        # A float code must be integral, and a NaN is neither below 0 nor above the size.
        return outside | (column.is_nan() | (column != column.round(0))).fill_null(False)

    def accepts_dtype(self, dtype: Any) -> bool:
        return bool(dtype.is_numeric()) and not dtype.is_decimal() or bool(dtype.is_boolean())

    def describe(self) -> str:
        return f"integer codes 0..{self.size - 1}"

    def _key(self) -> tuple[Any, ...]:
        return (self.size,)

    def __repr__(self) -> str:
        return f"Codes({self.size})"


class Bins(Encoding):
    """A numeric column cut into bins at declared edges (``{"bins": [e_0, ..., e_k]}``).

    Code ``i`` holds ``e_i <= x < e_{i+1}``, the last bin its right edge too. Declare edges from
    public knowledge: edges computed from the data (its quantiles) depend on the private rows.

    Parameters
    ----------
    edges : sequence of float
        Strictly increasing finite numbers, at least two.

    Examples
    --------
    >>> age = pm.data.Bins([18, 35, 65, 100])
    >>> age.encode(np.array([18, 34.5, 35, 100]), "age"), age.labels()
    (array([0, 0, 1, 2]), ('[18, 35)', '[35, 65)', '[65, 100]'))
    """

    def __init__(self, edges: Sequence[float]) -> None:
        edges = tuple(edges)
        for edge in edges:
            if isinstance(edge, bool) or not isinstance(edge, (int, float, np.integer, np.floating)):
                raise TypeError(f"bins: edges must be numbers, got {_brief(edge)}")
            if not math.isfinite(edge):
                raise ValueError(f"bins: edges must be finite, got {edge!r}")
        if len(edges) < 2:
            raise ValueError(f"bins: need at least two edges (one bin), got {_brief(list(edges))}")
        if any(b <= a for a, b in zip(edges, edges[1:])):
            raise ValueError(f"bins: edges must increase strictly, got {_brief(list(edges))}")
        self.edges = tuple(edge.item() if isinstance(edge, np.generic) else edge for edge in edges)
        self.size = len(edges) - 1

    def labels(self) -> tuple[str, ...]:
        closing = [")"] * (self.size - 1) + ["]"]
        return tuple(f"[{_number(low)}, {_number(high)}{close}"
                     for low, high, close in zip(self.edges, self.edges[1:], closing))

    def spec(self) -> dict[str, list[float]]:
        return {"bins": list(self.edges)}

    def _below(self, code: int) -> str:
        """``< e_{code+1}``, or ``<= e_k`` for the last bin (closed on the right)."""
        return f"{'<=' if code == self.size - 1 else '<'}{_number(self.edges[code + 1])}"

    def at_most(self, attribute: str, code: int) -> str:
        return f"{attribute}{self._below(code)}"

    def between(self, attribute: str, low: int, high: int) -> str:
        return f"{_number(self.edges[low])}<={attribute}{self._below(high)}"

    def encode(self, values: np.ndarray, column: str) -> np.ndarray:
        # Compared in float64, as the engines compare: a float32 value just below an edge must
        # fall in the same bin everywhere.
        values = _numeric(values, column, self.describe()).astype(np.float64)
        with np.errstate(invalid="ignore"):
            outside = ~((values >= self.edges[0]) & (values <= self.edges[-1]))  # NaN included
        if outside.any():
            row = first_true(outside)
            value = values[row].item()
            if is_missing(value):
                raise ValueError(f"column {column!r}: missing value at row {row}; {MISSING_VALUE_HINT}")
            raise ValueError(f"column {column!r}: value {value!r} at row {row} is outside the domain's bins "
                             f"{self._span()}")
        inner = np.asarray(self.edges[1:-1], dtype=float)
        return np.searchsorted(inner, values, side="right")

    def code(self, column: nw.Expr, dtype: Any) -> nw.Expr:
        import narwhals as nw

        # The number of inner edges at or below the value: plain comparisons, which every
        # engine evaluates identically to NumPy's searchsorted.
        column = column.cast(nw.Float64)  # compared in float64, like NumPy's path
        code = nw.lit(0, dtype=dtype)
        for edge in self.edges[1:-1]:
            code = code + (column >= edge).cast(dtype)
        return code

    def invalid(self, column: nw.Expr, floating: bool) -> nw.Expr:
        import narwhals as nw

        column = column.cast(nw.Float64)
        inside = ((column >= self.edges[0]) & (column <= self.edges[-1])).fill_null(False)
        invalid = column.is_null() | ~inside
        return invalid | column.is_nan().fill_null(False) if floating else invalid

    def accepts_dtype(self, dtype: Any) -> bool:
        return bool(dtype.is_numeric()) and not dtype.is_decimal()

    def describe(self) -> str:
        return f"numbers in {self._span()}"

    def _span(self) -> str:
        return f"[{_number(self.edges[0])}, {_number(self.edges[-1])}]"

    def _key(self) -> tuple[Any, ...]:
        return tuple(float(edge) for edge in self.edges)

    def __repr__(self) -> str:
        return f"Bins({list(self.edges)!r})"
