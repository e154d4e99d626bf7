"""The adaptive mechanism's final estimate: the estimator the answers are read from, its warnings and summary."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ...bodies import ProjectionError
from ...errors import ArgumentValueError
from ...solve import Status
from ...tables import MAXIMUM_ENTROPY_MAX_CELLS, JunctionTree, NoisyMarginalsResult, TreeTooLargeError
from .._budget import _caller_level
from ._estimation import JointEstimate, Measurement, _on_own_axes, estimate_joint, estimate_regularized_joint

#: The final estimators: one distribution over the universe (fitted to the measurements and
#: stopped early, or the certified projection's maximum-entropy fit), or the measured tables
#: completed.
ESTIMATORS = ("auto", "regularized", "joint", "tables")

#: The largest universe on which ``estimator="auto"`` takes the regularized joint: its cost grows
#: with the cells times the iterations (see benchmarks/README.md).
JOINT_AUTO_MAX_CELLS = 250_000

#: The most measured cells for which ``estimator="auto"`` takes the regularized joint: many
#: measured cells come with precise measurements, whose path is long and on which the tables
#: estimate is as good (see benchmarks/README.md).
JOINT_AUTO_MAX_MEASURED = 15_000

#: The largest junction tree of the measured tables (its cliques' cells together) on which
#: ``estimator="auto"`` takes the regularized joint beyond :data:`JOINT_AUTO_MAX_CELLS` (see
#: benchmarks/README.md).
TREE_AUTO_MAX_CELLS = 10**6


class JointEstimateWarning(UserWarning):
    """The joint estimate stopped short of its rule or certificate, or none was found (then the answers
    come from the local projection's tables).

    Examples
    --------
    >>> issubclass(pm.mechanisms.adaptive.JointEstimateWarning, UserWarning)
    True
    """


def check_estimator(estimator: str, universe: int) -> None:
    """Refuse ``estimator="joint"`` on a universe too large for the marginal polytope."""
    if estimator == "joint" and universe > MAXIMUM_ENTROPY_MAX_CELLS:
        raise ArgumentValueError("estimator", f"'joint' projects onto the marginal polytope over the "
                                 f"{universe:,} cells of the attributes the workload reads, above "
                                 f"MAXIMUM_ENTROPY_MAX_CELLS={MAXIMUM_ENTROPY_MAX_CELLS:,}; use 'regularized', "
                                 "'tables' or 'auto'")


def final_joint(estimator: str, sizes: tuple[int, ...], universe: int, measurements: list[Measurement],
                rng: np.random.Generator) -> tuple[JointEstimate | None, str | None]:
    """The joint the answers are read from (None for the tables) and the reason for a fallback, if any."""
    if estimator == "regularized" or (estimator == "auto" and _auto_regularized(sizes, universe, measurements)):
        return _regularized(estimator, sizes, universe, measurements, rng)
    if estimator == "joint":
        return _joint(sizes, measurements)
    return None, None


def summary(requested: str, joint: JointEstimate | None, fallback: str | None) -> dict[str, Any]:
    """The release's ``estimate``: the estimator asked for and the one used, with its solvers' statistics."""
    result: dict[str, Any] = {"requested": requested, "estimator": "tables"}
    if joint is not None and joint.projection is None:
        assert isinstance(joint.fit, NoisyMarginalsResult)
        result = {"requested": requested, "estimator": "regularized", "fit": joint.fit.stats.summary(),
                  "risk": joint.fit.risk, "iterations_run": joint.fit.iterations_run,
                  "model": "dense" if joint.fit.tree is None else "junction_tree",
                  "cells": joint.fit.cells}
    elif joint is not None:
        assert joint.projection is not None
        result = {"requested": requested, "estimator": "joint",
                  "projection": joint.projection.stats.summary(), "fit": joint.fit.stats.summary()}
    if fallback is not None:
        result["fallback"] = fallback
    return result


def _fallback(reason: str) -> tuple[None, str]:
    """Warn that the answers are read from the tables instead, for ``reason``."""
    warnings.warn(f"{reason}; the answers are read from the local projection's tables instead "
                  "(estimator='tables')", JointEstimateWarning, stacklevel=_caller_level())
    return None, reason


def _joint(sizes: tuple[int, ...], measurements: list[Measurement]) -> tuple[JointEstimate | None, str | None]:
    """The certified joint, warning when one of its solvers stopped short of its tolerance."""
    try:
        joint = estimate_joint(sizes, measurements)
    except ProjectionError as error:
        return _fallback(f"the joint estimate's projection failed ({error})")
    assert joint.projection is not None
    short = [f"its {name} stopped with status {stats.status.value}, gap {stats.gap:.3g} against its tolerance "
             f"{stats.tolerance:.3g}" for name, stats in (("projection", joint.projection.stats),
                                                         ("fit", joint.fit.stats)) if not stats.tolerance_met]
    if short:
        warnings.warn(f"the joint estimate is not certified: {'; '.join(short)}. The answers are read from it "
                      "(run.joint and the release's summary say so); estimator='tables' reads the local "
                      "projection's tables instead", JointEstimateWarning, stacklevel=_caller_level())
    return joint, None


def _auto_regularized(sizes: tuple[int, ...], universe: int, measurements: list[Measurement]) -> bool:
    """Whether ``estimator="auto"`` takes the regularized joint, by the measurements' shapes (public)."""
    if sum(m.values.size for m in measurements) > JOINT_AUTO_MAX_MEASURED:
        return False
    if universe <= JOINT_AUTO_MAX_CELLS:
        return True
    # The tree the fit would build: over the measured attributes, renumbered.
    _, own_sizes, on_axes = _on_own_axes(sizes, measurements, dense=False)
    return JunctionTree(own_sizes, sorted({m.attributes for m in on_axes})).cells <= TREE_AUTO_MAX_CELLS


def _regularized(estimator: str, sizes: tuple[int, ...], universe: int, measurements: list[Measurement],
                 rng: np.random.Generator) -> tuple[JointEstimate | None, str | None]:
    """The regularized joint, warning when its path reached the iteration limit with its risk still falling."""
    model = "dense" if universe <= (JOINT_AUTO_MAX_CELLS if estimator == "auto"
                                    else MAXIMUM_ENTROPY_MAX_CELLS) else "junction_tree"
    try:
        joint = estimate_regularized_joint(sizes, measurements, rng=rng, model=model)
    except TreeTooLargeError as error:
        return _fallback(f"the regularized joint cannot be held ({error})")
    if joint.fit.stats.status is not Status.OPTIMAL:
        assert isinstance(joint.fit, NoisyMarginalsResult)
        warnings.warn(f"the regularized joint estimate stopped at its iteration limit "
                      f"({joint.fit.iterations_run:,}) with its estimated risk still falling: the answers are "
                      "read from its least-risk iterate (run.joint and the release's summary say so); "
                      "estimator='tables' reads the local projection's tables instead",
                      JointEstimateWarning, stacklevel=_caller_level())
    return joint, None
