"""projmech: differentially private release of linear queries, built on convex optimization.

``import projmech as pm`` gives the public API: data and workloads, privacy definitions, the
mechanisms, the projections and factorizations with their solver statistics. Helpers of one topic
are reached through their module: ``pm.bounds`` (the error bounds and the data sizes they need),
``pm.geometry`` (support functions and widths), ``pm.privacy`` (calibration formulas),
``pm.adaptive`` (the adaptive mechanism's measurements and estimator), ``pm.multiplicative_weights``
and ``pm.online_pmw`` (their update and accuracy bounds), ``pm.evaluation`` (error measures),
``pm.bodies`` (the bodies and rounding), ``pm.audit``, ``pm.errors`` (the errors that name the
argument at fault as data).
The package has one folder per concept (``data``, ``workloads``, ``privacy``, ``analysis``,
``bodies``, ``factorization``, ``mechanisms``, ``audit``, ``cli``), each exporting its contract
from its ``__init__``.

Every name is imported on first use (PEP 562), so ``import projmech`` loads none of numpy's
heavier neighbours (SciPy's statistics, pandas, CVXPY, OpenDP) until something needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Each public name and the package that exports it.
_NAMES = {
    "data": ("Dataset", "Domain", "histogram"),
    "workloads": ("Workload", "all_range", "from_predicates", "identity", "marginals", "prefix",
                  "random_queries", "repeated", "stack"),
    "privacy": ("ApproxDP", "LargeDeltaWarning", "Neighbouring", "Noise", "PureDP", "SizePolicy", "ZCDP"),
    "mechanisms": ("AdaptiveProjectionMechanism", "BOTTOM", "BudgetWarning", "FactorizationMechanism",
                   "GaussianMechanism",
                   "LaplaceMechanism", "MechanismHalted", "OfflinePMW", "OnlinePMW", "ProjectionMechanism", "Release",
                   "Threshold", "ThresholdK", "synthesize"),
    "bodies": ("NegativeCellsWarning", "ProjectionError", "ProjectionResult", "RelaxationError", "RelaxationResult",
               "project_to_hull", "project_to_relaxation"),
    "synthetic": ("synthetic_data",),
    "factorization": ("Factorization", "FactorizationError", "approximate_factorization_norm",
                      "factorization_lower_bound", "factorization_norm", "hierarchical_strategy", "identity_strategy",
                      "square_root_strategy", "total_strategy"),
    "solve": ("ProgressBar", "SolveError", "SolveStats", "Status"),
    "analysis": ("evaluate", "max_error", "rmse"),
}
_MODULE_OF = {name: module for module, names in _NAMES.items() for name in names}

#: Packages and topic modules reachable as attributes (``pm.bounds``), imported on first use too:
#: the attribute and the module it names.
_SUBMODULES = {
    "analysis": "analysis", "audit": "audit", "bodies": "bodies", "data": "data", "datasets": "datasets",
    "errors": "errors",
    "factorization": "factorization", "mechanisms": "mechanisms", "privacy": "privacy", "solve": "solve",
    "synthetic": "synthetic", "tables": "tables", "workloads": "workloads",
    "bounds": "analysis.bounds", "evaluation": "analysis.evaluation", "geometry": "analysis.geometry",
    "adaptive": "mechanisms.adaptive", "multiplicative_weights": "mechanisms.multiplicative_weights",
    "online_pmw": "mechanisms.online_pmw",
    "self_audit": "audit.self_audit",
}

__all__ = sorted([*_MODULE_OF, *_SUBMODULES], key=str.lower)


def __getattr__(name: str) -> Any:
    if name in _MODULE_OF:
        value = getattr(importlib.import_module(f".{_MODULE_OF[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{_SUBMODULES[name]}", __name__)
    else:
        raise AttributeError(f"module 'projmech' has no attribute {name!r}")
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from . import (
        analysis,
        audit,
        bodies,
        data,
        datasets,
        errors,
        factorization,
        mechanisms,
        privacy,
        solve,
        synthetic,
        tables,
        workloads,
    )
    from .analysis import bounds, evaluate, evaluation, geometry, max_error, rmse
    from .audit import self_audit
    from .bodies import (
        NegativeCellsWarning,
        ProjectionError,
        ProjectionResult,
        RelaxationError,
        RelaxationResult,
        project_to_hull,
        project_to_relaxation,
    )
    from .data import Dataset, Domain, histogram
    from .factorization import (
        Factorization,
        FactorizationError,
        approximate_factorization_norm,
        factorization_lower_bound,
        factorization_norm,
        hierarchical_strategy,
        identity_strategy,
        square_root_strategy,
        total_strategy,
    )
    from .mechanisms import (
        BOTTOM,
        AdaptiveProjectionMechanism,
        BudgetWarning,
        FactorizationMechanism,
        GaussianMechanism,
        LaplaceMechanism,
        MechanismHalted,
        OfflinePMW,
        OnlinePMW,
        ProjectionMechanism,
        Release,
        Threshold,
        ThresholdK,
        adaptive,
        multiplicative_weights,
        online_pmw,
        synthesize,
    )
    from .privacy import ZCDP, ApproxDP, LargeDeltaWarning, Neighbouring, Noise, PureDP, SizePolicy
    from .solve import ProgressBar, SolveError, SolveStats, Status
    from .synthetic import synthetic_data
    from .workloads import (
        Workload,
        all_range,
        from_predicates,
        identity,
        marginals,
        prefix,
        random_queries,
        repeated,
        stack,
    )
