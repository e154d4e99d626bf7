"""projmech: differentially private release of linear queries, built on convex optimization.

``import projmech as pm`` gives the public API: data and workloads, privacy definitions, the
mechanisms, the projections and factorizations with their solver statistics. Helpers of one
topic are reached through their module: ``pm.bounds`` (the error bounds and the data sizes they need),
``pm.geometry`` (support functions and widths), ``pm.privacy`` (calibration formulas),
``pm.multiplicative_weights`` and ``pm.online_pmw`` (their update and accuracy bounds),
``pm.evaluation`` (error measures), ``pm.bodies`` (the bodies and rounding), ``pm.audit``.

Every name is imported on first use (PEP 562), so ``import projmech`` loads none of numpy's
heavier neighbours (SciPy's statistics, pandas, CVXPY, OpenDP) until something needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Each public name and the module that defines it.
_NAMES = {
    "data": ("Dataset", "histogram"),
    "domain": ("Domain",),
    "workloads": ("Workload", "all_range", "from_predicates", "identity", "marginals", "prefix",
                  "random_queries", "repeated", "stack"),
    "privacy": ("ApproxDP", "LargeDeltaWarning", "Neighbouring", "PureDP", "SizePolicy", "ZCDP"),
    "noise": ("Noise",),
    "mechanisms": ("FactorizationMechanism", "GaussianMechanism", "LaplaceMechanism", "ProjectionMechanism",
                   "Release"),
    "multiplicative_weights": ("OfflinePMW",),
    "online_pmw": ("OnlinePMW",),
    "sparse_vector": ("BOTTOM", "MechanismHalted", "Threshold", "ThresholdK"),
    "bodies": ("NegativeCellsWarning", "ProjectionError", "ProjectionResult", "RelaxationError", "RelaxationResult",
               "project_to_hull", "project_to_relaxation", "synthetic_data"),
    "factorization": ("Factorization", "hierarchical_strategy", "identity_strategy", "square_root_strategy",
                      "total_strategy"),
    "optimal_factorization": ("FactorizationError", "approximate_factorization_norm", "factorization_lower_bound",
                              "factorization_norm"),
    "solve": ("ProgressBar", "SolveError", "SolveStats", "Status"),
    "evaluation": ("evaluate", "max_error", "rmse"),
}
_MODULE_OF = {name: module for module, names in _NAMES.items() for name in names}

#: Submodules reachable as attributes (``pm.bounds``), imported on first use too.
_SUBMODULES = ("audit", "bodies", "bounds", "datasets", "evaluation", "geometry", "multiplicative_weights",
               "online_pmw", "optimal_factorization", "privacy", "self_audit", "solve", "workloads")

__all__ = sorted([*_MODULE_OF, *_SUBMODULES], key=str.lower)


def __getattr__(name: str) -> Any:
    if name in _MODULE_OF:
        value = getattr(importlib.import_module(f".{_MODULE_OF[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'projmech' has no attribute {name!r}")
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from . import (audit, bodies, bounds, datasets, evaluation, geometry, multiplicative_weights, online_pmw,
                   optimal_factorization, privacy, self_audit, solve, workloads)
    from .bodies import (NegativeCellsWarning, ProjectionError, ProjectionResult, RelaxationError, RelaxationResult,
                         project_to_hull, project_to_relaxation, synthetic_data)
    from .data import Dataset, histogram
    from .domain import Domain
    from .evaluation import evaluate, max_error, rmse
    from .factorization import (Factorization, hierarchical_strategy, identity_strategy, square_root_strategy,
                                total_strategy)
    from .mechanisms import FactorizationMechanism, GaussianMechanism, LaplaceMechanism, ProjectionMechanism, Release
    from .multiplicative_weights import OfflinePMW
    from .noise import Noise
    from .online_pmw import OnlinePMW
    from .optimal_factorization import (FactorizationError, approximate_factorization_norm,
                                        factorization_lower_bound, factorization_norm)
    from .privacy import ZCDP, ApproxDP, LargeDeltaWarning, Neighbouring, PureDP, SizePolicy
    from .solve import ProgressBar, SolveError, SolveStats, Status
    from .sparse_vector import BOTTOM, MechanismHalted, Threshold, ThresholdK
    from .workloads import (Workload, all_range, from_predicates, identity, marginals, prefix, random_queries,
                            repeated, stack)
