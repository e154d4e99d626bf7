"""Argument checks shared across layers (a leaf module: numpy only), so that every layer words
its errors the same way and names the argument.

The conventions: a wrong type is a ``TypeError`` and a wrong value a ``ValueError``, raised at
the public boundary before any work, with a message that starts with the argument's name
(``"sizes: size of 'age' must be an int, got 2.5"``); an allocation above a cap is refused
with a ``ValueError`` naming the argument and the size instead of ending in a ``MemoryError``.
"""

from __future__ import annotations

import math
import numbers
from decimal import Decimal
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "as_array",
    "as_generator",
    "check_bool",
    "check_entries",
    "check_nonnegative_number",
    "check_positive_int",
    "check_positive_number",
    "check_real_array",
    "check_real_dtype",
    "check_real_vector",
    "format_count",
]

#: Default cap on the entries of an array that a builder or a product allocates (dense: k*m,
#: sparse: nnz): 10^8 float64 are 800 MB.
DEFAULT_MAX_ENTRIES = 10**8

# dtype kinds that hold real numbers: bool, signed and unsigned ints, floats.
_REAL_KINDS = "biuf"


def check_positive_number(name: str, value: Any) -> float:
    """``value`` as a float; TypeError unless a real number, ValueError unless positive and finite."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: expected a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name}: must be a positive finite number, got {value}")
    return value


def check_nonnegative_number(name: str, value: Any) -> float:
    """``value`` as a float; TypeError unless a real number, ValueError unless finite and >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: expected a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name}: must be a finite number >= 0, got {value}")
    return value


def check_positive_int(name: str, value: Any) -> int:
    """``value`` as a Python int.

    Raises
    ------
    TypeError
        Unless ``value`` is an ``int`` or a numpy integer; ``bool`` is refused (``True`` is an
        int to Python, never a count to a caller) and so is ``2.0`` (a float, even integral).
    ValueError
        If ``value < 1``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: expected an int, got {value!r}")
    if value < 1:
        raise ValueError(f"{name}: must be at least 1, got {value}")
    return int(value)


def check_bool(name: str, value: Any) -> bool:
    """``value`` as a bool; TypeError for anything else (a flag given as ``"no"`` or ``0`` would
    otherwise be read by its truth value)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {value!r}")
    return bool(value)


def as_generator(rng: Any, name: str = "rng") -> np.random.Generator:
    """A ``numpy.random.Generator`` from the usual ways of asking for randomness.

    Parameters
    ----------
    rng : numpy.random.Generator, int or None
        A Generator is returned as is (its stream goes on); an int ``>= 0`` seeds a new one;
        ``None`` draws a fresh one from OS entropy.
    name : str
        The argument's name, for the messages.

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    TypeError
        For a bool, a float, a ``numpy.random.RandomState``, the legacy ``numpy.random`` module
        or anything else: the legacy global state is not reproducible from a seed we record.
    ValueError
        For a negative int (numpy refuses it deep inside ``SeedSequence``).
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)):
        if rng < 0:
            raise ValueError(f"{name}: a seed must be an int >= 0, got {rng}")
        return np.random.default_rng(int(rng))
    if isinstance(rng, np.random.RandomState) or rng is np.random:
        shown = "numpy.random.RandomState" if isinstance(rng, np.random.RandomState) else "the numpy.random module"
        raise TypeError(
            f"{name}: got {shown} (the legacy API); pass a numpy.random.Generator "
            "(numpy.random.default_rng(seed)), an int seed >= 0 or None"
        )
    raise TypeError(
        f"{name}: expected a numpy.random.Generator, an int seed >= 0 or None, got {type(rng).__name__} {rng!r}"
    )


def as_array(name: str, value: Any) -> np.ndarray:
    """``numpy.asarray(value)``, with a ``ValueError`` naming the argument for a ragged nested
    list (numpy's own message, "inhomogeneous shape after 1 dimensions", names none)."""
    try:
        return np.asarray(value)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{name}: not a rectangular array ({error})") from None


def check_real_dtype(name: str, dtype: np.dtype) -> None:
    """TypeError unless ``dtype`` holds real numbers (bool, int or float).

    Casting a complex array to float keeps the real part (with at most a ``ComplexWarning``), a
    string array may parse, a datetime array becomes nanoseconds: each would be accepted
    silently, so each is refused here, complex with a zero imaginary part too (the type is
    wrong, whatever the values).
    """
    dtype = np.dtype(dtype)
    if dtype.kind in _REAL_KINDS:
        return
    if dtype.kind == "c":
        raise TypeError(
            f"{name}: expected real numbers, got complex values (dtype {dtype}); pass the real part explicitly"
        )
    raise TypeError(f"{name}: expected real numbers, got dtype {dtype}")


def check_real_array(name: str, value: Any, *, finite: bool = True, copy: bool = False) -> np.ndarray:
    """``value`` as a float64 ndarray of real numbers.

    Parameters
    ----------
    name : str
        The argument's name, for the messages.
    value : array_like
        Nested lists, an ndarray, a pandas object with numeric values, a scalar.
    finite : bool
        Refuse NaN and infinite entries.
    copy : bool
        Always return a new array (the caller keeps no alias).

    Returns
    -------
    numpy.ndarray of float64, the shape of ``value``

    Raises
    ------
    TypeError
        For complex, string, bytes, datetime or other non-real entries, ``None``, a mapping,
        a set (an object array is accepted only where every entry is a real number), a
        scipy.sparse matrix (the callers that take one handle it before).
    ValueError
        For a ragged nested list, or, with ``finite``, NaN or infinite entries.
    """
    if hasattr(value, "toarray") and hasattr(value, "nnz"):  # scipy.sparse, without importing it
        raise TypeError(f"{name}: expected a dense array, got a sparse {type(value).__name__}")
    array = as_array(name, value)
    if array.dtype == object:
        for position, entry in np.ndenumerate(array):
            if not isinstance(entry, (numbers.Real, np.bool_)):
                where = f" at index {position}" if array.ndim else ""
                kind = "complex" if isinstance(entry, numbers.Complex) else type(entry).__name__
                raise TypeError(f"{name}: expected real numbers, found {entry!r} ({kind}){where}")
        array = array.astype(float)
    check_real_dtype(name, array.dtype)
    array = np.array(array, dtype=float, copy=True) if copy else np.asarray(array, dtype=float)
    if finite and not np.all(np.isfinite(array)):
        position = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0]) if array.ndim else ()
        where = f" (first at index {position[0] if len(position) == 1 else position})" if position else ""
        raise ValueError(f"{name}: contains NaN or infinite entries{where}")
    return array


def check_real_vector(name: str, value: Any, length: int) -> np.ndarray:
    """``value`` as a float64 vector of ``length`` real, finite entries (see
    :func:`check_real_array`); ValueError for any other shape, a column or a row included."""
    vector = check_real_array(name, value)
    if vector.shape != (length,):
        raise ValueError(f"{name}: expected shape ({length},), got {vector.shape}")
    return vector


def format_count(value: int) -> str:
    """``value`` with thousands separators, or in scientific notation from 10^15 (a universe of
    150 binary attributes has 46 digits); through Decimal, because ``float`` overflows at 2^1024."""
    return f"{value:,}" if value < 10**15 else f"{Decimal(value):.3e}"


def check_entries(name: str, entries: int, max_entries: int, what: str, hint: str = "",
                  limit: str = "max_entries") -> None:
    """Refuse an allocation of ``entries`` entries above ``max_entries``, before making it.

    The message reads ``"{name}: {what} would hold {entries} entries, above {limit}=...;
    refusing to allocate it{hint}"``: ``name`` is the argument that asked for the size,
    ``limit`` the cap's name (an argument, or a module constant where the caller has none).
    """
    if entries > max_entries:
        raise ValueError(
            f"{name}: {what} would hold {Decimal(entries):.3e} entries, above {limit}={max_entries:.1e}; "
            f"refusing to allocate it{hint}"
        )
