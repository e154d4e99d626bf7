"""projmech: differentially private release of linear queries, built on convex optimization.

``import projmech as pm`` gives the whole public API.
"""

from . import bounds, datasets, geometry
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
from .privacy import ApproxDP, Neighbouring, PureDP, ZCDP, gaussian_delta, gaussian_sigma, laplace_scale
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
    "ApproxDP",
    "Dataset",
    "Domain",
    "Factorization",
    "FactorizationError",
    "FactorizationMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "Neighbouring",
    "ProjectionError",
    "ProjectionMechanism",
    "ProjectionResult",
    "PureDP",
    "RelaxationError",
    "RelaxationResult",
    "RelaxationSupport",
    "Release",
    "TrialSummary",
    "WidthComparison",
    "WidthEstimate",
    "Workload",
    "ZCDP",
    "all_range",
    "approximate_factorization_norm",
    "compare_widths",
    "bounds",
    "datasets",
    "evaluate",
    "factorization_lower_bound",
    "factorization_norm",
    "frank_wolfe_gap",
    "from_predicates",
    "gaussian_delta",
    "gaussian_expected_rmse",
    "gaussian_rounding",
    "gaussian_sigma",
    "gaussian_norm_mean",
    "gaussian_width",
    "gaussian_width_bound",
    "gaussian_widths",
    "geometry",
    "hierarchical_strategy",
    "histogram",
    "identity",
    "identity_strategy",
    "laplace_scale",
    "marginals",
    "max_error",
    "mean_confidence_interval",
    "prefix",
    "project_to_hull",
    "project_to_relaxation",
    "random_queries",
    "relaxation_support",
    "repeated",
    "rmse",
    "stack",
    "mean_width",
    "mean_widths",
    "support_function",
    "synthetic_data",
    "total_strategy",
]
