"""Mechanisms: calibrate noise to the workload's sensitivity, add it, optionally project.

Every mechanism is thin: sensitivity from :class:`~projmech.workloads.Workload`, noise scale from
:mod:`projmech.privacy`, projection from :mod:`projmech.bodies`. A :class:`Release` holds what may
be published: never the true answers nor the histogram.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .bodies.hull import ProjectionResult, project_to_hull
from .data import Dataset, histogram
from .evaluation import gaussian_expected_rmse
from .factorization import Factorization
from .optimal_factorization import factorization_norm
from .privacy import ApproxDP, Neighbouring, Privacy, PureDP, ZCDP, gaussian_sigma, laplace_scale
from .workloads import Workload

__all__ = [
    "Release",
    "GaussianMechanism",
    "LaplaceMechanism",
    "ProjectionMechanism",
    "FactorizationMechanism",
    "as_generator",
]


@dataclass(frozen=True, eq=False)
class Release:
    """Privately released answers and everything needed to interpret them.

    Attributes
    ----------
    answers : ndarray, shape (k,)
        The released answers, as fractions of ``n``.
    noisy_answers : ndarray, shape (k,)
        The noisy answers before any post-processing (equal to ``answers`` without projection).
    labels : tuple of str
        One label per query.
    mechanism : str
    privacy : ZCDP, ApproxDP or PureDP
        The guarantee the release satisfies.
    neighbouring : Neighbouring
        The neighbouring relation the guarantee is stated for.
    n : int
        The (public) data set size the answers are normalized by.
    noise : {"gaussian", "laplace"}
    scale : float
        Gaussian standard deviation sigma, or Laplace scale b, per measured coordinate (the
        answers themselves, or the strategy's measurements ``M h`` for the factorization
        mechanism, whose answers carry the correlated noise ``R Z``).
    sensitivity : float
        The l2 (Gaussian) or l1 (Laplace) sensitivity the scale is calibrated to.
    projection : ProjectionResult or None
        Solver statistics and the witness distribution, for projection mechanisms.
    factorization : Factorization or None
        The strategy and reconstruction, for the factorization mechanism.
    """

    answers: np.ndarray
    noisy_answers: np.ndarray
    labels: tuple[str, ...]
    mechanism: str
    privacy: Privacy
    neighbouring: Neighbouring
    n: int
    noise: str
    scale: float
    sensitivity: float
    projection: ProjectionResult | None = None
    factorization: Factorization | None = None

    @property
    def sigma(self) -> float:
        """Standard deviation of the noise on each measured coordinate (see ``scale``)."""
        return self.scale if self.noise == "gaussian" else math.sqrt(2.0) * self.scale

    @property
    def witness(self) -> np.ndarray | None:
        """Distribution ``w`` over the universe with ``F @ w == answers`` (projection only)."""
        return None if self.projection is None else self.projection.weights

    @property
    def counts(self) -> np.ndarray:
        """The released answers as counts, ``n * answers``."""
        return self.n * self.answers

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"query": list(self.labels), "answer": self.answers, "noisy_answer": self.noisy_answers})

    def summary(self) -> dict[str, Any]:
        """JSON-serializable description: guarantee, relation, noise, solver statistics."""
        summary: dict[str, Any] = {
            "mechanism": self.mechanism,
            "guarantee": str(self.privacy),
            "privacy": {"type": type(self.privacy).__name__, **vars(self.privacy)},
            "neighbouring": self.neighbouring.value,
            "n": self.n,
            "num_queries": len(self.labels),
            "noise": self.noise,
            "scale": self.scale,
            "sigma": self.sigma,
            "sensitivity": self.sensitivity,
        }
        if self.projection is not None:
            summary["solver"] = self.projection.summary()
        if self.factorization is not None:
            summary["factorization"] = self.factorization.summary()
        return summary

    def to_json(self) -> str:
        return json.dumps(self.summary(), indent=2)


def as_generator(rng: np.random.Generator | int | None) -> np.random.Generator:
    """A ``numpy.random.Generator``: the given one, a new one seeded with an int, or fresh OS
    entropy for ``None``. The legacy global state and ``RandomState`` are refused."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, (int, np.integer)) and not isinstance(rng, bool)):
        return np.random.default_rng(rng)
    raise TypeError(f"rng: expected a numpy.random.Generator, an int seed or None, got {type(rng).__name__}")


class _AdditiveNoiseMechanism:
    """Shared part: input validation, sensitivity and the release of ``F h + noise``."""

    mechanism_name = "additive"
    noise_kind = "gaussian"

    def __init__(self, workload: Workload, privacy: Privacy, neighbouring: Neighbouring | str) -> None:
        if not isinstance(workload, Workload):
            raise TypeError(f"workload: expected a Workload, got {type(workload).__name__}")
        if not isinstance(privacy, (ZCDP, ApproxDP, PureDP)):
            raise TypeError(f"privacy: expected ZCDP, ApproxDP or PureDP, got {type(privacy).__name__}")
        self.workload = workload
        self.privacy = privacy
        self.neighbouring = Neighbouring.parse(neighbouring)

    def sensitivity(self, n: int) -> float:
        raise NotImplementedError

    def noise_scale(self, n: int) -> float:
        """Per-coordinate noise scale for a data set of size ``n``."""
        raise NotImplementedError

    def _sample(self, scale: float, size: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def _histogram(self, data: Any, n: int | None) -> tuple[np.ndarray, int]:
        m = self.workload.universe_size
        if isinstance(data, Dataset):
            if self.workload.domain is not None and data.domain != self.workload.domain:
                raise ValueError(
                    f"data: its domain {data.domain!r} differs from the workload's {self.workload.domain!r}"
                )
            if data.domain.size != m:
                raise ValueError(f"data: its universe has {data.domain.size} elements, the workload {m}")
            if n is not None and n != data.n:
                raise ValueError(f"n: given {n} but the data set has {data.n} rows")
            return histogram(data), data.n
        if n is None:
            raise ValueError("n: required when a histogram is passed (it cannot be recovered from h)")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n: the data set size must be a positive integer, got {n!r}")
        h = np.asarray(data.toarray() if sp.issparse(data) else data, dtype=float).ravel()
        if h.shape != (m,):
            raise ValueError(f"histogram: expected {m} entries to match the workload, got {h.size}")
        if not np.all(np.isfinite(h)):
            raise ValueError("histogram: contains NaN or infinite entries")
        if h.min() < 0:
            raise ValueError("histogram: has negative entries")
        if abs(h.sum() - 1.0) > 1e-9:
            raise ValueError(f"histogram: must be normalized to sum 1 (got {h.sum():.6g}); pass histogram(data)")
        return h, int(n)

    def _noisy(self, data: Any, n: int | None, rng: Any) -> tuple[np.ndarray, int, float]:
        h, n = self._histogram(data, n)
        generator = as_generator(rng)
        scale = self.noise_scale(n)
        truth = self.workload.answer(h)
        return truth + self._sample(scale, truth.size, generator), n, scale

    def _release(self, answers: np.ndarray, noisy: np.ndarray, n: int, scale: float,
                 projection: ProjectionResult | None = None, factorization: Factorization | None = None) -> Release:
        return Release(
            answers=answers,
            noisy_answers=noisy,
            labels=self.workload.labels,
            mechanism=self.mechanism_name,
            privacy=self.privacy,
            neighbouring=self.neighbouring,
            n=n,
            noise=self.noise_kind,
            scale=scale,
            sensitivity=self.sensitivity(n),
            projection=projection,
            factorization=factorization,
        )

    def release(self, data_or_histogram: Any, n: int | None = None,
                rng: np.random.Generator | int | None = None) -> Release:
        """Release the workload's answers on a :class:`Dataset` or a normalized histogram.

        Parameters
        ----------
        data_or_histogram : Dataset or array_like of shape (m,)
            A histogram must be normalized (non-negative, sums to 1) and needs ``n``.
        n : int, optional
            The data set size; taken from a Dataset.
        rng : numpy.random.Generator, int or None
            Source of all randomness. ``None`` draws fresh OS entropy (never global state).
        """
        noisy, n, scale = self._noisy(data_or_histogram, n, rng)
        return self._release(noisy, noisy, n, scale)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.workload!r}, {self.privacy}, {self.neighbouring.value})"


class GaussianMechanism(_AdditiveNoiseMechanism):
    """The Gaussian mechanism: ``F h + N(0, sigma^2 I)`` (seed 001, eq. 11).

    Guarantee: the given ``ZCDP(rho)`` or ``ApproxDP(epsilon, delta)`` with respect to the given
    neighbouring relation (default replace-one). ``sigma`` is calibrated to the l2 sensitivity
    ``(2/n) ||F||_{1->2}`` (replace-one; ``(1/n) ||F||_{1->2}`` for add/remove; seed 001, eq. 16)
    by :func:`~projmech.privacy.gaussian_sigma` — the exact analytic calibration for (epsilon,
    delta)-DP (Balle & Wang 2018, Theorem 8), ``Delta/sqrt(2 rho)`` for zCDP.

    Parameters
    ----------
    workload : Workload
    privacy : ZCDP or ApproxDP
    neighbouring : {"replace-one", "add-remove"}
    calibration : {"analytic", "classical"}
        ``"classical"`` uses the loose ``sqrt(2 ln(1.25/delta))/epsilon`` bound (epsilon < 1).
    """

    mechanism_name = "gaussian"
    noise_kind = "gaussian"

    def __init__(self, workload: Workload, privacy: ZCDP | ApproxDP,
                 neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
                 calibration: Literal["analytic", "classical"] = "analytic") -> None:
        super().__init__(workload, privacy, neighbouring)
        if isinstance(privacy, PureDP):
            raise TypeError("privacy: the Gaussian mechanism needs ZCDP or ApproxDP; use LaplaceMechanism for PureDP")
        if calibration not in ("analytic", "classical"):
            raise ValueError(f"calibration: expected 'analytic' or 'classical', got {calibration!r}")
        if calibration == "classical" and isinstance(privacy, ApproxDP) and privacy.epsilon >= 1:
            raise ValueError(f"calibration='classical' is valid only for epsilon < 1, got epsilon={privacy.epsilon}")
        self.calibration = calibration
        self._column_norm = workload.sensitivity()

    def sensitivity(self, n: int) -> float:
        """l2 sensitivity of the normalized answers for data size ``n``."""
        return self.neighbouring.sensitivity(self._column_norm, n)

    def noise_scale(self, n: int) -> float:
        return gaussian_sigma(self.sensitivity(n), self.privacy, method=self.calibration)

    def expected_rmse(self, n: int) -> float:
        """Exact ``E[(1/sqrt k) ||Z||_2]`` of the released answers (see
        :func:`projmech.evaluation.gaussian_expected_rmse`)."""
        return gaussian_expected_rmse(self.noise_scale(n), self.workload.num_queries)

    def _sample(self, scale: float, size: int, rng: np.random.Generator) -> np.ndarray:
        return rng.normal(0.0, scale, size=size)


class LaplaceMechanism(_AdditiveNoiseMechanism):
    """The Laplace mechanism: ``F h + Lap(b)^k`` with ``b = Delta_1 / epsilon``.

    Guarantee: pure ``PureDP(epsilon)`` w.r.t. the given neighbouring relation, with the l1
    sensitivity ``(2/n) ||F||_{1->1}`` (replace-one) or ``(1/n) ||F||_{1->1}`` (add/remove)
    (Dwork, McSherry, Nissim & Smith 2006).
    """

    mechanism_name = "laplace"
    noise_kind = "laplace"

    def __init__(self, workload: Workload, privacy: PureDP,
                 neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE) -> None:
        super().__init__(workload, privacy, neighbouring)
        if not isinstance(privacy, PureDP):
            raise TypeError(f"privacy: the Laplace mechanism needs PureDP, got {type(privacy).__name__}")
        self._column_norm = workload.column_norm(1)

    def sensitivity(self, n: int) -> float:
        """l1 sensitivity of the normalized answers for data size ``n``."""
        return self.neighbouring.sensitivity(self._column_norm, n)

    def noise_scale(self, n: int) -> float:
        return laplace_scale(self.sensitivity(n), self.privacy)

    def _sample(self, scale: float, size: int, rng: np.random.Generator) -> np.ndarray:
        return rng.laplace(0.0, scale, size=size)


class ProjectionMechanism(GaussianMechanism):
    """The projection mechanism (seed 000, Algorithm 1; Nikolov, Talwar & Zhang 2013).

    Releases ``Pi_K(F h + Z)``: Gaussian noise calibrated exactly as in
    :class:`GaussianMechanism`, then the Euclidean projection onto ``K_Q = conv(columns of F)``
    by :func:`~projmech.bodies.hull.project_to_hull`. The projection is post-processing, so the
    guarantee is the Gaussian mechanism's (seed 000, Theorem 2), and the error never exceeds the
    Gaussian mechanism's on the same noise (seed 001, eq. 43). Error bound: seed 000, Theorem 8,
    ``E (1/k)||Y_hat - y||^2 <= sigma * l*(K_Q) / k``.

    Parameters
    ----------
    workload : Workload
    privacy : ZCDP or ApproxDP
    solver : str
        Passed to :func:`project_to_hull` ("auto", "CLARABEL", "ECOS", "OSQP", "SCS").
    neighbouring : {"replace-one", "add-remove"}
    tol : float
        Certified tolerance of the projection (see :func:`project_to_hull`).
    """

    mechanism_name = "projection"

    def __init__(self, workload: Workload, privacy: ZCDP | ApproxDP, solver: str = "auto",
                 neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE, tol: float = 1e-8,
                 calibration: Literal["analytic", "classical"] = "analytic") -> None:
        super().__init__(workload, privacy, neighbouring, calibration)
        self.solver = solver
        self.tol = tol

    def release(self, data_or_histogram: Any, n: int | None = None,
                rng: np.random.Generator | int | None = None) -> Release:
        noisy, n, scale = self._noisy(data_or_histogram, n, rng)
        result = project_to_hull(self.workload, noisy, solver=self.solver, tol=self.tol)
        return self._release(result.answers, noisy, n, scale, projection=result)


class FactorizationMechanism(GaussianMechanism):
    """The factorization (matrix) mechanism, optionally followed by projection.

    For a factorization ``R M = F`` it measures ``M h + Z`` with ``Z ~ N(0, sigma^2 I)`` and
    releases ``R (M h + Z) = F h + R Z`` (seed 001, eq. 24-29; Theorem 2.3 with the optimal
    factorization). Guarantee: the given ``ZCDP(rho)`` or ``ApproxDP(epsilon, delta)`` w.r.t. the
    given neighbouring relation, because ``sigma`` is calibrated exactly as in
    :class:`GaussianMechanism` but to the strategy's l2 sensitivity ``(2/n) ||M||_{1->2}``
    (replace-one; ``(1/n) ||M||_{1->2}`` add/remove), and ``R`` is post-processing. The expected
    squared error is ``sigma^2 ||R||_F^2`` (:meth:`expected_rmse`).

    With ``project=True`` the reconstructed answers are then projected onto ``K_Q`` (seed 001,
    §2.3, "combined seamlessly with the factorization approaches"): post-processing again, so the
    same guarantee, and the error never exceeds the unprojected one on the same noise (seed 001,
    eq. 43).

    The factorization depends only on the public workload, never on the data.

    Parameters
    ----------
    workload : Workload
    privacy : ZCDP or ApproxDP
    factorization : Factorization, optional
        An exact factorization of ``workload``; default the optimal one,
        :func:`~projmech.optimal_factorization.factorization_norm` (``workload``) with its defaults.
        An approximate factorization (``R M = F + E``) is accepted; its answers carry the bias
        ``E h`` (at most ``||E||_{1->2}`` per query in l2, seed 001 eq. 35).
    project : bool
        Project the reconstructed answers onto ``K_Q`` (needs the explicit workload matrix).
    neighbouring, calibration
        As for :class:`GaussianMechanism`.
    solver, tol
        For the projection (see :func:`~projmech.bodies.hull.project_to_hull`).
    """

    mechanism_name = "factorization"

    def __init__(self, workload: Workload, privacy: ZCDP | ApproxDP, factorization: Factorization | None = None,
                 project: bool = False, neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
                 calibration: Literal["analytic", "classical"] = "analytic", solver: str = "auto",
                 tol: float = 1e-8) -> None:
        if not isinstance(workload, Workload):
            raise TypeError(f"workload: expected a Workload, got {type(workload).__name__}")
        if not isinstance(project, bool):
            raise TypeError(f"project: expected a bool, got {project!r}")
        if factorization is None:
            factorization = factorization_norm(workload)
        elif not isinstance(factorization, Factorization):
            raise TypeError(f"factorization: expected a Factorization, got {type(factorization).__name__}")
        elif factorization.workload.shape != workload.shape:
            raise ValueError(
                f"factorization: it factorizes a {factorization.workload.shape} workload, not {workload.shape}"
            )
        if project and workload.is_implicit:
            raise ValueError(
                f"project: projection onto K_Q needs the explicit matrix of {workload.name}, which is implicit"
            )
        super().__init__(workload, privacy, neighbouring, calibration)
        self.factorization = factorization
        self.project = project
        self.solver = solver
        self.tol = tol
        self._column_norm = factorization.strategy_sensitivity
        if project:
            self.mechanism_name = "factorization+projection"

    def expected_rmse(self, n: int) -> float:
        """``sqrt(E (1/k) ||R Z||^2) = sigma ||R||_F / sqrt(k)`` before projection (seed 001,
        eq. 29); see :meth:`Factorization.expected_rmse`. Projection can only lower the error."""
        return self.factorization.expected_rmse(self.privacy, n, self.neighbouring)

    def release(self, data_or_histogram: Any, n: int | None = None,
                rng: np.random.Generator | int | None = None) -> Release:
        h, n = self._histogram(data_or_histogram, n)
        generator = as_generator(rng)
        scale = self.noise_scale(n)
        strategy = self.factorization.strategy
        measurements = strategy @ h + self._sample(scale, strategy.shape[0], generator)
        noisy = self.factorization.reconstruct(measurements)
        if not self.project:
            return self._release(noisy, noisy, n, scale, factorization=self.factorization)
        result = project_to_hull(self.workload, noisy, solver=self.solver, tol=self.tol)
        return self._release(result.answers, noisy, n, scale, projection=result, factorization=self.factorization)
