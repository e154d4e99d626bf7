"""projmech: differentially private release of linear queries, built on convex optimization.

``import projmech as pm`` gives the whole public API.
"""

from . import audit, bounds, datasets, geometry, self_audit
from .bodies import (
    ProjectionError,
    ProjectionResult,
    RelaxationError,
    RelaxationResult,
    RelaxationSupport,
    frank_wolfe_gap,
    gaussian_rounding,
    project_to_hull,
    project_to_relaxation,
    relaxation_support,
    synthetic_data,
)
from .data import Dataset, histogram
from .domain import Domain
from .factorization import Factorization, hierarchical_strategy, identity_strategy, total_strategy
from .optimal_factorization import (
    FactorizationError,
    approximate_factorization_norm,
    factorization_lower_bound,
    factorization_norm,
)
from .geometry import (
    WidthComparison,
    WidthEstimate,
    compare_widths,
    gaussian_norm_mean,
    gaussian_width,
    gaussian_width_bound,
    gaussian_widths,
    mean_width,
    mean_widths,
    support_function,
)
from .evaluation import TrialSummary, evaluate, gaussian_expected_rmse, max_error, mean_confidence_interval, rmse
from .mechanisms import FactorizationMechanism, GaussianMechanism, LaplaceMechanism, ProjectionMechanism, Release
from .multiplicative_weights import (
    OfflinePMW,
    multiplicative_weights_update,
    mw_update_bound,
    offline_pmw_error_bound,
    offline_pmw_min_n,
)
from .online_pmw import OnlinePMW, online_pmw_accuracy
from .sparse_vector import BOTTOM, MechanismHalted, Threshold, ThresholdK
from .noise import Noise
from .privacy import (
    ApproxDP,
    Neighbouring,
    PureDP,
    SizePolicy,
    ZCDP,
    gaussian_delta,
    gaussian_sigma,
    laplace_scale,
    zcdp_delta,
    zcdp_for_approx_dp,
)
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

__version__ = "0.1.0"

__all__ = [
    "all_range",
    "ApproxDP",
    "approximate_factorization_norm",
    "audit",
    "BOTTOM",
    "bounds",
    "compare_widths",
    "Dataset",
    "datasets",
    "Domain",
    "evaluate",
    "Factorization",
    "factorization_lower_bound",
    "factorization_norm",
    "FactorizationError",
    "FactorizationMechanism",
    "frank_wolfe_gap",
    "from_predicates",
    "gaussian_delta",
    "gaussian_expected_rmse",
    "gaussian_norm_mean",
    "gaussian_rounding",
    "gaussian_sigma",
    "gaussian_width",
    "gaussian_width_bound",
    "gaussian_widths",
    "GaussianMechanism",
    "geometry",
    "hierarchical_strategy",
    "histogram",
    "identity",
    "identity_strategy",
    "laplace_scale",
    "LaplaceMechanism",
    "marginals",
    "max_error",
    "mean_confidence_interval",
    "mean_width",
    "mean_widths",
    "MechanismHalted",
    "multiplicative_weights_update",
    "mw_update_bound",
    "Neighbouring",
    "Noise",
    "offline_pmw_error_bound",
    "offline_pmw_min_n",
    "OfflinePMW",
    "online_pmw_accuracy",
    "OnlinePMW",
    "prefix",
    "project_to_hull",
    "project_to_relaxation",
    "ProjectionError",
    "ProjectionMechanism",
    "ProjectionResult",
    "PureDP",
    "random_queries",
    "relaxation_support",
    "RelaxationError",
    "RelaxationResult",
    "RelaxationSupport",
    "Release",
    "repeated",
    "rmse",
    "self_audit",
    "SizePolicy",
    "stack",
    "support_function",
    "synthetic_data",
    "Threshold",
    "ThresholdK",
    "total_strategy",
    "TrialSummary",
    "WidthComparison",
    "WidthEstimate",
    "Workload",
    "ZCDP",
    "zcdp_delta",
    "zcdp_for_approx_dp",
]
