"""Mechanisms: Gaussian, Laplace, projection, factorization, MWEM, online PMW, sparse vector, adaptive.

Modules: ``additive`` (the four counting mechanisms) on ``counting`` (their protocol and base)
and ``release`` (what they publish; ``intervals`` its confidence intervals); ``budget`` (the
check before spending); ``multiplicative_weights`` and ``mwem_bounds`` (MWEM), ``online_pmw``
and ``sparse_vector`` (interactive); ``selection`` (the exponential mechanism); ``adaptive``.
"""

from __future__ import annotations

from ._additive import (
                       CountingMechanism,
                       FactorizationMechanism,
                       GaussianMechanism,
                       LaplaceMechanism,
                       Mechanism,
                       ProjectionMechanism,
                       Release,
)
from ._budget import BudgetWarning
from ._intervals import ConfidenceIntervals, confidence_intervals
from ._selection import exponential_mechanism, exponential_mechanism_rho
from ._sparse_vector import BOTTOM, Bottom, MechanismHalted, Threshold, ThresholdK
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
