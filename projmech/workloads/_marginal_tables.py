"""Marginal workloads: unions of Kronecker products of identity and total blocks, and the
range marginals that put prefix or all-range blocks on ordinal attributes."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..data import Dataset, Domain, Unchecked
from ..validation import DEFAULT_MAX_ENTRIES, FLAG, POSITIVE_INT, InstanceOf, Interval, OrNone, validate_params
from ._base import Matrix, Workload, check_matrix_entries
from ._builders import all_range, identity, prefix, total
from ._kronecker_gram import KroneckerGram
from ._structured import Kron, Stack, _Structured

__all__ = ["Marginals", "marginals", "range_marginals", "table_terms", "TableTerms", "RANGE_BLOCKS"]

_DOMAIN = InstanceOf(Domain, what="a Domain")
_WAY = Interval(Integral, 0, None)

#: The blocks :func:`range_marginals` puts on an ordinal attribute, by name.
RANGE_BLOCKS = {"prefix": prefix, "all_range": all_range, "identity": identity}


class Marginals(_Structured):
    """Every cell of every ``way``-way marginal table of a domain (build it with :func:`marginals`).

    The union over attribute subsets of size ``way`` of Kronecker products, identity on the subset
    and total elsewhere (:attr:`parts`). Products, counts, Gram matrix and norms all have closed
    forms on the domain's shape, so the universe may be astronomically large (``2^150``).

    Parameters
    ----------
    domain : Domain
        The attributes.
    way : int
        The size of the attribute subsets, between 0 and the number of attributes.
    implicit : bool
        Never build the ``k x m`` matrix.

    Examples
    --------
    >>> W = pm.marginals(pm.Domain(["a", "b", "c"], [2, 3, 2]), 2)
    >>> isinstance(W, pm.workloads.Marginals), W.marginal_way, list(W.subsets)
    (True, 2, [(0, 1), (0, 2), (1, 2)])
    """

    def __init__(self, domain: Domain, way: int, *, implicit: bool) -> None:
        d = len(domain)
        _check_way("way", way, d)
        self.way = way
        self._sizes = tuple(domain.sizes)
        k = Unchecked.marginal_cells(self._sizes, way)  # total cells, without enumerating the subsets
        self._setup((k, domain.size), None, domain, f"marginals(way={way})")
        self._init_structure(implicit, (), domain.size * math.comb(d, way), "marginals")

    @property
    def marginal_way(self) -> int:
        """``way``: the size of the attribute subsets whose tables this workload holds."""
        return self.way

    @property
    def subsets(self) -> Iterator[tuple[int, ...]]:
        """The attribute subsets (positions), in the order of the queries."""
        return itertools.combinations(range(len(self._sizes)), self.way)

    @property
    def parts(self) -> tuple[Kron, ...]:
        """The Kronecker product of each subset's table, built on request (``C(d, way)`` of them)."""
        assert self.domain is not None
        blocks = [(identity(size), total(size)) for size in self._sizes]
        return tuple(Kron([blocks[i][0] if i in subset else blocks[i][1] for i in range(len(self._sizes))],
                          domain=self.domain) for subset in map(set, self.subsets))

    def _default_labels(self) -> list[str]:
        assert self.domain is not None
        terms = [[encoding.equals(name, code) for code in range(encoding.size)]
                 for name, encoding in zip(self.domain.attributes, self.domain.encodings)]
        return [" & ".join(cell) or "total" for subset in self.subsets
                for cell in itertools.product(*(terms[i] for i in subset))]

    def _matvec(self, vector: np.ndarray) -> np.ndarray:
        return Unchecked.marginal_matvec(vector, self._sizes, self.way)

    def _rmatvec(self, values: np.ndarray) -> np.ndarray:
        return Unchecked.marginal_rmatvec(values, self._sizes, self.way)

    def _columns(self, index: np.ndarray) -> np.ndarray:
        return Unchecked.marginal_columns(index, self._sizes, self.way, self.num_queries)

    def _gram(self) -> np.ndarray:
        universe = np.arange(self.universe_size, dtype=np.int64)
        return self._column_gram(universe, universe)

    def kronecker_gram(self) -> KroneckerGram:
        """Express ``F^T F`` as one Kronecker product per table: identity on the subset, all-ones elsewhere.

        Returns
        -------
        KroneckerGram
            ``C(d, way)`` terms with factor sizes the domain's.
        """
        return KroneckerGram([(1.0, [np.eye(size) if i in subset else np.ones((size, size))
                                     for i, size in enumerate(self._sizes)])
                              for subset in map(set, self.subsets)])

    def _sparse_columns(self, index: np.ndarray) -> sp.csc_array:
        # Each element is a 1 in one cell of each table: C(d, way) stored entries per column.
        rows = Unchecked.marginal_rows(np.unravel_index(index, self._sizes), self._sizes, self.way)
        tables = rows.shape[0]
        return sp.csc_array((np.ones(rows.size), rows.T.ravel(), np.arange(0, tables * index.size + 1, tables)),
                            shape=(self.num_queries, index.size))

    def _column_gram(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        # Two elements share a cell of subset S's table iff they agree on every attribute of S,
        # so they share C(a, way) cells, a = the number of attributes on which they agree.
        codes_left, codes_right = np.unravel_index(left, self._sizes), np.unravel_index(right, self._sizes)
        agree = np.zeros((left.size, right.size), dtype=np.int64)
        for a, b in zip(codes_left, codes_right):
            agree += a[:, None] == b[None, :]
        return np.array([math.comb(a, self.way) for a in range(len(self._sizes) + 1)], dtype=float)[agree]

    def _column_norms(self, ord: float) -> np.ndarray:
        return np.full(self.universe_size, self._column_norm(ord))

    def _uniform_column_norm(self, ord: float) -> float:
        return self._column_norm(ord)

    def _column_norm(self, ord: float) -> float:
        # Each element falls in exactly one cell (a 1) of each of the C(d, way) tables.
        tables = math.comb(len(self._sizes), self.way)
        return math.sqrt(tables) if ord == 2 else float(tables) if ord == 1 else 1.0

    def _facts(self) -> tuple[bool, bool]:
        return True, True

    def _build(self) -> Matrix:
        m, tables = self.universe_size, math.comb(len(self._sizes), self.way)
        codes = np.unravel_index(np.arange(m, dtype=np.int64), self._sizes)
        row_index = Unchecked.marginal_rows(codes, self._sizes, self.way).ravel()
        column_index = np.tile(np.arange(m, dtype=np.int64), tables)
        return sp.csr_array((np.ones(row_index.size), (row_index, column_index)), shape=self.shape)

    def _answer_counts(self, data: Dataset) -> np.ndarray:
        return data.marginal_counts(self.way)

    def _kind(self) -> str:
        return "marginals" + (", implicit" if self.is_implicit else "")


@validate_params(domain=_DOMAIN, way=OrNone(POSITIVE_INT), max_entries=POSITIVE_INT,
                 implicit=FLAG)
def marginals(domain: Domain, way: int | None = None, *, ways: Sequence[int] | None = None,
              max_entries: int = DEFAULT_MAX_ENTRIES, implicit: bool = False) -> Workload:
    """Build every cell of every ``way``-way marginal table of a domain.

    Rows run by attribute subset (lexicographic), then by cell (row-major). On ``{0,1}^d`` these are
    the ``way``-wise conjunctions (:cite:p:`DNT15`); each element falls in one cell of each table, so
    ``||F||_{1->2} = sqrt(C(d, way))``.

    Parameters
    ----------
    domain : Domain
        The attributes; the universe is their product, in row-major order.
    way : int, optional
        The table size, between 1 and the number of attributes.
    ways : sequence of int, optional
        Instead of ``way``: several sizes (0 is the total), distinct and increasing.
    max_entries : int, default DEFAULT_MAX_ENTRIES
        Cap on the explicit matrix's stored entries, checked before anything is allocated.
    implicit : bool, default False
        Never build the ``k x m`` matrix (answers, Gram matrix and sensitivity in closed form), so
        the universe may be astronomically large.

    Returns
    -------
    Workload
        A :class:`Marginals` for ``way``; for ``ways``, a :class:`Stack` of them.

    Examples
    --------
    >>> domain = pm.Domain(["a", "b"], [2, 3])
    >>> W = pm.marginals(domain, way=1)
    >>> W.shape, W.labels
    ((5, 6), ('a=0', 'a=1', 'b=0', 'b=1', 'b=2'))
    >>> big = pm.Domain([f"x{i}" for i in range(150)], [2] * 150)
    >>> pm.marginals(big, 2, implicit=True).num_queries
    44700
    """
    if (way is None) == (ways is None):
        raise TypeError("marginals: give exactly one of way (an int) and ways (a sequence of ints)")
    if way is not None:
        return _marginals_of_way("way", domain, way, max_entries, implicit)
    if isinstance(ways, (str, bytes)) or not isinstance(ways, Sequence):
        raise TypeError(f"ways: expected a sequence of ints, got {type(ways).__name__}")
    sizes = [int(_WAY.check("ways", size)) for size in ways]
    if not sizes or sizes != sorted(set(sizes)):
        raise ValueError(f"ways: expected distinct sizes in increasing order, got {list(ways)}")
    parts = [_marginals_of_way("ways", domain, size, max_entries, implicit) for size in sizes]
    return Stack(parts, name=f"marginals(ways={tuple(sizes)})", implicit=True if implicit else None)


def _check_way(argument: str, way: int, attributes: int) -> None:
    if way > attributes:
        raise ValueError(f"{argument}: must be at most the number of attributes ({attributes}), got {way}")


def _marginals_of_way(argument: str, domain: Domain, way: int, max_entries: int, implicit: bool) -> Workload:
    _check_way(argument, way, len(domain))
    if not implicit:
        check_matrix_entries("domain", f"marginals(way={way})", domain.size * math.comb(len(domain), way),
                             Unchecked.marginal_cells(domain.sizes, way), domain.size, max_entries, implicit=True)
    return Marginals(domain, way, implicit=implicit)


@validate_params(domain=_DOMAIN, way=POSITIVE_INT, implicit=FLAG)
def range_marginals(domain: Domain, way: int, ranges: Mapping[str, str], *, implicit: bool = True) -> Workload:
    """Build marginal tables with prefix or range queries on ordinal attributes.

    Each subset of size ``way`` gives a Kronecker product: the block named in ``ranges`` on its
    ordinal attributes, identity on its others, total outside it (HDMM's "DimKKrons",
    :cite:p:`MMHM18`).

    Parameters
    ----------
    domain : Domain
        The attributes.
    way : int
        The number of attributes in each table.
    ranges : mapping of str to str
        Attribute name to ``"prefix"``, ``"all_range"`` or ``"identity"`` (the default).
    implicit : bool, default True
        Never build the explicit matrix.

    Returns
    -------
    Stack
        The union of the ``C(d, way)`` Kronecker products.

    Examples
    --------
    >>> domain = pm.Domain(["age", "sex", "hours"], [4, 2, 3])
    >>> W = pm.workloads.range_marginals(domain, 2, {"age": "prefix", "hours": "all_range"})
    >>> W.shape, W.labels[0]
    ((44, 24), 'age<=0 & sex=0')
    """
    if not isinstance(ranges, Mapping):
        raise TypeError(f"ranges: expected a mapping of attribute name to block name, got {type(ranges).__name__}")
    blocks: dict[int, Any] = {}
    for attribute, block in ranges.items():
        position = domain.position(attribute)
        if block not in RANGE_BLOCKS:
            raise ValueError(f"ranges: {attribute!r} has block {block!r}; expected one of {sorted(RANGE_BLOCKS)}")
        blocks[position] = RANGE_BLOCKS[block]
    d = len(domain)
    _check_way("way", way, d)
    inside = [blocks.get(i, identity)(size) for i, size in enumerate(domain.sizes)]
    outside = [total(size) for size in domain.sizes]
    parts = [Kron([inside[i] if i in subset else outside[i] for i in range(d)], domain=domain,
                  implicit=True if implicit else None)
             for subset in map(set, itertools.combinations(range(d), way))]
    described = ", ".join(f"{name}={block}" for name, block in ranges.items())
    return Stack(parts, name=f"range_marginals(way={way}; {described})", implicit=True if implicit else None)


@dataclass(frozen=True)
class TableTerms:
    """A workload as a union of weighted tables, one block per attribute (from :func:`table_terms`).

    Term ``t`` applies each attribute's block on ``subsets[t]``, sums the other attributes out and
    weights the cells by ``weights[t]``.

    Parameters
    ----------
    sizes : tuple of int
        The attributes' sizes.
    blocks : tuple of (Workload or None)
        Each attribute's block; None where no term keeps the attribute.
    subsets, weights : tuple
        Each term's attributes (positions, increasing) and its weight.

    Examples
    --------
    >>> terms = pm.workloads.table_terms(pm.marginals(pm.Domain(["a", "b"], [2, 3]), ways=(0, 1)))
    >>> terms.subsets, terms.weights, terms.is_marginal
    (((), (0,), (1,)), (1.0, 1.0, 1.0), True)
    """

    sizes: tuple[int, ...]
    blocks: tuple[Workload | None, ...]
    subsets: tuple[tuple[int, ...], ...]
    weights: tuple[float, ...]

    @property
    def terms(self) -> list[tuple[tuple[int, ...], float]]:
        """The pairs ``(subsets[t], weights[t])``, one per term."""
        return list(zip(self.subsets, self.weights))

    @property
    def is_marginal(self) -> bool:
        """Whether every block is an identity: a marginal workload."""
        return all(block is None or block._scaled_identity() == 1.0 for block in self.blocks)


def table_terms(workload: Workload) -> TableTerms | None:
    """Decompose a workload as a union of weighted tables, if it is one.

    A :class:`Marginals`, a Kronecker product or a stack of them decomposes when each factor is a
    total, a scaled identity or the attribute's one block; the structured factorizations rest on
    this form (:doc:`/theory/structured_factorization`).

    Parameters
    ----------
    workload : Workload
        The workload to decompose.

    Returns
    -------
    TableTerms or None
        The terms; None if the workload has no such structure.

    Examples
    --------
    >>> from projmech.workloads import identity, kron, prefix, table_terms, total
    >>> table_terms(kron([prefix(4), total(2), identity(3)])).subsets
    ((0, 2),)
    >>> table_terms(pm.Workload([[1, 0], [1, 1]])) is None
    True
    """
    parts = _products(workload)
    if parts is None or not parts:
        return None
    if not parts[0][1] and workload.domain is None:
        return None  # a table of totals alone, over no domain: no attribute sizes to read
    sizes = tuple(f.universe_size for f in parts[0][1]) if parts[0][1] else tuple(workload.domain.sizes)  # type: ignore[union-attr]
    blocks: list[Workload | None] = [None] * len(sizes)
    identities: dict[int, Workload] = {}  # one identity block per attribute, shared by the tables
    subsets, weights = [], []
    for marginal_subset, factors in parts:
        if marginal_subset is not None:  # a Marginals table: identity on the subset
            for i in marginal_subset:
                if i not in identities:
                    identities[i] = identity(sizes[i])
                if not _same_block(blocks, i, identities[i]):
                    return None
            subsets.append(marginal_subset)
            weights.append(1.0)
            continue
        if tuple(f.universe_size for f in factors) != sizes:
            return None
        subset, weight = [], 1.0
        for position, factor in enumerate(factors):
            constant = factor._constant_row()
            if constant is not None and factor.universe_size > 1:
                weight *= constant
                continue
            # A 1x1 factor is a total and a scaled identity at once: read as the identity, its
            # entry a weight, so that differently scaled ones on one attribute are one block (the
            # adaptive mechanism weights each measured table on its first attribute, which may
            # have a single value).
            scale = constant if constant is not None else factor._scaled_identity()
            if scale is not None and position not in identities:
                identities[position] = identity(sizes[position])
            block = identities[position] if scale is not None else factor
            weight *= scale if scale is not None else 1.0
            if not _same_block(blocks, position, block):
                return None
            subset.append(position)
        subsets.append(tuple(subset))
        weights.append(weight)
    return TableTerms(sizes, tuple(blocks), tuple(subsets), tuple(weights))


def _products(workload: Workload) -> list[tuple[tuple[int, ...] | None, tuple[Workload, ...]]] | None:
    """The terms of a union, ``(subset, ())`` per Marginals table or ``(None, factors)`` per product; None otherwise."""
    if isinstance(workload, Marginals):
        return [(subset, ()) for subset in workload.subsets]
    if isinstance(workload, Kron):
        return [(None, workload.factors)]
    if isinstance(workload, Stack):
        terms: list[tuple[tuple[int, ...] | None, tuple[Workload, ...]]] = []
        for part in workload.parts:
            inner = _products(part)
            if inner is None:
                return None
            terms += inner
        return terms
    return None


def _same_block(blocks: list[Workload | None], position: int, block: Workload) -> bool:
    """Record ``block`` for attribute ``position``; False if another block is recorded there."""
    known = blocks[position]
    if known is None:
        blocks[position] = block
        return True
    if known is block or (known._scaled_identity() == 1.0 and block._scaled_identity() == 1.0):
        return True
    if known.shape != block.shape or known.num_queries * known.universe_size > 10**6:
        return False
    return bool(np.array_equal(known.toarray(), block.toarray()))
