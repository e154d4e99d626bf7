"""The residual components of marginal tables, and the measurements summarized in them.

A table on attributes ``T`` is the sum over the subsets ``A`` of ``T`` of its components: the
``A``-marginal centred along every axis (``c_A``), expanded back over ``T``. The components of
different subsets are orthogonal, shared by every consistent table holding them, and a measurement
of the cells, or of residual (Helmert) contrasts, or of any Kronecker query whose factors' Gram
matrices are ``beta I + gamma J``, weighs each component by one precision. The measurements then
reduce to one precision ``w_A`` and one estimate of each component, and any weighted least-squares
problem over consistent tables to ``sum_A (w_A/2) ||c_A - chat_A||^2`` (:doc:`/theory/projection`,
section *Measurements in their own metric*).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._measurement import KroneckerQuery, Measurement

__all__ = ["centered", "Components", "components_of", "DENSE_QUERY_MAX_CELLS", "varying_subsets"]

#: The most cells of a table measured through a dense query matrix: its Gram matrix, cells x cells,
#: is formed to check that it weighs each component by one precision.
DENSE_QUERY_MAX_CELLS = 2048

#: Relative tolerance of that check.
_ISOTROPY_RTOL = 1e-9


def centered(table: np.ndarray) -> np.ndarray:
    """``table`` centred along every axis: its component on all of its attributes.

    Parameters
    ----------
    table : numpy.ndarray
        One axis per attribute.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> pm.tables.centered(np.array([[0.4, 0.1], [0.3, 0.2]])).tolist()
    [[0.05, -0.05], [-0.05, 0.05]]
    """
    for axis in range(table.ndim):
        table = table - table.mean(axis=axis, keepdims=True)
    return table


@dataclass(frozen=True)
class Components:
    """Measurements summarized per attribute subset: each component's precision and its
    generalized least-squares estimate.

    Parameters
    ----------
    sizes : tuple of int
        The domain's attribute sizes.
    precision : dict
        Each measured subset (increasing positions) to ``w_A > 0``.
    estimate : dict
        Each to ``chat_A``, a centred table on the subset.
    tables : tuple of tuple of int
        The attribute sets of the measurements that inform some component (a measurement of the
        total alone informs none: the total is 1).

    Examples
    --------
    >>> parts = pm.tables.components_of((2, 2), [pm.tables.Measurement((0, 1), np.array([0.4, 0.1, 0.3, 0.2]), 0.1)])
    >>> sorted(parts.precision.items())
    [((0,), 50.0), ((0, 1), 100.0), ((1,), 50.0)]
    >>> parts.table((0, 1)).tolist()
    [[0.4, 0.1], [0.3, 0.2]]
    """

    sizes: tuple[int, ...]
    precision: dict[tuple[int, ...], float]
    estimate: dict[tuple[int, ...], np.ndarray]
    tables: tuple[tuple[int, ...], ...] = ()

    def unmeasured(self, attributes: Sequence[int]) -> list[tuple[int, ...]]:
        """The subsets of ``attributes`` (not empty) with no precision.

        Parameters
        ----------
        attributes : sequence of int
            A table's attributes, increasing.

        Returns
        -------
        list of tuple of int
        """
        return [subset for subset in varying_subsets(self.sizes, tuple(attributes)) if subset not in self.precision]

    def table(self, attributes: Sequence[int]) -> np.ndarray:
        """The table these estimates make (summing to 1), which may hold negative cells.

        Parameters
        ----------
        attributes : sequence of int
            Its attributes, increasing, every subset measured.

        Returns
        -------
        numpy.ndarray
            One axis per attribute.
        """
        attributes = tuple(attributes)
        missing = self.unmeasured(attributes)
        if missing:
            raise ValueError(f"attributes: the components on {missing} of the table {attributes} are not measured")
        return compose(self.sizes, attributes, self.estimate)


def nonempty_subsets(attributes: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Every non-empty subset of ``attributes``, smallest first."""
    return [subset for size in range(1, len(attributes) + 1) for subset in itertools.combinations(attributes, size)]


def varying_subsets(sizes: Sequence[int], attributes: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The non-empty subsets of ``attributes`` with a component: an attribute of one value has none."""
    return [subset for subset in nonempty_subsets(attributes) if all(sizes[a] > 1 for a in subset)]


def compose(sizes: Sequence[int], attributes: tuple[int, ...], parts: dict[tuple[int, ...], np.ndarray]
            ) -> np.ndarray:
    """The table on ``attributes`` with total 1 and these components: ``1/|T| + sum_A expand(c_A)/|T - A|``."""
    shape = [sizes[a] for a in attributes]
    table = np.full(shape, 1.0 / math.prod(shape))
    for subset in varying_subsets(sizes, attributes):
        outside = math.prod(sizes[a] for a in attributes if a not in subset)
        table = table + (parts[subset] / outside).reshape([sizes[a] if a in subset else 1 for a in attributes])
    return table


def components_of(sizes: Sequence[int], measurements: Sequence[Measurement]) -> Components:
    """The measurements summarized per component: precisions and generalized least-squares estimates.

    Parameters
    ----------
    sizes : sequence of int
        The domain's attribute sizes.
    measurements : sequence of Measurement
        At least one: of a table's cells, or of a query (dense up to ``DENSE_QUERY_MAX_CELLS`` cells,
        or a :class:`KroneckerQuery`) that weighs each component of its table by one precision.

    Returns
    -------
    Components

    Raises
    ------
    ValueError
        If a measurement does not fit ``sizes``, or its query mixes components or weighs one
        unequally (a prefix or range query does), naming the measurement.

    Examples
    --------
    >>> helmert = np.array([[1.0, -1.0]]) / np.sqrt(2)
    >>> query = pm.tables.KroneckerQuery((helmert,), 3.0)
    >>> parts = pm.tables.components_of((2,), [pm.tables.Measurement((0,), np.array([0.6]), 0.5, query)])
    >>> parts.precision[(0,)], np.round(parts.table((0,)), 6).tolist()
    (36.0, [0.641421, 0.358579])
    """
    if not measurements:
        raise ValueError("measurements: need at least one")
    sizes = tuple(int(n) for n in sizes)
    precision: dict[tuple[int, ...], float] = {}
    weighted: dict[tuple[int, ...], np.ndarray] = {}
    informing: list[tuple[int, ...]] = []
    for index, measurement in enumerate(measurements):
        measurement.check(sizes)
        attributes = tuple(measurement.attributes)
        shape = [sizes[a] for a in attributes]
        weights = _component_weights(measurement, shape, index)
        largest = max(weights.values())
        weights = {key: value if value > _ISOTROPY_RTOL * largest else 0.0 for key, value in weights.items()}
        spread = _transpose(measurement).reshape(shape) / measurement.sigma**2
        informs = False
        for subset in varying_subsets(sizes, attributes):
            outside = math.prod(sizes[a] for a in attributes if a not in subset)
            weight = weights[tuple(a in subset for a in attributes)] / (measurement.sigma**2 * outside)
            if weight <= 0.0:
                continue
            informs = True
            kept = tuple(axis for axis, a in enumerate(attributes) if a not in subset)
            part = centered(spread.sum(axis=kept) if kept else spread) / outside
            precision[subset] = precision.get(subset, 0.0) + weight
            weighted[subset] = weighted.get(subset, 0.0) + part
        if informs:
            informing.append(attributes)
    estimate = {subset: weighted[subset] / precision[subset] for subset in precision}
    return Components(sizes, precision, estimate, tuple(informing))


def _transpose(measurement: Measurement) -> np.ndarray:
    """``Q^T values`` over the table's flat cells (the values themselves for the identity)."""
    values = np.asarray(measurement.values, dtype=float)
    if measurement.query is None:
        return values
    if isinstance(measurement.query, KroneckerQuery):
        return measurement.query.transpose_apply(values)
    return np.asarray(measurement.query, dtype=float).T @ values


def _component_weights(measurement: Measurement, shape: list[int], index: int) -> dict[tuple[bool, ...], float]:
    """Each component's eigenvalue of the query's Gram matrix ``Q^T Q``, keyed by which attributes it
    varies along; a ValueError where the Gram matrix is not of that form."""
    where = f"measurements: the one at position {index}, on {tuple(measurement.attributes)},"
    query = measurement.query
    if query is None:
        factors = [(1.0, 1.0)] * len(shape)
    elif isinstance(query, KroneckerQuery):
        factors = []
        for factor, n in zip(query.factors, shape):
            pair = _isotropic(np.asarray(factor, dtype=float).T @ np.asarray(factor, dtype=float), n)
            if pair is None:
                raise ValueError(f"{where} has a Kronecker factor whose Gram matrix is not beta I + gamma J: it "
                                 "mixes or unequally weighs the table's components (as a prefix or range query "
                                 "does), which this estimate does not take")
            factors.append(pair)
        factors = [(query.scale**2 * factors[0][0], query.scale**2 * factors[0][1]), *factors[1:]]
    else:
        return _dense_weights(np.asarray(query, dtype=float), shape, where)
    weights = {}
    for varies in itertools.product((False, True), repeat=len(shape)):
        weights[varies] = math.prod(centred if v else mean for (centred, mean), v in zip(factors, varies))
    return weights


def _isotropic(gram: np.ndarray, n: int) -> tuple[float, float] | None:
    """``(beta, beta + n gamma)`` where ``gram = beta I + gamma J``: its eigenvalue on vectors summing
    to 0 and on the ones vector; None otherwise."""
    mean = float(gram.sum()) / n
    centred = (float(np.trace(gram)) - mean) / (n - 1) if n > 1 else 0.0
    model = centred * np.eye(n) + (mean - centred) / n * np.ones((n, n))
    if np.abs(gram - model).max() > _ISOTROPY_RTOL * max(np.abs(gram).max(), 1e-300):
        return None
    return centred, mean


def _dense_weights(query: np.ndarray, shape: list[int], where: str) -> dict[tuple[bool, ...], float]:
    """:func:`_component_weights` for a dense query: the Gram matrix checked against its components."""
    cells = math.prod(shape)
    if cells > DENSE_QUERY_MAX_CELLS:
        raise ValueError(f"{where} has a dense query over {cells:,} cells, above {DENSE_QUERY_MAX_CELLS:,}: "
                         "give it as a KroneckerQuery of its factors")
    gram = query.T @ query
    weights: dict[tuple[bool, ...], float] = {}
    model = np.zeros_like(gram)
    for varies in itertools.product((False, True), repeat=len(shape)):
        projector = np.ones((1, 1))
        for n, v in zip(shape, varies):
            projector = np.kron(projector, np.eye(n) - 1.0 / n if v else np.full((n, n), 1.0 / n))
        rank = math.prod(n - 1 if v else 1 for n, v in zip(shape, varies))
        weights[varies] = float(np.sum(gram * projector)) / rank if rank else 0.0
        model += weights[varies] * projector
    if np.abs(gram - model).max() > _ISOTROPY_RTOL * max(np.abs(gram).max(), 1e-300):
        raise ValueError(f"{where} has a query whose Gram matrix mixes or unequally weighs the table's "
                         "components (as a prefix or range query does), which this estimate does not take")
    return weights
