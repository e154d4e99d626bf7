"""The data universe: an ordered product of finite attributes."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from os import PathLike
from typing import Any

import numpy as np

__all__ = ["Domain"]


class Domain:
    """Ordered attribute names with their sizes.

    The universe is the product of the attributes; attribute ``i`` takes the integer codes
    ``0 .. sizes[i] - 1``. Universe elements are indexed in row-major (C) order, so the last
    attribute varies fastest, exactly like ``numpy.ravel_multi_index``.

    Parameters
    ----------
    attributes : sequence of str
        Attribute names, unique, in order.
    sizes : sequence of int
        Number of values of each attribute, each at least 1.

    Examples
    --------
    >>> d = Domain(["a", "b"], [2, 3])
    >>> d.size
    6
    >>> d.index([[1, 2]])
    array([5])
    """

    def __init__(self, attributes: Iterable[str], sizes: Iterable[int]) -> None:
        attributes = tuple(attributes)
        sizes = tuple(sizes)
        if len(attributes) != len(sizes):
            raise ValueError(
                f"attributes and sizes must have the same length, got {len(attributes)} "
                f"names and {len(sizes)} sizes"
            )
        if len(attributes) == 0:
            raise ValueError("attributes: a domain needs at least one attribute")
        for name in attributes:
            if not isinstance(name, str) or not name:
                raise TypeError(f"attributes: every name must be a non-empty str, got {name!r}")
        if len(set(attributes)) != len(attributes):
            raise ValueError(f"attributes: names must be unique, got {list(attributes)}")
        for name, size in zip(attributes, sizes):
            if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
                raise TypeError(f"sizes: size of {name!r} must be an int, got {size!r}")
            if size < 1:
                raise ValueError(f"sizes: size of {name!r} must be at least 1, got {size}")
        self._attributes = attributes
        self._sizes = tuple(int(s) for s in sizes)

    @classmethod
    def from_dict(cls, mapping: Mapping[str, int]) -> Domain:
        """Build a domain from ``{name: size}``, keeping the mapping's order."""
        return cls(list(mapping.keys()), list(mapping.values()))

    @classmethod
    def from_json(cls, path: str | PathLike[str]) -> Domain:
        """Read a JSON object ``{name: size, ...}`` (the format of the Adult domain file)."""
        with open(path, encoding="utf-8") as handle:
            mapping = json.load(handle)
        if not isinstance(mapping, dict):
            raise ValueError(f"{path}: a domain file must hold a JSON object of name: size")
        return cls.from_dict(mapping)

    def to_dict(self) -> dict[str, int]:
        return dict(zip(self._attributes, self._sizes))

    @property
    def attributes(self) -> tuple[str, ...]:
        return self._attributes

    @property
    def sizes(self) -> tuple[int, ...]:
        return self._sizes

    @property
    def shape(self) -> tuple[int, ...]:
        """The universe as a tensor shape (alias of ``sizes``)."""
        return self._sizes

    @property
    def size(self) -> int:
        """Number of elements of the universe, ``prod(sizes)`` (an exact Python int)."""
        return math.prod(self._sizes)

    def __len__(self) -> int:
        return len(self._attributes)

    def __contains__(self, name: object) -> bool:
        return name in self._attributes

    def __getitem__(self, name: str) -> int:
        return self._sizes[self.position(name)]

    def position(self, name: str) -> int:
        """Index of attribute ``name``; a ``KeyError`` naming the known attributes otherwise."""
        try:
            return self._attributes.index(name)
        except ValueError:
            raise KeyError(f"unknown attribute {name!r}; the domain has {list(self._attributes)}") from None

    def project(self, attributes: Iterable[str]) -> Domain:
        """The sub-domain on ``attributes``, in the order given."""
        attributes = list(attributes)
        return Domain(attributes, [self[name] for name in attributes])

    def index(self, rows: Any) -> np.ndarray:
        """Universe indices of integer rows (an ``(n, d)`` array) in row-major order."""
        rows = np.asarray(rows)
        if rows.ndim != 2 or rows.shape[1] != len(self):
            raise ValueError(f"rows: expected shape (n, {len(self)}), got {rows.shape}")
        if not np.issubdtype(rows.dtype, np.integer):
            raise TypeError(f"rows: expected integer codes, got dtype {rows.dtype}")
        if rows.size and ((rows < 0) | (rows >= np.asarray(self._sizes))).any():
            raise ValueError("rows: values outside the domain")
        if self.size >= 2**63:
            raise ValueError(
                f"domain: the universe has {self.size:.3e} elements, too many to index with int64"
            )
        return np.ravel_multi_index(tuple(rows.T.astype(np.int64)), self._sizes).astype(np.int64)

    def rows(self, indices: Any) -> np.ndarray:
        """Integer rows (``(len(indices), d)``) of universe indices, inverse of :meth:`index`."""
        indices = np.asarray(indices)
        if indices.size and not np.issubdtype(indices.dtype, np.integer):
            raise TypeError(f"indices: expected integer universe indices, got dtype {indices.dtype}")
        indices = indices.astype(np.int64)
        if indices.ndim != 1:
            raise ValueError(f"indices: expected a 1-d array, got shape {indices.shape}")
        if indices.size and (indices.min() < 0 or indices.max() >= self.size):
            raise ValueError(f"indices: values must lie in [0, {self.size}), got out-of-range entries")
        return np.stack(np.unravel_index(indices, self._sizes), axis=1)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Domain)
            and self._attributes == other._attributes
            and self._sizes == other._sizes
        )

    def __hash__(self) -> int:
        return hash((self._attributes, self._sizes))

    def __repr__(self) -> str:
        inner = ", ".join(f"{a}: {s}" for a, s in zip(self._attributes, self._sizes))
        return f"Domain({inner})"
