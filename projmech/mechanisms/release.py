"""The release: privately released answers and everything needed to interpret them."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from ..bodies.hull import ProjectionResult
from ..bodies.local import LocalResult
from ..bodies.relaxation import RelaxationResult
from ..bodies.tables import TablesResult
from ..factorization.base import Factorization
from ..privacy.guarantees import Neighbouring, Privacy
from ..privacy.noise import Noise
from ..workloads import Workload
from .intervals import ConfidenceIntervals, confidence_intervals

if TYPE_CHECKING:
    import pandas as pd
    import scipy.sparse as sp

    from .adaptive import AdaptiveRound

__all__ = ["Release"]

#: A JSON value: what a release's ``estimate`` summary holds (solver statistics, risks, names).
JSON: TypeAlias = "str | int | float | bool | None | list[JSON] | dict[str, JSON]"


@dataclass(frozen=True, eq=False, repr=False)
class Release:
    """Privately released answers and everything needed to interpret them.

    Every field is a function of the noisy measurements and public parameters only, never of the
    true answers, the histogram or a private row count. Made by the mechanisms' ``release``.

    Parameters
    ----------
    answers, noisy_answers : ndarray, shape (k,)
        The released answers (fractions of ``size``), and the noisy ones before any projection.
    label_source : callable
        Returns the queries' labels, read on first access to :attr:`labels`.
    mechanism : str
        The mechanism's name (``"gaussian"``, ``"factorization+projection"``, ...).
    privacy, neighbouring : Privacy, Neighbouring
        The guarantee (the size estimate's share included) and the relation it is stated for.
    size, size_source : float, {"public n", "declared", "estimated"}
        The public size the answers are fractions of, and where it comes from.
    noise, sensitivity : Noise, float
        The noise on each measured count (a factorization's strategy's), and their sensitivity.
    size_noise : Noise or None
        The size estimate's noise.
    projection : ProjectionResult, RelaxationResult, TablesResult, LocalResult or None
        The projection's result and solver statistics.
    factorization : Factorization or None
        The factorization mechanism's strategy and reconstruction.
    answer_sigma_rms : float or None
        The RMS of the answers' noise over ``size``; None without per-answer noise (MWEM).
    workload : Workload or None
        The workload answered.
    rounds, estimate : tuple of AdaptiveRound, dict or None
        The adaptive mechanism's rounds and estimate (``noise`` is then the first round's).

    Examples
    --------
    >>> import numpy as np, projmech as pm
    >>> data = pm.Dataset(np.array([[0], [1], [1]]), pm.Domain(["a"], [2]))
    >>> release = pm.GaussianMechanism(pm.marginals(data.domain, 1), pm.ZCDP(0.5)).release(data, rng=0)
    >>> release.labels, release.size, release.size_source, release.summary()["guarantee"]
    (('a=0', 'a=1'), 3.0, 'public n', '0.5-zCDP')
    """

    answers: np.ndarray
    noisy_answers: np.ndarray
    label_source: Callable[[], tuple[str, ...]]
    mechanism: str
    privacy: Privacy
    neighbouring: Neighbouring
    size: float
    size_source: str
    noise: Noise
    sensitivity: float
    size_noise: Noise | None = None
    projection: ProjectionResult | RelaxationResult | TablesResult | LocalResult | None = None
    factorization: Factorization | None = None
    answer_sigma_rms: float | None = None
    workload: Workload | None = None
    rounds: tuple[AdaptiveRound, ...] | None = None
    estimate: dict[str, JSON] | None = None

    @cached_property
    def labels(self) -> tuple[str, ...]:
        """One label per query, built from ``label_source`` on first access."""
        return self.label_source()

    @property
    def scale(self) -> float:
        """The noise's scale (sigma or b) on the released fractions: ``noise.scale / size``."""
        return self.noise.scale / self.size

    @property
    def sigma(self) -> float:
        """The noise's standard deviation on each measured count, over ``size`` (for a factorization,
        on the strategy's measurements; the answers' is :attr:`answer_sigma_rms`)."""
        return self.noise.std / self.size

    @property
    def witness(self) -> np.ndarray | sp.csr_array | None:
        """A distribution ``w`` over the universe with ``F @ witness == answers`` (projection onto ``K_Q`` only)."""
        return None if self.projection is None else self.projection.witness

    @property
    def moments(self) -> np.ndarray | None:
        """The moment matrix ``[[1, mu^T], [mu, P]]`` whose image the answers are (relaxation L only)."""
        return None if self.projection is None else self.projection.moments

    @property
    def counts(self) -> np.ndarray:
        """The released answers as counts, ``size * answers``."""
        return self.size * self.answers

    def row_source(self) -> tuple[ProjectionResult | RelaxationResult | TablesResult | LocalResult, Workload | None,
                                  Workload]:
        """What :func:`~projmech.synthetic.synthetic_data` draws this release's rows from.

        Returns
        -------
        projection : ProjectionResult, RelaxationResult, TablesResult or LocalResult
            The release's projection.
        drawing : Workload or None
            The workload to draw and check rows with (None for L, whose answers are 2-way marginals).
        answered : Workload
            The workload answered.

        Raises
        ------
        ValueError
            Without a projection, or for the adaptive mechanism (its run holds the estimate).
        """
        if self.rounds is not None:
            raise ValueError("an adaptive release's rows come from its run's estimate: pass the AdaptiveRun "
                             "(mechanism.run(data)), or call projmech.synthesize / mechanism.synthesize")
        if self.projection is None or self.workload is None:
            raise ValueError(f"a {self.mechanism} release holds no projection to draw rows from; for rows call "
                             "projmech.synthesize, or release with ProjectionMechanism")
        drawing = None if isinstance(self.projection, RelaxationResult) else self.workload
        return self.projection, drawing, self.workload

    def confidence_intervals(self, level: float = 0.95) -> ConfidenceIntervals:
        """Per-query confidence intervals for the true answers (see :class:`ConfidenceIntervals`).

        Parameters
        ----------
        level : float, default 0.95
            The confidence level, in ``(0, 1)``.

        Returns
        -------
        ConfidenceIntervals
            ``lower``, ``upper``, ``method``, whether ``exact`` and ``simultaneous``.
        """
        return confidence_intervals(self, level)

    def to_frame(self) -> pd.DataFrame:
        """The answers as a table, one row per query.

        Returns
        -------
        pandas.DataFrame
            Columns ``query`` (the label), ``answer`` and ``noisy_answer``.
        """
        import pandas as pd  # only here: a release needs no pandas until it becomes a frame

        return pd.DataFrame({"query": list(self.labels), "answer": self.answers, "noisy_answer": self.noisy_answers})

    def summary(self) -> dict[str, Any]:
        """A JSON-serializable description: guarantee, relation, size, noise, solver statistics.

        Returns
        -------
        dict
            The fields above as plain values, with ``solver`` and ``body`` after a projection.
        """
        summary: dict[str, Any] = {
            "mechanism": self.mechanism,
            "guarantee": str(self.privacy),
            "privacy": {"type": type(self.privacy).__name__, **vars(self.privacy)},
            "neighbouring": self.neighbouring.value,
            "size": self.size,
            "size_source": self.size_source,
            "num_queries": len(self.answers),
            "noise": self.noise.summary(),
            "sensitivity": self.sensitivity,
            "sigma": self.sigma,
        }
        if self.size_noise is not None:
            summary["size_noise"] = self.size_noise.summary()
        if self.projection is not None:
            summary["solver"] = self.projection.summary()
            summary["body"] = summary["solver"]["body"]
        if self.factorization is not None:
            summary["factorization"] = self.factorization.summary()
            summary["answer_sigma_rms"] = self.answer_sigma_rms
        if self.rounds is not None:
            summary["rounds"] = [{"attributes": list(r.attributes), "sigma": r.sigma, "selection_rho": r.selection_rho,
                                  "measurement_rho": r.measurement_rho, "annealed": r.annealed} for r in self.rounds]
        if self.estimate is not None:
            summary["estimate"] = copy.deepcopy(self.estimate)  # the release stays as it was
        return summary

    def to_json(self) -> str:
        """The :meth:`summary` as indented JSON text.

        Returns
        -------
        str
            ``json.dumps(summary(), indent=2)``.
        """
        return json.dumps(self.summary(), indent=2)

    def __repr__(self) -> str:
        projected = "" if self.projection is None else f", projected: {self.projection.stats}"
        return (f"Release({self.mechanism}, {len(self.answers):,} answers, {self.privacy}, "
                f"{self.neighbouring.value}, size {self.size:g} ({self.size_source}), "
                f"{self.noise.name} std {self.noise.std:.4g}{projected})")

    def _answer_noise(self) -> str:
        """The answers' noise in words (a factorization's ``R Z`` is not the strategy's ``sigma``)."""
        if self.factorization is not None and self.answer_sigma_rms is not None:
            return f"{self.sigma:.4g} per measurement, RMS {self.answer_sigma_rms:.4g} on the answers"
        return f"{self.sigma:.4g} on the answers"

    def __str__(self) -> str:
        lines = [
            f"{self.mechanism} release of {len(self.answers):,} answers",
            f"  guarantee   {self.privacy}, {self.neighbouring.value} neighbours",
            f"  size        {self.size:g} ({self.size_source})",
            f"  noise       {self.noise.name}, std {self.noise.std:.4g} per measured count "
            f"(sensitivity {self.sensitivity:.4g}); {self._answer_noise()}",
        ]
        if self.factorization is not None:
            lines.append(f"  strategy    {self.factorization}")
        if self.projection is not None:
            lines.append(f"  projection  {self.projection.summary().get('body', 'hull')}: {self.projection.stats}")
        if self.estimate is not None:
            lines.append(f"  estimate    {self.estimate['estimator']}" + "".join(
                f"; {part} {_status(self.estimate[part])}" for part in ("projection", "fit") if part in self.estimate))
        preview = ", ".join(f"{label}={answer:.4g}" for label, answer in zip(self.labels[:3], self.answers[:3]))
        lines.append(f"  answers     {preview}{', ...' if len(self.answers) > 3 else ''}")
        return "\n".join(lines)


def _status(stats: JSON) -> JSON:
    """A solver summary's ``status``."""
    return stats["status"] if isinstance(stats, dict) else stats
