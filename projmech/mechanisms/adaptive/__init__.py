"""Select, measure, project: an adaptive mechanism for marginal workloads, as MWEM :cite:p:`HLM12`
and AIM :cite:p:`MMSM22`, its privacy zCDP composed over the rounds (:doc:`/guide/adaptive`).
"""

from __future__ import annotations

from ._estimation import (
    DecomposableModel,
    JointEstimate,
    Measurement,
    estimate_joint,
    estimate_regularized_joint,
    estimate_tables,
    measured_workload,
    table_estimate,
    table_estimates,
)
from ._final import ESTIMATORS, JOINT_AUTO_MAX_CELLS, JOINT_AUTO_MAX_MEASURED, TREE_AUTO_MAX_CELLS, JointEstimateWarning
from ._mechanism import ADAPTIVE_MAX_CELLS, AdaptiveProjectionMechanism
from ._run import AdaptiveRound, AdaptiveRun, Synthesis
from ._synthesis import synthesize

__all__ = ["AdaptiveProjectionMechanism", "AdaptiveRound", "AdaptiveRun", "DecomposableModel", "JointEstimate",
           "Synthesis",
           "estimate_joint", "estimate_regularized_joint", "estimate_tables", "measured_workload", "synthesize",
           "table_estimate", "table_estimates",
           "ADAPTIVE_MAX_CELLS", "ESTIMATORS", "JOINT_AUTO_MAX_CELLS", "JOINT_AUTO_MAX_MEASURED", "TREE_AUTO_MAX_CELLS",
           "JointEstimateWarning"]
