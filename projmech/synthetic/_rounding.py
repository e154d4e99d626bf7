"""Synthetic rows from a projection or a fitted distribution: :func:`synthetic_data` sends each
kind of result to its row generator and states the rows' error (:doc:`/guide/synthetic_rows`)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from ..bodies import LocalResult, MomentEncoding, ProjectionResult, RelaxationResult, TablesResult
from ..data import Dataset, Domain
from ..tables import MaximumEntropyResult, NoisyMarginalsResult
from ..validation import GENERATOR, check_positive_int
from ..workloads import Workload, marginals, table_terms
from ._distribution import _fitted_tables, _rows_from_joint
from ._gaussian import gaussian_rounding
from ._marginal_rows import search_rows, tree_rows
from ._memory import check_rows_fit
from ._result import SyntheticData, _synthetic
from ._tree_sampling import _rows_from_local
from ._witness import _rows_from_tables, _rows_from_witness

__all__ = ["synthetic_data", "check_rows_fit", "RowSource", "ROW_METHODS"]

#: How :func:`synthetic_data` draws rows from a projection onto L.
ROW_METHODS = ("auto", "search", "gaussian")

#: What :func:`synthetic_data` draws rows from: a projection, or a distribution fitted to tables.
Projected = (RelaxationResult | ProjectionResult | TablesResult | LocalResult | MaximumEntropyResult
             | NoisyMarginalsResult)

#: The largest universe on which two workloads without table structure are compared by their
#: answers to a random histogram (an explicit ``workload=`` beside an object that knows its own).
PROBE_MAX_UNIVERSE = 2**22


@runtime_checkable
class RowSource(Protocol):
    """An object that knows what its rows come from (a mechanism's ``Release``, an adaptive run):
    ``row_source()`` returns the result to draw from, the workload to draw and check the rows
    with (None for L) and the workload it answers, or raises a ``ValueError`` saying what to pass."""

    def row_source(self) -> tuple[Projected, Workload | None, Workload]:
        ...  # pragma: no cover


def synthetic_data(domain: Domain, result: Projected | RowSource, n: int, rng: np.random.Generator,
                   *, workload: Workload | None = None, method: str = "auto") -> SyntheticData:
    """``n`` synthetic rows from a projection, and how far their marginals are from its answers.

    The rows' step alone, for a result already released (for rows from private data, take
    :func:`~projmech.mechanisms.adaptive.synthesize`); each kind of result is drawn its own way
    (:doc:`/guide/synthetic_rows`). Post-processing: the rows carry the release's guarantee,
    provided ``n`` is public.

    Parameters
    ----------
    domain : Domain
        The domain of the projection's workload.
    result : projection result, fitted distribution, Release or AdaptiveRun
        A projection onto L (2-way marginals of ``domain``), K_Q, disjoint tables or the local
        polytope; a distribution fitted to tables (:mod:`projmech.tables`); or a
        :class:`RowSource`.
    n : int
        Rows to draw, as many as fit in memory (:func:`check_rows_fit`, before any is drawn).
    rng : numpy.random.Generator
        The randomness of the drawing; one seed gives the same rows.
    workload : Workload, optional
        The workload projected: required for a ``ProjectionResult``, refused where it differs
        from the one a result, release or run knows; for a distribution, the workload the rows
        are compared on (default: its fitted tables).
    method : {"auto", "search", "gaussian"}
        For a ``RelaxationResult``; ``"auto"`` is ``"search"``. Other results are rounded.

    Returns
    -------
    SyntheticData
        The rows, and the RMSE and largest error of their answers against ``result.answers``.

    Raises
    ------
    TypeError
        If ``domain``, ``result``, ``method`` or ``workload`` has the wrong type.
    ValueError
        For a result not of the domain, a missing or other ``workload``, a release with nothing
        to draw from, an unknown ``method`` (``"gaussian"`` on a non-binary domain), or ``n``
        not positive or more rows than fit in memory.

    See Also
    --------
    projmech.mechanisms.adaptive.synthesize : Private rows from data in one call.

    Examples
    --------
    >>> domain = pm.Domain(["a", "b", "c"], [2, 2, 2])
    >>> data = pm.Dataset(np.random.default_rng(2).integers(0, 2, size=(500, 3)), domain)
    >>> mechanism = pm.ProjectionMechanism(pm.marginals(domain, 2), pm.ZCDP(1.0), body="local", noise="continuous")
    >>> rows = pm.synthetic_data(domain, mechanism.release(data, rng=3), 500, np.random.default_rng(4))
    >>> rows.method, len(rows.data)
    ('local', 500)
    """
    if not isinstance(domain, Domain):
        raise TypeError(f"domain: expected a Domain, got {type(domain).__name__}")
    if not isinstance(method, str):
        raise TypeError(f"method: expected a str, got {type(method).__name__}")
    if method not in ROW_METHODS:
        raise ValueError(f"method: expected one of {ROW_METHODS}, got {method!r}")
    check_rows_fit(check_positive_int("n", n), domain)
    if workload is not None and not isinstance(workload, Workload):
        raise TypeError(f"workload: expected a Workload, got {type(workload).__name__}")
    if isinstance(result, RowSource):
        result, workload = _from_source(domain, result, workload)
    if isinstance(result, (ProjectionResult, TablesResult, LocalResult, MaximumEntropyResult, NoisyMarginalsResult)):
        if method != "auto":
            raise ValueError(f"method: {method!r} draws rows from a projection onto L; a projection onto K_Q "
                             "or onto tables is rounded from its witness or tables (leave method='auto')")
        count, generator = check_positive_int("n", n), GENERATOR.check("rng", rng)
        if isinstance(result, LocalResult):
            return _rows_from_local(domain, result, count, generator, workload)
        if isinstance(result, TablesResult):
            return _rows_from_tables(domain, result, count, generator, workload)
        if isinstance(result, ProjectionResult):
            if workload is None:
                raise ValueError("workload: required for a ProjectionResult, which holds a witness over the universe "
                                 "but not the queries it projected; pass workload= (the projected workload), or "
                                 "pass the mechanism's Release, which knows it")
            return _rows_from_witness(domain, result, count, generator, workload)
        return _rows_from_joint(domain, result, count, generator,
                                workload if workload is not None else _fitted_tables(domain, result))
    if not isinstance(result, RelaxationResult):
        raise TypeError(f"result: expected a RelaxationResult, ProjectionResult, TablesResult, LocalResult, "
                        f"MaximumEntropyResult, NoisyMarginalsResult, a mechanism's Release or an AdaptiveRun, got "
                        f"{type(result).__name__}")
    if workload is not None:
        raise ValueError("workload: a projection onto L answers the 2-way marginals of the domain, which it knows; "
                         "leave workload out")
    return _rows_from_relaxation(domain, result, check_positive_int("n", n), GENERATOR.check("rng", rng), method)


def _rows_from_relaxation(domain: Domain, result: RelaxationResult, n: int, rng: np.random.Generator,
                          method: str) -> SyntheticData:
    """Rows from a projection onto L: tree and search, or Gaussian rounding (binary domains)."""
    binary = all(size == 2 for size in domain.sizes)
    if method == "gaussian" and not binary:
        raise ValueError("method: Gaussian rounding draws binary rows; every attribute must have 2 values "
                         "(use method='search' on a categorical domain)")
    encoding = MomentEncoding.of(domain, "binary" if method == "gaussian" else "auto")
    if result.moments.shape != (encoding.size, encoding.size) or result.answers.shape != (encoding.num_queries,):
        raise ValueError(
            f"result: its moments {result.moments.shape} and answers {result.answers.shape} do not match the "
            f"{'binary' if encoding.binary else 'one-hot'} encoding of the domain ({encoding.size} x "
            f"{encoding.size}, {encoding.num_queries} cells)"
        )
    if method == "gaussian":
        rows, repair = gaussian_rounding(result.moments, n, rng)
    else:
        rows, _ = search_rows(domain, result.answers, tree_rows(domain, result.answers, n, rng), rng)
        repair = 0.0
    data = Dataset(rows, domain)
    difference = marginals(domain, 2, implicit=True).answer_data(data) - result.answers
    return _synthetic(data, repair, difference, "search" if method == "auto" else method)


def _from_source(domain: Domain, source: RowSource, workload: Workload | None) -> tuple[Projected, Workload | None]:
    """The projection a release or a run draws rows from and the workload to draw them with,
    refusing an explicit ``workload`` other than theirs and a domain other than their workload's."""
    try:
        result, drawing, answered = source.row_source()
    except ValueError as error:
        raise ValueError(f"result: {error}") from None
    if answered.domain is not None and answered.domain != domain:
        raise ValueError(f"domain: {list(domain.attributes)} is not the domain of the {type(source).__name__}'s "
                         f"workload, {list(answered.domain.attributes)}")
    if workload is not None and not _same_workload(workload, answered):
        raise ValueError(f"workload: {workload.name} ({workload.num_queries} queries) is not the workload of this "
                         f"{type(source).__name__} ({answered.name}, {answered.num_queries} queries); leave workload "
                         "out: it knows its own")
    return result, drawing


def _same_workload(given: Workload, known: Workload) -> bool:
    """Whether two workloads are the same queries: the same weighted tables with the same blocks
    (compared by their answers to a random vector), or, on a universe of at most
    :data:`PROBE_MAX_UNIVERSE` cells, the same answers to a random histogram."""
    if given is known:
        return True
    if given.shape != known.shape:
        return False
    ours, theirs = table_terms(given), table_terms(known)
    if ours is not None and theirs is not None:
        if (ours.sizes, ours.subsets) != (theirs.sizes, theirs.subsets):
            return False
        if not np.allclose(ours.weights, theirs.weights, rtol=1e-12, atol=0.0):
            return False
        return all(_same_block(a, b) for a, b in zip(ours.blocks, theirs.blocks))
    if given.universe_size > PROBE_MAX_UNIVERSE:
        return False
    probe = np.random.default_rng(0).random(given.universe_size)
    probe /= probe.sum()
    return bool(np.allclose(given.answer(probe), known.answer(probe), rtol=1e-9, atol=1e-12))


def _same_block(first: Workload | None, second: Workload | None) -> bool:
    """Whether two blocks of an attribute are the same map, by their answers to a random vector."""
    if first is None or second is None or first is second:
        return first is second
    if first.shape != second.shape:
        return False
    probe = np.random.default_rng(0).standard_normal(first.shape[1])
    return bool(np.allclose(first.answer(probe), second.answer(probe), rtol=1e-9, atol=1e-12))
