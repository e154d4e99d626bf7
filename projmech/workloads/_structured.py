"""Workloads kept structured: Kronecker products of per-attribute workloads, and stacks.

Products, columns, Gram matrices, norms and counts are computed factor by factor, so nothing of
size ``k x m`` is built unless :attr:`~Workload.matrix` is asked for and fits.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._sparse import issparse
from ..data import Codes, Dataset, Domain, Encoding
from ..validation import DEFAULT_MAX_ENTRIES, InstanceOf, OrNone, format_count
from ._base import Matrix, Workload
from ._kronecker_gram import KroneckerGram
from ._matrices import check_matrix_entries, root_sum_squares

__all__ = ["Kron", "Stack", "kron", "stack", "COLUMN_NORMS_UNIVERSE"]

#: Largest universe over which a stack's column norms are computed column by column; beyond it
#: they come from the factors (see :meth:`Stack.column_norm`).
COLUMN_NORMS_UNIVERSE = 2**22

_WORKLOAD = InstanceOf(Workload, what="Workload objects")
_DOMAIN = OrNone(InstanceOf(Domain, what="a Domain"))


def _workload_list(argument: str, workloads: Any, what: str) -> list[Workload]:
    if isinstance(workloads, Workload):
        raise TypeError(f"{argument}: expected a sequence of Workload objects, got a single Workload")
    if isinstance(workloads, (str, bytes)) or not isinstance(workloads, Iterable):
        raise TypeError(f"{argument}: expected a sequence of Workload objects, got {type(workloads).__name__}")
    workloads = list(workloads)
    if not workloads:
        raise ValueError(f"{argument}: need at least one workload {what}")
    for workload in workloads:
        _WORKLOAD.check(argument, workload)
    return workloads


def _join_terms(parts: Sequence[str]) -> str:
    kept = [part for part in parts if part]
    return " & ".join(kept) if kept else "total"


class _Structured(Workload):
    """What Kronecker products and stacks share: a matrix built on demand when allowed."""

    def _init_structure(self, implicit: bool | None, parts: Sequence[Workload], stored: int, builder: str) -> None:
        """``implicit`` None: the matrix may be built on demand when its ``stored`` entries fit in
        ``DEFAULT_MAX_ENTRIES`` and no part is implicit; True: never; False: required now
        (refused if too large or a part is implicit)."""
        k, m = self.shape
        implicit_parts = [part.name for part in parts if part.is_implicit]
        if implicit is False:
            if implicit_parts:
                raise ValueError(f"implicit: {builder} of implicit workloads ({', '.join(implicit_parts)}) "
                                 "has no explicit matrix")
            check_matrix_entries("implicit", builder, stored, k, m, DEFAULT_MAX_ENTRIES, implicit=True)
        self._stored = stored
        self._implicit = implicit if implicit is not None else bool(implicit_parts) or stored > DEFAULT_MAX_ENTRIES
        self._built: Matrix | None = None

    @property
    def is_implicit(self) -> bool:
        """Whether :attr:`matrix` is unavailable (asked never to be built, too large, or a part is implicit)."""
        return self._implicit

    @property
    def matrix(self) -> Matrix:
        """F as a ``scipy.sparse.csr_array``, built on first use (see :attr:`is_implicit`)."""
        if self._implicit:
            return super().matrix  # raises
        if self._built is None:
            self._built = self._build()
        return self._built

    def _build(self) -> Matrix:
        raise NotImplementedError

    def _stored_entries(self) -> int:
        return self._stored

    def _trusted_gram(self) -> np.ndarray:
        # From the parts' own trusted Gram matrices, never a closed form given by a caller.
        return self._gram()


class Kron(_Structured):
    """The Kronecker product ``W_1 ⊗ ... ⊗ W_d`` of per-attribute workloads, kept structured (:func:`kron`).

    Parameters
    ----------
    factors : sequence of Workload
        ``W_j`` acts on attribute ``j``.
    domain : Domain, optional
        The attributes, of sizes the factors' universe sizes.
    name : str, optional
        A short description; default ``"kron(...)"``.
    implicit : bool, optional
        True: never build the explicit matrix; False: build it when asked (refused now if it cannot
        be); None: build it on demand when it fits.

    Examples
    --------
    >>> pm.workloads.Kron([pm.workloads.prefix(3), pm.identity(2)]).attributes
    ('x0', 'x1')
    """

    def __init__(self, factors: Sequence[Workload], *, domain: Domain | None = None, name: str | None = None,
                 implicit: bool | None = None) -> None:
        factors = _workload_list("factors", factors, "in a Kronecker product")
        _DOMAIN.check("domain", domain)
        sizes = [factor.universe_size for factor in factors]
        if domain is not None and tuple(domain.sizes) != tuple(sizes):
            raise ValueError(f"domain: its attribute sizes {domain.sizes} differ from the factors' universes {sizes}")
        if domain is not None:
            _check_order(factors, domain)
        self.factors = tuple(factors)
        k = math.prod(factor.num_queries for factor in factors)
        self._setup((k, math.prod(sizes)), None, domain, name or "kron(" + ", ".join(f.name for f in factors) + ")")
        self._init_structure(implicit, factors, math.prod(factor._stored_entries() for factor in factors), "kron")

    @property
    def attributes(self) -> tuple[str, ...]:
        """The attribute each factor acts on: the domain's names, else ``x0, x1, ...``."""
        if self.domain is not None:
            return self.domain.attributes
        return tuple(f"x{i}" for i in range(len(self.factors)))

    def _default_labels(self) -> list[str]:
        terms = [factor._terms(attribute, self._encoding(axis)) for axis, (factor, attribute)
                 in enumerate(zip(self.factors, self.attributes))]
        return [_join_terms(parts) for parts in itertools.product(*terms)]

    def _encoding(self, axis: int) -> Encoding:
        """How the values of the factor at ``axis`` print: the domain's encoding, else codes."""
        if self.domain is not None:
            return self.domain.encodings[axis]
        return Codes(self.factors[axis].universe_size)

    def _terms(self, attribute: str, encoding: Encoding) -> list[str]:
        return list(self.labels)

    def _apply(self, vector: np.ndarray, adjoint: bool) -> np.ndarray:
        """``F @ vector`` (or ``F.T @ vector``), one factor along its own axis at a time."""
        shapes = [(f.num_queries, f.universe_size) for f in self.factors]
        tensor = vector.reshape([shape[0 if adjoint else 1] for shape in shapes])
        for axis, factor in enumerate(self.factors):
            tensor = _along_axis(factor, tensor, axis, adjoint)
        return tensor.ravel()

    def _matvec(self, vector: np.ndarray) -> np.ndarray:
        return self._apply(vector, adjoint=False)

    def _rmatvec(self, values: np.ndarray) -> np.ndarray:
        return self._apply(values, adjoint=True)

    @property
    def has_adjoint(self) -> bool:
        """Whether every factor has an adjoint (:meth:`~Workload.rmatvec`, :meth:`~Workload.columns`)."""
        return all(factor.has_adjoint for factor in self.factors)

    def _columns(self, index: np.ndarray) -> np.ndarray:
        cells = np.unravel_index(index, [f.universe_size for f in self.factors])
        result = np.ones((1, index.size))
        for factor, cell in zip(self.factors, cells):
            block = factor._columns(np.asarray(cell, dtype=np.int64))
            result = (result[:, None, :] * block[None, :, :]).reshape(-1, index.size)
        return result

    def _column_gram(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        # (a ⊗ b)^T (c ⊗ d) = (a^T c)(b^T d): one small Gram block per factor, multiplied. A block
        # that is constant (a total's) is a scalar, and the blocks that are a constant times
        # "same value" (an identity's) together are one comparison of the cells' values on
        # their factors: a marginal table's Gram is then one comparison, not one gather per
        # attribute.
        sizes = [f.universe_size for f in self.factors]
        cells_left, cells_right = np.unravel_index(left, sizes), np.unravel_index(right, sizes)
        scale, general = 1.0, []
        key_left, key_right, compared = np.zeros(left.size, np.int64), np.zeros(right.size, np.int64), False
        for factor, size, a, b in zip(self.factors, sizes, cells_left, cells_right):
            values_a, inverse_a = np.unique(a, return_inverse=True)
            values_b, inverse_b = np.unique(b, return_inverse=True)
            block = factor._column_gram(values_a.astype(np.int64), values_b.astype(np.int64))
            if block.size and np.all(block == block.flat[0]):
                scale *= float(block.flat[0])
                continue
            same = values_a[:, None] == values_b[None, :]
            diagonal = block[same]
            if diagonal.size and np.all(block[~same] == 0) and np.all(diagonal == diagonal[0]):
                scale *= float(diagonal[0])
                key_left, key_right, compared = key_left * size + a, key_right * size + b, True
                continue
            general.append((block, inverse_a, inverse_b))
        if compared:
            result = np.equal.outer(key_left, key_right) * scale
        else:
            result = np.full((left.size, right.size), scale)
        for block, inverse_a, inverse_b in general:
            result *= block[np.ix_(inverse_a, inverse_b)]
        return result

    def _gram(self) -> np.ndarray:
        return functools.reduce(np.kron, [factor.gram() for factor in self.factors])

    def _trusted_gram(self) -> np.ndarray:
        return functools.reduce(np.kron, [factor._trusted_gram() for factor in self.factors])

    def _scaled_trusted_gram(self) -> tuple[np.ndarray, float]:
        # (A ⊗ B)/(s t) = (A/s) ⊗ (B/t): the factors' scaled Gram matrices multiply, and so do their scales.
        grams, scales = zip(*(factor._scaled_trusted_gram() for factor in self.factors))
        return functools.reduce(np.kron, grams), math.prod(scales)

    def _has_nonzero_entry(self) -> bool:
        return all(factor._has_nonzero_entry() for factor in self.factors)

    def kronecker_gram(self) -> KroneckerGram:
        """Express ``F^T F`` as ``A^T A ⊗ B^T B ⊗ ...``, expanded over the factors' own terms.

        Returns
        -------
        KroneckerGram
        """
        return functools.reduce(KroneckerGram.kron, [factor.kronecker_gram() for factor in self.factors])

    def _column_norms(self, ord: float) -> np.ndarray:
        return functools.reduce(np.kron, [factor._column_norms(ord) for factor in self.factors])

    def _uniform_column_norm(self, ord: float) -> float | None:
        norms = [factor._uniform_column_norm(ord) for factor in self.factors]
        return None if any(norm is None for norm in norms) else math.prod(norms)  # type: ignore[arg-type]

    def _column_norm(self, ord: float) -> float:
        # Norms of a Kronecker product of vectors multiply, and so do their largest values.
        return math.prod(factor.column_norm(ord) for factor in self.factors)

    def _facts(self) -> tuple[bool, bool]:
        facts = [factor._facts() for factor in self.factors]
        return all(integer for integer, _ in facts), all(nonnegative for _, nonnegative in facts)

    def _build(self) -> Matrix:
        matrices = [sp.csr_array(factor.matrix) for factor in self.factors]
        return sp.csr_array(functools.reduce(lambda a, b: sp.kron(a, b, format="csr"), matrices))

    def _answer_counts(self, data: Dataset) -> np.ndarray:
        """From the table of the attributes whose factor is not a constant row (a total sums
        its attribute out), with each remaining factor applied along its axis."""
        if data.domain.sizes != tuple(f.universe_size for f in self.factors):
            return super()._answer_counts(data)  # the data's attributes are not the factors'
        constants = [factor._constant_row() for factor in self.factors]
        kept = [axis for axis, constant in enumerate(constants) if constant is None]
        tensor = data.table(kept).astype(float)
        for position, axis in enumerate(kept):
            tensor = _along_axis(self.factors[axis], tensor, position, adjoint=False)
        scale = math.prod(constant for constant in constants if constant is not None)
        # The kept axes are in increasing order and each summed-out factor has one query, so the
        # row-major order of the table is that of the queries.
        return tensor.ravel() * scale

    def _kind(self) -> str:
        return f"kron of {len(self.factors)}" + (", implicit" if self.is_implicit else "")


class Stack(_Structured):
    """The union of workloads over one universe, queries in the order given (:func:`stack`).

    Parameters
    ----------
    parts : sequence of Workload
        The workloads, over the same universe and the same domain (or none).
    domain : Domain, optional
        The attributes; default: the parts' common domain.
    name : str, optional
        A short description; default: the parts' names joined by ``" + "``.
    implicit : bool, optional
        As for :class:`Kron`.

    Examples
    --------
    >>> pm.workloads.Stack([pm.workloads.total(3), pm.workloads.prefix(3)]).shape
    (4, 3)
    """

    def __init__(self, parts: Sequence[Workload], *, domain: Domain | None = None, name: str | None = None,
                 implicit: bool | None = None) -> None:
        parts = _workload_list("workloads", parts, "to stack")
        m = parts[0].universe_size
        for part in parts[1:]:
            if part.universe_size != m:
                raise ValueError(f"workloads: universe sizes differ ({format_count(m)} vs "
                                 f"{format_count(part.universe_size)})")
        known = {part.domain for part in parts if part.domain is not None}
        if len(known) > 1:
            raise ValueError(f"workloads: their domains differ ({', '.join(sorted(map(repr, known)))})")
        if domain is None and len({part.domain for part in parts}) == 1:
            domain = parts[0].domain
        self.parts = tuple(parts)
        self._offsets = np.cumsum([0] + [part.num_queries for part in parts])
        self._setup((sum(part.num_queries for part in parts), m), None, domain,
                    name or " + ".join(part.name for part in parts))
        self._init_structure(implicit, parts, sum(part._stored_entries() for part in parts), "stack")

    def _slices(self) -> Iterable[tuple[Workload, slice]]:
        for part, start, stop in zip(self.parts, self._offsets[:-1], self._offsets[1:]):
            yield part, slice(int(start), int(stop))

    def _default_labels(self) -> list[str]:
        return [label for part in self.parts for label in part.labels]

    def _terms(self, attribute: str, encoding: Encoding) -> list[str]:
        return [term for part in self.parts for term in part._terms(attribute, encoding)]

    def _matvec(self, vector: np.ndarray) -> np.ndarray:
        return np.concatenate([part._matvec(vector) for part in self.parts])

    def _rmatvec(self, values: np.ndarray) -> np.ndarray:
        return _sum([part._rmatvec(values[rows]) for part, rows in self._slices()])

    def _matmat(self, block: np.ndarray) -> np.ndarray:
        return np.concatenate([part._matmat(block) for part in self.parts])

    def _rmatmat(self, block: np.ndarray) -> np.ndarray:
        return _sum([part._rmatmat(block[rows]) for part, rows in self._slices()])

    @property
    def has_adjoint(self) -> bool:
        """Whether every part has an adjoint (:meth:`~Workload.rmatvec`, :meth:`~Workload.columns`)."""
        return all(part.has_adjoint for part in self.parts)

    def _columns(self, index: np.ndarray) -> np.ndarray:
        return np.concatenate([part._columns(index) for part in self.parts])

    def _column_gram(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        return _sum([part._column_gram(left, right) for part in self.parts])

    def _sparse_columns(self, index: np.ndarray) -> sp.csc_array:
        return sp.csc_array(sp.vstack([part._sparse_columns(index) for part in self.parts], format="csc"))

    def _gram(self) -> np.ndarray:
        return _sum([part.gram() for part in self.parts])

    def _trusted_gram(self) -> np.ndarray:
        return _sum([part._trusted_gram() for part in self.parts])

    def _scaled_trusted_gram(self) -> tuple[np.ndarray, float]:
        # F^T F = sum of the parts' s_i^2 G_i = s^2 sum of (s_i / s)^2 G_i with s the largest s_i.
        grams, scales = zip(*(part._scaled_trusted_gram() for part in self.parts))
        scale = max(scales)
        return _sum([(part_scale / scale) ** 2 * gram for gram, part_scale in zip(grams, scales)]), scale

    def _has_nonzero_entry(self) -> bool:
        return any(part._has_nonzero_entry() for part in self.parts)

    def kronecker_gram(self) -> KroneckerGram:
        """Express ``F^T F`` as the parts' terms together.

        One dense term (:meth:`~Workload.gram`) if the parts act on attributes of different sizes.

        Returns
        -------
        KroneckerGram
        """
        grams = [part.kronecker_gram() for part in self.parts]
        if len({gram.sizes for gram in grams}) == 1:
            return functools.reduce(KroneckerGram.__add__, grams)
        return super().kronecker_gram()

    def _column_norms(self, ord: float) -> np.ndarray:
        norms = [part._column_norms(ord) for part in self.parts]
        if ord == 2:
            return root_sum_squares(norms)
        return _sum(norms) if ord == 1 else np.max(norms, axis=0)

    def _column_norm(self, ord: float) -> float:
        """Column by column up to :data:`COLUMN_NORMS_UNIVERSE` elements; beyond, attribute by attribute
        where the largest columns coincide (:func:`_common_peak`, :doc:`/theory/workloads`).
        """
        uniform = self._uniform_column_norm(ord)
        if uniform is not None:
            return uniform
        if self.universe_size <= COLUMN_NORMS_UNIVERSE:
            return float(np.max(self._column_norms(ord)))
        terms = kron_terms(self)
        if terms is not None:
            peak = _common_peak(terms, ord)
            if peak is not None:
                return peak
        raise ValueError(
            f"ord: the largest column norm of {self.name} over {format_count(self.universe_size)} elements is "
            f"computed column by column only up to {COLUMN_NORMS_UNIVERSE:.1e} elements, or from the factors of "
            "Kronecker products whose largest columns coincide; this union has neither"
        )

    def _uniform_column_norm(self, ord: float) -> float | None:
        norms = [part._uniform_column_norm(ord) for part in self.parts]
        if any(norm is None for norm in norms):
            return None
        values = np.array(norms, dtype=float)
        if ord == 2:
            return float(root_sum_squares(values))
        return float(values.sum()) if ord == 1 else float(values.max())

    def _facts(self) -> tuple[bool, bool]:
        facts = [part._facts() for part in self.parts]
        return all(integer for integer, _ in facts), all(nonnegative for _, nonnegative in facts)

    def _build(self) -> Matrix:
        matrices = [part.matrix for part in self.parts]
        if not any(issparse(matrix) for matrix in matrices):
            return np.vstack([np.asarray(matrix) for matrix in matrices])
        return sp.csr_array(sp.vstack([sp.csr_array(matrix) for matrix in matrices], format="csr"))

    def _answer_counts(self, data: Dataset) -> np.ndarray:
        return np.concatenate([part._answer_counts(data) for part in self.parts])

    def _kind(self) -> str:
        return f"stack of {len(self.parts)}" + (", implicit" if self.is_implicit else "")


def _sum(arrays: Sequence[np.ndarray]) -> np.ndarray:
    return functools.reduce(np.add, arrays)


def along_axis(apply: Callable[[np.ndarray], np.ndarray], tensor: np.ndarray, axis: int) -> np.ndarray:
    """``apply`` (a map of ``(n, r)`` blocks to ``(k, r)`` blocks) on every fibre of ``tensor``
    along ``axis``: the product of a Kronecker factor with its own axis."""
    moved = np.moveaxis(tensor, axis, 0)
    rest = moved.shape[1:]
    result = apply(np.ascontiguousarray(moved.reshape(moved.shape[0], -1), dtype=float))
    return np.moveaxis(result.reshape((result.shape[0], *rest)), 0, axis)


def _along_axis(factor: Workload, tensor: np.ndarray, axis: int, adjoint: bool) -> np.ndarray:
    """``factor`` (or its transpose) applied to every fibre of ``tensor`` along ``axis``."""
    return along_axis(factor._rmatmat if adjoint else factor._matmat, tensor, axis)


def kron_terms(workload: Workload) -> list[Kron] | None:
    """The Kronecker products a stack is the union of (nested stacks flattened), or None if
    some part is not one or they act on different attributes."""
    if isinstance(workload, Kron):
        return [workload]
    if not isinstance(workload, Stack):
        return None
    terms: list[Kron] = []
    for part in workload.parts:
        inner = kron_terms(part)
        if inner is None:
            return None
        terms += inner
    shapes = {tuple(f.universe_size for f in term.factors) for term in terms}
    return terms if len(shapes) == 1 else None


def _common_peak(terms: Sequence[Kron], ord: float) -> float | None:
    """``max_u sum_t prod_i c_ti(u_i)`` (``max_t`` for ``ord=inf``) for per-factor column-norm
    vectors ``c_ti``, when on every attribute one column maximizes all of them; else None."""
    per_term = [[factor._column_norms(ord) for factor in term.factors] for term in terms]
    for attribute in range(len(terms[0].factors)):
        vectors = np.array([norms[attribute] for norms in per_term])
        if not np.any(np.all(vectors == vectors.max(axis=1, keepdims=True), axis=0)):
            return None
    peaks = [math.prod(float(vector.max()) for vector in norms) for norms in per_term]
    if ord == 2:
        return float(root_sum_squares(peaks))
    return sum(peaks) if ord == 1 else max(peaks)


def kron(factors: Sequence[Workload], *, domain: Domain | None = None, name: str | None = None,
         implicit: bool | None = None) -> Kron:
    """Build the Kronecker product of per-attribute workloads, kept structured :cite:p:`MMHM18`.

    Queries run in row-major order, as :func:`numpy.kron`.

    Parameters
    ----------
    factors, domain, name, implicit
        As for :class:`Kron`; ``factors`` in attribute order.

    Returns
    -------
    Kron
        ``prod k_j`` queries over ``prod m_j`` elements.

    Examples
    --------
    >>> W = pm.workloads.kron([pm.workloads.prefix(3), pm.identity(2)], domain=pm.Domain(["age", "sex"], [3, 2]))
    >>> W.labels[:2]
    ('age<=0 & sex=0', 'age<=0 & sex=1')
    """
    return Kron(factors, domain=domain, name=name, implicit=implicit)


def stack(workloads: Sequence[Workload], *, name: str | None = None, implicit: bool | None = None) -> Workload:
    """Build the union of workloads over the same universe, queries in the order given.

    Structured parts stay structured; the parts must share their domain (or have none).

    Parameters
    ----------
    workloads : sequence of Workload
        The parts, over universes of the same size.
    name, implicit
        As for :class:`Stack`.

    Returns
    -------
    Stack

    Examples
    --------
    >>> pm.workloads.stack([pm.workloads.total(3), pm.identity(3)]).answer([0.2, 0.3, 0.5])
    array([1. , 0.2, 0.3, 0.5])
    """
    return Stack(workloads, name=name, implicit=implicit)


def _check_order(factors: Sequence[Workload], domain: Domain) -> None:
    """Refuse prefix sums and ranges over categories whose list has no declared order: "age <= 30"
    means something, "species <= Chinstrap" only the order the domain file happened to list.
    Prefix and range builders mark their factors by the closed-form inverse they attach."""
    for factor, attribute, encoding in zip(factors, domain.attributes, domain.encodings):
        if factor._tridiagonal_inverse is not None and factor.universe_size > 1 and not encoding.ordered:
            raise ValueError(f"factors: {factor.name} on {attribute!r} compares its values by order, but its "
                             "categories "
                             f"{list(encoding.labels())[:8]} have none; declare them ordered in the domain "
                             f"({{\"categories\": [...], \"ordered\": true}}), or give the attribute bins or a size")

