"""The sparse vector technique :cite:p:`DNRRV09`: the threshold mechanism ``Thr_t`` and its k-fold product
(:doc:`/theory/online_pmw`). Counts get Laplace noise of scale ``1/epsilon``, by default OpenDP's
exact discrete Laplace, so that no released number has low-order bits to attack :cite:p:`Mir12`."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from enum import Enum
from typing import Any, TypeVar, cast

import numpy as np

from ..data import MW_MAX_UNIVERSE, Dataset, Domain, histogram, resolve_rows
from ..privacy import NOISE_KINDS, Neighbouring, Noise, PureDP, SizePolicy, calibrate, laplace_scale, public_size
from ..validation import (
    ENUM_LOOKUP_SIGNATURE,
    POSITIVE,
    POSITIVE_INT,
    SEED,
    Constraint,
    Interval,
    Options,
    Real,
    check_query_row,
    format_count,
    validate_params,
)
from ..workloads import from_predicates

__all__ = ["BOTTOM", "Bottom", "MechanismHalted", "Threshold", "ThresholdK"]


class Bottom(Enum):
    """The type of :data:`BOTTOM`, the symbol ⊥ of a transcript (below the threshold, or the estimate is correct).

    Parameters
    ----------
    value : {"⊥"}
        The one member's value: test by identity (``entry is BOTTOM``).

    Examples
    --------
    >>> pm.mechanisms.Bottom("⊥") is pm.BOTTOM, str(pm.BOTTOM)
    (True, '⊥')
    """

    BOTTOM = "⊥"

    __signature__ = ENUM_LOOKUP_SIGNATURE

    def __repr__(self) -> str:
        return "⊥"

    __str__ = __repr__


#: The symbol ⊥ of a transcript: the mechanism answered without a number.
BOTTOM = Bottom.BOTTOM


class MechanismHalted(RuntimeError):
    """Raised by an interactive mechanism asked a query after its ``k`` numerical answers or updates.

    Examples
    --------
    >>> data = pm.Dataset(np.array([[1, 0]] * 160 + [[0, 1]] * 40), pm.Domain(["a", "b"], [2, 2]))
    >>> mechanism = pm.Threshold(data, threshold=0.5, epsilon=0.5, rng=np.random.default_rng(0))
    >>> answer = mechanism.answer(lambda x: x["a"] == 1)  # far above 0.5: a number, then halt
    >>> mechanism.answer(lambda x: x["b"] == 1)
    Traceback (most recent call last):
    projmech.mechanisms._sparse_vector.MechanismHalted: the threshold mechanism halted after its k=1 numerical answers
    """


class _PrivateData:
    """The private input of an interactive mechanism: counts over the universe, row count, queries as rows."""

    def __init__(self, data: Any, n: int | None, max_universe: int, policy: SizePolicy) -> None:
        resolved, self.rows = resolve_rows(data, n, max_universe=max_universe, policy=policy)
        self.domain: Domain | None = None
        if isinstance(resolved, Dataset):
            self.counts = histogram(resolved, normalize=False, max_universe=max_universe)
            self.domain = resolved.domain
        else:
            self.counts = resolved

    @property
    def universe_size(self) -> int:
        return int(self.counts.size)

    def row(self, query: Any) -> np.ndarray:
        """The validated row of ``query``; a predicate is evaluated on the whole (public) universe."""
        if callable(query):
            if self.domain is None:
                raise TypeError(
                    "query: a predicate needs the data as a Dataset (its domain names the attributes); "
                    "with a histogram pass the query as a row over the universe"
                )
            # Evaluated on the whole (public) universe, never only on the records: whether a
            # predicate is valid must not depend on the private data.
            try:
                # A dense matrix: from_predicates fills an ndarray.
                return cast(np.ndarray, from_predicates(self.domain, {"query": query}).matrix)[0]
            except ValueError as error:
                raise ValueError(f"query: invalid predicate ({error})") from None
        return check_query_row("query", query, self.universe_size)

    def count(self, row: np.ndarray) -> float:
        """The true (private) count ``sum_r q(r) c(r)``."""
        return float(row @ self.counts)


class _SparseVector:
    """The engine of ``Thr_t^k`` on counts: noisy thresholds, comparisons and releases, all private.

    Each release takes the noise its caller chose: the discrete Laplace needs an integer count.
    """

    def __init__(self, threshold: float, noise: Noise, k: int, rng: np.random.Generator) -> None:
        self._threshold = threshold
        self._noise = noise
        self._k = k
        self._rng = rng
        self.halts = 0
        self._noisy_threshold = self._draw_threshold()

    def _draw(self, noise: Noise) -> float:
        return float(noise.sample(1, self._rng)[0])

    def _draw_threshold(self) -> float:
        return self._threshold + self._draw(self._noise)

    @property
    def halted(self) -> bool:
        return self.halts >= self._k

    def step(self, compared: float, released: float, release_noise: Noise) -> float | None:
        """``None`` (⊥) or ``released`` plus a draw of ``release_noise``; the caller checks :attr:`halted` first."""
        if compared + self._draw(self._noise) < self._noisy_threshold:
            return None
        answer = released + self._draw(release_noise)
        self.halts += 1
        if not self.halted:
            self._noisy_threshold = self._draw_threshold()  # a fresh, independent copy of Thr_t
        return answer


#: The arguments every sparse-vector mechanism checks in its constructor, before the data is read.
_SPARSE_VECTOR_PARAMETERS: dict[str, Constraint] = dict(epsilon=POSITIVE, rng=SEED, max_universe=POSITIVE_INT,
                                                        noise=Options(*NOISE_KINDS))


Query = np.ndarray | Callable[..., Any]


class _SparseVectorMechanism:
    """What :class:`ThresholdK` and ``OnlinePMW`` share: data, noise, size, ``k`` copies, transcript, guarantee."""

    def _start(self, data_or_histogram: Any, epsilon: float, k: int | None, n: int | None,
               generator: np.random.Generator | int | None, neighbouring: Neighbouring | str, max_universe: int,
               threshold: float, size: int | str | None, size_share: float | None, noise: str,
               default_k: Callable[[int], int] | None = None, default_k_source: str = "k") -> None:
        """Set up the state from checked arguments; ``k=None`` takes ``default_k(universe size)``."""
        assert isinstance(generator, np.random.Generator)  # made one by validate_params(rng=SEED)
        self.epsilon = epsilon
        self.size_policy = SizePolicy.parse(neighbouring, size, size_share=size_share)
        self.neighbouring = self.size_policy.neighbouring
        # One count moves by at most 1 (rows in [0, 1]): b = 1/epsilon on counts. The counts are
        # integers, so every draw but the release of a fractional count can be exact (see
        # _SparseVector and _release_noise).
        self._noise_option = noise
        discrete = noise != "continuous"
        self.noise = _noise_of_epsilon(epsilon, lambda: Noise("laplace", laplace_scale(1.0, epsilon), discrete))
        if k is not None:
            _check_guarantee("k", f"k = {format_count(k)}", k, epsilon, self.size_policy)
        self._data = _PrivateData(data_or_histogram, n, max_universe, self.size_policy)
        if k is None:
            assert default_k is not None, "k=None needs default_k"
            k = default_k(self._data.universe_size)
            _check_guarantee(default_k_source, f"the default k = {format_count(k)}", k, epsilon, self.size_policy)
        self.k = k
        self.size_noise = _noise_of_epsilon(epsilon, lambda: calibrate(
            PureDP(self._sparse_vector_epsilon / self.size_policy.main_share()), 1.0, self.size_policy, discrete)[1])
        self.size = public_size(self.size_policy, self._data.rows, self.size_noise, generator)
        self._engine = _SparseVector(threshold * self.size, self.noise, self.k, generator)
        self._transcript: list[float | Bottom] = []

    @property
    def _sparse_vector_epsilon(self) -> float:
        return 4 * self.k * self.epsilon

    @property
    def privacy(self) -> PureDP:
        """The guarantee, ``PureDP(4 k epsilon)`` (over ``1 - size_share`` with a size estimate)."""
        return PureDP(self._sparse_vector_epsilon / self.size_policy.main_share())

    @property
    def n(self) -> float:
        """The public size the answers are fractions of (replace-one: the row count)."""
        return self.size

    @property
    def scale(self) -> float:
        """The Laplace scale on the answers: ``1 / (epsilon size)``."""
        return self.noise.scale / self.size

    @property
    def universe_size(self) -> int:
        """The size of the universe the queries are rows over."""
        return self._data.universe_size

    @property
    def remaining(self) -> int:
        """Numerical answers (copies) left before the mechanism halts."""
        return self.k - self._engine.halts

    @property
    def halted(self) -> bool:
        """Whether the mechanism has given its ``k`` numerical answers."""
        return self._engine.halted

    @property
    def transcript(self) -> tuple[float | Bottom, ...]:
        """The outputs, one per query: :data:`BOTTOM` or the noisy number as released (unclipped)."""
        return tuple(self._transcript)

    def _release_noise(self, row: np.ndarray) -> Noise:
        """The noise of a query's released count: :attr:`noise`, continuous for a fractional row."""
        if not self.noise.discrete or np.all((row == 0) | (row == 1)):
            return self.noise
        if self._noise_option == "discrete":
            raise ValueError(
                "query: noise='discrete' needs 0/1 queries (predicates), whose counts are integers; "
                "for queries with fractional values use noise='auto' (the default) or 'continuous'"
            )
        return dataclasses.replace(self.noise, discrete=False)


_T = TypeVar("_T")


def _noise_of_epsilon(epsilon: float, make: Callable[[], _T]) -> _T:
    """``make()``; its ValueError reported as one of ``epsilon``."""
    try:
        return make()
    except ValueError as error:
        raise ValueError(f"epsilon: {epsilon:g} sets noise that cannot be drawn as stated ({error})") from None


def _check_guarantee(name: str, subject: str, k: int, epsilon: float, policy: SizePolicy) -> None:
    """Refuse ``k`` copies whose guarantee ``4 k epsilon`` overflows a float; the error names ``name``."""
    try:
        total = 4.0 * float(k) * epsilon / policy.main_share()
    except OverflowError:  # an int beyond float64's range
        total = math.inf
    if not math.isfinite(total):
        raise ValueError(f"{name}: {subject} copies make the guarantee 4 k epsilon overflow a float; "
                         "ask for fewer copies")


class ThresholdK(_SparseVectorMechanism):
    """``Thr_t^k``: ``k`` copies of the threshold mechanism, one after the other; ``PureDP(4 k epsilon)``.

    A copy answers ⊥ below its noisy threshold, then ``q(x) + N'_i``, and halts; the :attr:`transcript`
    is all that is released (the guarantee is under ``neighbouring``).

    Parameters
    ----------
    data_or_histogram, n
        The private data (a normalized histogram needs its row count ``n``, never released).
    threshold, epsilon, k
        The public threshold ``t`` (a fraction of the size), the noise parameter, the numerical answers.
    rng : numpy.random.Generator, int or None
        The source of continuous noise; OpenDP draws discrete noise, which no seed drives.
    neighbouring, size, size_share, max_universe
        As for :class:`~projmech.mechanisms.GaussianMechanism`; larger universes are refused.
    noise : {"auto", "discrete", "continuous"}
        ``"auto"``: the discrete Laplace, numpy's to release a fractional query (integer noise would
        publish its fraction); ``"discrete"`` refuses those.

    Examples
    --------
    >>> data = pm.Dataset(np.array([[1, 0]] * 160 + [[0, 1]] * 40), pm.Domain(["a", "b"], [2, 2]))
    >>> mechanism = pm.ThresholdK(data, threshold=0.5, epsilon=0.5, k=2)
    >>> print(mechanism.privacy, mechanism.noise.name)
    4-DP discrete_laplace
    >>> mechanism.answer(lambda x: x["a"] == 0)  # 20 % of the rows
    ⊥
    >>> answer = mechanism.answer(lambda x: x["a"] == 1)  # 80 % of the rows, plus noise
    >>> round(answer * 200, 9).is_integer(), mechanism.remaining
    (True, 1)
    """

    @validate_params(threshold=Interval(Real, None, None), k=POSITIVE_INT, **_SPARSE_VECTOR_PARAMETERS)
    def __init__(self, data_or_histogram: Any, threshold: float, epsilon: float, k: int, *,
                 n: int | None = None, rng: np.random.Generator | int | None = None,
                 neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
                 max_universe: int = MW_MAX_UNIVERSE, size: int | str | None = None,
                 size_share: float | None = None, noise: str = "auto") -> None:
        self.threshold = threshold
        self._start(data_or_histogram, epsilon, k, n, rng, neighbouring, max_universe, self.threshold,
                    size, size_share, noise)

    @property
    def answered(self) -> int:
        """Numerical (above-threshold) answers given so far."""
        return self._engine.halts

    def answer(self, query: Query) -> float | Bottom:
        """Answer one averaging query: :data:`BOTTOM` or a noisy number (a fraction of the public size).

        Parameters
        ----------
        query : array_like of shape (m,) or callable
            Its value in ``[0, 1]`` on each universe element, or a vectorized predicate on the attributes.

        Returns
        -------
        float or Bottom
            A MechanismHalted after ``k`` numerical answers.
        """
        if self.halted:
            raise MechanismHalted(
                f"the threshold mechanism halted after its k={self.k} numerical answers"
            )
        row = self._data.row(query)
        release_noise = self._release_noise(row)
        count = self._data.count(row)
        result = self._engine.step(count, count, release_noise)
        entry: float | Bottom = BOTTOM if result is None else result / self.size
        self._transcript.append(entry)
        return entry

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(t={self.threshold:g}, epsilon={self.epsilon:g}, k={self.k}, "
                f"size={self.size:g}, answered={self.answered})")


class Threshold(ThresholdK):
    """``Thr_t``: the threshold mechanism, :class:`ThresholdK` with ``k = 1``; ``PureDP(4 epsilon)``.

    Parameters
    ----------
    data_or_histogram, threshold, epsilon, n, rng, neighbouring, max_universe, size, size_share, noise
        As for :class:`ThresholdK`.

    Examples
    --------
    >>> data = pm.Dataset(np.array([[1, 0]] * 160 + [[0, 1]] * 40), pm.Domain(["a", "b"], [2, 2]))
    >>> mechanism = pm.Threshold(data, threshold=0.5, epsilon=0.5)
    >>> [mechanism.answer(lambda x: x["b"] == 1), mechanism.halted]
    [⊥, False]
    >>> answer = mechanism.answer(lambda x: x["b"] == 0)  # 0.8 plus exact discrete noise
    >>> round(answer * 200, 9).is_integer(), mechanism.halted
    (True, True)
    """

    def __init__(self, data_or_histogram: Any, threshold: float, epsilon: float, *, n: int | None = None,
                 rng: np.random.Generator | int | None = None,
                 neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
                 max_universe: int = MW_MAX_UNIVERSE, size: int | str | None = None,
                 size_share: float | None = None, noise: str = "auto") -> None:
        super().__init__(data_or_histogram, threshold, epsilon, 1, n=n, rng=rng,
                         neighbouring=neighbouring, max_universe=max_universe, size=size,
                         size_share=size_share, noise=noise)
