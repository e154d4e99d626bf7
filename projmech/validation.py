"""Argument checks shared across layers (a leaf module), so that every layer words its errors alike.

A wrong type is a ``TypeError``, a wrong value a ``ValueError`` (as
:class:`~projmech.errors.ArgumentTypeError` / :class:`~projmech.errors.ArgumentValueError`),
raised before any work with a message that starts with the argument's name; an allocation above
a cap is refused rather than ending in a ``MemoryError``. Declarative, in the spirit of
scikit-learn's ``validate_params``: a constraint (:class:`Interval`, :class:`Options`,
:class:`InstanceOf` ...) checks one value and returns it converted; :func:`validate_params`
applies them to a function's arguments.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable
from decimal import Decimal
from numbers import Integral, Real
from typing import Any, Protocol, TypeVar, cast

import numpy as np

from .errors import ArgumentTypeError, ArgumentValueError

__all__ = [
    "first_true",
    "DEFAULT_MAX_ENTRIES",
    "FLAG",
    "NONNEGATIVE",
    "OPEN_UNIT",
    "POSITIVE",
    "POSITIVE_INT",
    "SEED",
    "Constraint",
    "Flag",
    "InstanceOf",
    "Integral",
    "Interval",
    "IsCallable",
    "Options",
    "OrNone",
    "Real",
    "Seed",
    "as_array",
    "as_generator",
    "check_bool",
    "check_entries",
    "check_nonnegative_number",
    "check_positive_int",
    "check_positive_number",
    "check_positions",
    "check_query_row",
    "check_real_array",
    "check_real_dtype",
    "check_real_vector",
    "format_count",
    "validate_params",
]

#: Default cap on the entries of an array that a builder or a product allocates (dense: k*m,
#: sparse: nnz): 10^8 float64 are 800 MB.
DEFAULT_MAX_ENTRIES = 10**8

# dtype kinds that hold real numbers: bool, signed and unsigned ints, floats.
_REAL_KINDS = "biuf"

# What counts as an int and as a real number: Python and numpy ints (and floats), never a bool
# (True is an int to Python, never a count or a parameter to a caller), never a Fraction, a
# Decimal or a str.
_INT_TYPES = (int, np.integer)
_REAL_TYPES = (int, float, np.integer, np.floating)
_BOOL_TYPES = (bool, np.bool_)

# A decorated function keeps its signature for the type checker.
_F = TypeVar("_F", bound=Callable[..., Any])


# ----------------------------------------------------------------------------- constraints


class Constraint(Protocol):
    """What :func:`validate_params` needs of a constraint."""

    def check(self, name: str, value: Any) -> Any:
        """``value`` converted; a TypeError for a wrong type, a ValueError for a wrong value,
        each message starting with ``name``."""


class Interval:
    """Numbers of one kind between two bounds (``closed`` says which bounds belong).

    ``Integral`` values come back as ``int``, ``Real`` ones as finite ``float``; ``bool`` is refused
    by both. ``reason`` (optional) says in the ValueError why the bounds are what they are.

    >>> Interval(Real, 0, 1, closed="neither").check("delta", 1e-6)
    1e-06
    """

    def __init__(self, kind: type, low: float | None, high: float | None, *,
                 closed: str = "both", reason: str = "") -> None:
        if kind not in (Integral, Real):
            raise ValueError(f"kind: expected numbers.Integral or numbers.Real, got {kind!r}")
        if closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"closed: expected 'both', 'left', 'right' or 'neither', got {closed!r}")
        self.kind, self.low, self.high, self.closed, self.reason = kind, low, high, closed, reason

    def check(self, name: str, value: Any) -> int | float:
        integral = self.kind is Integral
        if isinstance(value, _BOOL_TYPES) or not isinstance(value, _INT_TYPES if integral else _REAL_TYPES):
            expected = "an int" if integral else "a number"
            raise ArgumentTypeError(name, f"expected {expected}, got {value!r}", valid=expected)
        if integral:
            number: int | float = int(value)
        else:
            try:
                number = float(value)
            except OverflowError:  # an int beyond float64's range
                number = math.inf if value > 0 else -math.inf
        if not self._contains(number):
            shown = value if integral else number
            reason = f" ({self.reason})" if self.reason else ""
            described = self._describe()
            raise ArgumentValueError(name, f"must {described}{reason}, got {shown}",
                                     valid=described.removeprefix("be ").replace("lie in", "in", 1))
        return number

    def _contains(self, number: float) -> bool:
        # An int is always finite, and math.isfinite would overflow on one beyond float64 (10**400).
        if isinstance(number, float) and not math.isfinite(number):
            return False
        if self.low is not None and (number < self.low or (number == self.low and self.closed in ("right", "neither"))):
            return False
        if self.high is None:
            return True
        return not (number > self.high or (number == self.high and self.closed in ("left", "neither")))

    def _describe(self) -> str:
        low_open = self.closed in ("right", "neither")
        high_open = self.closed in ("left", "neither")
        if self.kind is Integral and self.high is None and self.low is not None:
            return f"be at least {self.low + 1 if low_open else self.low}"
        if self.high is None and self.low is None:
            return "be a finite number"
        if self.high is None:
            if self.low == 0:
                return "be a positive finite number" if low_open else "be a finite number >= 0"
            return f"be a finite number {'>' if low_open else '>='} {self.low:g}"
        if self.low is None:
            return f"be a finite number {'<' if high_open else '<='} {self.high:g}"
        return f"lie in {'(' if low_open else '['}{self.low:g}, {self.high:g}{')' if high_open else ']'}"

    def __repr__(self) -> str:
        return f"Interval({self.kind.__name__}, {self.low!r}, {self.high!r}, closed={self.closed!r})"


class Options:
    """One of a few strings (a ``str`` Enum member counts as its value) or numbers; the matching choice is returned."""

    def __init__(self, *choices: Any) -> None:
        self.choices = tuple(choices)
        self._strings = all(isinstance(choice, str) for choice in choices)

    def check(self, name: str, value: Any) -> Any:
        if self._strings:
            right_type = isinstance(value, str)
        else:
            right_type = isinstance(value, _REAL_TYPES) and not isinstance(value, _BOOL_TYPES)
        shown = list(self.choices)
        if not right_type:
            raise ArgumentTypeError(name, f"expected one of {shown}, got {type(value).__name__} {value!r}",
                                    valid=f"one of {shown}")
        for choice in self.choices:
            if value == choice:
                return choice
        raise ArgumentValueError(name, f"expected one of {shown}, got {value!r}", valid=f"one of {shown}")

    def __repr__(self) -> str:
        return f"Options{self.choices!r}"


class Flag:
    """``True`` or ``False`` (a numpy bool too), returned as a ``bool``; anything else is a
    TypeError: a flag given as ``"no"`` or ``0`` would otherwise be read by its truth value."""

    def check(self, name: str, value: Any) -> bool:
        if not isinstance(value, _BOOL_TYPES):
            raise ArgumentTypeError(name, f"expected True or False, got {value!r}", valid="True or False")
        return bool(value)


class Seed:
    """A source of randomness as :func:`as_generator` reads it (a Generator, an int seed >= 0
    or None), returned as a ``numpy.random.Generator``."""

    def check(self, name: str, value: Any) -> np.random.Generator:
        return as_generator(value, name)


class InstanceOf:
    """An instance of one of ``types`` (a TypeError otherwise); ``what`` words the expectation."""

    def __init__(self, *types: type, what: str | None = None) -> None:
        self.types = types
        self.what = what or " or ".join(f"a {t.__name__}" for t in types)

    def check(self, name: str, value: Any) -> Any:
        if not isinstance(value, self.types):
            raise ArgumentTypeError(name, f"expected {self.what}, got {type(value).__name__}", valid=self.what)
        return value


class IsCallable:
    """A callable; ``what`` words what it computes."""

    def __init__(self, what: str = "a callable") -> None:
        self.what = what

    def check(self, name: str, value: Any) -> Any:
        if not callable(value):
            raise ArgumentTypeError(name, f"expected {self.what}, got {type(value).__name__}", valid=self.what)
        return value


class OrNone:
    """``None``, or a value that satisfies ``constraint``."""

    def __init__(self, constraint: Constraint) -> None:
        self.constraint = constraint

    def check(self, name: str, value: Any) -> Any:
        return None if value is None else self.constraint.check(name, value)


#: The constraints most arguments need.
POSITIVE_INT = Interval(Integral, 1, None)
POSITIVE = Interval(Real, 0, None, closed="neither")
NONNEGATIVE = Interval(Real, 0, None, closed="left")
OPEN_UNIT = Interval(Real, 0, 1, closed="neither")
FLAG = Flag()
SEED = Seed()
GENERATOR = InstanceOf(np.random.Generator, what="a numpy.random.Generator")

#: The signature of an Enum whose members are looked up by value (``Neighbouring("add-remove")``):
#: what introspection (help, the documentation, the docstring check) should show, instead of the
#: parameters of Enum's functional API (names, module, ...), which are not the class's.
ENUM_LOOKUP_SIGNATURE = inspect.Signature([inspect.Parameter("value", inspect.Parameter.POSITIONAL_OR_KEYWORD)])


def validate_params(**spec: Constraint) -> Callable[[_F], _F]:
    """Check a function's arguments against ``spec`` (name to constraint) before its body runs, and
    hand the body the converted values (defaults included: ``rng=None`` arrives as a Generator).

    >>> @validate_params(k=POSITIVE_INT, noise=Options("auto", "discrete"))
    ... def f(k, *, noise="auto"):
    ...     return k, noise
    >>> f(np.int64(3))
    (3, 'auto')
    """

    def decorate(function: _F) -> _F:
        signature = inspect.signature(function)
        unknown = set(spec) - set(signature.parameters)
        if unknown:
            raise TypeError(f"validate_params: {function.__qualname__} has no argument {sorted(unknown)}")

        @functools.wraps(function)
        def checked(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = bound.arguments
            for name, constraint in spec.items():
                arguments[name] = constraint.check(name, arguments[name])
            return function(*bound.args, **bound.kwargs)

        checked.__validated__ = dict(spec)  # type: ignore[attr-defined]
        return cast(_F, checked)

    return decorate


# ----------------------------------------------------------------------------- one-value checks


def check_positive_number(name: str, value: Any) -> float:
    """``value`` as a float; TypeError unless a real number, ValueError unless positive and finite."""
    return POSITIVE.check(name, value)


def check_nonnegative_number(name: str, value: Any) -> float:
    """``value`` as a float; TypeError unless a real number, ValueError unless finite and >= 0."""
    return NONNEGATIVE.check(name, value)


def check_positive_int(name: str, value: Any) -> int:
    """``value`` as a Python int ``>= 1`` (``bool`` and ``2.0`` are refused: a count is an int)."""
    return cast(int, POSITIVE_INT.check(name, value))  # an Integral interval returns an int


def check_positions(name: str, value: Any, count: int | None = None, *, what: str = "positions") -> tuple[int, ...]:
    """``value`` as a non-empty tuple of increasing ints in ``0 .. count - 1`` (``what`` names them)."""
    try:
        entries = tuple(value)
    except TypeError:
        raise ArgumentTypeError(name, f"expected a sequence of int {what}, got {value!r}") from None
    if any(isinstance(entry, _BOOL_TYPES) for entry in entries):
        raise ArgumentTypeError(name, f"expected int {what}, got booleans in {value!r}")
    if not all(isinstance(entry, _INT_TYPES) for entry in entries):
        raise ArgumentTypeError(name, f"expected a sequence of int {what}, got {value!r}")
    positions = tuple(int(entry) for entry in entries)
    if not positions or positions[0] < 0 or any(b <= a for a, b in zip(positions, positions[1:])) or \
            (count is not None and positions[-1] >= count):
        bound = "" if count is None else f" below {count}"
        raise ArgumentValueError(name, f"must be increasing {what}{bound}, got {list(positions)}")
    return positions


def check_bool(name: str, value: Any) -> bool:
    """``value`` as a bool; TypeError for anything else (see :class:`Flag`)."""
    return FLAG.check(name, value)


#: What :func:`as_generator` takes, in words.
_SEEDS = "a numpy.random.Generator, an int seed >= 0 or None"


def as_generator(rng: Any, name: str = "rng") -> np.random.Generator:
    """A ``numpy.random.Generator``: ``rng`` itself, a new one seeded by an int ``>= 0``, or one from
    OS entropy for ``None``. The legacy global state and ``RandomState`` are refused: no recorded
    seed reproduces them.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, _INT_TYPES) and not isinstance(rng, _BOOL_TYPES):
        if rng < 0:
            raise ArgumentValueError(name, f"a seed must be an int >= 0, got {rng}", valid="an int >= 0")
        return np.random.default_rng(int(rng))
    if isinstance(rng, np.random.RandomState) or rng is np.random:
        shown = "numpy.random.RandomState" if isinstance(rng, np.random.RandomState) else "the numpy.random module"
        raise ArgumentTypeError(name, f"got {shown} (the legacy API); pass a numpy.random.Generator "
                                "(numpy.random.default_rng(seed)), an int seed >= 0 or None", valid=_SEEDS)
    raise ArgumentTypeError(name, f"expected {_SEEDS}, got {type(rng).__name__} {rng!r}", valid=_SEEDS)


def as_array(name: str, value: Any) -> np.ndarray:
    """``numpy.asarray(value)``, with a ``ValueError`` naming the argument for a ragged nested
    list (numpy's own message, "inhomogeneous shape after 1 dimensions", names none)."""
    try:
        return np.asarray(value)
    except (ValueError, TypeError) as error:
        raise ArgumentValueError(name, f"not a rectangular array ({error})") from None


def check_real_dtype(name: str, dtype: np.dtype) -> None:
    """TypeError unless ``dtype`` holds real numbers: a cast would silently drop an imaginary part,
    parse strings or turn dates into nanoseconds.
    """
    dtype = np.dtype(dtype)
    if dtype.kind in _REAL_KINDS:
        return
    if dtype.kind == "c":
        raise ArgumentTypeError(
            name, f"expected real numbers, got complex values (dtype {dtype}); pass the real part explicitly")
    raise ArgumentTypeError(name, f"expected real numbers, got dtype {dtype}")


def check_real_array(name: str, value: Any, *, finite: bool = True, copy: bool = False) -> np.ndarray:
    """``value`` as a float64 ndarray of real numbers (``finite``: no NaN or infinity; ``copy``: a new
    array). Complex, text, ``None``, mappings, sets and sparse matrices are refused.
    """
    if hasattr(value, "toarray") and hasattr(value, "nnz"):  # scipy.sparse, without importing it
        raise ArgumentTypeError(name, f"expected a dense array, got a sparse {type(value).__name__}")
    array = as_array(name, value)
    if array.dtype == object:
        for position, entry in np.ndenumerate(array):
            if not isinstance(entry, (numbers.Real, np.bool_)):
                where = f" at index {position}" if array.ndim else ""
                kind = "complex" if isinstance(entry, numbers.Complex) else type(entry).__name__
                raise ArgumentTypeError(name, f"expected real numbers, found {entry!r} ({kind}){where}")
        array = array.astype(float)
    check_real_dtype(name, array.dtype)
    array = np.array(array, dtype=float, copy=True) if copy else np.asarray(array, dtype=float)
    if finite and not np.all(np.isfinite(array)):
        position = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0]) if array.ndim else ()
        where = f" (first at index {position[0] if len(position) == 1 else position})" if position else ""
        raise ArgumentValueError(name, f"contains NaN or infinite entries{where}")
    return array


def check_real_vector(name: str, value: Any, length: int) -> np.ndarray:
    """``value`` as a float64 vector of ``length`` real, finite entries (see
    :func:`check_real_array`); ValueError for any other shape, a column or a row included."""
    vector = check_real_array(name, value)
    if vector.shape != (length,):
        raise ArgumentValueError(name, f"expected shape ({length},), got {vector.shape}")
    return vector


def check_query_row(name: str, row: Any, length: int) -> np.ndarray:
    """``row`` as a float vector of ``length`` entries in ``[0, 1]``: an averaging query's values on
    every universe element, which the ``1/n`` sensitivity of its answer needs.
    """
    if hasattr(row, "toarray") and hasattr(row, "nnz"):  # scipy.sparse, without importing it
        row = row.toarray()
    vector = check_real_array(name, row, finite=False)
    if vector.ndim == 2 and 1 in vector.shape:
        vector = vector.ravel()
    if vector.shape != (length,):
        raise ArgumentValueError(name, f"expected {length} values, one per universe element, got shape {vector.shape}")
    if not np.all(np.isfinite(vector)):
        raise ArgumentValueError(name, "contains NaN or infinite values")
    low, high = float(vector.min()), float(vector.max())
    if low < 0 or high > 1:
        raise ArgumentValueError(name, f"values must lie in [0, 1] (averaging queries), got [{low:g}, {high:g}]")
    return vector


def first_true(mask: np.ndarray) -> int:
    """The index of the first true entry of a boolean vector (the row an error names)."""
    return int(np.flatnonzero(mask)[0])


def format_count(value: int) -> str:
    """``value`` with thousands separators, or in scientific notation from 10^15 (a universe of
    150 binary attributes has 46 digits); through Decimal, because ``float`` overflows at 2^1024."""
    return f"{value:,}" if value < 10**15 else f"{Decimal(value):.3e}"


def check_entries(name: str, entries: int, max_entries: int, what: str, *, hint: str = "",
                  limit: str = "max_entries") -> None:
    """Refuse an allocation of ``entries`` entries above ``max_entries`` before making it, naming the
    argument that asked for it and the cap ``limit``.
    """
    if entries > max_entries:
        raise ArgumentValueError(
            name, f"{what} would hold {Decimal(entries):.3e} entries, above {limit}={max_entries:.1e}; "
            f"refusing to allocate it{hint}")
