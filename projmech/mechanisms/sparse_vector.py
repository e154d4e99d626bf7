"""The sparse vector technique: the threshold mechanism ``Thr_t`` and its k-fold product ``Thr_t^k``.

The sparse vector technique :cite:p:`DNRRV09` answers many queries while paying only for those
whose answer lies above a threshold. :class:`Threshold` is AboveThreshold :cite:p:`DR14`
(§3.6) with the number released: it answers ⊥ (:data:`BOTTOM`) to every query below a noisy
threshold and a noisy number to the first one above it, then halts; :class:`ThresholdK` runs
``k`` fresh copies one after the other. The variants of the technique and their (sometimes
wrong) analyses are surveyed by :cite:t:`LSL17`.

Interactive: the mechanism holds the private data and answers one query at a time; what the
inquirer sees (its *transcript*) is, per query, either the symbol ⊥ or a noisy number, and after
the last number the mechanism halts (:class:`MechanismHalted`). Its privacy deteriorates with
the number ``k`` of numerical answers, not with the number of queries.

Units: queries are averaging queries (rows with values in ``[0, 1]`` over the universe, or
predicates), answered as fractions of a public size ``N`` as everywhere in the library: ``n``
under replace-one, a declared or privately estimated size under add/remove
(:class:`~projmech.privacy.guarantees.SizePolicy`). The mechanism runs on counts, with Laplace noise of
scale ``1/epsilon`` and threshold ``t N``, and divides every released number by the public
``N``, a bijection of transcripts; one row replaced, added or removed moves every count by at
most 1. The privacy accounting (``4 epsilon`` per copy, ``4 k epsilon`` in all) is derived in the
theory page *Online private multiplicative weights* (``docs/theory/online_pmw.md``).

Noise: by default (``noise="auto"``) the exact discrete Laplace of :mod:`projmech.privacy.noise`
(OpenDP) on the integer counts of 0/1 queries, so that no released number has low-order bits to
attack :cite:p:`Mir12`; numpy's continuous Laplace only where the released count is not an
integer (a query with fractional values), or everywhere with ``noise="continuous"``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from enum import Enum
from typing import Any, TypeVar, cast

import numpy as np

from ..data.dataset import MW_MAX_UNIVERSE, Dataset, histogram, resolve_rows
from ..data.domain import Domain
from ..privacy.guarantees import Neighbouring, PureDP, SizePolicy, laplace_scale
from ..privacy.noise import NOISE_KINDS, Noise, calibrate, public_size
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
    """The type of :data:`BOTTOM`, the symbol ⊥ of a transcript.

    ⊥ stands for "below the threshold" in :class:`ThresholdK` and for "the public estimate is
    correct" in :class:`~projmech.mechanisms.online_pmw.OnlinePMW`. It has one member, so test for it by
    identity (``entry is BOTTOM``).

    Parameters
    ----------
    value : {"⊥"}
        The member's value: looking it up returns the one member, ``Bottom("⊥") is BOTTOM``.

    See Also
    --------
    ThresholdK.transcript : The entries a sparse-vector mechanism has released.

    Examples
    --------
    >>> import projmech as pm
    >>> from projmech.mechanisms.sparse_vector import Bottom
    >>> Bottom("⊥") is pm.BOTTOM
    True
    >>> print(pm.BOTTOM)
    ⊥
    """

    BOTTOM = "⊥"

    __signature__ = ENUM_LOOKUP_SIGNATURE

    def __repr__(self) -> str:
        return "⊥"

    __str__ = __repr__


#: The symbol ⊥ of a transcript: the mechanism answered without a number.
BOTTOM = Bottom.BOTTOM


class MechanismHalted(RuntimeError):
    """Raised by an interactive mechanism asked a query after it halted.

    :class:`ThresholdK` halts after its ``k`` numerical answers, and
    :class:`~projmech.mechanisms.online_pmw.OnlinePMW` after its ``k`` updates: answering more would spend
    privacy beyond the mechanism's guarantee.

    Examples
    --------
    >>> import numpy as np, projmech as pm
    >>> domain = pm.Domain(["a", "b"], [2, 2])
    >>> data = pm.Dataset(np.array([[1, 0]] * 160 + [[0, 1]] * 40), domain)
    >>> mechanism = pm.Threshold(data, threshold=0.5, epsilon=0.5, rng=np.random.default_rng(0))
    >>> answer = mechanism.answer(lambda x: x["a"] == 1)  # far above 0.5: a number, then halt
    >>> try:
    ...     mechanism.answer(lambda x: x["b"] == 1)
    ... except pm.MechanismHalted as error:
    ...     print(error)
    the threshold mechanism halted after its k=1 numerical answers
    """


class _PrivateData:
    """The private input of an interactive mechanism: its counts over the universe and row count.

    Also resolves a query (a row over the universe, or a predicate on the records of a Dataset)
    into a validated row, so that every interactive mechanism takes queries the same way.
    """

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
        """The validated row of ``query``: values in ``[0, 1]`` on every universe element."""
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
    """The engine of ``Thr_t^k``: noisy thresholds, noisy comparisons, noisy releases, on counts.

    Each copy of ``Thr_t`` draws ``T = t + N`` (``N`` from the noise); a query is compared as
    ``c + N_i < T`` (fresh ``N_i``): ⊥; otherwise the copy releases ``v + N'_i`` (fresh
    ``N'_i``) and halts, and the next copy starts with a fresh threshold, until ``k`` copies
    have halted. The compared value ``c`` and the released ``v`` are the same query's count in
    ``Thr_t``; the Hardt–Rothblum mechanism compares ``|q(x) - q(y)|`` and releases ``q(x)``
    (in counts). The privacy proof (``docs/theory/online_pmw.md``) uses only that the compared
    values and the released value are each 1-Lipschitz in counts, with
    Laplace noise of scale ``1/epsilon``: ``e^{3 epsilon}`` from the comparisons and the
    threshold, ``e^epsilon`` from the release, ``4 epsilon`` per copy.

    The discrete Laplace of the same scale serves as well. The proof shifts the threshold's
    noise by one count and the crossing comparison's by two: whole counts, so each shift maps the
    integers onto themselves and costs ``e^epsilon`` and ``e^{2 epsilon}`` as for the continuous
    Laplace, whatever the (real) threshold ``t N`` and compared values; a ⊥ only needs the noise's
    CDF to be monotone. The release is the one place that needs an integer: an integer count plus
    integer noise moves by one count between neighbours (``e^epsilon``), whereas integer noise on
    a fractional count would publish its fractional part. So the threshold and the comparisons
    take :attr:`noise`, and each release the noise its caller chose for the released value.

    All state is private: nothing here is meant to be shown to the inquirer but the returns of
    :meth:`step`.
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
        """``None`` (⊥) or ``released`` plus a draw of ``release_noise`` (of the engine's scale);
        the caller checks :attr:`halted` first."""
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
    """What :class:`ThresholdK` and :class:`~projmech.mechanisms.online_pmw.OnlinePMW` share: the private
    data, Laplace noise of scale ``1/epsilon`` on counts (exact discrete unless
    ``noise="continuous"``), the public size, ``k`` copies of a sparse-vector test, the
    transcript and the guarantee (``4 epsilon`` per copy, composed over the k copies, plus the
    size estimate's share)."""

    def _start(self, data_or_histogram: Any, epsilon: float, k: int | None, n: int | None,
               generator: np.random.Generator, neighbouring: Neighbouring | str, max_universe: int,
               threshold: float, size: int | str | None, size_share: float | None, noise: str,
               default_k: Callable[[int], int] | None = None, default_k_source: str = "k") -> None:
        """Set up the state from arguments the constructor checked (the size policy is checked
        here, before the data is read); ``k=None`` takes ``default_k(universe size)``, derived
        from the argument ``default_k_source``; ``threshold`` is a fraction of the size."""
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
        """The guarantee, ``PureDP(4 k epsilon)``.

        ``4 epsilon`` per copy of the threshold test, composed over the ``k`` copies (derived in
        ``docs/theory/online_pmw.md``); with a size estimate, ``4 k epsilon / (1 - size_share)``:
        the estimate takes ``size_share`` of the total.
        """
        return PureDP(self._sparse_vector_epsilon / self.size_policy.main_share())

    @property
    def n(self) -> float:
        """The public size the answers are fractions of (replace-one: the row count)."""
        return self.size

    @property
    def scale(self) -> float:
        """The Laplace scale on the answers (fractions of the public size): ``1 / (epsilon size)``."""
        return self.noise.scale / self.size

    @property
    def universe_size(self) -> int:
        """The number of elements of the universe the queries are rows over."""
        return self._data.universe_size

    @property
    def remaining(self) -> int:
        """Numerical answers (copies) left before the mechanism halts."""
        return self.k - self._engine.halts

    @property
    def halted(self) -> bool:
        """Whether the mechanism has given its ``k`` numerical answers and answers no more."""
        return self._engine.halted

    @property
    def transcript(self) -> tuple[float | Bottom, ...]:
        """The mechanism's outputs, one per query: :data:`BOTTOM` or the noisy number released.

        The number is recorded as released, before any post-processing:
        :meth:`OnlinePMW.answer <projmech.mechanisms.online_pmw.OnlinePMW.answer>` returns it clipped to
        ``[0, 1]``, while the public distribution is updated from the recorded number.
        """
        return tuple(self._transcript)

    def _release_noise(self, row: np.ndarray) -> Noise:
        """The noise of the query's released count, chosen from the public row before any draw.

        A 0/1 row's count is an integer and takes :attr:`noise`. A fractional row's count is
        not, and integer noise on it would publish its fractional part: under ``"auto"`` it takes
        the continuous Laplace of the same scale, under ``"discrete"`` it is refused.
        """
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
    """``make()``, a noise whose scale ``epsilon`` set; a ValueError it raises (a scale its
    sampler cannot draw as stated) is reported as one of ``epsilon``, the caller's argument."""
    try:
        return make()
    except ValueError as error:
        raise ValueError(f"epsilon: {epsilon:g} sets noise that cannot be drawn as stated ({error})") from None


def _check_guarantee(name: str, subject: str, k: int, epsilon: float, policy: SizePolicy) -> None:
    """Refuse ``k`` copies whose guarantee ``4 k epsilon`` (over the size policy's main share) is
    no finite float; the error names the argument ``name`` that set ``k``.

    Nothing loops over ``k`` (the inquirer's queries drive the copies, one per numerical answer),
    so a large ``k`` costs no time and is the caller's choice of guarantee; only the float of the
    guarantee has a limit, which an astronomical ``k`` (an explicit one, or the default of a tiny
    ``alpha``) would pass.
    """
    try:
        total = 4.0 * float(k) * epsilon / policy.main_share()
    except OverflowError:  # an int beyond float64's range
        total = math.inf
    if not math.isfinite(total):
        raise ValueError(f"{name}: {subject} copies make the guarantee 4 k epsilon overflow a float; "
                         "ask for fewer copies")


class ThresholdK(_SparseVectorMechanism):
    """``Thr_t^k``: ``k`` copies of the threshold mechanism, one after the other.

    The sparse vector technique :cite:p:`DNRRV09` with numerical answers: AboveThreshold
    :cite:p:`DR14` (§3.6), each copy releasing a noisy value of the query that crossed the
    threshold, restarted with a fresh threshold until ``k`` copies have halted. It emulates a
    fresh, independent copy of ``Thr_t`` (:class:`Threshold`) until that copy halts, ``k``
    times:

    - each copy draws a private noisy threshold ``T = t + N``, ``N ~ Lap(b)``;
    - on query ``q``: if ``q(x) + N_i < T`` (fresh ``N_i ~ Lap(b)``) the answer is ⊥;
      otherwise it is the number ``q(x) + N'_i`` (fresh ``N'_i ~ Lap(b)``) and the copy halts;
    - after the ``k``-th number the mechanism halts: :meth:`answer` raises
      :class:`MechanismHalted`.

    with ``b = 1/epsilon`` on counts, the threshold ``t N`` on counts and every released number
    divided by the public size ``N``.

    **Noise** (``noise="auto"``, the default): every draw is OpenDP's exact discrete Laplace of
    scale ``b`` (:mod:`projmech.privacy.noise`): the noisy threshold is ``t N + Z`` with ``Z`` an
    integer (``t N`` itself may be any real), compared with ``c + Z_i`` for the query's count
    ``c``, and a 0/1 query's count, an integer, is released as ``c + Z'_i``, an integer, before
    the division by ``N``. A query with fractional values has a fractional count, which integer
    noise would not hide: its release (only) takes numpy's continuous Laplace of the same scale.
    ``noise="discrete"`` refuses such queries instead; ``noise="continuous"`` takes numpy's
    Laplace for every draw (reproducible from ``rng``, but open to the floating-point attacks
    of :cite:t:`Mir12`).

    **What the inquirer sees** (:attr:`transcript`): per query ⊥ or a noisy number; the noisy
    thresholds and the true answers stay in private (underscore) state with no accessor.

    **Privacy**: ``PureDP(4 k epsilon)`` (:attr:`privacy`) w.r.t. either neighbouring relation,
    with either noise. A query's count moves by at most 1 between neighbours (its row lies in
    ``[0, 1]``), so each copy is ``4 epsilon``-DP (``3 epsilon`` for the noisy threshold and
    comparisons, as in the proof for AboveThreshold :cite:p:`DR14,LSL17`, and ``epsilon`` for the
    released number), and ``k`` copies run one after the other compose to ``4 k epsilon``. This
    is AboveThreshold's budget split with the same scale ``b = 1/epsilon`` on the threshold and
    the comparisons (the proof pays ``epsilon`` for the threshold, shifted by one count, and
    ``2 epsilon`` for the crossing comparison, shifted by two; :cite:t:`DR14` split one
    ``epsilon`` instead, with scales ``2/epsilon`` on the threshold and ``4/epsilon`` on the
    comparisons), in counts. For the
    discrete Laplace the shifts are whole counts, which keep every draw on the integers, so the
    proof and the costs are the same; the released count is an integer, so a neighbour moves it
    by one count at the cost ``epsilon``. The derivation is in the theory page *Online private
    multiplicative weights* (``docs/theory/online_pmw.md``). Under add/remove the public size is
    declared or estimated first (its share added to the guarantee), never the row count.

    Parameters
    ----------
    data_or_histogram : Dataset or array_like of shape (m,)
        The private data; a histogram must be normalized and needs ``n``.
    threshold : float
        The public threshold ``t``, as a fraction of the public size.
    epsilon : float
        The noise parameter: every Laplace draw has scale ``1/epsilon`` on counts. The guarantee
        is ``4 k epsilon``, not ``epsilon``.
    k : int
        Number of numerical answers before the mechanism halts (its guarantee must be a finite
        float).
    n : int, optional
        The data's row count; taken from a Dataset (private under add/remove: never released).
    rng : numpy.random.Generator, int or None
        Source of the continuous noise (``None``: fresh OS entropy, never global state). The
        discrete draws come from OpenDP's own cryptographically secure generator, which no seed
        drives: with the default noise a transcript cannot be reproduced.
    neighbouring : {"replace-one", "add-remove"}
        The relation the guarantee is stated for.
    max_universe : int
        Larger universes are refused (the histogram is held densely).
    size : int or "estimate", optional
        Under add/remove, the declared public size or ``"estimate"``, as for
        :class:`~projmech.mechanisms.additive.GaussianMechanism`.
    size_share : float, optional
        With ``size="estimate"``, the share of the total guarantee spent on the size estimate.
    noise : {"auto", "discrete", "continuous"}
        ``"auto"`` (default): the exact discrete Laplace for the thresholds, the comparisons, the
        size estimate and the release of 0/1 queries (predicates), numpy's continuous Laplace
        for the release of a query with fractional values. ``"discrete"``: the same, refusing
        fractional queries. ``"continuous"``: numpy's Laplace throughout, reproducible from
        ``rng``. See **Noise** above.

    Raises
    ------
    ValueError
        If ``threshold``, ``epsilon``, ``k``, ``max_universe``, ``size``, ``size_share`` or
        ``noise`` is out of range, ``k`` copies make the guarantee overflow, or the data is not
        a Dataset or a normalized histogram.
    TypeError
        If an argument has the wrong type (for instance ``k`` not an int).

    See Also
    --------
    Threshold : The case ``k = 1``.
    projmech.mechanisms.online_pmw.OnlinePMW : Interactive private multiplicative weights, built on this test.

    Examples
    --------
    Ask which values of ``a`` hold for more than half of the rows; a query below the threshold
    is answered ⊥, and only the numerical answers (at most ``k = 2``) cost privacy. The noise
    is exact: a released number is an integer count over the 200 rows, whatever the draw.

    >>> import numpy as np, projmech as pm
    >>> domain = pm.Domain(["a", "b"], [2, 2])
    >>> data = pm.Dataset(np.array([[1, 0]] * 160 + [[0, 1]] * 40), domain)
    >>> mechanism = pm.ThresholdK(data, threshold=0.5, epsilon=0.5, k=2)
    >>> print(mechanism.privacy, mechanism.noise.name)
    4-DP discrete_laplace
    >>> mechanism.answer(lambda x: x["a"] == 0)  # 20 % of the rows
    ⊥
    >>> answer = mechanism.answer(lambda x: x["a"] == 1)  # 80 % of the rows, plus noise
    >>> round(answer * 200, 9).is_integer(), mechanism.remaining, mechanism.transcript[0] is pm.BOTTOM
    (True, 1, True)

    With ``noise="continuous"`` the transcript is reproducible from a seed:

    >>> seeded = pm.ThresholdK(data, threshold=0.5, epsilon=0.5, k=2, rng=np.random.default_rng(0),
    ...                        noise="continuous")
    >>> seeded.answer(lambda x: x["a"] == 0), round(seeded.answer(lambda x: x["a"] == 1), 3)
    (⊥, 0.766)
    """

    @validate_params(threshold=Interval(Real, None, None), k=POSITIVE_INT, **_SPARSE_VECTOR_PARAMETERS)
    def __init__(self, data_or_histogram: Any, threshold: float, epsilon: float, k: int, *,
                 n: int | None = None, rng: np.random.Generator | int | None = None,
                 neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
                 max_universe: int = MW_MAX_UNIVERSE, size: int | str | None = None,
                 size_share: float | None = None, noise: str = "auto") -> None:
        self.threshold = threshold
        assert isinstance(rng, np.random.Generator)  # made one by validate_params(rng=SEED)
        self._start(data_or_histogram, epsilon, k, n, rng, neighbouring, max_universe, self.threshold,
                    size, size_share, noise)

    @property
    def answered(self) -> int:
        """Numerical (above-threshold) answers given so far."""
        return self._engine.halts

    def answer(self, query: Query) -> float | Bottom:
        """Answer one averaging query: :data:`BOTTOM` or a noisy number (a fraction of ``n``).

        Parameters
        ----------
        query : array_like of shape (m,) or callable
            Its value on each universe element, in ``[0, 1]``; or, when the data is a Dataset, a
            vectorized predicate as in :func:`~projmech.workloads.from_predicates` (it receives
            ``{attribute: codes}`` and returns one value in ``[0, 1]`` per element).

        Returns
        -------
        float or Bottom
            :data:`BOTTOM` when the noisy count falls below the copy's noisy threshold, else the
            noisy count divided by the public size (which may lie outside ``[0, 1]``; with
            discrete noise, an integer over the size); both are recorded in :attr:`transcript`.

        Raises
        ------
        MechanismHalted
            After ``k`` numerical answers.
        ValueError, TypeError
            On an invalid query, or one with fractional values under ``noise="discrete"``
            (checked before any noise is drawn).
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
    """``Thr_t``: the threshold mechanism, halting after one numerical answer.

    AboveThreshold :cite:p:`DR14` (§3.6) releasing the noisy value of the first query above the
    threshold: ``Thr_t`` is :class:`ThresholdK` with ``k = 1`` (one copy), which describes the
    mechanism, its noise and the transcript. Privacy: ``PureDP(4 epsilon)``, with every Laplace
    draw (threshold, comparisons, release) of scale ``1/epsilon`` on counts, exact discrete by
    default.

    Parameters
    ----------
    data_or_histogram : Dataset or array_like of shape (m,)
        The private data; a histogram must be normalized and needs ``n``.
    threshold : float
        The public threshold ``t``, as a fraction of the public size.
    epsilon : float
        The noise parameter (Laplace scale ``1/epsilon`` on counts); the guarantee is
        ``4 epsilon``.
    n : int, optional
        The data's row count; taken from a Dataset.
    rng : numpy.random.Generator, int or None
        Source of the continuous noise (``None``: fresh OS entropy); discrete draws come from
        OpenDP, which no seed drives.
    neighbouring : {"replace-one", "add-remove"}
        The relation the guarantee is stated for.
    max_universe : int
        Larger universes are refused.
    size : int or "estimate", optional
        Under add/remove, as for :class:`ThresholdK`.
    size_share : float, optional
        As for :class:`ThresholdK`.
    noise : {"auto", "discrete", "continuous"}
        As for :class:`ThresholdK` (default ``"auto"``: exact discrete Laplace on counts).

    See Also
    --------
    ThresholdK : ``k`` numerical answers.

    Examples
    --------
    Find the first attribute value held by more than half of the rows.

    >>> import numpy as np, projmech as pm
    >>> domain = pm.Domain(["a", "b"], [2, 2])
    >>> data = pm.Dataset(np.array([[1, 0]] * 160 + [[0, 1]] * 40), domain)
    >>> mechanism = pm.Threshold(data, threshold=0.5, epsilon=0.5)
    >>> [mechanism.answer(lambda x: x["b"] == 1), mechanism.halted]
    [⊥, False]
    >>> answer = mechanism.answer(lambda x: x["b"] == 0)  # 0.8 plus exact discrete noise
    >>> round(answer * 200, 9).is_integer(), mechanism.halted
    (True, True)

    Seeded continuous noise reproduces its draws:

    >>> seeded = pm.Threshold(data, threshold=0.5, epsilon=0.5, rng=np.random.default_rng(1), noise="continuous")
    >>> seeded.answer(lambda x: x["b"] == 1), round(seeded.answer(lambda x: x["b"] == 0), 3)
    (⊥, 0.823)
    """

    def __init__(self, data_or_histogram: Any, threshold: float, epsilon: float, *, n: int | None = None,
                 rng: np.random.Generator | int | None = None,
                 neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
                 max_universe: int = MW_MAX_UNIVERSE, size: int | str | None = None,
                 size_share: float | None = None, noise: str = "auto") -> None:
        super().__init__(data_or_histogram, threshold, epsilon, 1, n=n, rng=rng,
                         neighbouring=neighbouring, max_universe=max_universe, size=size,
                         size_share=size_share, noise=noise)
