"""How one column's values become an attribute's codes ``0 .. size - 1``.

An attribute of a :class:`~projmech.data.domain.Domain` is declared in one of three ways, each an
:class:`Encoding`:

- :class:`Codes` — the column already holds the integer codes (a size in the domain file);
- :class:`Categories` — the column holds category labels, coded by their position in a declared
  list (``["Clinton", "Dole"]``), for string, categorical or integer-labelled columns;
- :class:`Bins` — a numeric column, coded by declared bin edges (``{"bins": [18, 25, 35]}``).

Each encoding codes values two ways that agree exactly: :meth:`Encoding.encode` on a NumPy array
(in-process frames, with the first bad row named), and :meth:`Encoding.code` /
:meth:`Encoding.invalid` as engine expressions (Narwhals), so that a lazy or distributed frame is
coded inside its engine. Bins are declared, never computed from the data: edges taken from the
data's quantiles would themselves depend on the private rows.

Integer categories read from text (a CSV column) match a value only when its text is exactly the
label's decimal text, ``str(label)``: ``"10"`` is the label 10, ``"01"`` and ``" 1"`` are no
label, in every engine. Bytes are never text: they are refused, to be decoded by their owner.
"""

from __future__ import annotations

import math
import reprlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..validation import check_positive_int, first_true

if TYPE_CHECKING:
    import narwhals as nw

__all__ = ["Encoding", "Codes", "Categories", "Bins", "NotANumberError", "encoding_from_spec"]

#: What a missing value's error suggests: the domain is public and fixed, so what "missing" means
#: is the data holder's decision, made before the release.
MISSING_VALUE_HINT = ("a domain has no code for missing values: give them a category of their own (such as "
                      "'missing') or drop those rows before the release")

#: What a float column declared as integer categories is told: its floats are no labels.
FLOAT_LABELS_HINT = ("integer categories take integers or their exact decimal text, not floats; integral floats "
                     "such as 1.0 are what a column with missing values becomes when read from a CSV: drop or fill "
                     "the missing values and cast the column to integers, or declare the attribute as a size "
                     "(integer codes) or as bins")

#: What bytes in a column are told: ``b"a"`` is not the label ``"a"`` (nor ``b"1"`` the code 1)
#: until someone decodes it, and only its owner knows the encoding.
BYTES_HINT = "decode the column to text first (e.g. value.decode('utf-8'))"


def is_missing(value: Any) -> bool:
    """Whether one value read from a column is missing (None, a floating-point NaN, or pandas'
    ``NA``, which a nullable column's object array holds)."""
    pandas = sys.modules.get("pandas")  # if pandas was never imported, no value is its NA
    return value is None or (isinstance(value, float) and math.isnan(value)) or \
        (pandas is not None and value is pandas.NA)


class Encoding:
    """The values an attribute's column may hold, and their codes ``0 .. size - 1``.

    The base class of :class:`Codes`, :class:`Categories` and :class:`Bins`; a
    :class:`~projmech.data.domain.Domain` holds one per attribute (:meth:`Domain.encoding
    <projmech.data.domain.Domain.encoding>`). Two encodings are equal when they are of the same kind
    and code the same values alike.

    Attributes
    ----------
    size : int
        The number of codes.
    ordered : bool
        Whether the codes' order means something, so that prefix and range queries over them
        make sense: true for :class:`Codes` and :class:`Bins`, and for :class:`Categories`
        declared ordered.

    See Also
    --------
    encoding_from_spec : An encoding from its domain file entry.

    Examples
    --------
    >>> import projmech as pm
    >>> domain = pm.Domain.from_dict({"vote": ["Clinton", "Dole"], "age": {"bins": [18, 35, 65, 100]}, "PID": 7})
    >>> domain.encodings
    (Categories(['Clinton', 'Dole']), Bins([18, 35, 65, 100]), Codes(7))
    >>> [encoding.size for encoding in domain.encodings]
    [2, 3, 7]
    >>> domain.encoding("age").between("age", 0, 1)
    '18<=age<65'
    """

    size: int
    ordered: bool = True

    def labels(self) -> tuple[str, ...]:
        """One printable label per code, used in released query labels (``vote=Dole``).

        Returns
        -------
        tuple of str
            ``size`` labels, the label of code ``i`` at position ``i``.
        """
        raise NotImplementedError

    def spec(self) -> Any:
        """This encoding as a domain file entry (the inverse of :func:`encoding_from_spec`).

        Returns
        -------
        int, list or dict
            A size, a list of categories, or ``{"bins": edges}``: plain JSON values.
        """
        raise NotImplementedError

    def equals(self, attribute: str, code: int) -> str:
        """The label of the query ``attribute = code`` (``vote=Dole``).

        Parameters
        ----------
        attribute : str
            The attribute's name, as it prints in the label.
        code : int
            A code in ``0 .. size - 1``.

        Returns
        -------
        str
            ``attribute=label``, with the code's label from :meth:`labels`.
        """
        return f"{attribute}={self.labels()[code]}"

    def at_most(self, attribute: str, code: int) -> str:
        """The label of the prefix query ``attribute <= code``.

        Parameters
        ----------
        attribute : str
            The attribute's name, as it prints in the label.
        code : int
            The largest code the query counts, in ``0 .. size - 1``.

        Returns
        -------
        str
            ``attribute<=label`` (``PID<=6``; :class:`Bins` print the bin's right edge instead:
            ``age<35``).
        """
        return f"{attribute}<={self.labels()[code]}"

    def between(self, attribute: str, low: int, high: int) -> str:
        """The label of the range query ``low <= attribute <= high``.

        Parameters
        ----------
        attribute : str
            The attribute's name, as it prints in the label.
        low, high : int
            The smallest and largest codes the query counts, ``0 <= low <= high < size``.

        Returns
        -------
        str
            ``label_low<=attribute<=label_high`` (:class:`Bins` print edges instead:
            ``18<=age<35``).
        """
        labels = self.labels()
        return f"{labels[low]}<={attribute}<={labels[high]}"

    def encode(self, values: np.ndarray, column: str) -> np.ndarray:
        """The codes of a column's values, computed in NumPy.

        Parameters
        ----------
        values : numpy.ndarray
            One column's values, of any dtype pandas or NumPy gives it.
        column : str
            The column's name, for error messages.

        Returns
        -------
        numpy.ndarray
            An array of integers, or of integral floats, in ``0 .. size - 1`` (the caller casts
            them where it stores them).

        Raises
        ------
        TypeError
            For values of a type that cannot hold the encoding's values (complex, dates ...).
        ValueError
            For a value with no code; the message names ``column``, the first bad value and
            its row.
        """
        raise NotImplementedError

    def code(self, column: nw.Expr, dtype: Any) -> nw.Expr:
        """The codes as an engine expression.

        Parameters
        ----------
        column : narwhals.Expr
            The column's values.
        dtype : narwhals dtype
            The integer type of the codes.

        Returns
        -------
        narwhals.Expr
            The codes, valid only on rows where :meth:`invalid` is false.
        """
        raise NotImplementedError

    def invalid(self, column: nw.Expr, floating: bool) -> nw.Expr:
        """An engine expression, true on every row whose value has no code.

        Parameters
        ----------
        column : narwhals.Expr
            The column's values.
        floating : bool
            Whether the engine column is floating point, so that NaN and fractional values need
            checking.

        Returns
        -------
        narwhals.Expr
            A boolean expression, true where :meth:`encode` would refuse the value.
        """
        raise NotImplementedError

    def accepts_dtype(self, dtype: Any) -> bool:
        """Whether an engine column of a Narwhals dtype can hold this encoding's values.

        Parameters
        ----------
        dtype : narwhals dtype
            The column's type in its engine.

        Returns
        -------
        bool
            False for a type whose column is refused outright (text for integer codes ...).
        """
        raise NotImplementedError

    def describe(self) -> str:
        """What the column must hold, for error messages.

        Returns
        -------
        str
            A phrase such as ``integer codes 0..6`` or ``numbers in [18, 100]``.
        """
        raise NotImplementedError

    def _hint(self, value: Any) -> str:
        """Why a value with no code has none, where it is not plain (``"; ..."``), else ``""``."""
        return ""

    def _key(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))


class Codes(Encoding):
    """A column that already holds the integer codes ``0 .. size - 1``.

    Integral floats (``2.0``, exactly the code 2), booleans (``False`` and ``True``: the codes 0
    and 1, in every engine) and, in memory, numeric strings are read as codes; a fractional float
    (``1.5``) is refused, named, and so are bytes. A domain file declares it by a size
    (``"PID": 7``).

    Parameters
    ----------
    size : int
        The number of codes, at least 1 (:func:`encoding_from_spec` checks it).

    See Also
    --------
    Categories, Bins : The other encodings.

    Examples
    --------
    >>> import numpy as np
    >>> from projmech.data.encodings import Codes
    >>> codes = Codes(7)
    >>> codes.labels()
    ('0', '1', '2', '3', '4', '5', '6')
    >>> codes.encode(np.array([0, 6, 3]), "PID")
    array([0, 6, 3])
    >>> codes.at_most("PID", 5), codes.spec()
    ('PID<=5', 7)
    """

    def __init__(self, size: int) -> None:
        self.size = size

    def labels(self) -> tuple[str, ...]:
        """The codes themselves, as text.

        Returns
        -------
        tuple of str
            ``("0", "1", ..., str(size - 1))``.
        """
        return tuple(str(code) for code in range(self.size))

    def spec(self) -> int:
        """This encoding as a domain file entry: its size.

        Returns
        -------
        int
            ``size``.
        """
        return self.size

    def encode(self, values: np.ndarray, column: str) -> np.ndarray:
        """The codes of a column's values: the values themselves, checked.

        Parameters
        ----------
        values : numpy.ndarray
            Integers, integral floats, booleans, or an object column of numbers or numeric
            strings.
        column : str
            The column's name, for error messages.

        Returns
        -------
        numpy.ndarray
            The values, as integers or integral floats in ``0 .. size - 1``.

        Raises
        ------
        TypeError
            For complex, datetime, structured or bytes values.
        ValueError
            Naming ``column``, the first bad value and its row: a missing, non-finite,
            fractional or out-of-range value (:class:`NotANumberError` for text that is no
            number).
        """
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
        """The codes as an engine expression: the column cast to ``dtype``.

        Parameters
        ----------
        column : narwhals.Expr
            The column's values.
        dtype : narwhals dtype
            The integer type of the codes.

        Returns
        -------
        narwhals.Expr
            The codes, valid only on rows where :meth:`invalid` is false.
        """
        return column.cast(dtype)

    def invalid(self, column: nw.Expr, floating: bool) -> nw.Expr:
        """An engine expression, true on every row that is missing or outside ``0 .. size - 1``.

        Parameters
        ----------
        column : narwhals.Expr
            The column's values.
        floating : bool
            Whether the engine column is floating point: NaN and fractional values are then
            invalid too.

        Returns
        -------
        narwhals.Expr
            A boolean expression, true where :meth:`encode` would refuse the value.
        """
        outside = column.is_null() | ((column < 0) | (column >= self.size)).fill_null(False)
        if not floating:
            return outside
        # A float code must be integral, and a NaN is neither below 0 nor above the size.
        return outside | (column.is_nan() | (column != column.round(0))).fill_null(False)

    def accepts_dtype(self, dtype: Any) -> bool:
        """Whether an engine column of a Narwhals dtype can hold codes.

        Parameters
        ----------
        dtype : narwhals dtype
            The column's type in its engine.

        Returns
        -------
        bool
            True for integer, floating point and boolean columns.
        """
        return bool(dtype.is_numeric()) and not dtype.is_decimal() or bool(dtype.is_boolean())

    def describe(self) -> str:
        """What the column must hold, for error messages.

        Returns
        -------
        str
            ``integer codes 0..size-1``.
        """
        return f"integer codes 0..{self.size - 1}"

    def _key(self) -> tuple[Any, ...]:
        return (self.size,)

    def __repr__(self) -> str:
        return f"Codes({self.size})"


class Categories(Encoding):
    """A column of category labels, coded by their position in a declared list.

    A domain file declares it by the list (``"vote": ["Clinton", "Dole"]``), or by
    ``{"categories": [...], "ordered": true}`` when the list's order means something (sizes
    ``["S", "M", "L"]``), so that prefix and range queries over it make sense. The column may be
    of strings, a categorical or enum type, or, for integer labels such as survey codes
    ``[1, 2, 9]``, integers or text: text matches an integer label only when it is exactly the
    label's decimal text, ``str(label)`` (``"9"`` is 9; ``"09"``, ``" 9"`` and ``"9.0"`` are no
    label), the rule of every engine. Floats, booleans and bytes are no labels.

    Parameters
    ----------
    labels : sequence of str or sequence of int
        The categories, all str or all int, distinct; category ``labels[i]`` has code ``i``.
    ordered : bool, default False
        Whether the list's order is an order of the values (prefix and range queries need one).

    Attributes
    ----------
    categories : tuple of str or tuple of int
        The categories, in code order.
    size : int
        The number of categories.
    ordered : bool
        As declared.

    Raises
    ------
    TypeError
        If ``labels`` mixes types or holds something other than str or int (a bool, a float),
        or ``ordered`` is not a bool.
    ValueError
        If ``labels`` is empty or repeats a category.

    See Also
    --------
    Codes, Bins : The other encodings.

    Examples
    --------
    >>> import numpy as np
    >>> from projmech.data.encodings import Categories
    >>> vote = Categories(["Clinton", "Dole"])
    >>> vote.encode(np.array(["Dole", "Clinton", "Dole"], dtype=object), "vote")
    array([1, 0, 1])
    >>> vote.equals("vote", 1)
    'vote=Dole'
    >>> vote.encode(np.array(["Perot"], dtype=object), "vote")
    Traceback (most recent call last):
    ...
    ValueError: column 'vote': value 'Perot' at row 0 is not one of the domain's categories ['Clinton', 'Dole']
    >>> Categories([1, 2, 10]).encode(np.array(["10", "1"], dtype=object), "x")
    array([2, 0])
    >>> Categories(["S", "M", "L"], ordered=True).spec()
    {'categories': ['S', 'M', 'L'], 'ordered': True}
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
            # Engines compare integer columns as int64: a label beyond it matched in pandas and
            # eager Polars but failed inside lazy Polars and DuckDB with a cast error.
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
        """The categories, as text.

        Returns
        -------
        tuple of str
            ``str(category)`` for each category, in code order.
        """
        return tuple(str(label) for label in self.categories)

    def spec(self) -> list[str | int] | dict[str, Any]:
        """This encoding as a domain file entry: the list of categories.

        Returns
        -------
        list or dict
            The categories, in code order; ``{"categories": [...], "ordered": True}`` when
            they are ordered.
        """
        if self.ordered:
            return {"categories": list(self.categories), "ordered": True}
        return list(self.categories)

    def encode(self, values: np.ndarray, column: str) -> np.ndarray:
        """The codes of a column's values: each value's position among the categories.

        Parameters
        ----------
        values : numpy.ndarray
            The labels: strings (an object or str array) for text categories; integers, or text
            that is exactly a label's decimal text, for integer ones.
        column : str
            The column's name, for error messages.

        Returns
        -------
        numpy.ndarray
            int64 codes in ``0 .. size - 1``.

        Raises
        ------
        TypeError
            For an array of a type that holds no labels (floats or booleans for integer
            categories, numbers for text ones, bytes, dates ...), and for a bytes value.
        ValueError
            Naming ``column``, the first bad value and its row: a value that is not one of the
            categories (``"01"`` for the label 1 included), or missing.
        """
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
            # missing values alike. (pd.Categorical gave the same codes, but warns of values
            # outside its categories, and pandas 4 will refuse them.)
            keys = [str(label) for label in self.categories] if kind == "U" else list(self.categories)
            codes = np.asarray(pd.Index(keys).get_indexer(pd.Index(values)), dtype=np.int64)
        unknown = codes < 0
        if unknown.any():
            row = first_true(unknown)
            value = values[row]
            shown = value.item() if isinstance(value, np.generic) else value
            if is_missing(shown):
                raise ValueError(f"column {column!r}: missing value at row {row}; {MISSING_VALUE_HINT}")
            if isinstance(shown, bytes):
                raise TypeError(f"column {column!r}: value {shown!r} at row {row} is bytes, not text; {BYTES_HINT}")
            raise ValueError(f"column {column!r}: value {shown!r} at row {row} is not one of the domain's "
                             f"categories {_shown(self.categories)}{self._hint(shown)}")
        return codes

    def _lookup(self, text: bool) -> dict[Any, int]:
        """Each category's code by its key: ``str(label)`` for ``text``, else the label."""
        return {str(label) if text else label: code for code, label in enumerate(self.categories)}

    def _keys(self, text: bool) -> list[Any]:
        """What the engine compares a column with: the labels, or, for integer categories and a
        text column, their exact decimal text."""
        return [str(label) for label in self.categories] if text and not self._text else list(self.categories)

    def _comparable(self, column: nw.Expr, text: bool) -> nw.Expr:
        # Compared as plain strings or int64 whatever the column's own type: a categorical or
        # enum column lacking one of the domain's categories, or a narrow integer column, would
        # otherwise make the engine refuse the lookup. A text column is compared as text with
        # integer categories too, so that "01" is no label (parsing it would make it 1).
        import narwhals as nw

        return column.cast(nw.String if self._text or text else nw.Int64)

    def code(self, column: nw.Expr, dtype: Any, *, lookup: bool = True, text: bool = False) -> nw.Expr:
        """The codes as an engine expression: each value's position among the categories.

        Parameters
        ----------
        column : narwhals.Expr
            The column's values.
        dtype : narwhals dtype
            The integer type of the codes.
        lookup : bool
            Use the engine's hash lookup (``replace_strict``); otherwise the sum of
            ``code * (value == label)``, for engines whose Narwhals backend has no lookup
            (Spark Connect). Both give the same codes on valid rows.
        text : bool
            Whether the engine column holds text (strings, categoricals, enums): integer
            categories then match each label's exact decimal text, ``str(label)``.

        Returns
        -------
        narwhals.Expr
            The codes, valid only on rows where :meth:`invalid` is false.
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
        column : narwhals.Expr
            The column's values.
        floating : bool
            Whether the engine column is floating point (unused: :meth:`accepts_dtype` refuses
            such columns for categories).
        text : bool
            Whether the engine column holds text: integer categories then accept exactly each
            label's decimal text, ``str(label)``.

        Returns
        -------
        narwhals.Expr
            A boolean expression, true where :meth:`encode` would refuse the value.
        """
        return column.is_null() | ~self._comparable(column, text).is_in(self._keys(text)).fill_null(False)

    def accepts_dtype(self, dtype: Any) -> bool:
        """Whether an engine column of a Narwhals dtype can hold the categories.

        Parameters
        ----------
        dtype : narwhals dtype
            The column's type in its engine.

        Returns
        -------
        bool
            True for string, categorical and enum columns; for integer categories, for integer
            columns too.
        """
        return _is_text(dtype) or (not self._text and bool(dtype.is_integer()))

    def describe(self) -> str:
        """What the column must hold, for error messages.

        Returns
        -------
        str
            ``one of the categories [...]`` (the first eight, and their number beyond that).
        """
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


class Bins(Encoding):
    """A numeric column cut into bins at declared edges.

    With edges ``e_0 < e_1 < ... < e_k``, code ``i`` holds the values ``e_i <= x < e_{i+1}``,
    and the last bin also its right edge ``e_k``; values below ``e_0`` or above ``e_k`` are
    outside the domain. A domain file declares it by ``{"bins": [e_0, ..., e_k]}``. Values are
    compared in float64 in every engine, so a value falls in the same bin everywhere.

    Parameters
    ----------
    edges : sequence of float
        At least two finite numbers, strictly increasing.

    Attributes
    ----------
    edges : tuple of float
        The edges, as Python numbers.
    size : int
        The number of bins, ``len(edges) - 1``.

    Raises
    ------
    TypeError
        If an entry of ``edges`` is not a number (a bool or a str).
    ValueError
        If ``edges`` has fewer than two entries, a non-finite one, or does not increase
        strictly.

    See Also
    --------
    Codes, Categories : The other encodings.

    Notes
    -----
    Declare the edges from public knowledge (the ranges a survey allows): edges computed from
    the data, such as its quantiles, depend on the private rows.

    Examples
    --------
    >>> import numpy as np
    >>> from projmech.data.encodings import Bins
    >>> age = Bins([18, 35, 65, 100])
    >>> age.labels()
    ('[18, 35)', '[35, 65)', '[65, 100]')
    >>> age.encode(np.array([18, 34.5, 35, 100]), "age")
    array([0, 0, 1, 2])
    >>> age.at_most("age", 1), age.between("age", 1, 2)
    ('age<65', '35<=age<=100')
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
        """The bins as intervals, ``[18, 35)``, the last one closed: ``[65, 100]``.

        Returns
        -------
        tuple of str
            One interval per code; each edge prints exactly, so no two bins print alike.
        """
        closing = [")"] * (self.size - 1) + ["]"]
        return tuple(f"[{_number(low)}, {_number(high)}{close}"
                     for low, high, close in zip(self.edges, self.edges[1:], closing))

    def spec(self) -> dict[str, list[float]]:
        """This encoding as a domain file entry: ``{"bins": edges}``.

        Returns
        -------
        dict
            ``{"bins": list(edges)}``.
        """
        return {"bins": list(self.edges)}

    def _below(self, code: int) -> str:
        """``< e_{code+1}``, or ``<= e_k`` for the last bin (closed on the right)."""
        return f"{'<=' if code == self.size - 1 else '<'}{_number(self.edges[code + 1])}"

    def at_most(self, attribute: str, code: int) -> str:
        """The label of the prefix query ``attribute <= code``, by the bin's right edge.

        Parameters
        ----------
        attribute : str
            The attribute's name, as it prints in the label.
        code : int
            The last bin the query counts, in ``0 .. size - 1``.

        Returns
        -------
        str
            ``age<35``, or ``age<=100`` for the last bin (closed on the right).
        """
        return f"{attribute}{self._below(code)}"

    def between(self, attribute: str, low: int, high: int) -> str:
        """The label of the range query ``low <= attribute <= high``, by edges.

        Parameters
        ----------
        attribute : str
            The attribute's name, as it prints in the label.
        low, high : int
            The first and last bins the query counts, ``0 <= low <= high < size``.

        Returns
        -------
        str
            ``18<=age<35``, or ``35<=age<=100`` when ``high`` is the last bin.
        """
        return f"{_number(self.edges[low])}<={attribute}{self._below(high)}"

    def encode(self, values: np.ndarray, column: str) -> np.ndarray:
        """The codes of a column's values: the bin each value falls in.

        Parameters
        ----------
        values : numpy.ndarray
            Numbers, or an object column of numbers or numeric strings.
        column : str
            The column's name, for error messages.

        Returns
        -------
        numpy.ndarray
            Integer codes in ``0 .. size - 1``.

        Raises
        ------
        TypeError
            For complex, datetime or structured values.
        ValueError
            Naming ``column``, the first bad value and its row: a value outside
            ``[e_0, e_k]`` or missing (:class:`NotANumberError` for text that is no number).
        """
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
        """The codes as an engine expression: the number of inner edges at or below the value.

        Parameters
        ----------
        column : narwhals.Expr
            The column's values.
        dtype : narwhals dtype
            The integer type of the codes.

        Returns
        -------
        narwhals.Expr
            The codes, valid only on rows where :meth:`invalid` is false.
        """
        import narwhals as nw

        # The number of inner edges at or below the value: plain comparisons, which every
        # engine evaluates identically to NumPy's searchsorted.
        column = column.cast(nw.Float64)  # compared in float64, like NumPy's path
        code = nw.lit(0, dtype=dtype)
        for edge in self.edges[1:-1]:
            code = code + (column >= edge).cast(dtype)
        return code

    def invalid(self, column: nw.Expr, floating: bool) -> nw.Expr:
        """An engine expression, true on every row that is missing or outside ``[e_0, e_k]``.

        Parameters
        ----------
        column : narwhals.Expr
            The column's values.
        floating : bool
            Whether the engine column is floating point, so that NaN needs checking.

        Returns
        -------
        narwhals.Expr
            A boolean expression, true where :meth:`encode` would refuse the value.
        """
        import narwhals as nw

        column = column.cast(nw.Float64)
        inside = ((column >= self.edges[0]) & (column <= self.edges[-1])).fill_null(False)
        invalid = column.is_null() | ~inside
        return invalid | column.is_nan().fill_null(False) if floating else invalid

    def accepts_dtype(self, dtype: Any) -> bool:
        """Whether an engine column of a Narwhals dtype can hold numbers to bin.

        Parameters
        ----------
        dtype : narwhals dtype
            The column's type in its engine.

        Returns
        -------
        bool
            True for integer and floating point columns.
        """
        return bool(dtype.is_numeric()) and not dtype.is_decimal()

    def describe(self) -> str:
        """What the column must hold, for error messages.

        Returns
        -------
        str
            ``numbers in [e_0, e_k]``.
        """
        return f"numbers in {self._span()}"

    def _span(self) -> str:
        return f"[{_number(self.edges[0])}, {_number(self.edges[-1])}]"

    def _key(self) -> tuple[Any, ...]:
        return tuple(float(edge) for edge in self.edges)

    def __repr__(self) -> str:
        return f"Bins({list(self.edges)!r})"


def encoding_from_spec(name: str, spec: Any) -> Encoding:
    """The encoding that one domain file entry declares.

    Parameters
    ----------
    name : str
        The attribute's name, for error messages.
    spec : int, list, dict or Encoding
        A size (integer codes ``0 .. size - 1``), a list of category labels, or
        ``{"bins": edges}``; ``{"size": k}`` and ``{"categories": [...]}`` are accepted too,
        ``{"categories": [...], "ordered": true}`` declares ordered categories, and an
        :class:`Encoding` is returned as is.

    Returns
    -------
    Encoding
        A :class:`Codes`, :class:`Categories` or :class:`Bins`.

    Raises
    ------
    TypeError
        For a ``spec`` of another kind (a float or bool size, labels of mixed types, bins that
        are not a list, an ``ordered`` that is not a bool ...), naming the attribute.
    ValueError
        For a ``spec`` with a size below 1, no or repeated categories, fewer than two or
        non-increasing edges, or a dict with other keys, naming the attribute.

    See Also
    --------
    Encoding.spec : The inverse: an encoding's domain file entry.
    projmech.data.domain.Domain.from_dict : A domain from one entry per attribute.

    Examples
    --------
    >>> from projmech.data.encodings import encoding_from_spec
    >>> encoding_from_spec("vote", ["Clinton", "Dole"])
    Categories(['Clinton', 'Dole'])
    >>> encoding_from_spec("age", {"bins": [18, 35, 65, 100]})
    Bins([18, 35, 65, 100])
    >>> encoding_from_spec("PID", 7)
    Codes(7)
    >>> encoding_from_spec("size", {"categories": ["S", "M", "L"], "ordered": True})
    Categories(['S', 'M', 'L'], ordered=True)
    >>> encoding_from_spec("PID", 7.0)
    Traceback (most recent call last):
    ...
    projmech.errors.ArgumentTypeError: sizes: size of 'PID': expected an int, got 7.0
    """
    if isinstance(spec, Encoding):
        return spec
    if isinstance(spec, dict):
        keys = set(spec)
        if keys == {"bins"}:
            spec = spec["bins"]
            if not isinstance(spec, (list, tuple)):
                raise TypeError(f"attribute {name!r}: 'bins' must be a list of edges, got {_brief(spec)}")
            return _named(name, lambda: Bins(spec))
        if keys in ({"categories"}, {"categories", "ordered"}):
            labels, ordered = spec["categories"], spec.get("ordered", False)
            if not isinstance(labels, (list, tuple)):
                return encoding_from_spec(name, labels)  # a size or bins under the wrong key: refused there
            if not isinstance(ordered, bool):
                raise TypeError(f"attribute {name!r}: 'ordered' must be true or false, got {_brief(ordered)}")
            return _named(name, lambda: Categories(labels, ordered=ordered))
        if keys == {"size"}:
            return encoding_from_spec(name, spec["size"])
        raise ValueError(f"attribute {name!r}: expected a size, a list of categories, {{'bins': [...]}}, "
                         f"{{'categories': [...]}} (with 'ordered': true or false) or {{'size': k}}, got keys "
                         f"{_brief(sorted(map(str, keys)))}")
    if isinstance(spec, (list, tuple)):
        return _named(name, lambda: Categories(spec))
    return Codes(check_size(name, spec))


#: The largest size: codes ``0 .. size - 1`` are int64.
MAX_SIZE = 2**63 - 1


def check_size(name: str, size: Any) -> int:
    """An attribute's size as a Python int from 1 to :data:`MAX_SIZE`."""
    # Checked first: an int beyond float's range would overflow the positivity check's isfinite.
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool) and size > MAX_SIZE:
        size = int(size)
        digits = len(str(size)) if size.bit_length() < 10_000 else f"over {int(size.bit_length() * 0.30103)}"
        raise ValueError(f"sizes: size of {name!r}: at most 2**63 - 1 (its codes are int64), got an integer of "
                         f"{digits} digits")
    return check_positive_int(f"sizes: size of {name!r}", size)


def _named(name: str, build: Any) -> Encoding:
    try:
        encoding: Encoding = build()
    except (TypeError, ValueError) as error:
        raise type(error)(f"attribute {name!r}: {error}") from None
    return encoding


class NotANumberError(ValueError):
    """A value that should be a number (a code, an integer category, a value to bin) is not.

    A ``ValueError``, raised by :meth:`Encoding.encode` for an object or text column holding an
    entry that does not parse as a number; its message names the column, the entry and its row.

    Examples
    --------
    >>> import numpy as np
    >>> from projmech.data.encodings import Codes, NotANumberError
    >>> try:
    ...     Codes(7).encode(np.array(["1", "x"], dtype=object), "PID")
    ... except NotANumberError as error:
    ...     print(error)
    column 'PID': expected integer codes, found 'x' at row 1
    """


def _numeric(values: np.ndarray, column: str, expected: str) -> np.ndarray:
    """A column's values as a real NumPy array (an object column of numbers or numeric strings
    parsed), or a ValueError naming the first entry that is not a number."""
    values = np.asarray(values)
    if values.dtype.kind in "cmMVS":
        hint = f"; {BYTES_HINT}" if values.dtype.kind == "S" else ""
        raise TypeError(f"column {column!r}: expected {expected}, got dtype {values.dtype}{hint}")
    if values.dtype.kind == "b":
        return values.astype(np.int64)
    if values.dtype.kind in "iuf":
        return values
    import pandas as pd

    # An object or string column (a CSV column with one stray word) may still hold numbers or
    # numeric strings: parse it, and report the first entry that is not one.
    series = pd.Series(values, dtype=object)
    complex_entry = series.map(lambda value: isinstance(value, (complex, np.complexfloating))).to_numpy(dtype=bool)
    if complex_entry.any():
        row = first_true(complex_entry)
        raise TypeError(f"column {column!r}: expected {expected}, found complex {values[row]!r} at row {row}")
    # pandas parses bytes as it parses text (b"1" would be the code 1): bytes are the owner's to
    # decode, in an encoding only the owner knows.
    bytes_entry = series.map(lambda value: isinstance(value, bytes)).to_numpy(dtype=bool)
    if bytes_entry.any():
        row = first_true(bytes_entry)
        raise TypeError(f"column {column!r}: value {values[row]!r} at row {row} is bytes, not text; {BYTES_HINT}")
    parsed = pd.to_numeric(series, errors="coerce")
    unparsable = (parsed.isna() & series.notna()).to_numpy(dtype=bool)
    if unparsable.any():
        row = first_true(unparsable)
        value = values[row]
        shown = value.item() if isinstance(value, np.generic) else value
        raise NotANumberError(f"column {column!r}: expected {expected}, found {shown!r} at row {row}")
    return parsed.to_numpy(dtype=float, na_value=np.nan)


def _is_int(value: Any) -> bool:
    """Whether a value is an integer (a bool is not one here: it is no label, and no count)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


#: A short repr for error messages: a few levels, a few entries (a deeply nested or huge value
#: given as a domain entry must not make the message recurse without end, or fill a screen).
_BRIEF = reprlib.Repr()  # its keyword arguments are Python 3.12's
_BRIEF.maxlevel, _BRIEF.maxlist, _BRIEF.maxtuple, _BRIEF.maxdict = 3, 10, 10, 10
_BRIEF.maxstring, _BRIEF.maxother, _BRIEF.maxlong = 80, 80, 40


def _brief(value: Any) -> str:
    return _BRIEF.repr(value)


def _number(value: float) -> str:
    """An edge as it prints in labels: exact (the shortest repr that reads back as the same
    float), so that two edges never print alike."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _shown(categories: Sequence[Any], limit: int = 8) -> str:
    shown = ", ".join(repr(c) for c in categories[:limit])
    return f"[{shown}{', ...' if len(categories) > limit else ''}] ({len(categories)})" if len(categories) > limit \
        else f"[{shown}]"


def _narwhals() -> Any:
    import narwhals as nw

    return nw


def _is_text(dtype: Any) -> bool:
    """Whether a Narwhals dtype holds text: strings, categoricals, enums."""
    nw = _narwhals()
    return any(dtype == kind for kind in (nw.String, nw.Categorical, nw.Enum))

