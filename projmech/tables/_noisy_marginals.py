"""A distribution fitted to noisy marginal tables by entropic mirror descent, stopped where Stein's
unbiased risk estimate :cite:p:`Ste81,RBU08` is least or at a Frank–Wolfe gap
(:doc:`/theory/maximum_entropy`).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..solve import Attempt, SolveResult, SolveStats, Status
from ..validation import SEED, Options, check_positions, check_positive_int, check_positive_number, format_count
from ._junction_tree import JunctionTree, TreeTooLargeError
from ._maximum_entropy import (
    MAXIMUM_ENTROPY_MAX_CELLS,
    _checked_marginals,
    _checked_sizes,
    _FitsMeasurements,
    _JointMarginals,
)
from ._table import expand_table, project_table

__all__ = ["GAP_TOLERANCE", "MODELS", "NoisyMarginals", "NoisyMarginalsResult", "STOPS", "fit_noisy_marginals"]

#: Default iterations before stopping with ``iteration_limit``.
DEFAULT_MAX_ITERATIONS = 20_000

#: The path goes on past the last significant fall of the estimated risk for this share of the
#: iterations it took, and at least _PATIENCE_MIN more; the least estimate seen is returned.
_PATIENCE_SHARE = 0.25
_PATIENCE_MIN = 50

#: A fall of the estimated risk counts as significant above this share of a cell's noise
#: variance per measured cell: near the least-squares point, where cells creep towards 0, the
#: estimate can fall by less for ever, below what one perturbation resolves (``2 sqrt(2 df) / N``).
_SIGNIFICANT = 0.01

#: The perturbation of the second path, in standard deviations of each cell's noise: small
#: enough for a finite difference of the smooth iterates, large enough to stay above rounding.
_PERTURBATION = 0.01

#: The slack, relative to the loss's excess over its linear model, of the step's acceptance test.
_ROUNDING = 1e-12

#: A step whose largest move of a cell's logarithm is below this passes its test unchecked.
_NEGLIGIBLE_MOVE = 1e-10

#: Backtracking halvings of the step before an iteration is declared a numerical failure.
_MAX_HALVINGS = 200


@dataclass(frozen=True, eq=False, repr=False)
class NoisyMarginalsResult(_JointMarginals, SolveResult):
    """A distribution fitted to noisy tables (:func:`fit_noisy_marginals` returns it).

    Parameters
    ----------
    joint : numpy.ndarray or None
        The distribution over the universe, or None when held by ``tree``.
    tables : tuple of tuple of int
        The axes of the tables it was fitted to, in the order given.
    risk : float or None
        Stein's estimate of the iterate's mean squared error per measured cell, in noise variances
        (None with ``stop="gap"``).
    chi2 : float
        The iterate's weighted squared residual per measured cell.
    degrees_of_freedom : float or None
        The estimated divergence of its tables in the measurements, per measured cell.
    iterations_run : int
        The iterations the path ran (``stats.iterations``: the one returned).
    stats : SolveStats
        Solver ``"mirror_descent"``: optimal when the path stopped by its rule.
    tree : JunctionTree or None
        The junction tree holding the distribution, if any.
    beliefs : tuple of numpy.ndarray or None
        Its calibrated clique tables.

    Examples
    --------
    >>> fit = pm.tables.fit_noisy_marginals((2, 3), {(0,): np.array([0.52, 0.47])}, 0.05, rng=0)
    >>> fit.joint.shape, fit.stats.status.value
    ((2, 3), 'optimal')
    """

    joint: np.ndarray | None
    tables: tuple[tuple[int, ...], ...]
    risk: float | None
    chi2: float
    degrees_of_freedom: float | None
    iterations_run: int
    stats: SolveStats
    tree: JunctionTree | None = None
    beliefs: tuple[np.ndarray, ...] | None = None

    def _table(self, axes: tuple[int, ...]) -> np.ndarray:
        """The table on ``axes``, from the dense distribution or through the junction tree."""
        if self.joint is not None:
            return super()._table(axes)
        assert self.tree is not None and self.beliefs is not None
        if not axes:
            return np.ones(())
        return self.tree.marginal(self.beliefs, check_positions("axes", axes, len(self.tree.sizes)))

    @property
    def cells(self) -> int:
        """The cells holding the distribution: the universe's, or the junction tree's cliques'."""
        if self.joint is not None:
            return int(self.joint.size)
        assert self.tree is not None
        return self.tree.cells

    def _description(self) -> str:
        held = (f"{format_count(self.cells)} cells" if self.joint is not None else
                f"a junction tree of {format_count(self.cells)} cells")
        fitted = (f"estimated risk {self.risk:.3g} per cell" if self.risk is not None
                  else f"chi2 {self.chi2:.3g} per cell")
        return f"over {held} fitted to {len(self.tables)} noisy tables, {fitted}"


#: The models a fit holds its distribution in.
MODELS = ("auto", "dense", "junction_tree")

#: The fits' stopping rules: least estimated risk, or the least-squares point within a gap.
STOPS = ("risk", "gap")

#: Default tolerance of ``stop="gap"``: the Frank–Wolfe gap within this share of the larger of
#: the loss and its expectation at the truth (half the measured cells, each weighted to unit
#: noise), as :func:`~projmech.bodies.project_to_hull` with ``noise_scale``; looser than its
#: 1e-4, since mirror descent closes the gap slowly near the boundary.
GAP_TOLERANCE = 1e-3


def fit_noisy_marginals(sizes: Any, marginals: dict[tuple[int, ...], Any], sigma: float | dict[tuple[int, ...], float],
                        *, rng: Any = None, max_iterations: int = DEFAULT_MAX_ITERATIONS, model: str = "auto",
                        stop: str = "risk", tol: float | None = None,
                        start: NoisyMarginalsResult | None = None) -> NoisyMarginalsResult:
    """The distribution over ``prod(sizes)`` cells fitted to noisy tables, stopped early.

    Raises ``TypeError``/``ValueError`` for invalid arguments (a tree too large:
    :class:`~projmech.tables.TreeTooLargeError`), ``ArithmeticError`` if a step cannot pass its test.

    Parameters
    ----------
    sizes : sequence of int
        The attributes' sizes; the dense universe or the tree's cliques hold at most
        :data:`~projmech.tables.MAXIMUM_ENTROPY_MAX_CELLS` cells.
    marginals : dict
        Increasing axes to a measured table of shape ``[sizes[a] for a in axes]``, each axes once.
    sigma : float or dict
        The standard deviation of each cell's noise: one, or one per table.
    rng : numpy.random.Generator, int or None
        Source of the risk estimate's perturbation (its only randomness).
    max_iterations : int
        Iterations before stopping with ``iteration_limit``.
    model : {"auto", "dense", "junction_tree"}
        How the iterates are held; ``"auto"``, dense where the universe fits.
    stop : {"risk", "gap"}
        The iterate of least estimated risk, or the first whose Frank–Wolfe gap is within ``tol``.
    tol : float, optional
        The gap's tolerance with ``stop="gap"`` (default :data:`GAP_TOLERANCE`).
    start : NoisyMarginalsResult, optional
        With ``stop="gap"``, an earlier fit to some of the tables to start from.

    Returns
    -------
    NoisyMarginalsResult

    Examples
    --------
    >>> truth = np.array([[0.3, 0.2], [0.1, 0.4]])
    >>> noisy = truth + np.random.default_rng(1).normal(0, 0.05, (2, 2))
    >>> fit = pm.tables.fit_noisy_marginals((2, 2), {(0, 1): noisy}, 0.05, rng=0)
    >>> bool(np.abs(fit.joint - truth).sum() < np.abs(noisy - truth).sum())
    True
    """
    model = Options(*MODELS).check("model", model)
    stop = Options(*STOPS).check("stop", stop)
    if tol is not None and stop == "risk":
        raise ValueError("tol: the gap's tolerance, only with stop='gap' (stop='risk' stops by its estimated risk)")
    if start is not None and stop == "risk":
        raise ValueError("start: only with stop='gap' (stop='risk' stops early on the path from the uniform "
                         "distribution)")
    if start is not None and not isinstance(start, NoisyMarginalsResult):
        raise TypeError(f"start: expected a NoisyMarginalsResult, got {type(start).__name__}")
    tol = check_positive_number("tol", GAP_TOLERANCE if tol is None else tol)
    sizes = _checked_sizes(sizes, dense=False)
    targets = _checked_marginals(sizes, marginals, distribution=False)
    sigmas = _checked_sigmas(targets, sigma)
    max_iterations = check_positive_int("max_iterations", max_iterations)
    generator = SEED.check("rng", rng)
    holder = _model(sizes, tuple(targets), model)
    began = time.perf_counter()
    cells = sum(target.size for target in targets.values())
    if stop == "gap":
        return _fit_to_gap(holder, targets, sigmas, max_iterations, tol, cells, began, start)
    # Never returned as it is: the path yields at least one iterate.
    best: tuple[float, int, _Iterate | None, float, float] = (math.inf, 0, None, 0.0, 0.0)
    # The last iterate that lowered the estimate by more than _SIGNIFICANT a cell: the patience
    # counts from it.
    anchor, anchored = math.inf, 0
    iteration = 0
    for iteration, main, degrees in _path(holder, targets, sigmas, generator):
        chi2 = 2.0 * main.loss
        risk = chi2 - cells + 2.0 * degrees
        if risk < best[0]:
            best = (risk, iteration, main, chi2, degrees)
        if risk < anchor - _SIGNIFICANT * cells:
            anchor, anchored = risk, iteration
        if iteration >= max_iterations or iteration >= (1.0 + _PATIENCE_SHARE) * anchored + _PATIENCE_MIN:
            break
    risk, chosen, returned, chi2, degrees = best
    assert returned is not None
    bracketed = iteration >= (1.0 + _PATIENCE_SHARE) * anchored + _PATIENCE_MIN
    status = Status.OPTIMAL if bracketed else Status.ITERATION_LIMIT
    seconds = time.perf_counter() - began
    attempt = Attempt("mirror_descent", status,
                      f"least estimated risk {risk / cells:.4g} per cell at iteration {chosen} of {iteration}"
                      + ("" if bracketed else " (still falling at the iteration limit)"), seconds)
    stats = SolveStats.from_attempt(attempt, [attempt], iterations=chosen, total_time=seconds)
    return _result(holder, returned, tuple(targets), risk / cells, chi2 / cells, degrees / cells, iteration, stats)


@dataclass(frozen=True)
class NoisyMarginals(_FitsMeasurements[NoisyMarginalsResult]):
    """The noisy-marginals estimator (:class:`~projmech.tables.Estimator`): :func:`fit_noisy_marginals`.

    Parameters
    ----------
    sizes : tuple of int
        The domain's attribute sizes.
    rng, model, stop, tol, max_iterations
        As for :func:`fit_noisy_marginals` (only ``stop="gap"`` takes a warm start).

    Examples
    --------
    >>> measured = pm.tables.Measurement((0,), np.array([0.8, 0.2]), 0.01)
    >>> fit = pm.tables.NoisyMarginals((2, 2), rng=0).estimate([measured])
    >>> np.round(fit.marginal((0,)), 2).tolist()
    [0.8, 0.2]
    """

    sizes: tuple[int, ...]
    rng: Any = None
    model: str = "auto"
    stop: str = "risk"
    tol: float | None = None
    max_iterations: int = DEFAULT_MAX_ITERATIONS

    def _fit(self, tables: dict[tuple[int, ...], np.ndarray], sigmas: dict[tuple[int, ...], float],
             start: NoisyMarginalsResult | None) -> NoisyMarginalsResult:
        if not tables:
            raise ValueError("measurements: need at least one")
        return fit_noisy_marginals(self.sizes, tables, sigmas, rng=self.rng, model=self.model,
                                   stop=self.stop, tol=self.tol, max_iterations=self.max_iterations, start=start)


def _fit_to_gap(holder: _Dense | _Factored, targets: dict[tuple[int, ...], np.ndarray],
                sigmas: dict[tuple[int, ...], float], max_iterations: int, tol: float, cells: int,
                began: float, start: NoisyMarginalsResult | None) -> NoisyMarginalsResult:
    """The path run until its Frank–Wolfe gap is within ``tol`` (``stop="gap"``)."""
    scale = 0.5 * cells
    gap, threshold, iteration, main = math.inf, 0.0, 0, None
    for iteration, main, _ in _path(holder, targets, sigmas, None, start):
        # The gap bounds f(mu) - f*: <grad, mu> minus the least of <grad, vertex> over the
        # universe's elements (the marginal polytope's vertices).
        linear = sum(float((main.residuals[axes] * main.fitted[axes]).sum()) for axes in targets)
        gap = max(linear - holder.least(main), 0.0)
        threshold = tol * max(main.loss - gap, scale)
        if gap <= threshold or iteration >= max_iterations:
            break
    assert main is not None
    status = Status.OPTIMAL if gap <= threshold else Status.ITERATION_LIMIT
    seconds = time.perf_counter() - began
    attempt = Attempt("mirror_descent", status, f"Frank–Wolfe gap {gap:.4g} against {threshold:.4g} at iteration "
                      f"{iteration}", seconds)
    stats = SolveStats.from_attempt(attempt, [attempt], gap=gap, tolerance=threshold, iterations=iteration,
                                    total_time=seconds)
    return _result(holder, main, tuple(targets), None, 2.0 * main.loss / cells, None, iteration, stats)


def _result(holder: _Dense | _Factored, iterate: _Iterate, tables: tuple[tuple[int, ...], ...], risk: float | None,
            chi2: float, degrees: float | None, iterations: int, stats: SolveStats) -> NoisyMarginalsResult:
    if isinstance(holder, _Dense):
        return NoisyMarginalsResult(iterate.state.joint, tables, risk, chi2, degrees, iterations, stats)
    return NoisyMarginalsResult(None, tables, risk, chi2, degrees, iterations, stats, holder.tree,
                                tuple(iterate.state.beliefs))


def _model(sizes: tuple[int, ...], tables: tuple[tuple[int, ...], ...], model: str) -> _Dense | _Factored:
    """The holder of the iterates, refusing one too large before anything is allocated."""
    universe = math.prod(sizes)
    if model == "dense" or (model == "auto" and universe <= MAXIMUM_ENTROPY_MAX_CELLS):
        if universe > MAXIMUM_ENTROPY_MAX_CELLS:
            raise ValueError(f"sizes: the universe holds {universe:,} cells, above MAXIMUM_ENTROPY_MAX_CELLS="
                             f"{MAXIMUM_ENTROPY_MAX_CELLS:,}: the dense fit holds it whole (model='junction_tree' "
                             "holds the cliques of the measured tables)")
        return _Dense(sizes, tables)
    tree = JunctionTree(sizes, tables)
    if tree.cells > MAXIMUM_ENTROPY_MAX_CELLS:
        raise TreeTooLargeError(f"marginals: the junction tree of their tables holds {tree.cells:,} cells, above "
                                f"MAXIMUM_ENTROPY_MAX_CELLS={MAXIMUM_ENTROPY_MAX_CELLS:,}")
    return _Factored(tree, tables)


def _path(holder: _Dense | _Factored, targets: dict[tuple[int, ...], np.ndarray],
          sigmas: dict[tuple[int, ...], float],
          generator: np.random.Generator | None, start: NoisyMarginalsResult | None = None
          ) -> Iterator[tuple[int, _Iterate, float]]:
    """Mirror descent from uniform (or ``start``), endlessly: each iteration, its iterate and the Monte-Carlo ``df``."""
    weights = {axes: 1.0 / sigmas[axes] ** 2 for axes in targets}
    directions = ({} if generator is None else
                  {axes: generator.standard_normal(target.shape) for axes, target in targets.items()})
    perturbed = {axes: target + _PERTURBATION * sigmas[axes] * directions[axes]
                 for axes, target in targets.items() if axes in directions}

    # Sums of products rather than np.vdot: vdot's BLAS threads slow the fit on a loaded machine.
    def at(state: Any, measured: dict[tuple[int, ...], np.ndarray]) -> _Iterate:
        fitted = holder.fitted(state)
        loss, residuals = 0.0, {}
        for axes, values in measured.items():
            residual = fitted[axes] - values
            loss += 0.5 * weights[axes] * float((residual * residual).sum())
            residuals[axes] = weights[axes] * residual
        return _Iterate(holder, state, loss, fitted, residuals)

    main = at(holder.uniform() if start is None else holder.started(start), targets)
    # The path from the perturbed measurements, taking the same steps.
    shadow = at(main.state, perturbed) if perturbed else None
    yield 0, main, 0.0  # uniform whatever the measurements: no divergence
    # The loss's curvature is at most the summed weights in the l1 norm: a first step that
    # the backtracking below then grows by half each iteration and halves where needed.
    step = 1.0 / sum(weights.values())
    iteration = 0
    while True:
        iteration += 1
        for _ in range(_MAX_HALVINGS):
            # The step must suit both paths: taken for the main path alone it can grow without
            # bound where the main gradient vanishes (measured tables exactly uniform) and throw
            # the perturbed path, and with it the divergence, into oscillation.
            candidate = at(main.stepped(step), targets)
            if candidate.below_model_of(main, step, weights):
                if shadow is None:
                    break
                shadow_candidate = at(shadow.stepped(step), perturbed)
                if shadow_candidate.below_model_of(shadow, step, weights):
                    break
            step /= 2
        else:
            raise ArithmeticError("fit_noisy_marginals: the step underflowed without decreasing the loss")
        main = candidate
        degrees = 0.0
        if shadow is not None:
            shadow = shadow_candidate
            degrees = sum(float((directions[axes] * (shadow.fitted[axes] - main.fitted[axes])).sum()) / sigmas[axes]
                          for axes in targets) / _PERTURBATION
        step *= 1.5
        yield iteration, main, degrees


class _Iterate:
    """A point of a path: its state, loss and tables; its gradient computed only when a step is taken."""

    def __init__(self, holder: _Dense | _Factored, state: Any, loss: float, fitted: dict[tuple[int, ...], np.ndarray],
                 residuals: dict[tuple[int, ...], np.ndarray]) -> None:
        self.holder, self.state, self.loss, self.fitted, self.residuals = holder, state, loss, fitted, residuals

    @functools.cached_property
    def gradient(self) -> Any:
        """The loss's gradient in the model's parameters."""
        return self.holder.gradient(self.residuals)

    @functools.cached_property
    def spread(self) -> float:
        """A step moves no cell's logarithm by more than this times the step."""
        return self.holder.spread(self.gradient)

    def stepped(self, step: float) -> Any:
        """The state of the mirror step ``p exp(-step g)``, normalized."""
        return self.holder.step(self.state, self.gradient, step)

    def below_model_of(self, previous: _Iterate, step: float, weights: dict[tuple[int, ...], float]) -> bool:
        """The step's acceptance test (relative smoothness): the loss's excess over its linear model at most
        KL(this || previous) / step.
        """
        if step * previous.spread <= _NEGLIGIBLE_MOVE:
            return True
        excess = 0.5 * sum(weight * float(((self.fitted[axes] - previous.fitted[axes]) ** 2).sum())
                           for axes, weight in weights.items())
        divergence = max(self.holder.divergence(self.state, previous.state), 0.0)
        return excess <= divergence / step + _ROUNDING * excess


@dataclass(frozen=True)
class _DenseState:
    joint: np.ndarray
    log: np.ndarray


class _Dense:
    """Iterates held over the whole universe: the distribution and its logarithm."""

    def __init__(self, sizes: tuple[int, ...], tables: tuple[tuple[int, ...], ...]) -> None:
        self.sizes, self.tree = sizes, _MarginalTree(sizes, tables)

    def uniform(self) -> _DenseState:
        joint = np.full(self.sizes, 1.0 / math.prod(self.sizes))
        return _DenseState(joint, np.log(joint))

    def started(self, result: NoisyMarginalsResult) -> _DenseState:
        """The state of an earlier fit's distribution (uniform unless dense over this universe)."""
        if result.joint is None or result.joint.shape != self.sizes:
            return self.uniform()
        log = np.log(np.maximum(result.joint, np.finfo(float).tiny))
        joint = np.exp(log - log.max())
        total = float(joint.sum())
        return _DenseState(joint / total, log - log.max() - math.log(total))

    def fitted(self, state: _DenseState) -> dict[tuple[int, ...], np.ndarray]:
        return self.tree.marginals(state.joint)

    def gradient(self, residuals: dict[tuple[int, ...], np.ndarray]) -> np.ndarray:
        """The weighted residuals broadcast to the universe and summed."""
        return np.asarray(self.tree.adjoint(residuals))

    def spread(self, gradient: np.ndarray) -> float:
        return float(gradient.max() - gradient.min())

    def step(self, state: _DenseState, gradient: np.ndarray, step: float) -> _DenseState:
        log = state.log - step * gradient
        log -= log.max()
        joint = np.exp(log)
        total = float(joint.sum())
        joint /= total
        log -= math.log(total)
        return _DenseState(joint, log)

    def divergence(self, new: _DenseState, old: _DenseState) -> float:
        """KL(new || old)."""
        return float((new.joint * (new.log - old.log)).sum())

    def least(self, iterate: _Iterate) -> float:
        """The least of the gradient over the universe."""
        return float(iterate.gradient.min())


@dataclass(frozen=True)
class _FactoredState:
    potentials: list[np.ndarray]
    logs: list[np.ndarray]
    beliefs: list[np.ndarray]


class _Factored:
    """Iterates held by a junction tree of the measured tables: each clique's log-potential and table."""

    def __init__(self, tree: JunctionTree, tables: tuple[tuple[int, ...], ...]) -> None:
        self.tree = tree
        self.home = {table: tree.home(table) for table in tables}

    def uniform(self) -> _FactoredState:
        return self._state([np.zeros(self.tree.shape(i)) for i in range(len(self.tree.cliques))])

    def started(self, result: NoisyMarginalsResult) -> _FactoredState:
        """An earlier tree fit's potentials (each clique's table over its separator's), else uniform."""
        old = result.tree
        potentials = [np.zeros(self.tree.shape(i)) for i in range(len(self.tree.cliques))]
        if old is None or result.beliefs is None or old.sizes != self.tree.sizes:
            return self._state(potentials)
        for index, clique in enumerate(old.cliques):
            home = self.tree._holding(clique)
            if home is None:
                return self._state([np.zeros(self.tree.shape(i)) for i in range(len(self.tree.cliques))])
            with np.errstate(divide="ignore"):
                theta = np.log(np.maximum(result.beliefs[index], np.finfo(float).tiny))
                separator = old.separator[index]
                if separator:
                    theta = theta - expand_table(np.log(np.maximum(project_table(
                        result.beliefs[index], clique, separator), np.finfo(float).tiny)), separator, clique)
            potentials[home] = potentials[home] + expand_table(theta, clique, self.tree.cliques[home])
        return self._state([theta - theta.max() for theta in potentials])

    def _state(self, potentials: list[np.ndarray]) -> _FactoredState:
        logs, _ = self.tree.calibrate(potentials, log=True)
        return _FactoredState(potentials, logs, [np.exp(log) for log in logs])

    def fitted(self, state: _FactoredState) -> dict[tuple[int, ...], np.ndarray]:
        cliques = self.tree.cliques
        return {table: project_table(state.beliefs[index], cliques[index], table) for table, index in self.home.items()}

    def gradient(self, residuals: dict[tuple[int, ...], np.ndarray]) -> dict[int, np.ndarray]:
        """Each clique's share: the weighted residuals of the tables living in it, broadcast."""
        per_clique: dict[int, np.ndarray] = {}
        for table, residual in residuals.items():
            index = self.home[table]
            spread = expand_table(residual, table, self.tree.cliques[index])
            per_clique[index] = per_clique[index] + spread if index in per_clique else spread
        return per_clique

    def spread(self, gradient: dict[int, np.ndarray]) -> float:
        return sum(float(part.max() - part.min()) for part in gradient.values())

    def step(self, state: _FactoredState, gradient: dict[int, np.ndarray], step: float) -> _FactoredState:
        potentials = list(state.potentials)
        for index, part in gradient.items():
            moved = potentials[index] - step * part
            potentials[index] = moved - moved.max()  # only differences matter; kept near 0
        return self._state(potentials)

    def divergence(self, new: _FactoredState, old: _FactoredState) -> float:
        """KL(new || old), read from the cliques' tables."""
        return self.tree.divergence(new.logs, old.logs)

    def least(self, iterate: _Iterate) -> float:
        """The least total of the weighted residuals over the universe (min-sum on the tree)."""
        return self.tree.least_total(iterate.residuals)


class _MarginalTree:
    """A distribution's tables through one tree of partial sums, shared by tables with common drops."""

    def __init__(self, sizes: tuple[int, ...], tables: tuple[tuple[int, ...], ...]) -> None:
        self.sizes = sizes
        self.root = tuple(range(len(sizes)))
        rank = {axis: position for position, axis in enumerate(sorted(self.root, key=lambda a: (-sizes[a], a)))}
        self.parent: dict[tuple[int, ...], tuple[tuple[int, ...], int]] = {}
        for table in tables:
            node = table
            while node != self.root and node not in self.parent:
                dropped = max((a for a in self.root if a not in node), key=rank.__getitem__)
                parent = tuple(sorted(node + (dropped,)))
                self.parent[node] = (parent, parent.index(dropped))
                node = parent
        # Parents before children for the sums, children before parents for the adjoint.
        self.order = sorted(self.parent, key=len, reverse=True)

    def marginals(self, joint: np.ndarray) -> dict[tuple[int, ...], np.ndarray]:
        """Every node's table of ``joint`` (the measured tables among them)."""
        values = {self.root: joint}
        for node in self.order:
            parent, axis = self.parent[node]
            values[node] = values[parent].sum(axis=axis)
        return values

    def adjoint(self, tables: dict[tuple[int, ...], np.ndarray]) -> np.ndarray:
        """The sum of ``tables`` each broadcast to the universe (a gradient through the marginals)."""
        pending: dict[tuple[int, ...], np.ndarray] = dict(tables)
        for node in reversed(self.order):
            if node not in pending:
                continue
            parent, axis = self.parent[node]
            values = pending.pop(node)
            child = values.reshape(values.shape[:axis] + (1,) + values.shape[axis:])
            pending[parent] = pending[parent] + child if parent in pending else child
        return np.array(np.broadcast_to(pending[self.root], self.sizes))


def _checked_sigmas(targets: dict[tuple[int, ...], np.ndarray], sigma: Any) -> dict[tuple[int, ...], float]:
    if not isinstance(sigma, dict):
        value = check_positive_number("sigma", sigma)
        return {axes: value for axes in targets}
    keys = {check_positions("sigma", key, what="axes"): value for key, value in sigma.items()}
    if set(keys) != set(targets):
        raise ValueError(f"sigma: its keys {sorted(keys)} must be those of marginals, {sorted(targets)}")
    return {axes: check_positive_number("sigma", value) for axes, value in keys.items()}
