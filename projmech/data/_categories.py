"""The encoding of category labels, coded by their position in a declared list."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..validation import first_true
from ._encoding_base import (
    BYTES_HINT,
    FLOAT_LABELS_HINT,
    MISSING_VALUE_HINT,
    Encoding,
    _brief,
    _is_int,
    _is_text,
    _shown,
    refuse_value,
)

if TYPE_CHECKING:
    import narwhals as nw

__all__ = ["Categories"]


class Categories(Encoding):
    """A column of category labels, coded by their position in a declared list.

    Integer labels match integers, or text that is exactly ``str(label)`` (``"09"`` is no label).

    Parameters
    ----------
    labels : sequence of str or sequence of int
        The categories, all str or all int, distinct; ``labels[i]`` has code ``i``.
    ordered : bool, default False
        Whether the list's order is an order of the values.

    Examples
    --------
    >>> pm.data.Categories([1, 2, 10]).encode(np.array(["10", "1"], dtype=object), "x")
    array([2, 0])
    """

    def __init__(self, labels: Sequence[str | int], *, ordered: bool = False) -> None:
        labels = tuple(labels)
        if not labels:
            raise ValueError("labels: an attribute needs at least one category")
        text = all(isinstance(label, str) for label in labels)
        if not (text or all(isinstance(label, (int, np.integer)) and not isinstance(label, (bool, np.bool_))
                            for label in labels)):
            raise TypeError(f"labels: categories must be all str or all int, got {_brief(list(labels))}")
        if len(set(labels)) != len(labels):
            raise ValueError(f"labels: categories must be distinct, got {_brief(list(labels))}")
        if not text and not all(-2**63 <= int(label) < 2**63 for label in labels):
            # Engines compare integer columns as int64: a label beyond it would match in pandas but
            # fail inside lazy engines with a cast error.
            outside = next(label for label in labels if not -2**63 <= int(label) < 2**63)
            raise ValueError(f"labels: integer categories must fit in int64, got {_brief(outside)}; "
                             "declare such codes as text categories")
        if not isinstance(ordered, (bool, np.bool_)):
            raise TypeError(f"ordered: expected a bool, got {_brief(ordered)}")
        self.categories = tuple(str(label) if isinstance(label, str) else int(label) for label in labels)
        self.size = len(labels)
        self.ordered = bool(ordered)
        self._text = isinstance(self.categories[0], str)

    @property
    def is_text(self) -> bool:
        """Whether the categories are text (else integers)."""
        return self._text

    def labels(self) -> tuple[str, ...]:
        return tuple(str(label) for label in self.categories)

    def spec(self) -> list[str | int] | dict[str, Any]:
        if self.ordered:
            return {"categories": list(self.categories), "ordered": True}
        return list(self.categories)

    def encode(self, values: np.ndarray, column: str) -> np.ndarray:
        import pandas as pd

        values = np.asarray(values)
        kind = values.dtype.kind
        if kind == "f" and not self._text and np.isnan(values).any():
            # An integer column with missing values reaches NumPy as floats (pandas' Int64, a
            # Polars column with nulls): what to say is that a value is missing.
            row = first_true(np.isnan(values))
            raise ValueError(f"column {column!r}: missing value at row {row}; {MISSING_VALUE_HINT}")
        if not (kind in "OU" or (kind in "iu" and not self._text)):
            hint = {"f": f"; {FLOAT_LABELS_HINT}" if not self._text else "", "S": f"; {BYTES_HINT}"}.get(kind, "")
            raise TypeError(f"column {column!r}: expected {self.describe()}, got dtype {values.dtype}{hint}")
        if kind == "O" and not self._text:
            # Entry by entry: a hash lookup would take 1.0 and True for the label 1 (they hash
            # alike in Python), and text is matched as text, never parsed ("01" is not 1).
            by_text, by_value = self._lookup(True), self._lookup(False)
            codes = np.fromiter((by_text.get(value, -1) if isinstance(value, str)
                                 else by_value.get(int(value), -1) if _is_int(value) else -1 for value in values),
                                dtype=np.int64, count=len(values))
        else:
            # A hash lookup in the (distinct) categories, -1 for values outside them and for
            # missing values alike (pd.Categorical warns of values outside its categories).
            keys = [str(label) for label in self.categories] if kind == "U" else list(self.categories)
            codes = np.asarray(pd.Index(keys).get_indexer(pd.Index(values)), dtype=np.int64)
        unknown = codes < 0
        if unknown.any():
            row = first_true(unknown)
            value = values[row]
            shown = value.item() if isinstance(value, np.generic) else value
            refuse_value(column, shown, f" at row {row}",
                         f"is not one of the domain's categories {_shown(self.categories)}{self._hint(shown)}")
        return codes

    def _lookup(self, text: bool) -> dict[Any, int]:
        """Each category's code by its key: ``str(label)`` for ``text``, else the label."""
        return {str(label) if text else label: code for code, label in enumerate(self.categories)}

    def _keys(self, text: bool) -> list[Any]:
        """The labels the engine compares a column with (their decimal text, for integer labels and a text column)."""
        return [str(label) for label in self.categories] if text and not self._text else list(self.categories)

    def _comparable(self, column: nw.Expr, text: bool) -> nw.Expr:
        # Compared as plain strings or int64 whatever the column's own type: a categorical or
        # enum column lacking one of the domain's categories, or a narrow integer column, would
        # otherwise make the engine refuse the lookup. A text column is compared as text with
        # integer categories too, so that "01" is no label (parsing it would make it 1).
        import narwhals as nw

        return column.cast(nw.String if self._text or text else nw.Int64)

    def code(self, column: nw.Expr, dtype: Any, *, lookup: bool = True, text: bool = False) -> nw.Expr:
        """The codes as an engine expression, valid only on rows where :meth:`invalid` is false.

        Parameters
        ----------
        column, dtype
            As for :meth:`Encoding.code`.
        lookup : bool
            Use the engine's hash lookup, else a sum of comparisons (Spark Connect has none).
        text : bool
            Whether the engine column holds text (then integer labels match ``str(label)``).

        Returns
        -------
        narwhals.Expr
        """
        import narwhals as nw

        comparable = self._comparable(column, text)
        keys = self._keys(text)
        if lookup:
            return comparable.replace_strict(keys, list(range(self.size)), default=-1, return_dtype=dtype)
        code = nw.lit(0, dtype=dtype)
        for position, key in enumerate(keys[1:], start=1):
            code = code + (comparable == key).cast(dtype) * position
        return code

    def invalid(self, column: nw.Expr, floating: bool, *, text: bool = False) -> nw.Expr:
        """An engine expression, true on every row that is missing or not a category.

        Parameters
        ----------
        column
            As for :meth:`Encoding.invalid`.
        floating : bool
            Unused: :meth:`accepts_dtype` refuses floating columns for categories.
        text : bool
            Whether the engine column holds text.

        Returns
        -------
        narwhals.Expr
        """
        return column.is_null() | ~self._comparable(column, text).is_in(self._keys(text)).fill_null(False)

    def accepts_dtype(self, dtype: Any) -> bool:
        return _is_text(dtype) or (not self._text and bool(dtype.is_integer()))

    def describe(self) -> str:
        return f"one of the categories {_shown(self.categories)}"

    def _hint(self, value: Any) -> str:
        if self._text:
            return ""
        if isinstance(value, str):
            try:
                parsed = int(value)
            except ValueError:
                parsed = None
            if parsed in self.categories:
                return (f"; text matches integer categories by its exact decimal text: {value!r} is not the label "
                        f"{parsed}")
            return "; text matches integer categories by its exact decimal text (such as '1')"
        if isinstance(value, (bool, np.bool_, float, np.floating)):
            return f"; integer categories take integers or their exact decimal text, not {type(value).__name__}s"
        return ""

    def _key(self) -> tuple[Any, ...]:
        return (self.categories, self.ordered)

    def __repr__(self) -> str:
        return f"Categories({list(self.categories)!r}{', ordered=True' if self.ordered else ''})"
