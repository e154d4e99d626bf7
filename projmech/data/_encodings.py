"""How one column's values become an attribute's codes: :class:`Codes`, :class:`Categories` and
:class:`Bins`, and the domain file entries that declare them."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..validation import check_positive_int
from ._categories import Categories
from ._codes import Bins, Codes
from ._encoding_base import Encoding, NotANumberError, _brief

__all__ = ["Encoding", "Codes", "Categories", "Bins", "NotANumberError", "encoding_from_spec"]


def encoding_from_spec(name: str, spec: Any) -> Encoding:
    """The encoding that one domain file entry declares.

    Parameters
    ----------
    name : str
        The attribute's name, for error messages.
    spec : int, list, dict or Encoding
        A size, a list of labels, ``{"bins": edges}``, ``{"size": k}`` or ``{"categories": [...]}``.

    Returns
    -------
    Encoding

    Examples
    --------
    >>> pm.data.encoding_from_spec("size", {"categories": ["S", "M", "L"], "ordered": True})
    Categories(['S', 'M', 'L'], ordered=True)
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
