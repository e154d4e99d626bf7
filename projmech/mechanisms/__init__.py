"""Mechanisms: the Gaussian, Laplace, projection and factorization mechanisms with their release
and confidence intervals, multiplicative weights (MWEM), online PMW and the sparse vector.

Its modules, the public ones first (their ``__all__`` is exported here):

- ``adaptive``: Select, measure, project: an adaptive mechanism for marginal workloads.
- ``additive``: Mechanisms: a calibrated measurement of counts, divided by a public size, and
  optionally a body to project onto.
- ``budget``: Whether a budget leaves the measured counts any signal: the check the mechanisms
  make before they spend.
- ``intervals``: Per-query confidence intervals for released answers.
- ``multiplicative_weights``: Multiplicative weights: the MW update and the offline private MW
  mechanism (MWEM).
- ``online_pmw``: Interactive private multiplicative weights: the Hardt–Rothblum mechanism.
- ``selection``: Private selection: the exponential mechanism, shared by the adaptive mechanisms.
- ``sparse_vector``: The sparse vector technique: the threshold mechanism ``Thr_t`` and its k-fold
  product ``Thr_t^k``.
"""

from __future__ import annotations

from .adaptive import (
                       ADAPTIVE_MAX_CELLS,
                       AdaptiveProjectionMechanism,
                       AdaptiveRound,
                       AdaptiveRun,
                       DecomposableModel,
                       Measurement,
                       Synthesis,
                       estimate_tables,
                       measured_workload,
                       synthesize,
                       table_estimate,
)
from .additive import (
                       CountingMechanism,
                       FactorizationMechanism,
                       GaussianMechanism,
                       LaplaceMechanism,
                       Mechanism,
                       ProjectionMechanism,
                       Release,
)
from .budget import BudgetWarning
from .intervals import ConfidenceIntervals, confidence_intervals
from .multiplicative_weights import (
                       MW_MAX_ALPHA,
                       MW_MAX_UNIVERSE,
                       OFFLINE_PMW_MAX_ROUNDS,
                       OFFLINE_PMW_MAX_UPDATES,
                       OfflinePMW,
                       PMWRun,
                       RoundBudget,
                       multiplicative_weights_update,
                       mw_update_bound,
                       offline_pmw_error_bound,
                       offline_pmw_min_n,
)
from .online_pmw import ONLINE_MAX_ALPHA, OnlineAccuracy, OnlinePMW, online_pmw_accuracy
from .selection import exponential_mechanism, exponential_mechanism_rho
from .sparse_vector import BOTTOM, Bottom, MechanismHalted, Threshold, ThresholdK

__all__ = ["Release", "Mechanism", "CountingMechanism", "GaussianMechanism", "LaplaceMechanism",
           "ProjectionMechanism", "FactorizationMechanism", "ConfidenceIntervals", "confidence_intervals",
           "MW_MAX_ALPHA", "MW_MAX_UNIVERSE", "OFFLINE_PMW_MAX_ROUNDS", "OFFLINE_PMW_MAX_UPDATES", "OfflinePMW",
           "PMWRun", "RoundBudget", "multiplicative_weights_update", "mw_update_bound", "offline_pmw_error_bound",
           "offline_pmw_min_n", "OnlinePMW", "OnlineAccuracy", "online_pmw_accuracy", "ONLINE_MAX_ALPHA", "BOTTOM",
           "Bottom", "MechanismHalted", "Threshold", "ThresholdK", "ADAPTIVE_MAX_CELLS", "AdaptiveProjectionMechanism",
           "AdaptiveRound", "AdaptiveRun", "DecomposableModel", "Measurement", "Synthesis", "estimate_tables",
           "measured_workload", "synthesize",
           "table_estimate", "exponential_mechanism",
           "exponential_mechanism_rho", "BudgetWarning"]
