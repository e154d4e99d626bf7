"""Synthetic rows from a projection.

Rows over any domain from the 2-way tables of a point of the relaxation L (a Chow–Liu tree,
:cite:p:`CL68`, then local search on the rows: :mod:`.marginal_rows`); binary rows from its
moment matrix by Gaussian (hyperplane) rounding (:cite:p:`GW95`); rows over any domain from
the witness distribution of a projection onto K_Q, by rounding its weights to counts; and rows
from the tables of a projection onto disjoint tables or onto the local polytope, the latter
along a junction tree of its tables, each table's conditionals rounded to counts (on cyclic
tables followed by local search on the rows, :func:`~.marginal_rows.search_table_rows`).

A point of L is a moment matrix, not a distribution, so it has no witness to sample from.
Hyperplane rounding with Krivine's transform of the moment matrix reproduces its first and
second moments exactly in expectation whenever the transformed matrix is positive
semidefinite; otherwise the matrix is repaired and :func:`gaussian_rounding` reports by how
much. The derivation is in the theory page *The moment relaxation of 2-way marginals*
(``docs/theory/relaxation.md``, section *From L to rows*).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .._sparse import issparse
from ..bodies.hull import ProjectionResult
from ..bodies.local import LocalResult, local_tables
from ..bodies.memory import memory_limit, memory_shortfall
from ..bodies.relaxation import MomentEncoding, RelaxationResult
from ..bodies.tables import TablesResult, table_groups
from ..data.dataset import Dataset
from ..data.domain import Domain
from ..errors import ArgumentValueError
from ..tables.junction_tree import spanning_neighbours
from ..tables.maximum_entropy import MaximumEntropyResult
from ..tables.noisy_marginals import NoisyMarginalsResult
from ..validation import GENERATOR, check_positive_int, format_count
from ..workloads import Workload, identity, kron, marginals, stack, table_terms, total
from .marginal_rows import search_rows, search_table_rows, tree_rows

__all__ = ["SyntheticData", "gaussian_rounding", "rounding_covariance", "synthetic_data", "ROW_METHODS"]

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
    """An object that knows what its synthetic rows come from: a mechanism's ``Release``, an
    adaptive run (:class:`~projmech.mechanisms.adaptive.AdaptiveRun`).

    ``row_source()`` returns the projection (or fitted distribution) the rows are drawn from,
    the workload to draw and check them with (None for a projection onto L), and the workload
    the object answers (what an explicit ``workload=`` must agree with); it raises a
    ``ValueError`` saying what to pass instead when the object holds nothing to draw from.
    """

    def row_source(self) -> tuple[Projected, Workload | None, Workload]:
        ...  # pragma: no cover

#: Bytes per value of :func:`synthetic_data`'s rows (``n`` times the attributes): the int64
#: rows themselves and two working copies of them (the unravelled columns and their stacking,
#: or the search's candidate rows), checked against memory before any row is drawn.
ROW_BYTES_PER_VALUE = 3 * 8

#: Most passes and first batch of the local search after the tree sampling of cyclic tables
#: (:func:`~projmech.synthetic.marginal_rows.search_table_rows`).
LOCAL_SEARCH_PASSES = 20
LOCAL_SEARCH_BATCH = 128


def _check_binary_moments(moments: Any) -> np.ndarray:
    Y = np.asarray(moments, dtype=float)
    if Y.ndim != 2 or Y.shape[0] != Y.shape[1] or Y.shape[0] < 2:
        raise ValueError(f"moments: expected a square (d+1) x (d+1) moment matrix with d >= 1, got shape {Y.shape}")
    if not np.all(np.isfinite(Y)):
        raise ValueError("moments: contains NaN or infinite entries")
    if abs(Y[0, 0] - 1.0) > 1e-6:
        raise ValueError(f"moments: Y[0, 0] must be 1 (the total mass), got {Y[0, 0]}")
    return (Y + Y.T) / 2


def rounding_covariance(moments: Any) -> tuple[np.ndarray, float]:
    """The Gram matrix of the rounding vectors and how far it had to be repaired.

    ``M`` is the ±1 form of the binary moment matrix (``E[s s^T]`` for ``s = (1, 2x - 1)``), and
    the Gram matrix is Krivine's transform ``sin(pi M / 2)`` (entrywise), made positive
    semidefinite with unit diagonal when it is not (eigenvalues clipped at 0, diagonal rescaled
    to 1).

    Parameters
    ----------
    moments : array_like, shape (d+1, d+1)
        A binary moment matrix ``[[1, mu^T], [mu, P]]``, as from
        :func:`~projmech.bodies.relaxation.project_to_relaxation` with the binary encoding.

    Returns
    -------
    covariance : ndarray, shape (d+1, d+1)
        The Gram matrix of the rounding vectors: positive semidefinite, unit diagonal.
    repair : float
        The largest entry change the repair made; 0 when the transform was already positive
        semidefinite (the rounding then reproduces the moments exactly in expectation).

    Raises
    ------
    ValueError
        If ``moments`` is not square of order at least 2, is not finite, or has
        ``moments[0, 0] != 1``.

    See Also
    --------
    gaussian_rounding : Draws rows with this Gram matrix.

    References
    ----------
    :cite:t:`GW95` (hyperplane rounding).

    Examples
    --------
    Two independent fair bits: their ±1 moments are the identity, and so is the transform.

    >>> import numpy as np
    >>> from projmech.synthetic import rounding_covariance
    >>> moments = np.array([[1.0, 0.5, 0.5], [0.5, 0.5, 0.25], [0.5, 0.25, 0.5]])
    >>> covariance, repair = rounding_covariance(moments)
    >>> np.allclose(covariance, np.eye(3)), repair
    (True, 0.0)
    """
    Y = _check_binary_moments(moments)
    mu = np.clip(np.diag(Y)[1:], 0.0, 1.0)
    d = mu.size
    # +-1 moments: E[s_i] = 2 mu_i - 1, E[s_i s_j] = 1 - 2 mu_i - 2 mu_j + 4 P_ij.
    M = np.empty((d + 1, d + 1))
    M[0, 0] = 1.0
    M[0, 1:] = M[1:, 0] = 2 * mu - 1
    P = Y[1:, 1:]
    M[1:, 1:] = 1 - 2 * mu[:, None] - 2 * mu[None, :] + 4 * P
    np.fill_diagonal(M, 1.0)
    target = np.sin(np.pi / 2 * np.clip(M, -1.0, 1.0))
    eigenvalues, eigenvectors = np.linalg.eigh(target)
    # A singular transform (e.g. one attribute the complement of another) has eigenvalues of
    # +-1e-16 from rounding alone; only a negative one beyond that needs (and reports) a repair.
    if eigenvalues.min() >= -1e-12 * max(1.0, float(np.abs(eigenvalues).max())):
        return target, 0.0
    repaired = (eigenvectors * np.clip(eigenvalues, 0.0, None)) @ eigenvectors.T
    scale = np.sqrt(np.clip(np.diag(repaired), np.finfo(float).tiny, None))
    repaired = repaired / scale[:, None] / scale[None, :]
    return repaired, float(np.abs(repaired - target).max())


def gaussian_rounding(moments: Any, n: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """``n`` synthetic rows over ``{0, 1}^d`` whose moments match ``moments`` in expectation.

    Hyperplane rounding (:cite:p:`GW95`): each row draws ``g ~ N(0, I)`` and sets
    ``s_i = sign(<u_i, g>) sign(<u_0, g>)``, the vectors ``u`` having the Gram matrix of
    :func:`rounding_covariance`; the row is ``x = (s + 1) / 2``.

    Parameters
    ----------
    moments : array_like, shape (d+1, d+1)
        A binary moment matrix ``[[1, mu^T], [mu, P]]`` (e.g. ``RelaxationResult.moments``).
    n : int
        Rows to draw.
    rng : numpy.random.Generator
        The source of the Gaussian draws.

    Returns
    -------
    rows : ndarray of int64, shape (n, d)
        The rows, one 0/1 value per attribute.
    repair : float
        See :func:`rounding_covariance`; 0 means the rows reproduce the moments exactly in
        expectation, otherwise only approximately.

    Raises
    ------
    ValueError
        If ``moments`` is not a binary moment matrix (see :func:`rounding_covariance`) or
        ``n`` is not positive.

    See Also
    --------
    synthetic_data : Rows from a projection, with their distance to its answers.

    References
    ----------
    :cite:t:`GW95` (hyperplane rounding).

    Examples
    --------
    >>> import numpy as np
    >>> from projmech.synthetic import gaussian_rounding
    >>> moments = np.array([[1.0, 0.5, 0.5], [0.5, 0.5, 0.25], [0.5, 0.25, 0.5]])
    >>> rows, repair = gaussian_rounding(moments, 10_000, np.random.default_rng(0))
    >>> rows.shape, repair
    ((10000, 2), 0.0)
    >>> bool(np.all(np.abs(rows.mean(axis=0) - 0.5) < 0.02))
    True
    """
    n = check_positive_int("n", n)
    GENERATOR.check("rng", rng)
    covariance, repair = rounding_covariance(moments)
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    factor = eigenvectors * np.sqrt(np.clip(eigenvalues, 0.0, None))[None, :]
    projections = rng.standard_normal((n, factor.shape[1])) @ factor.T  # rows: <u_i, g>
    signs = np.sign(projections[:, 1:]) * np.sign(projections[:, :1])
    signs[signs == 0] = 1  # a probability-zero tie
    return ((signs + 1) // 2).astype(np.int64), repair


@dataclass(frozen=True)
class SyntheticData:
    """Synthetic rows drawn from a projection, and how far their answers are from its answers.

    As :func:`synthetic_data` returns it.

    Parameters
    ----------
    data : Dataset
        The rows, over the projection's domain.
    repair : float
        See :func:`rounding_covariance` (0: the moments are reproduced exactly in expectation;
        always 0 for rows from a witness or a search).
    marginal_rmse, marginal_max_error : float
        RMSE and largest absolute difference between the rows' own answers (2-way marginals for
        L, the projected workload for K_Q) and the projected answers they were drawn from: for a
        search from L what the search could not fit; for Gaussian rounding sampling error (about
        ``1/sqrt(n)``) plus the bias of any repair; for K_Q the rounding of the weights to counts
        (at most ``support / n`` in any answer); for tables the rounding of their cells' counts
        (and, on cyclic tables, what the search after the tree of tables could not fit).
    method : str
        ``"search"`` or ``"gaussian"`` (rows from L), ``"witness"`` (rows from K_Q),
        ``"tables"`` (from disjoint tables) or ``"local"`` (from the local polytope's tables).

    See Also
    --------
    synthetic_data : Draws them.

    Examples
    --------
    >>> import numpy as np
    >>> import projmech as pm
    >>> domain = pm.Domain(["a", "b", "c"], [2, 2, 2])
    >>> workload = pm.marginals(domain, way=2)
    >>> projection = pm.project_to_hull(workload, workload.answer(np.full(8, 1 / 8)), solver="fast")
    >>> rows = pm.synthetic_data(domain, projection, 80, np.random.default_rng(0), workload=workload)
    >>> rows.method, len(rows.data), rows.marginal_max_error <= 1e-12
    ('witness', 80, True)
    """

    data: Dataset
    repair: float
    marginal_rmse: float
    marginal_max_error: float
    method: str = "witness"


def synthetic_data(domain: Domain, result: Projected | RowSource, n: int, rng: np.random.Generator,
                   *, workload: Workload | None = None, method: str = "auto") -> SyntheticData:
    """``n`` synthetic rows from a projection, and how far their marginals are from its answers.

    For synthetic rows from private data, :func:`~projmech.mechanisms.adaptive.synthesize` (``projmech synthesize``)
    is the route to take: it spends the budget on the tables that matter (the adaptive
    mechanism) and draws rows from its estimate, and on Adult its rows' 3-way tables are closer
    to the truth than rows from a projection of every table measured at once (``projmech
    release --synthetic``; the user guide's page *Synthetic rows* has the measured ratio). This
    function is the rows' step alone, for a projection already released.

    ``result`` is a projection result, or an object that knows its projection and workload: a
    :class:`~projmech.mechanisms.additive.Release` of a projecting mechanism, whose projection
    and workload are used, or an :class:`~projmech.mechanisms.adaptive.AdaptiveRun`, whose rows
    are drawn as :meth:`~projmech.mechanisms.adaptive.AdaptiveProjectionMechanism.synthesize`
    draws them. A local, tables or fitted-distribution result knows its own tables too; only a
    projection onto ``K_Q`` alone needs ``workload``.

    From a projection onto L (:class:`RelaxationResult`, any domain): ``method="search"`` (the
    default, ``"auto"``) draws rows from the Chow–Liu tree (:cite:p:`CL68`) of the projected
    2-way tables and changes their values by local search until their own tables stop
    approaching the projected ones (:mod:`projmech.synthetic.marginal_rows`); ``"gaussian"`` (binary
    domains) draws them by :func:`gaussian_rounding`, which reproduces the moments in expectation
    only where no repair was needed (on binarized Adult its rows' marginals are 14x farther from
    the truth than the projected answers; the search's 1.05x). From a projection onto K_Q
    (:class:`ProjectionResult`, any domain): its witness ``w`` is a distribution over the
    universe; each element gets ``floor(n w_j)`` rows and the remaining rows go to the largest
    remainders (ties broken by ``rng``), so every count is within 1 of ``n w_j`` and the rows'
    answers differ from the projected ones only by that rounding, never by sampling noise. From a
    projection onto disjoint tables (:class:`~projmech.bodies.tables.TablesResult`): each table's
    witness is rounded so, in its own random order (the tables drawn independently, their product
    having these tables), and an attribute no query reads takes uniform values. From a
    projection onto the local polytope of overlapping tables
    (:class:`~projmech.bodies.local.LocalResult`): the maximal tables (a table inside another is
    its marginal) are drawn along a maximum-weight spanning forest of them, two tables weighted
    by the attributes they share, in breadth-first order from each tree's largest table. That
    table is rounded to ``n`` cells as a witness is; each later table's attributes not yet drawn
    come from its conditional on those already drawn: the ``m_s`` rows with the value ``s`` of
    them get ``mu(. | s)`` rounded to counts within 1 of ``m_s mu(. | s)``, in random order.
    When the tables are acyclic (``result.exact``) the forest is a junction tree, the attributes
    already drawn are a table's separator with its parent, and the rows' distribution is the
    junction-tree one, ``prod mu_C / prod mu_S``, whose marginals are the tables: each root's
    counts are within 1 of ``n mu``, and a child's within 1 plus its parent's error on their
    separator. On cyclic tables (a relaxation: no distribution need have them) the same
    drawing matches the tables along the tree up to that rounding, while a table whose
    attributes were all drawn by others, or that conditions on more than its separator, is
    matched only approximately; so the tree's rows are then the start of a local search
    (:func:`~projmech.synthetic.marginal_rows.search_table_rows`, at most
    ``LOCAL_SEARCH_PASSES`` passes from batches of ``LOCAL_SEARCH_BATCH`` rows) that changes
    one value of a row at a time where that lowers ``sum over maximal tables ||counts / n -
    mu||^2``, and keeps the best rows. On Adult's 10 attributes with all 3-way marginals
    (``ApproxDP(1.0, 1e-9)``, 48,842 rows) it takes about 20 s, and the rows' answers are
    closer to the truth than the projected ones (RMSE 2.0e-4 against 2.5e-4; the tree's rows
    alone: 1.3e-3); ``marginal_max_error`` says how far the rows are from the projected tables,
    which rows may not be able to match. An attribute no table reads takes uniform values. Rows
    come in random order.

    Post-processing of a private release: the rows carry the release's guarantee, provided ``n``
    is public (it is the number of rows drawn, not a statistic of the data).

    Parameters
    ----------
    domain : Domain
        The domain of the projection's workload.
    result : projection result, fitted distribution, Release or AdaptiveRun
        A projection onto L (2-way marginals of ``domain``, :class:`RelaxationResult`), onto
        ``K_Q`` (:class:`ProjectionResult`), onto disjoint tables (:class:`TablesResult`), or onto
        the local polytope of overlapping tables (:class:`LocalResult`); or a distribution over the universe
        (:func:`~projmech.tables.fit_maximum_entropy` or
        :func:`~projmech.tables.fit_noisy_marginals`, rounded as a witness is, then, for a
        marginal workload, searched towards its tables as for cyclic local tables); or a
        :class:`RowSource`: a projecting mechanism's release, or an adaptive run.
    n : int
        Rows to draw: as many as fit in memory (``ROW_BYTES_PER_VALUE`` bytes per value of the
        rows, checked before any is drawn).
    rng : numpy.random.Generator
        The randomness of the drawing (tree sampling and search, Gaussian draws, or ties and the
        rows' order); one seed gives the same rows.
    workload : Workload, optional
        The workload the projection answered: required for a :class:`ProjectionResult`, which
        does not know its queries; for a tables or a local result, refused when its tables or
        answers differ, and read from the result when left out; for a distribution, the
        workload whose answers the rows are compared on (default: the tables it was fitted
        to); for a release or a run, refused unless it is theirs (leave it out). The rows'
        answers are computed from their counts with it and compared with the projected ones.
    method : {"auto", "search", "gaussian"}
        For a :class:`RelaxationResult` (see above); a witness is always rounded.

    Returns
    -------
    SyntheticData
        The rows, as a :class:`~projmech.data.dataset.Dataset`, and the RMSE and largest error of their
        answers against ``result.answers``.

    Raises
    ------
    TypeError
        If ``domain``, ``result``, ``method`` or ``workload`` has the wrong type.
    ValueError
        For moments or a witness that do not match the domain, a :class:`ProjectionResult`
        without its workload, a ``workload`` that is not the one a release, a run or a result
        projected, a release with no projection (an unprojected mechanism's) or an adaptive
        release (pass its run), an unknown ``method``, ``"gaussian"`` on a non-binary domain, or
        ``n`` not positive or more rows than fit in memory.

    See Also
    --------
    projmech.mechanisms.adaptive.synthesize : Private rows from data in one call (the route to take for rows).
    gaussian_rounding : Binary rows from a moment matrix.

    References
    ----------
    :cite:t:`CL68` (the tree the search starts from); :cite:t:`GW95` (hyperplane rounding).

    Examples
    --------
    >>> import numpy as np
    >>> import projmech as pm
    >>> domain = pm.Domain(["a", "b", "c"], [2, 2, 2])
    >>> workload = pm.marginals(domain, way=2)
    >>> truth = workload.answer(np.full(domain.size, 1 / domain.size))
    >>> y = truth + np.random.default_rng(0).normal(0, 0.05, workload.num_queries)
    >>> projection = pm.project_to_relaxation(domain, y)
    >>> rows = pm.synthetic_data(domain, projection, 200, np.random.default_rng(1))
    >>> rows.method, rows.data.records.shape
    ('search', (200, 3))
    >>> bool(rows.marginal_rmse < 0.05)
    True

    A chain of two overlapping tables, ``(a, b)`` and ``(b, c)``, is acyclic: the rows' tables
    are the projected ones up to the rounding of counts.

    >>> from projmech.bodies.local import project_to_local
    >>> from projmech.workloads import identity, kron, stack, total
    >>> chain = stack([kron([identity(2), identity(2), total(2)]), kron([total(2), identity(2), identity(2)])])
    >>> local = project_to_local(chain, np.array([0.4, 0.1, 0.2, 0.3, 0.3, 0.2, 0.1, 0.4]))
    >>> rows = pm.synthetic_data(domain, local, 1000, np.random.default_rng(1), workload=chain)
    >>> rows.method, local.exact, bool(rows.marginal_max_error <= 3 / 1000)
    ('local', True, True)

    A release of the projection mechanism knows its projection and its workload:

    >>> data = pm.Dataset(np.random.default_rng(2).integers(0, 2, size=(500, 3)), domain)
    >>> mechanism = pm.ProjectionMechanism(chain, pm.ZCDP(1.0), body="local", noise="continuous")
    >>> release = mechanism.release(data, rng=np.random.default_rng(3))
    >>> rows = pm.synthetic_data(domain, release, 500, np.random.default_rng(4))
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
    n = check_positive_int("n", n)
    GENERATOR.check("rng", rng)
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
    """Whether two workloads are the same queries: the same object, or of one shape and either
    the same weighted tables with the same blocks (:func:`~projmech.workloads.table_terms`; each
    block's answers to a random vector, never its dense matrix) or, on a universe of at most
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
    """Whether two blocks of an attribute are the same linear map, by their answers to one random
    vector (equal with probability 1 only if the maps are)."""
    if first is None or second is None or first is second:
        return first is second
    if first.shape != second.shape:
        return False
    probe = np.random.default_rng(0).standard_normal(first.shape[1])
    return bool(np.allclose(first.answer(probe), second.answer(probe), rtol=1e-9, atol=1e-12))


def _fitted_tables(domain: Domain, result: MaximumEntropyResult | NoisyMarginalsResult) -> Workload:
    """The marginal workload of the tables a distribution was fitted to, over ``domain``: what
    its rows are searched towards and compared on when no workload is given."""
    sizes = tuple(domain.sizes)
    tables = [table for table in result.tables if table]
    if not tables or any(table[-1] >= len(sizes) for table in tables):
        raise ValueError(f"result: its tables {[list(t) for t in result.tables]} are not tables of the domain's "
                         f"{len(sizes)} attributes; pass workload= (the tables to compare the rows on)")
    parts = [kron([identity(size) if a in table else total(size) for a, size in enumerate(sizes)], domain=domain)
             for table in tables]
    return parts[0] if len(parts) == 1 else stack(parts)


def check_rows_fit(n: int, domain: Domain, name: str = "n") -> None:
    """An :class:`~projmech.errors.ArgumentValueError` naming ``name`` (the caller's argument for
    the row count) where ``n`` rows over ``domain`` would not fit in memory
    (:data:`ROW_BYTES_PER_VALUE` per value), with the most rows that fit, before anything is drawn."""
    per_row = ROW_BYTES_PER_VALUE * len(domain)
    too_large = memory_shortfall(per_row * float(n))
    if too_large is not None:
        limit = memory_limit()
        assert limit is not None  # a shortfall needs a known limit
        valid = f"between 1 and {format_count(max(1, int(limit // per_row)))}"
        raise ArgumentValueError(name, f"{format_count(n)} rows of {len(domain)} attributes hold {too_large}; "
                                 f"draw fewer rows, {valid} here (several calls draw more, each from the same "
                                 "projection)", valid=valid)


def _rows_from_witness(domain: Domain, result: ProjectionResult, n: int, rng: np.random.Generator,
                       workload: Workload) -> SyntheticData:
    """Rows by largest-remainder rounding of ``n w`` (see :func:`synthetic_data`)."""
    if workload.universe_size != domain.size or result.answers.shape != (workload.num_queries,):
        raise ValueError(f"result: its answers ({result.answers.size}) and the workload "
                         f"({workload.num_queries} queries over {workload.universe_size} cells) must match the "
                         f"domain ({domain.size} cells)")
    # The shapes cannot tell two workloads of one size apart (2-way marginals of other attribute
    # pairs, or prefix and all ranges' blocks): the witness's answers under this workload must be
    # the projected answers, up to the rounding of the product.
    recomputed = workload.answer(result.weights)
    scale = 1.0 + float(np.max(np.abs(result.answers), initial=0.0))
    if not np.allclose(recomputed, result.answers, rtol=0.0, atol=1e-8 * scale):
        difference = float(np.max(np.abs(recomputed - result.answers)))
        raise ValueError(f"workload: {workload.name} is not the workload this result projected (its answers of the "
                         f"witness differ from the result's by up to {difference:.3g}); pass the projected workload")
    rows = np.column_stack(np.unravel_index(_witness_cells(result, n, rng), domain.sizes)).astype(np.int64)
    data = Dataset(rows, domain)
    return _synthetic(data, 0.0, workload.answer_data(data) - result.answers, "witness")


def _witness_cells(result: ProjectionResult, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` cells of ``result``'s witness in random order (:func:`_rounded_cells`)."""
    cells = result.support
    values = result.weights[cells]  # the witness's positive weights, never the dense witness
    weights = values.toarray().ravel() if issparse(values) else np.asarray(values, dtype=float)
    if weights.size != cells.size or weights.size == 0:
        raise ValueError("result: its witness has no positive weight")
    return _rounded_cells(cells, weights, n, rng)


def _rows_from_joint(domain: Domain, result: MaximumEntropyResult | NoisyMarginalsResult, n: int,
                     rng: np.random.Generator, workload: Workload) -> SyntheticData:
    """Rows by largest-remainder rounding of ``n p`` for a distribution ``p`` over the universe,
    then, for a marginal workload, local search on them towards the distribution's tables of the
    workload. Rounding many cells of less than a row each moves the tables: on Adult's 7
    attributes (48,842 rows from 121k cells, all 3-way tables, the adaptive mechanism's joint at
    epsilon 10) the rounded rows' error in AIM's metric was 1.24 times the distribution's; after
    the search 0.96 times (1.00 at epsilon 0.1 and 1), for about 10 s. A distribution held by a
    junction tree is drawn along it instead (:func:`_rows_from_tree`)."""
    if result.joint is None:
        assert isinstance(result, NoisyMarginalsResult)
        return _rows_from_tree(domain, result, n, rng, workload)
    if result.joint.shape != tuple(domain.sizes) or workload.universe_size != domain.size:
        raise ValueError(f"result: its distribution has shape {result.joint.shape}; the domain's sizes are "
                         f"{list(domain.sizes)} and the workload's universe holds {workload.universe_size} cells")
    weights = result.joint.ravel()
    cells = np.flatnonzero(weights > 0)
    if cells.size == 0:
        raise ValueError("result: its distribution has no positive cell")
    rows = np.column_stack(np.unravel_index(_rounded_cells(cells, weights[cells], n, rng), domain.sizes))
    rows = _searched_towards(result, rows.astype(np.int64), rng, workload)
    data = Dataset(rows, domain)
    return _synthetic(data, 0.0, workload.answer_data(data) - workload.answer(weights), "joint")


def _rows_from_tree(domain: Domain, result: NoisyMarginalsResult, n: int, rng: np.random.Generator,
                    workload: Workload) -> SyntheticData:
    """Rows from a distribution held by a junction tree: the root clique's table rounded to
    ``n`` cells as a witness is, then each clique's attributes beyond its separator from its
    conditional on it (:func:`_draw_conditional`), cliques in the tree's order, so that the rows'
    distribution is the tree's up to rounding; then the local search of :func:`_rows_from_joint`."""
    tree, beliefs = result.tree, result.beliefs
    assert tree is not None and beliefs is not None
    if tree.sizes != tuple(domain.sizes) or workload.universe_size != domain.size:
        raise ValueError(f"result: its junction tree is over sizes {list(tree.sizes)}; the domain's sizes are "
                         f"{list(domain.sizes)} and the workload's universe holds {workload.universe_size} cells")
    terms = _terms_of(workload)  # before any row is drawn
    rows = np.zeros((n, len(domain.sizes)), dtype=np.int64)
    for index in tree.order:
        clique, given = tree.cliques[index], tree.separator[index]
        _draw_conditional(rows, beliefs[index], clique, given, tuple(a for a in clique if a not in given), rng)
    rows = _searched_towards(result, rows, rng, workload)
    data = Dataset(rows, domain)
    answers = np.concatenate([weight * np.ravel(result.marginal(subset)) for subset, weight in terms])
    return _synthetic(data, 0.0, workload.answer_data(data) - answers, "joint")


def _terms_of(workload: Workload) -> list[tuple[tuple[int, ...], float]]:
    """The (table, weight) terms of a marginal workload, refusing any other."""
    terms = table_terms(workload)
    if terms is None or not terms.is_marginal:
        raise ValueError(f"workload: {workload.name} is not a workload of marginal tables; a distribution held by a "
                         "junction tree answers marginal tables only")
    return [(tuple(subset), weight) for subset, weight in terms.terms]


def _searched_towards(result: MaximumEntropyResult | NoisyMarginalsResult, rows: np.ndarray,
                      rng: np.random.Generator, workload: Workload) -> np.ndarray:
    """For a marginal workload, the rows after local search towards the distribution's tables
    of the workload's maximal tables; other workloads' rows unchanged."""
    terms = table_terms(workload)
    if terms is None or not terms.is_marginal:
        return rows
    read = {tuple(subset) for subset in terms.subsets if subset}
    maximal = sorted(t for t in read if not any(set(t) < set(other) for other in read))
    targets = [result.marginal(t) for t in maximal]
    searched, _ = search_table_rows(maximal, targets, rows, rng, passes=LOCAL_SEARCH_PASSES, batch=LOCAL_SEARCH_BATCH)
    return np.asarray(searched)


def _rounded_cells(cells: np.ndarray, weights: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` of ``cells`` in random order, cell ``j`` ``floor(n w_j)`` times (``w`` the weights
    normalized) and the remaining ones to the largest remainders (ties in random order): every
    count within 1 of ``n w_j``."""
    scaled = n * weights / weights.sum()
    counts = np.floor(scaled).astype(np.int64)
    remainders = scaled - counts
    left = n - int(counts.sum())
    order = np.lexsort((rng.random(cells.size), -remainders))
    counts[order[:left]] += 1
    return rng.permutation(np.repeat(cells, counts))


def _rows_from_tables(domain: Domain, result: TablesResult, n: int, rng: np.random.Generator,
                      workload: Workload | None) -> SyntheticData:
    """Rows from a projection onto disjoint tables (see :func:`synthetic_data`): each table's
    witness rounded to ``n`` cells as a K_Q witness is, in its own random order, so that the
    tables are drawn independently (their product is a distribution with these tables). Without
    ``workload``, the rows are answered through the result's own tables and queries."""
    if workload is None:
        if result._groups is None:
            raise ValueError("workload: required for a TablesResult that does not hold its queries; pass "
                             "workload= (the projected workload)")
        return _rows_of_tables(domain, result, result._groups, n, rng)
    groups = table_groups(workload)
    if isinstance(groups, str) or groups.attributes != result.tables or result.answers.shape != (
            workload.num_queries,) or workload.universe_size != domain.size:
        raise ValueError(f"workload: {workload.name} is not the workload this result projected over the tables "
                         f"{[list(table) for table in result.tables]} of this domain; pass the projected workload")
    # Tables of one shape cannot tell two workloads apart (prefix and identity on one attribute
    # of 17 values): each part's witness must give this workload's projected answers.
    for group, (rows_of, part) in enumerate(zip(groups.rows, result.parts)):
        weights_of = part.weights.toarray().ravel() if issparse(part.weights) else np.asarray(part.weights, dtype=float)
        if not np.allclose(groups.matrix(group) @ weights_of, result.answers[rows_of], rtol=0.0, atol=1e-8):
            raise ValueError(f"workload: {workload.name} is not the workload this result projected (its tables' "
                             "witnesses give other answers); pass the projected workload")
    return _rows_of_tables(domain, result, groups, n, rng)


def _rows_of_tables(domain: Domain, result: TablesResult, groups: Any, n: int,
                    rng: np.random.Generator) -> SyntheticData:
    """The rows of :func:`_rows_from_tables` and their answers through ``groups`` (the
    projected workload's :class:`~projmech.bodies.tables.TableGroups`): each table's queries
    applied to the rows' distribution over its cells."""
    if groups.attributes != result.tables or groups.sizes != tuple(domain.sizes):
        raise ValueError(f"result: its tables {[list(t) for t in result.tables]} over sizes {list(groups.sizes)} do "
                         f"not match the domain's sizes {list(domain.sizes)}")
    # An attribute no query reads takes uniform values: no answer depends on it.
    rows = rng.integers(0, np.asarray(domain.sizes), size=(n, len(domain.sizes)), dtype=np.int64)
    for attributes, part in zip(result.tables, result.parts):
        cells = _witness_cells(part, n, rng)
        rows[:, list(attributes)] = np.column_stack(np.unravel_index(cells, [domain.sizes[i] for i in attributes]))
    answers = np.empty(result.answers.size)
    answers[groups.constant_rows] = groups.constants
    for group, attributes in enumerate(result.tables):
        shape = [domain.sizes[i] for i in attributes]
        cells = np.ravel_multi_index(tuple(rows[:, list(attributes)].T), shape)
        answers[groups.rows[group]] = groups.matrix(group) @ (np.bincount(cells, minlength=math.prod(shape)) / n)
    return _synthetic(Dataset(rows, domain), 0.0, answers - result.answers, "tables")


def _rows_from_local(domain: Domain, result: LocalResult, n: int, rng: np.random.Generator,
                     workload: Workload | None) -> SyntheticData:
    """Rows from a projection onto the local polytope (see :func:`synthetic_data`): the maximal
    tables sampled along a maximum-weight spanning forest (:func:`_junction_order`), each table's
    new attributes drawn from its conditional on those already drawn (:func:`_draw_conditional`);
    on cyclic tables then local search on the rows towards the maximal tables
    (:func:`~.marginal_rows.search_table_rows`). Without ``workload``, the rows are answered
    through the result's own tables and terms."""
    tables = {attributes: result.marginal(attributes) for attributes in result.tables}
    if any(attributes[-1] >= len(domain) or table.shape != tuple(domain.sizes[a] for a in attributes)
           for attributes, table in tables.items()):
        raise ValueError(f"result: its tables {[list(t) for t in result.tables]} of shapes "
                         f"{[list(table.shape) for table in tables.values()]} do not match the domain's sizes "
                         f"{list(domain.sizes)}")
    if workload is not None:
        model = local_tables(workload)
        if isinstance(model, str) or model.attributes != result.tables or result.answers.shape != (
                workload.num_queries,) or workload.universe_size != domain.size or (
                workload.domain is not None and workload.domain != domain):
            raise ValueError(f"workload: {workload.name} is not the workload this result projected over the tables "
                             f"{[list(table) for table in result.tables]} of this domain; pass the projected workload")
        # One layout of tables cannot tell two workloads apart (the terms' weights or order): the
        # tables read through this workload's terms must give the projected answers.
        recomputed = model.answers(result.values, workload.num_queries)
        scale = 1.0 + float(np.max(np.abs(result.answers), initial=0.0))
        if not np.allclose(recomputed, result.answers, rtol=0.0, atol=1e-8 * scale):
            raise ValueError(f"workload: {workload.name} is not the workload this result projected (its terms over "
                             "the result's tables give other answers); pass the projected workload")
    # An attribute no table reads takes uniform values: no answer depends on it.
    rows = rng.integers(0, np.asarray(domain.sizes), size=(n, len(domain.sizes)), dtype=np.int64)
    drawn: set[int] = set()
    for clique in _junction_order(tables):
        # On a junction tree (acyclic tables) the attributes drawn before that a clique reads are
        # exactly its separator with its parent (running intersection); on the tree of a cyclic
        # set they may be more, and a clique whose attributes are all drawn adds nothing.
        given = tuple(a for a in clique if a in drawn)
        new = tuple(a for a in clique if a not in drawn)
        if new:
            _draw_conditional(rows, tables[clique], clique, given, new, rng)
            drawn.update(new)
    if not result.exact:
        # Cyclic tables: the tree matches only its own tables; local search on the rows brings
        # the others (and all together) towards the projected tables.
        maximal = [t for t in tables if not any(set(t) < set(other) for other in tables)]
        rows, _ = search_table_rows(maximal, [tables[t] for t in maximal], rows, rng, passes=LOCAL_SEARCH_PASSES,
                                    batch=LOCAL_SEARCH_BATCH)
    data = Dataset(rows, domain)
    if workload is not None:
        return _synthetic(data, 0.0, workload.answer_data(data) - result.answers, "local")
    # The rows' own tables, laid out as the result's values, read through its terms.
    counts = [np.bincount(np.ravel_multi_index(tuple(rows[:, list(t)].T), tables[t].shape),
                          minlength=tables[t].size) / n for t in result.tables]
    answers = result._model.answers(np.concatenate(counts), result.answers.size)
    return _synthetic(data, 0.0, answers - result.answers, "local")


def _junction_order(tables: dict[tuple[int, ...], np.ndarray]) -> list[tuple[int, ...]]:
    """The maximal tables (a table inside another is its marginal) in breadth-first order of a
    maximum-weight spanning forest, two tables weighted by the number of attributes they share
    (Kruskal's algorithm, ties in the tables' order, children in it too). For an acyclic
    hypergraph such a forest is a junction tree (:cite:p:`BFMY83`, :cite:p:`WJ08`): a table's
    attributes shared with any table before it lie in its parent. Tables sharing no attribute
    fall in different trees. Each tree starts at its largest table (most cells; the first of
    equals), whose rounding is then the closest to its table."""
    attributes = [set(table) for table in tables]
    maximal = [table for table, own in zip(tables, attributes) if not any(own < other for other in attributes)]
    neighbours = spanning_neighbours(maximal, connect=False)
    order: list[tuple[int, ...]] = []
    visited = [False] * len(maximal)
    for root in sorted(range(len(maximal)), key=lambda index: (-tables[maximal[index]].size, index)):
        if visited[root]:
            continue
        visited[root] = True
        queue = deque([root])
        while queue:
            node = queue.popleft()
            order.append(maximal[node])
            for child in sorted(neighbours[node]):
                if not visited[child]:
                    visited[child] = True
                    queue.append(child)
    return order


def _draw_conditional(rows: np.ndarray, table: np.ndarray, clique: tuple[int, ...], given: tuple[int, ...],
                      new: tuple[int, ...], rng: np.random.Generator) -> None:
    """Set the ``new`` attributes of ``rows`` from ``table`` (over ``clique``) given the ``given``
    ones, in place: the ``m_s`` rows with ``x_given = s`` take the cells of the conditional
    ``mu(s, .) / mu(s)`` rounded as a witness is (each count within 1 of ``m_s mu(. | s)``, the
    rest to the largest remainders, ties in random order), in random order among them. With
    nothing given, all rows share one condition: the table itself is rounded to ``n`` cells."""
    axes = [clique.index(a) for a in given] + [clique.index(a) for a in new]
    given_sizes = [table.shape[clique.index(a)] for a in given]
    # Contiguous, so that the counts' flat view below is the counts (a transposed layout would
    # make ``reshape`` a copy).
    joint = np.ascontiguousarray(table.transpose(axes)).reshape(math.prod(given_sizes), -1)
    conditions, values = joint.shape
    mass = joint.sum(axis=1)
    # A condition the table gives no mass, where rows have it (a 1e-17 cell of another table on
    # a junction tree, or the inconsistent tables of a cyclic set), takes the new attributes'
    # marginal: any choice keeps this table's other conditions exact.
    fallback = joint.sum(axis=0)
    conditional = np.where(mass[:, None] > 0, joint / np.where(mass > 0, mass, 1.0)[:, None], fallback / fallback.sum())
    conditional /= conditional.sum(axis=1, keepdims=True)
    condition = (np.ravel_multi_index(tuple(rows[:, list(given)].T), given_sizes) if given
                 else np.zeros(rows.shape[0], dtype=np.int64))
    members = np.bincount(condition, minlength=conditions)
    scaled = members[:, None] * conditional
    counts = np.floor(scaled).astype(np.int64, order="C")
    left = members - counts.sum(axis=1)
    # Largest remainders within each condition: sorted by condition, then remainder (largest
    # first), then a random key; the first ``left[s]`` of condition s get one more.
    remainders = (scaled - counts).ravel()
    group = np.repeat(np.arange(conditions), values)
    order = np.lexsort((rng.random(remainders.size), -remainders, group))
    rank = np.arange(remainders.size) - group[order] * values
    flat = counts.reshape(-1)
    flat[order[rank < left[group[order]]]] += 1
    # Both sides ordered by condition: the rows of s (in random order) meet the cells of s.
    cells = np.repeat(np.tile(np.arange(values), conditions), flat)
    targets = np.lexsort((rng.random(condition.size), condition))
    for attribute, column in zip(new, np.unravel_index(cells, [table.shape[clique.index(a)] for a in new])):
        rows[targets, attribute] = column


def _synthetic(data: Dataset, repair: float, difference: np.ndarray, method: str) -> SyntheticData:
    """The rows with the RMSE and largest entry of ``difference`` (their answers minus the
    projected ones)."""
    return SyntheticData(data=data, repair=repair, marginal_rmse=float(np.sqrt(np.mean(difference ** 2))),
                         marginal_max_error=float(np.abs(difference).max()), method=method)
