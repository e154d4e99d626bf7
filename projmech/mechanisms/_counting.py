"""The mechanisms' protocol and their shared base: counts measured with calibrated noise, divided by
a public size, optionally projected onto a body."""

from __future__ import annotations

import contextlib
import functools
import weakref
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from ..bodies import Body, LocalResult, ProjectionProgress, ProjectionResult, RelaxationResult, TablesResult
from ..data import Dataset, resolve_rows
from ..factorization import Factorization
from ..privacy import (
    ZCDP,
    ApproxDP,
    Neighbouring,
    Noise,
    Privacy,
    PureDP,
    SizePolicy,
    calibrate,
    choose_discrete,
    public_size,
)
from ..solve import Callback
from ..validation import as_generator, check_positive_int
from ..workloads import Workload
from ._budget import BudgetWarning, budget_warning, table_shares, warn_budget
from ._release import JSON, Release

if TYPE_CHECKING:
    from .adaptive import AdaptiveRound

__all__ = ["Mechanism", "CountingMechanism"]

#: The BudgetWarning of each live mechanism, by row count and noise (see
#: CountingMechanism._check_budget): kept outside the mechanisms, since the row count may be private.
_BUDGET_WARNINGS: weakref.WeakKeyDictionary[Any, dict[tuple[int, Noise], BudgetWarning | None]] = (
    weakref.WeakKeyDictionary())


@runtime_checkable
class Mechanism(Protocol):
    """What every non-interactive mechanism offers: its workload, guarantee, relation, size policy and ``release``.

    Parameters
    ----------
    *args, **kwargs
        None: a protocol is followed, never built.

    Examples
    --------
    >>> [isinstance(m, pm.mechanisms.Mechanism) for m in (pm.LaplaceMechanism(pm.identity(2), pm.PureDP(1.0)), 2)]
    [True, False]
    """

    # Read-only members: a mechanism may narrow their types (OfflinePMW's privacy is PureDP or ZCDP).
    @property
    def workload(self) -> Workload:
        """The queries the mechanism answers."""
        ...

    @property
    def privacy(self) -> Privacy:
        """The guarantee of one release."""
        ...

    @property
    def neighbouring(self) -> Neighbouring:
        """The neighbouring relation the guarantee is stated for."""
        ...

    @property
    def size_policy(self) -> SizePolicy:
        """How the public size is resolved (:func:`~projmech.privacy.public_size`)."""
        ...

    def release(self, data_or_histogram: Any, n: int | None = None, *,
                rng: np.random.Generator | int | None = None) -> Release:
        """Release the workload's answers on a data set (see each mechanism).

        Parameters
        ----------
        data_or_histogram, n, rng
            The data (or a normalized histogram and its row count ``n``) and the source of noise.

        Returns
        -------
        Release
        """
        ...


class CountingMechanism:
    """The base of the non-interactive mechanisms: counts measured with calibrated noise, divided by a public size.

    Nothing released depends on a private row count: the counts' sensitivity does not, and the
    answers are divided by the public size of :class:`~projmech.privacy.SizePolicy`.

    Parameters
    ----------
    workload, privacy
        The queries and the guarantee (ZCDP, ApproxDP or PureDP).
    neighbouring, size, size_share
        As for :class:`~projmech.mechanisms.GaussianMechanism`.

    Examples
    --------
    >>> isinstance(pm.GaussianMechanism(pm.identity(2), pm.ZCDP(1.0)), pm.mechanisms.CountingMechanism)
    True
    """

    mechanism_name = "counting"
    #: Whether the mechanism needs the workload's explicit matrix (see :meth:`needs_matrix`).
    _needs_matrix = True
    #: The body the noisy answers are projected onto, if any.
    body: Body | None = None
    #: The factorization whose strategy is measured, if any (else the workload itself is).
    factorization: Factorization | None = None
    #: What the projection measures distance in: the answers', unless a mechanism says otherwise
    #: (:class:`FactorizationMechanism`'s ``metric``).
    metric: str = "answers"

    def __init__(self, workload: Workload, privacy: Privacy, neighbouring: Neighbouring | str,
                 size: int | str | None, size_share: float | None) -> None:
        if not isinstance(workload, Workload):
            raise TypeError(f"workload: expected a Workload, got {type(workload).__name__}")
        if not isinstance(privacy, (ZCDP, ApproxDP, PureDP)):
            raise TypeError(f"privacy: expected ZCDP, ApproxDP or PureDP, got {type(privacy).__name__}")
        self.workload = workload
        self.privacy = privacy
        self.size_policy = SizePolicy.parse(neighbouring, size, size_share=size_share)
        self.neighbouring = self.size_policy.neighbouring

    @classmethod
    def needs_matrix(cls, **options: Any) -> bool:
        """Whether the mechanism, with these constructor options, needs the workload's explicit matrix.

        Parameters
        ----------
        **options
            The constructor's keyword options.

        Returns
        -------
        bool
        """
        return cls._needs_matrix

    def _calibrate(self, sensitivity: float, integer_valued: bool, noise: str, calibration: str = "analytic") -> None:
        """Set :attr:`noise` (and the size estimate's) for measured counts of this sensitivity."""
        self._sensitivity = sensitivity
        self._calibration = calibration
        discrete = choose_discrete(noise, integer_valued)
        self.noise, self.size_noise = calibrate(self.privacy, sensitivity, self.size_policy, discrete,
                                                calibration=calibration)

    def sensitivity(self) -> float:
        """The sensitivity of the measured counts (l2 for Gaussian noise, l1 for Laplace).

        Returns
        -------
        float
        """
        return self._sensitivity

    def noise_scale(self, n: int) -> float:
        """The noise's scale on the answers at public size ``n``: ``noise.scale / n``.

        Parameters
        ----------
        n : int
            The public size.

        Returns
        -------
        float
        """
        return self._scale_at(check_positive_int("n", n))

    def _scale_at(self, n: float) -> float:
        """The noise's scale over the public size ``n`` (the adaptive mechanism's depends on ``n``)."""
        return self.noise.scale / n

    def _answer_std(self, n: float) -> float:
        """The answers' noise's RMS standard deviation at public size ``n``, before any projection."""
        return self.noise.std / n

    def _rows(self, data: Any, n: int | None) -> tuple[Any, int]:
        """The data (a Dataset, or the counts ``n h``) and its row count, which is never released."""
        if not isinstance(data, Dataset) and not self.workload.accepts_histograms:
            raise ValueError(
                f"data_or_histogram: {self.workload!r} is implicit over a universe too large for a "
                "histogram; pass the Dataset, whose records it answers directly"
            )
        resolved, rows = resolve_rows(data, n, policy=self.size_policy,
                                      universe_size=None if isinstance(data, Dataset) else self.workload.universe_size)
        if isinstance(resolved, Dataset):
            self.workload.check_data(resolved)
        return resolved, rows

    def _counts(self, data: Any) -> np.ndarray:
        """The workload's true counts ``F c`` of what :meth:`_rows` returned."""
        return _counts_of(self.workload, data)

    def _measured_counts(self, data: Any) -> np.ndarray:
        """The true counts of the measured matrix (the workload's own by default)."""
        return self._counts(data)

    def _reconstruct(self, measurements: np.ndarray) -> np.ndarray:
        """The workload's noisy counts from the noisy measurements (the same by default)."""
        return measurements

    def _kernel_threads(self) -> AbstractContextManager[Any]:
        """The BLAS threads of measurement and reconstruction."""
        return contextlib.nullcontext()

    def release(self, data_or_histogram: Any, n: int | None = None,
                rng: np.random.Generator | int | None = None) -> Release:
        """Release the workload's answers on a :class:`Dataset` or a normalized histogram.

        Warns (LargeDeltaWarning) of a delta of at least ``1/n`` for a public ``n``, and
        (:class:`~projmech.mechanisms.BudgetWarning`) of noise that swamps most tables' counts.

        Parameters
        ----------
        data_or_histogram, n
            The data, or a normalized histogram and its row count (private under add/remove, never released).
        rng : numpy.random.Generator, int or None
            The source of continuous noise; OpenDP draws discrete noise.

        Returns
        -------
        Release
        """
        generator = as_generator(rng)
        data, rows = self._rows(data_or_histogram, n)
        # A delta of 1/n or more for a public n warns (LargeDeltaWarning); a private n is never compared.
        self.size_policy.check_delta(self.privacy, rows)
        self._check_budget(rows)
        with self._kernel_threads():
            measured = self._measured_counts(data)
            measurements = measured + self.noise.sample(measured.size, generator)
            size = public_size(self.size_policy, rows, self.size_noise, generator)
            noisy = self._reconstruct(measurements) / size
        measured = noisy if self.factorization is None else measurements / size
        std = self._answer_std(size)
        if self.body is None:
            return self._release(noisy, noisy, size, answer_sigma_rms=std, measured=measured)
        # One tolerance rule for every projection: relative to the answers' own noise. A
        # discrete Gaussian far below one count is the constant 0: then there is no noise level
        # for the tolerance to refer to, and the body's absolute default applies. A projection
        # that runs for seconds shows its progress on a terminal (nowhere else).
        with ProjectionProgress(f"projecting onto {self.body.name}") as progress:
            answers, result = self._project(noisy, measured, size, progress)
        return self._release(answers, noisy, size, projection=result, answer_sigma_rms=std, measured=measured)

    def _project(self, noisy: np.ndarray, measured: np.ndarray, size: float, callback: Callback
                 ) -> tuple[np.ndarray, ProjectionResult | RelaxationResult | TablesResult | LocalResult]:
        """The released answers and the projection they come from: the noisy answers onto :attr:`body`."""
        assert self.body is not None, "release() projects only where there is a body"
        std = self._answer_std(size)
        result = self.body.project(self.workload, noisy, noise_scale=std if std > 0 else None, callback=callback)
        return result.answers, result

    def _check_budget(self, rows: int) -> None:
        """Warn when the noise swamps most tables (cached beside self: no copy carries a private row count)."""
        warnings_by_key = _BUDGET_WARNINGS.setdefault(self, {})
        key = (rows, self.noise)
        if key not in warnings_by_key:
            warnings_by_key[key] = self._budget_warning(rows)
        warn_budget(warnings_by_key[key])

    def _budget_warning(self, rows: int) -> BudgetWarning | None:
        shares = table_shares(self.workload)
        if shares is None or self.noise.std == 0:
            return None
        ratio = self._answer_std(1.0) / self.noise.std  # the answers' noise per unit of the counts'

        def noise_at(privacy: Privacy) -> float:
            noise = calibrate(privacy, self._sensitivity, self.size_policy, self.noise.discrete,
                              calibration=self._calibration)[0]
            return noise.std * ratio

        what = "the noise on each answer's count" if ratio == 1.0 else "the answers' noise per count (RMS)"
        return budget_warning(self.privacy, self._answer_std(1.0), noise_at, shares[0], self.size_policy, rows,
                              noise_name=what, queries=shares[1],
                              tables_name="queries of the workload" if shares[1] else "tables of the workload")

    def _release(self, answers: np.ndarray, noisy: np.ndarray, size: float,
                 projection: ProjectionResult | RelaxationResult | TablesResult | LocalResult | None = None,
                 answer_sigma_rms: float | None = None, rounds: tuple[AdaptiveRound, ...] | None = None,
                 estimate: dict[str, JSON] | None = None, measured: np.ndarray | None = None,
                 noise: Noise | None = None) -> Release:
        return Release(
            answers=answers,
            noisy_answers=noisy,
            label_source=functools.partial(getattr, self.workload, "labels"),
            mechanism=self.mechanism_name,
            privacy=self.privacy,
            neighbouring=self.neighbouring,
            size=size,
            size_source=self.size_policy.source,
            noise=self.noise if noise is None else noise,
            sensitivity=self._sensitivity,
            size_noise=self.size_noise,
            projection=projection,
            factorization=self.factorization,
            answer_sigma_rms=answer_sigma_rms,
            workload=self.workload,
            rounds=rounds,
            estimate=estimate,
            measured=measured,
            metric=self.metric,
        )

    def _size_repr(self) -> str:
        policy = self.size_policy
        if policy.neighbouring is Neighbouring.REPLACE_ONE:
            return policy.neighbouring.value
        size = policy.declared if policy.declared is not None else f"estimate, share {policy.share:g}"
        return f"{policy.neighbouring.value}, size={size}"

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.workload!r}, {self.privacy}, {self._size_repr()}, "
                f"{self.noise.name}{self._repr_extra()})")

    def _repr_extra(self) -> str:
        """What the repr adds after the noise."""
        return "" if self.body is None else f", body={self.body!r}"


def _counts_of(workload: Workload, data: Any) -> np.ndarray:
    """``workload``'s true counts on a Dataset's records, or on a vector of counts."""
    if isinstance(data, Dataset):
        return workload.answer_counts(data)
    return workload.answer(data)
