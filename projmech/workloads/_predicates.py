"""Queries given as vectorized predicates over the universe."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from .._sparse import issparse
from ..data import Domain, UnknownAttributeError
from ..validation import (
    DEFAULT_MAX_ENTRIES,
    POSITIVE_INT,
    InstanceOf,
    check_entries,
    check_real_array,
    format_count,
    validate_params,
)
from ._base import Workload
from ._matrices import check_matrix_entries

__all__ = ["from_predicates", "Predicate"]


Predicate = Callable[[Mapping[str, np.ndarray]], Any]


class _UniverseCodes(Mapping):
    """``{attribute: codes}`` over the universe, row-major, each array built on first access
    (a predicate reading two attributes of twenty builds two arrays of ``m`` codes), all of
    them together at most ``max_entries`` entries."""

    def __init__(self, domain: Domain, max_entries: int) -> None:
        self._domain = domain
        self._max_entries = max_entries
        self._arrays: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._arrays:
            position = self._domain.position(name)  # UnknownAttributeError names the attributes
            m = self._domain.size
            check_entries("domain", (len(self._arrays) + 1) * m, self._max_entries,
                          f"the codes of {len(self._arrays) + 1} attributes over {format_count(m)} elements",
                          hint=" (raise max_entries if you have the memory: 8 bytes per entry)")
            stride = math.prod(self._domain.sizes[position + 1:])
            universe = np.arange(self._domain.size, dtype=np.int64)
            codes = (universe // stride) % self._domain.sizes[position]
            codes.flags.writeable = False  # shared by every predicate
            self._arrays[name] = codes
        return self._arrays[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._domain.attributes)

    def __len__(self) -> int:
        return len(self._domain)


@validate_params(domain=InstanceOf(Domain, what="a Domain"), max_entries=POSITIVE_INT)
def from_predicates(
    domain: Domain,
    predicates: Mapping[str, Predicate] | Sequence[Predicate],
    *,
    max_entries: int = DEFAULT_MAX_ENTRIES,
) -> Workload:
    """Build queries from vectorized predicates over the universe.

    A predicate maps ``{attribute: codes}`` to a value in ``[0, 1]`` per element, e.g.
    ``lambda x: (x["age"] >= 3) & (x["sex"] == 1)``.

    Parameters
    ----------
    domain : Domain
        The attributes; the universe is their product, in row-major order.
    predicates : mapping of str to callable, or sequence of callable
        Label to predicate, or predicates alone (labelled ``q0, q1, ...``).
    max_entries : int, default DEFAULT_MAX_ENTRIES
        Cap on the ``k x m`` matrix and on the codes handed to the predicates.

    Returns
    -------
    Workload

    Examples
    --------
    >>> pm.workloads.from_predicates(pm.Domain(["a"], [3]), {"a>=1": lambda x: x["a"] >= 1}).toarray()
    array([[0., 1., 1.]])
    """
    if isinstance(predicates, Mapping):
        items = list(predicates.items())
        for label, _ in items:
            if not isinstance(label, str):
                raise TypeError(f"predicates: every label must be a str, got {label!r}")
    elif callable(predicates) or isinstance(predicates, (str, bytes)) or not isinstance(predicates, Iterable):
        raise TypeError(
            "predicates: expected a mapping of label to callable or a sequence of callables, "
            f"got {type(predicates).__name__}"
        )
    else:
        items = [(f"q{i}", fn) for i, fn in enumerate(predicates)]
    if not items:
        raise ValueError("predicates: need at least one predicate")
    for label, fn in items:
        if not callable(fn):
            raise TypeError(f"predicates: {label!r} is not callable")
    m = domain.size
    check_matrix_entries("domain", "from_predicates", len(items) * m, len(items), m, max_entries)
    codes = _UniverseCodes(domain, max_entries)
    matrix = np.empty((len(items), m))
    for i, (label, fn) in enumerate(items):
        matrix[i] = _predicate_values(label, fn, codes, m)
    return Workload(matrix, [label for label, _ in items], domain=domain, name="predicates")


def _predicate_values(label: str, fn: Predicate, codes: _UniverseCodes, m: int) -> np.ndarray:
    """Call one predicate and check its values; every failure names the predicate."""
    where = f"predicates: {label!r}"
    try:
        result = fn(codes)
    except UnknownAttributeError as error:
        raise ValueError(f"{where} reads an attribute the domain does not have ({error})") from None
    except Exception as error:
        # The predicate's own bug (a KeyError on x.nope, "truth value of an array is ambiguous"
        # from `and`): reported as the caller's bad argument, with the original chained.
        raise ValueError(f"{where} raised {type(error).__name__}: {error}") from error
    if issparse(result):
        raise ValueError(f"{where} returned a sparse {type(result).__name__}; expected a dense array of {m} values")
    try:
        values = check_real_array(where, result, finite=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{error} (it must return numbers or booleans)") from None
    if values.shape not in ((), (m,)):
        raise ValueError(f"{where} returned shape {values.shape}; expected one value per universe element ({m},)")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{where} returned NaN or infinite values")
    if values.size and (values.min() < 0 or values.max() > 1):
        raise ValueError(f"{where} returned values in [{values.min()}, {values.max()}], outside [0, 1]")
    return np.broadcast_to(values, (m,))
