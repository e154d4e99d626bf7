"""Mechanisms: calibrate noise to the workload's sensitivity, add it, optionally project.

Every mechanism is thin: sensitivity from :class:`~projmech.workloads.Workload`, noise scale from
:mod:`projmech.privacy`, projection from :mod:`projmech.bodies`. A :class:`Release` holds what may
be published: never the true answers nor the histogram.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from .bodies.hull import ProjectionResult, project_to_hull
from .bodies.relaxation import DEFAULT_TOL as RELAXATION_TOL
from .bodies.relaxation import RELAXATIONS, RelaxationResult, project_to_relaxation
from .data import Dataset, check_normalized_histogram, histogram
from .evaluation import gaussian_expected_rmse
from .factorization import Factorization
from .optimal_factorization import factorization_norm
from .privacy import ApproxDP, Neighbouring, Privacy, PureDP, ZCDP, gaussian_sigma, laplace_scale
from .workloads import Workload

__all__ = [
    "BODIES",
    "HULL_MAX_UNIVERSE",
    "Release",
    "GaussianMechanism",
    "LaplaceMechanism",
    "ProjectionMechanism",
    "FactorizationMechanism",
    "as_generator",
]

#: The bodies :class:`ProjectionMechanism` projects onto (``"auto"`` picks one of the others).
BODIES = ("auto", "hull", "relaxed")

#: Largest universe for which ``body="auto"`` projects onto ``K_Q`` itself, by the active-set
#: solver (``solver="auto"`` or ``"fast"``), whose gradients over the universe take O(m) memory:
#: 0.64 s for 2-way marginals at m = 2^20 (README, projection benchmark), 1.8 s at m = 2^22 in a
#: single probe. 2-way marginals beyond it are the relaxation's job.
HULL_MAX_UNIVERSE = 2**22


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
    projection : ProjectionResult, RelaxationResult or None
        Solver statistics, for projection mechanisms: onto ``K_Q`` (with the witness
        distribution) or onto the relaxation L of 2-way marginals (with the moment matrix).
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
    projection: ProjectionResult | RelaxationResult | None = None
    factorization: Factorization | None = None

    @property
    def sigma(self) -> float:
        """Standard deviation of the noise on each measured coordinate (see ``scale``)."""
        return self.scale if self.noise == "gaussian" else math.sqrt(2.0) * self.scale

    @property
    def witness(self) -> np.ndarray | None:
        """Distribution ``w`` over the universe with ``F @ w == answers`` (projection onto
        ``K_Q`` only; a point of the relaxation L need not have one)."""
        return self.projection.weights if isinstance(self.projection, ProjectionResult) else None

    @property
    def moments(self) -> np.ndarray | None:
        """The moment matrix ``[[1, mu^T], [mu, P]]`` whose image the answers are (projection
        onto the relaxation L only)."""
        return self.projection.moments if isinstance(self.projection, RelaxationResult) else None

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
            summary["body"] = summary["solver"].get("body", "hull")
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
        """The normalized histogram of a Dataset or a validated given one, and ``n``."""
        if isinstance(data, Dataset):
            n = self._check_dataset(data, n)
            return histogram(data), n
        return self._given_histogram(data, n)

    def _truth(self, data: Any, n: int | None) -> tuple[np.ndarray, int]:
        """The true answers and ``n``: a Dataset's are counted from its records
        (:meth:`Workload.answer_data`, no histogram over the universe for marginals)."""
        if isinstance(data, Dataset):
            n = self._check_dataset(data, n)
            return self.workload.answer_data(data), n
        h, n = self._given_histogram(data, n)
        return self.workload.answer(h), n

    def _check_dataset(self, data: Dataset, n: int | None) -> int:
        self.workload.check_data(data)
        if n is not None and n != data.n:
            raise ValueError(f"n: given {n} but the data set has {data.n} rows")
        return data.n

    def _given_histogram(self, data: Any, n: int | None) -> tuple[np.ndarray, int]:
        m = self.workload.universe_size
        if not self.workload.accepts_histograms:
            raise ValueError(
                f"data_or_histogram: {self.workload!r} is implicit over a universe too large for a "
                "histogram; pass the Dataset, whose records it answers directly"
            )
        return check_normalized_histogram(data, n, m)

    def _noisy(self, data: Any, n: int | None, rng: Any) -> tuple[np.ndarray, int, float]:
        truth, n = self._truth(data, n)
        generator = as_generator(rng)
        scale = self.noise_scale(n)
        return truth + self._sample(scale, truth.size, generator), n, scale

    def _release(self, answers: np.ndarray, noisy: np.ndarray, n: int, scale: float,
                 projection: ProjectionResult | RelaxationResult | None = None,
                 factorization: Factorization | None = None) -> Release:
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
            A Dataset's true answers come from its records (:meth:`Workload.answer_data`). A
            histogram must be normalized (non-negative, sums to 1) and needs ``n``.
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

    Releases ``Pi_B(F h + Z)``: Gaussian noise calibrated exactly as in
    :class:`GaussianMechanism` (the same ``sigma``, the same draws for the same ``rng``), then
    the Euclidean projection onto a convex body ``B`` that contains the true answers:

    - ``body="hull"``: ``B = K_Q = conv(columns of F)``, by
      :func:`~projmech.bodies.hull.project_to_hull` (certified to ``tol``, relative to the noise
      level). Needs the explicit matrix, or an implicit workload with ``rmatvec`` and
      ``columns`` (``marginals(domain, way, implicit=True)`` has them) for the active-set
      solver, whose memory is O(m).
    - ``body="relaxed"``: for all 2-way marginals of a domain (``workload.marginal_way == 2``),
      ``B = L``, the moment relaxation of :func:`~projmech.bodies.relaxation.project_to_relaxation`
      (``relaxation`` picks its constraints), whose size is polynomial in the number of
      attributes: the universe is never materialized, so ``d = 150`` binary attributes
      (``2^150`` elements; use ``marginals(domain, 2, implicit=True)``) work. A Dataset's true
      answers are counted from its records.
    - ``body="auto"`` (default): the hull for a workload with products both ways over at most
      :data:`HULL_MAX_UNIVERSE` elements (2^22; the active-set solver projects 2-way marginals
      of 20 binary attributes in under a second), the relaxation for 2-way marginal workloads
      beyond, and a ``ValueError`` for any other workload: pass ``body="hull"`` to project onto
      ``K_Q`` regardless, or use :class:`GaussianMechanism`.

    Guarantee: the projection is post-processing, so the release satisfies the Gaussian
    mechanism's guarantee (seed 000, Theorem 2). Since ``B`` is convex and contains the true
    answers, the error never exceeds the Gaussian mechanism's on the same noise (seed 001,
    eq. 43). Error bound: seed 000, Theorem 8, ``E (1/k)||Y_hat - y||^2 <= sigma * l*(B) / k``;
    for the relaxation ``l*(L)`` takes the place of ``l*(K_Q)``: the proof needs only that the
    body is convex and contains the true answers, and ``K_Q ⊆ L`` (every data set's exact
    marginals are points of L). The price of the relaxation is ``l*(L) / l*(K_Q) >= 1``.

    Parameters
    ----------
    workload : Workload
    privacy : ZCDP or ApproxDP
    solver : str
        Passed to the projection: :func:`project_to_hull` ("auto", "fast", "CLARABEL", "ECOS",
        "OSQP", "SCS") or :func:`project_to_relaxation` ("auto", "admm", or a CVXPY solver that
        handles semidefinite cones, e.g. "CLARABEL").
    neighbouring : {"replace-one", "add-remove"}
    tol : float, optional
        The certified tolerance of the projection: for the hull relative to ``(k/2) sigma^2``,
        ``1e-4`` by default, which keeps the answers within ``0.01 sigma`` RMS of the exact
        projection when the noisy answers are within ``sigma sqrt(k)`` of ``K_Q`` (see
        :func:`project_to_hull`); for the relaxation the ADMM's relative gap,
        ``1e-4`` by default (see :func:`project_to_relaxation`; CVXPY solvers use their own
        tolerances).
    calibration : {"analytic", "classical"}
        As for :class:`GaussianMechanism`.
    body : {"auto", "hull", "relaxed"}
        The body projected onto (above); :attr:`body` holds the one chosen.
    relaxation : {"sdp+local", "sdp", "local"}
        The relaxation L, for ``body="relaxed"`` (see :func:`project_to_relaxation`).
    """

    mechanism_name = "projection"

    def __init__(self, workload: Workload, privacy: ZCDP | ApproxDP, solver: str = "auto",
                 neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE, tol: float | None = None,
                 calibration: Literal["analytic", "classical"] = "analytic",
                 body: Literal["auto", "hull", "relaxed"] = "auto", relaxation: str = "sdp+local") -> None:
        if body not in BODIES:
            raise ValueError(f"body: expected one of {BODIES}, got {body!r}")
        if relaxation not in RELAXATIONS:
            raise ValueError(f"relaxation: expected one of {RELAXATIONS}, got {relaxation!r}")
        super().__init__(workload, privacy, neighbouring, calibration)
        self.solver = solver
        self.tol = tol
        self.relaxation = relaxation
        self.body = _choose_body(workload, body)

    def release(self, data_or_histogram: Any, n: int | None = None,
                rng: np.random.Generator | int | None = None) -> Release:
        """Release the projected answers on a :class:`Dataset` or a normalized histogram (see
        :meth:`GaussianMechanism.release`; a histogram only where the workload can answer one,
        :attr:`Workload.accepts_histograms`)."""
        noisy, n, scale = self._noisy(data_or_histogram, n, rng)
        if self.body == "hull":
            result = project_to_hull(self.workload, noisy, solver=self.solver, tol=self.tol, noise_scale=scale)
        else:
            result = project_to_relaxation(self.workload.domain, noisy, relaxation=self.relaxation,
                                           solver=self.solver, tol=RELAXATION_TOL if self.tol is None else self.tol)
        return self._release(result.answers, noisy, n, scale, projection=result)

    def __repr__(self) -> str:
        body = "hull" if self.body == "hull" else f"relaxed/{self.relaxation}"
        return f"{type(self).__name__}({self.workload!r}, {self.privacy}, {self.neighbouring.value}, body={body})"


def _choose_body(workload: Workload, body: str) -> str:
    """``"hull"`` or ``"relaxed"`` for ``workload``, or a ValueError naming ``body``."""
    if body == "hull":
        if not workload.has_adjoint:
            raise ValueError(
                f"body: 'hull' projects onto K_Q, which needs the explicit matrix of {workload!r} or its "
                "rmatvec and columns (Workload.implicit); use body='relaxed' for 2-way marginals"
            )
        return body
    relaxable = _relaxation_blocker(workload)
    if body == "relaxed":
        if relaxable is not None:
            raise ValueError(f"body: 'relaxed' {relaxable}")
        return body
    if workload.has_adjoint and workload.universe_size <= HULL_MAX_UNIVERSE:
        return "hull"
    if relaxable is None:
        return "relaxed"
    why = "it is implicit without rmatvec/columns" if not workload.has_adjoint else \
        f"its universe of {workload.universe_size:,} elements is above HULL_MAX_UNIVERSE = {HULL_MAX_UNIVERSE:,}"
    raise ValueError(
        f"body: 'auto' finds no tractable body for {workload!r}: the hull K_Q is out ({why}), and the "
        f"relaxation {relaxable}. Pass body='hull' to project onto K_Q regardless (workloads with "
        "rmatvec only), or use GaussianMechanism"
    )


def _relaxation_blocker(workload: Workload) -> str | None:
    """Why the relaxation L cannot take ``workload`` (completing "body='relaxed' ..."), or None."""
    if workload.marginal_way != 2 or workload.domain is None:
        return (f"needs the workload of all 2-way marginals of a domain (marginals(domain, 2)); "
                f"{workload.name} is not")
    # The relaxation's own requirement (MomentEncoding): a size-1 attribute has no table to relax.
    small = [name for name, size in workload.domain.to_dict().items() if size < 2]
    if small:
        return f"needs every attribute to have at least 2 values; {small} have fewer"
    return None


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
