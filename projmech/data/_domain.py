"""The data universe: an ordered product of finite attributes, each with its encoding."""

from __future__ import annotations

import json
import math
import os
import unicodedata
import warnings
from collections.abc import Iterable, Mapping
from os import PathLike
from typing import Any

import numpy as np

from ..validation import FLAG, InstanceOf, as_array, check_positive_int
from ._encodings import Codes, Encoding, check_size, encoding_from_spec

__all__ = ["Domain", "UnknownAttributeError", "DomainInferenceWarning"]


class DomainInferenceWarning(UserWarning):
    """A domain was read off the data (:meth:`Domain.infer`): its sizes, categories and bins are not private.

    Examples
    --------
    >>> issubclass(pm.data.DomainInferenceWarning, UserWarning)
    True
    """


class UnknownAttributeError(KeyError, ValueError):
    """An attribute name that the domain does not have: a ``KeyError`` and a ``ValueError`` both.

    Examples
    --------
    >>> pm.Domain(["vote", "PID"], [2, 7]).position("age")
    Traceback (most recent call last):
    ...
    projmech.data._domain.UnknownAttributeError: name: unknown attribute 'age'; the domain has ['vote', 'PID']
    """

    def __str__(self) -> str:
        # KeyError's own __str__ shows the repr of its argument, quotes and escapes included.
        return str(self.args[0]) if self.args else ""


class Domain:
    """Ordered attribute names with their sizes: the universe is their product, indexed row-major.

    Parameters
    ----------
    attributes : sequence of str
        Unique names; no ``=``, no ``&`` between spaces, no control character or surrounding space (query
        labels read one way).
    sizes : sequence of int
        The number of codes of each attribute (:meth:`from_dict` declares categories or bins).

    Examples
    --------
    >>> d = pm.Domain(["a", "b"], [2, 3])
    >>> d.size, d.index([[1, 2]])
    (6, array([5]))
    """

    def __init__(self, attributes: Iterable[str], sizes: Iterable[int]) -> None:
        attributes = _as_tuple("attributes", attributes)
        sizes = _as_tuple("sizes", sizes)
        if len(attributes) != len(sizes):
            raise ValueError(
                f"attributes and sizes must have the same length, got {len(attributes)} "
                f"names and {len(sizes)} sizes"
            )
        if len(attributes) == 0:
            raise ValueError("attributes: a domain needs at least one attribute")
        for name in attributes:
            _check_name(name)
        if len(set(attributes)) != len(attributes):
            raise ValueError(f"attributes: names must be unique, got {list(attributes)}")
        self._attributes = attributes
        self._sizes = tuple(check_size(name, size) for name, size in zip(attributes, sizes))
        self._encodings: tuple[Encoding, ...] = tuple(Codes(size) for size in self._sizes)

    @classmethod
    def _of_encodings(cls, attributes: Iterable[str], encodings: Iterable[Encoding]) -> Domain:
        encodings = tuple(encodings)
        domain = cls(attributes, [encoding.size for encoding in encodings])
        domain._encodings = encodings
        return domain

    @classmethod
    def from_dict(cls, mapping: Mapping[str, Any]) -> Domain:
        """Build a domain from ``{name: entry}``, entries as :func:`~projmech.data.encoding_from_spec` reads.

        Parameters
        ----------
        mapping : mapping of str to int, list or dict
            One entry per attribute: a size, category labels or ``{"bins": [...]}``.

        Returns
        -------
        Domain
        """
        InstanceOf(Mapping, what="a mapping of name: size, categories or bins").check("mapping", mapping)
        for name in mapping:
            _check_name(name)  # before an entry's error quotes it
        return cls._of_encodings(list(mapping), [encoding_from_spec(name, spec) for name, spec in mapping.items()])

    @classmethod
    def from_json(cls, path: str | PathLike[str]) -> Domain:
        """Read a domain file, a JSON object ``{name: entry}``; its errors are ValueErrors naming it.

        Parameters
        ----------
        path : str or os.PathLike
            The file.

        Returns
        -------
        Domain
        """
        InstanceOf(str, PathLike, what="a file path (str or os.PathLike)").check("path", path)
        shown = os.fspath(path)
        if os.path.isdir(path):
            raise ValueError(f"{shown}: is a directory; expected a JSON domain file")
        with open(path, "rb") as handle:
            raw = handle.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"{shown}: is not UTF-8 text ({error})") from None
        if not text.strip():
            raise ValueError(f"{shown}: is empty; a domain file holds a JSON object of name: size, categories or bins")
        try:
            mapping = json.loads(text, object_pairs_hook=_refuse_duplicate_keys)
        except RecursionError:
            raise ValueError(f"{shown}: is nested too deeply to be a domain file (an object of name: size, "
                             "categories or bins)") from None
        except _DuplicateKey as duplicate:
            raise ValueError(
                f"{shown}: key {duplicate.key!r} appears more than once; a domain file names each attribute once"
            ) from None
        except json.JSONDecodeError as error:
            raise ValueError(f"{shown}: is not valid JSON ({error})") from None
        if not isinstance(mapping, dict):
            raise ValueError(
                f"{shown}: a domain file must hold a JSON object of name: size, categories or bins, "
                f"got a JSON {type(mapping).__name__}"
            )
        try:
            return cls.from_dict(mapping)
        except (TypeError, ValueError) as error:
            # The entry is wrong, not the caller's argument types: one ValueError naming the file.
            raise ValueError(f"{shown}: {error}") from None

    def to_dict(self) -> dict[str, int]:
        """The attributes' sizes by name, the encodings dropped (:meth:`spec` keeps them).

        Returns
        -------
        dict
        """
        return dict(zip(self._attributes, self._sizes))

    def spec(self) -> dict[str, Any]:
        """The domain as :meth:`from_dict` reads it: ``Domain.from_dict(d.spec()) == d``.

        Returns
        -------
        dict
        """
        return {name: encoding.spec() for name, encoding in zip(self._attributes, self._encodings)}

    def to_json(self, path: str | PathLike[str], *, overwrite: bool = False) -> None:
        """Write :meth:`spec` as a JSON domain file, which :meth:`from_json` reads back.

        Parameters
        ----------
        path : str or os.PathLike
            The file to create.
        overwrite : bool, default False
            Replace an existing file (by default refused).
        """
        InstanceOf(str, PathLike, what="a file path (str or os.PathLike)").check("path", path)
        FLAG.check("overwrite", overwrite)
        with open(path, "w" if overwrite else "x", encoding="utf-8") as handle:
            json.dump(self.spec(), handle, indent=1)
            handle.write("\n")

    def encoding(self, name: str) -> Encoding:
        """How an attribute's column is coded.

        Parameters
        ----------
        name : str
            The attribute whose column it codes.

        Returns
        -------
        Encoding
        """
        return self._encodings[self.position(name)]

    @property
    def encodings(self) -> tuple[Encoding, ...]:
        """Each attribute's :class:`~projmech.data.Encoding`, in order."""
        return self._encodings

    def labels(self, name: str) -> tuple[str, ...]:
        """The printable label of each code of an attribute: its categories, bins (``[18, 25)``) or codes.

        Parameters
        ----------
        name : str
            The attribute whose codes are labelled.

        Returns
        -------
        tuple of str
        """
        return self._encodings[self.position(name)].labels()

    @property
    def is_coded(self) -> bool:
        """Whether every attribute is plain integer codes (no categories or bins declared)."""
        return all(isinstance(encoding, Codes) for encoding in self._encodings)

    @classmethod
    def infer(cls, frame: Any, *, max_categories: int = 100, bins: int = 10) -> Domain:
        """Propose a domain from a data frame's columns, with a :class:`DomainInferenceWarning`.

        **A domain read off private data is not private**: draft a domain file with it only.

        Parameters
        ----------
        frame : data frame
            A frame :meth:`Dataset.from_frame <projmech.data._dataset.Dataset.from_frame>` accepts.
        max_categories : int
            A text or categorical column with more distinct values is refused.
        bins : int
            The number of equal-width bins of a numeric column not read as codes.

        Returns
        -------
        Domain

        Examples
        --------
        >>> import pandas as pd
        >>> frame = pd.DataFrame({"vote": ["Dole", "Clinton"], "PID": [0, 6], "year": [2008, 2007]})
        >>> pm.Domain.infer(frame).spec()  # warns: DomainInferenceWarning
        {'vote': ['Clinton', 'Dole'], 'PID': 7, 'year': {'categories': [2007, 2008], 'ordered': True}}
        """
        from ._frames import infer_encodings

        check_positive_int("max_categories", max_categories)
        check_positive_int("bins", bins)
        warnings.warn(
            "Domain.infer reads the domain off the data: its categories, sizes and bin edges depend on "
            "the private rows, and no privacy guarantee covers them. Declare the domain from public "
            "knowledge for a private release (see the README, 'Your own data').",
            DomainInferenceWarning, stacklevel=2)
        attributes, encodings = infer_encodings(frame, max_categories=max_categories, bins=bins)
        return cls._of_encodings(attributes, encodings)

    @property
    def attributes(self) -> tuple[str, ...]:
        """The attribute names, in order."""
        return self._attributes

    @property
    def sizes(self) -> tuple[int, ...]:
        """The number of codes of each attribute, in order."""
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
        """The index of an attribute in :attr:`attributes` (:class:`UnknownAttributeError` if it has none).

        Parameters
        ----------
        name : str
            The attribute.

        Returns
        -------
        int
        """
        return self._position("name", name)

    def _position(self, argument: str, name: Any) -> int:
        if not isinstance(name, str):
            raise TypeError(f"{argument}: an attribute name must be a str, got {name!r}")
        try:
            return self._attributes.index(name)
        except ValueError:
            raise UnknownAttributeError(
                f"{argument}: unknown attribute {name!r}; the domain has {list(self._attributes)}"
            ) from None

    def project(self, attributes: Iterable[str]) -> Domain:
        """The sub-domain on some attributes, in the order given, with their encodings.

        Parameters
        ----------
        attributes : sequence of str
            Unique names of the domain's attributes.

        Returns
        -------
        Domain
        """
        attributes = _as_tuple("attributes", attributes)
        return Domain._of_encodings(attributes, [self._encodings[self._position("attributes", name)]
                                                 for name in attributes])

    def index(self, rows: Any) -> np.ndarray:
        """The universe indices of rows of codes, row-major (the inverse of :meth:`rows`).

        Parameters
        ----------
        rows : array_like of int, shape (n, d)
            Row ``j`` holds one code per attribute.

        Returns
        -------
        numpy.ndarray of int64, shape (n,)
        """
        rows = as_array("rows", rows)
        if rows.size and not np.issubdtype(rows.dtype, np.integer):
            raise TypeError(f"rows: expected integer codes, got dtype {rows.dtype}")
        if rows.ndim != 2 or rows.shape[1] != len(self):
            raise ValueError(f"rows: expected shape (n, {len(self)}), got {rows.shape}")
        if rows.size and ((rows < 0) | (rows >= np.asarray(self._sizes))).any():
            raise ValueError("rows: values outside the domain")
        self._check_indexable()
        return np.ravel_multi_index(tuple(rows.T.astype(np.int64)), self._sizes).astype(np.int64)

    def rows(self, indices: Any) -> np.ndarray:
        """The rows of codes of universe indices, the inverse of :meth:`index`.

        Parameters
        ----------
        indices : array_like of int, shape (m,)
            Universe indices in ``0 .. size - 1``.

        Returns
        -------
        numpy.ndarray of int, shape (m, d)
        """
        indices = as_array("indices", indices)
        if indices.size and not np.issubdtype(indices.dtype, np.integer):
            raise TypeError(f"indices: expected integer universe indices, got dtype {indices.dtype}")
        if indices.ndim != 1:
            raise ValueError(f"indices: expected a 1-d array, got shape {indices.shape}")
        self._check_indexable()
        if indices.size and (indices.min() < 0 or indices.max() >= self.size):
            raise ValueError(f"indices: values must lie in [0, {self.size}), got out-of-range entries")
        return np.stack(np.unravel_index(indices.astype(np.int64), self._sizes), axis=1)

    def _check_indexable(self) -> None:
        if self.size >= 2**63:
            raise ValueError(
                f"domain: the universe has {self.size:.3e} elements, too many to index with int64"
            )

    def __eq__(self, other: object) -> bool:
        """Same attributes, in order, with the same encodings (a labelled domain differs from the plain one)."""
        return (
            isinstance(other, Domain)
            and self._attributes == other._attributes
            and self._encodings == other._encodings
        )

    def __hash__(self) -> int:
        return hash((self._attributes, self._encodings))

    def __repr__(self) -> str:
        def entry(name: str, encoding: Encoding) -> str:
            if isinstance(encoding, Codes):
                return f"{name}: {encoding.size}"
            return f"{name}: {encoding.spec()!r}"

        inner = ", ".join(entry(a, e) for a, e in zip(self._attributes, self._encodings))
        return f"Domain({inner})"


#: What an attribute name may not hold, and why: query labels read ``vote=Dole & age=[35, 65)``.
_SEPARATORS = {"=": "'=' separates an attribute from its value in query labels (vote=Dole)",
               " & ": "' & ' separates the terms of query labels (vote=Dole & PID=3)"}

def _check_name(name: Any) -> None:
    """A TypeError or ValueError for a name that is no str or would make query labels ambiguous."""
    if not isinstance(name, str):
        raise TypeError(f"attributes: every name must be a non-empty str, got {name!r}")
    if not name:
        raise ValueError("attributes: every name must be a non-empty str, got ''")
    reason = next((why for separator, why in _SEPARATORS.items() if separator in name), None)
    if reason is None and any(unicodedata.category(character) == "Cc" for character in name):
        reason = "a control character (a newline, a tab ...) does not print in labels"
    if reason is None and name != name.strip():
        reason = "a leading or trailing space makes two names print alike"
    if reason is not None:
        raise ValueError(f"attributes: name {name!r} holds what labels cannot show: {reason}; rename the attribute "
                         "(and its column)")


def _as_tuple(name: str, value: Any) -> tuple[Any, ...]:
    """A sequence argument as a tuple, refusing what ``tuple()`` would misread."""
    if isinstance(value, (str, bytes)):
        raise TypeError(
            f"{name}: expected a sequence, got the {type(value).__name__} {value!r} "
            "(it would be read one character at a time)"
        )
    if isinstance(value, Mapping):
        raise TypeError(
            f"{name}: expected a sequence, got a {type(value).__name__}; for {{name: size}} use Domain.from_dict"
        )
    if isinstance(value, (set, frozenset)):
        raise TypeError(f"{name}: expected an ordered sequence, got a {type(value).__name__} (the order matters)")
    if isinstance(value, np.ndarray) and value.ndim != 1:
        raise ValueError(f"{name}: expected a 1-d sequence, got an array of shape {value.shape}")
    try:
        return tuple(value)
    except TypeError:
        raise TypeError(f"{name}: expected a sequence, got {type(value).__name__} {value!r}") from None


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for ``json``: its default keeps the last of repeated keys."""
    mapping: dict[str, Any] = {}
    for key, value in pairs:
        if key in mapping:
            raise _DuplicateKey(key)
        mapping[key] = value
    return mapping
