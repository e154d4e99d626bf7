"""Mechanisms: Gaussian, Laplace, projection, factorization, MWEM, online PMW, sparse vector, adaptive;
their releases, confidence intervals, budget check and the exponential mechanism."""

from __future__ import annotations

from . import adaptive, multiplicative_weights, online_pmw
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
from ._release import ConfidenceIntervals, confidence_intervals
from ._selection import exponential_mechanism, exponential_mechanism_rho
from ._sparse_vector import BOTTOM, Bottom, MechanismHalted, Threshold, ThresholdK

# The adaptive mechanism, MWEM and online PMW, documented on their own pages.
from .adaptive import AdaptiveProjectionMechanism, synthesize
from .multiplicative_weights import OfflinePMW
from .online_pmw import OnlinePMW

__all__ = ["Release", "Mechanism", "CountingMechanism", "GaussianMechanism", "LaplaceMechanism",
           "ProjectionMechanism", "FactorizationMechanism", "ConfidenceIntervals", "confidence_intervals",
           "BudgetWarning", "BOTTOM", "Bottom", "MechanismHalted", "Threshold", "ThresholdK",
           "exponential_mechanism", "exponential_mechanism_rho"]
