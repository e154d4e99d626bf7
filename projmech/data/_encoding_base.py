"""The contract of an encoding and the checks of column values every encoding shares."""

from __future__ import annotations

import math
import reprlib
import sys
import types
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from ..validation import first_true

if TYPE_CHECKING:
    import narwhals as nw

__all__ = ["Encoding", "NotANumberError"]

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
    """Whether one value read from a column is missing (None, a float NaN, or pandas' ``NA``)."""
    pandas = sys.modules.get("pandas")  # if pandas was never imported, no value is its NA
    return value is None or (isinstance(value, float) and math.isnan(value)) or \
        (pandas is not None and value is pandas.NA)

def refuse_value(column: str, value: Any, where: str, reason: str) -> NoReturn:
    """Raise the error for a value with no code: missing, bytes, or ``reason`` (``where``: `` at row 3``)."""
    if is_missing(value):
        raise ValueError(f"column {column!r}: missing value{where}; {MISSING_VALUE_HINT}")
    if isinstance(value, bytes):
        raise TypeError(f"column {column!r}: value {value!r}{where} is bytes, not text; {BYTES_HINT}")
    raise ValueError(f"column {column!r}: value {value!r}{where} {reason}")


class NotANumberError(ValueError):
    """A value that should be a number (a code, an integer category, a value to bin) is not.

    Examples
    --------
    >>> pm.data.Codes(7).encode(np.array(["1", "x"], dtype=object), "PID")
    Traceback (most recent call last):
    ...
    projmech.data._encoding_base.NotANumberError: column 'PID': expected integer codes, found 'x' at row 1
    """


def _numeric(values: np.ndarray, column: str, expected: str) -> np.ndarray:
    """A column's values as a real array (text parsed), or an error naming the first non-number."""
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
    """An edge as it prints in labels: exact, so that two edges never print alike."""
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



class Encoding:
    """The values an attribute's column may hold, and their codes ``0 .. size - 1``.

    A :class:`~projmech.data.Domain` holds one per attribute. Each codes values two ways that agree
    exactly: :meth:`encode` in NumPy, :meth:`code` / :meth:`invalid` inside a lazy engine.
    ``ordered`` says whether the codes' order means something (prefix and range queries need it).

    Examples
    --------
    >>> pm.Domain.from_dict({"vote": ["Clinton", "Dole"], "age": {"bins": [18, 35, 65, 100]}, "PID": 7}).encodings
    (Categories(['Clinton', 'Dole']), Bins([18, 35, 65, 100]), Codes(7))
    """

    size: int
    ordered: bool = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # An override keeps the contract stated here: it takes this docstring (for help() and the docs).
        super().__init_subclass__(**kwargs)
        for name, member in vars(cls).items():
            if isinstance(member, types.FunctionType) and member.__doc__ is None and hasattr(Encoding, name):
                member.__doc__ = getattr(Encoding, name).__doc__

    def labels(self) -> tuple[str, ...]:
        """One printable label per code, used in released query labels (``vote=Dole``).

        Returns
        -------
        tuple of str
        """
        raise NotImplementedError

    def spec(self) -> Any:
        """This encoding as a domain file entry (the inverse of :func:`encoding_from_spec`).

        Returns
        -------
        int, list or dict
        """
        raise NotImplementedError

    def equals(self, attribute: str, code: int) -> str:
        """The label of the query ``attribute = code`` (``vote=Dole``).

        Parameters
        ----------
        attribute : str
            The attribute's name.
        code : int
            A code.

        Returns
        -------
        str
        """
        return f"{attribute}={self.labels()[code]}"

    def at_most(self, attribute: str, code: int) -> str:
        """The label of the prefix query ``attribute <= code`` (``PID<=6``; bins print an edge: ``age<35``).

        Parameters
        ----------
        attribute : str
            The attribute's name.
        code : int
            The largest code counted.

        Returns
        -------
        str
        """
        return f"{attribute}<={self.labels()[code]}"

    def between(self, attribute: str, low: int, high: int) -> str:
        """The label of the range query ``low <= attribute <= high`` (bins print edges: ``18<=age<35``).

        Parameters
        ----------
        attribute : str
            The attribute's name.
        low, high : int
            The smallest and largest codes counted.

        Returns
        -------
        str
        """
        labels = self.labels()
        return f"{labels[low]}<={attribute}<={labels[high]}"

    def encode(self, values: np.ndarray, column: str) -> np.ndarray:
        """The codes of a column's values in NumPy; a value with no code raises an error naming its row.

        Parameters
        ----------
        values : numpy.ndarray
            One column's values.
        column : str
            The column's name, for error messages.

        Returns
        -------
        numpy.ndarray
        """
        raise NotImplementedError

    def code(self, column: nw.Expr, dtype: Any) -> nw.Expr:
        """The codes as an engine expression, valid only on rows where :meth:`invalid` is false.

        Parameters
        ----------
        column : narwhals.Expr
            The column's values.
        dtype : narwhals dtype
            The integer type of the codes.

        Returns
        -------
        narwhals.Expr
        """
        raise NotImplementedError

    def invalid(self, column: nw.Expr, floating: bool) -> nw.Expr:
        """An engine expression, true on every row whose value has no code (where :meth:`encode` refuses).

        Parameters
        ----------
        column : narwhals.Expr
            As for :meth:`code`.
        floating : bool
            Whether the engine column is floating point (NaN and fractions need checking).

        Returns
        -------
        narwhals.Expr
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
        """
        raise NotImplementedError

    def describe(self) -> str:
        """What the column must hold, for error messages (``integer codes 0..6``).

        Returns
        -------
        str
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
