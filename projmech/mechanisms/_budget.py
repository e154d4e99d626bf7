"""Whether a budget leaves the measured counts any signal: the check the mechanisms make before they spend.

A table of ``c`` cells counted over ``n`` rows holds ``n / c`` rows in its mean cell; a measurement
adds noise of standard deviation ``sigma`` to every cell. Where ``sigma > n / c`` (the mean cell's
signal-to-noise ratio ``n / (c sigma)`` is below 1) the noise on the normalized table, about
``sqrt(2/pi) c sigma / n`` in l1, is above 0.8, while two distributions differ by at most 2: the
measurement barely tells the data's table from another. The mechanisms that measure tables of counts
(:class:`~projmech.mechanisms.CountingMechanism`'s release and the adaptive mechanism) warn
with a :class:`BudgetWarning` when that holds for at least half of their tables, before they spend
anything, naming the least budget at which it no longer does (the guide's page *The adaptive
mechanism and synthetic rows*, ``docs/guide/adaptive.md``, derives it).
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import types
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import ArgumentWarning
from ..privacy import ZCDP, ApproxDP, LargeDeltaWarning, Neighbouring, Privacy, PureDP, SizePolicy
from ..workloads import Workload, table_terms

__all__ = ["BudgetWarning"]

#: Significant digits of the least budget a :class:`BudgetWarning` states (rounded up, so that the
#: criterion holds at the value stated).
_DIGITS = 3

#: How far above the budget given the least budget is looked for (a factor).
_SEARCH_RANGE = 1e12


class BudgetWarning(ArgumentWarning):
    """A budget whose noise swamps the counts it measures: the release will carry little of the data.

    Before they spend anything, :func:`~projmech.mechanisms.adaptive.synthesize`, the
    :class:`~projmech.mechanisms.adaptive.AdaptiveProjectionMechanism` and the release of a
    :class:`~projmech.mechanisms.CountingMechanism` (Gaussian, Laplace, projection,
    factorization) compare the noise of a measured count, ``sigma`` (for the adaptive mechanism,
    its first rounds'), with the mean count ``n / c`` of a cell of each table of ``c`` cells they
    measure (a weighted table's ``w n / c``; a workload that is no union of tables counts each query
    as a table, its count were the rows spread uniformly). When ``sigma > n / c`` in at least half
    of the tables, the signal-to-noise ratio of the typical table is below 1 and they warn, naming
    the least epsilon (at the same delta) or rho at which it reaches 1. The derivation is in the
    guide's page *The adaptive mechanism and synthetic rows*.

    The warning is shown to whoever runs the release, the data's curator, and is not part of the
    release: nothing released (the answers, the :class:`~projmech.mechanisms.Release`,
    its summary) depends on it, and it draws no randomness. It reads the public size where there
    is one (the row count under replace-one, a declared size under add/remove); under add/remove
    without a declared size it reads the row count itself, which that relation keeps private, so
    its text must not be published with the release.

    Parameters
    ----------
    part : str
        The part of the budget (``privacy``, its :attr:`argument`) to raise: ``"rho"`` or
        ``"epsilon"``.
    detail : str
        The message after the part's name.

    Examples
    --------
    A 3-way table of 64 cells over 100 rows, measured with noise of sigma 10:

    >>> import warnings
    >>> import numpy as np, projmech as pm
    >>> domain = pm.Domain(["a", "b", "c"], [4, 4, 4])
    >>> data = pm.Dataset(np.random.default_rng(0).integers(0, 4, size=(100, 3)), domain)
    >>> mechanism = pm.GaussianMechanism(pm.marginals(domain, 3), pm.ZCDP(0.01), noise="continuous")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     release = mechanism.release(data, rng=0)
    >>> [w.category.__name__ for w in caught]
    ['BudgetWarning']
    >>> print(str(caught[0].message).split("; ")[1].split(" (")[0])
    rho = 0.41 is the least at which the typical one reaches the noise
    >>> caught[0].message.argument, caught[0].message.part
    ('privacy', 'rho')
    """

    argument = "privacy"


def _caller_level() -> int:
    """The ``stacklevel`` that puts a warning raised by the caller of this function at the first
    frame outside projmech (the user's call, however many of projmech's wrappers lie between)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame: types.FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def table_shares(workload: Workload) -> tuple[list[float], bool] | None:
    """The mean count of a cell of each of the workload's tables, per row: ``w / c`` for a table
    of ``c`` cells weighted ``w``; for a workload that is no union of tables, each query's answer
    on the uniform distribution (then True beside them: queries, not tables). None where neither
    can be computed (an implicit workload of another form over a universe too large to hold)."""
    terms = table_terms(workload)
    if terms is not None and terms.is_marginal:
        cells = [math.prod(terms.sizes[a] for a in subset) for subset in terms.subsets]
        return [abs(w) / c for w, c in zip(terms.weights, cells)], False
    if not workload.accepts_histograms:
        return None
    m = workload.universe_size
    try:
        answers = workload.answer(np.full(m, 1.0 / m))
    except ValueError:  # too many queries to answer a dense histogram
        return None
    return [float(a) for a in np.abs(answers)], True


def size_read(policy: SizePolicy, rows: int) -> tuple[float, str, bool]:
    """The size the check reads, what it is and whether it is private: the public size where
    there is one, else the row count (private under add/remove: read for the curator's warning
    only)."""
    if policy.neighbouring is Neighbouring.REPLACE_ONE:
        return float(rows), "the row count, public under replace-one neighbours", False
    if policy.declared is not None:
        return float(policy.declared), "the declared size", False
    return float(rows), "the row count, private under add-remove neighbours", True


def budget_warning(privacy: Privacy, noise: float, noise_at: Callable[[Privacy], float], shares: Sequence[float],
                   policy: SizePolicy, rows: int, *, noise_name: str, tables_name: str,
                   queries: bool = False) -> BudgetWarning | None:
    """The :class:`BudgetWarning` when ``noise`` exceeds the mean count of a cell in at
    least half of the tables whose per-row mean counts are ``shares``; None when it does not.

    ``noise_at(privacy)`` is the same noise at another budget of the same kind; the least budget
    stated is the smallest at which it is at most the typical table's mean count (the lower
    median of the tables'), found by bisection and rounded up to :data:`_DIGITS` digits.
    """
    if not shares or noise <= 0:
        return None
    size, source, private = size_read(policy, rows)
    typical = statistics.median_low(shares)
    target = size * typical
    if not noise > target:
        return None
    swamped = sum(1 for share in shares if noise > size * share)
    # A private row count is stated to two digits: the warning is the curator's, yet it is printed.
    shown = f"about {float(f'{size:.2g}'):,.0f}" if private else f"{size:g}"
    if queries:
        what, typical_one = "the count a query would have were the rows spread uniformly", f"{target:.2g}"
    else:
        what = "the mean count of a cell, n / cells,"
        typical_one = (f"n / cells = {shown} / {1.0 / typical:.4g}" if private
                       else f"n / cells = {size:g} / {1.0 / typical:.4g} = {target:.3g}")
    name = "rho" if isinstance(privacy, ZCDP) else "epsilon"
    least = _least_budget(privacy, noise_at, target)
    if least is None:
        advice = (f"no {name} that the calibration accepts, up to {_SEARCH_RANGE:g} times the one given, lifts "
                  "the typical one to the noise")
    else:
        at = f" (at delta {privacy.delta:g})" if isinstance(privacy, ApproxDP) else ""
        advice = f"{name} = {least:g}{at} is the least at which the typical one reaches the noise"
    return BudgetWarning(name, (
        f"{privacy} leaves the measured counts little signal: {noise_name}, std {noise:.3g}, is above {what} "
        f"in {swamped} of the {len(shares)} {tables_name} (the typical one: {typical_one}); {advice} "
        f"(signal-to-noise 1), or measure fewer attributes or smaller tables. This warning reads {source} "
        f"(n = {shown}); it is for the data's curator, not part of the release, and nothing released depends on it"))


def warn_budget(warning: BudgetWarning | None) -> None:
    """Warn with ``warning`` (:func:`budget_warning`'s) at the user's call, if there is one."""
    if warning is not None:
        # A fresh instance each time: raised as an error, the kept one would hold the traceback
        # (and through it the data) in the mechanisms' cache.
        warnings.warn(BudgetWarning(warning.part, warning.detail), stacklevel=_caller_level())


def _least_budget(privacy: Privacy, noise_at: Callable[[Privacy], float], target: float) -> float | None:
    """The least rho (ZCDP) or epsilon (ApproxDP at the same delta, PureDP) at which
    ``noise_at`` is at most ``target``, rounded up; None if none is found within
    :data:`_SEARCH_RANGE` times the budget given or the calibration refuses one."""
    def noise(value: float) -> float:
        with warnings.catch_warnings():  # the same delta again: its warning, if any, was given
            warnings.simplefilter("ignore", LargeDeltaWarning)
            if isinstance(privacy, ZCDP):
                return noise_at(ZCDP(value))
            if isinstance(privacy, ApproxDP):
                return noise_at(ApproxDP(value, privacy.delta))
            return noise_at(PureDP(value))

    given = privacy.rho if isinstance(privacy, ZCDP) else privacy.epsilon
    low, high = given, 2.0 * given
    try:
        while noise(high) > target:
            low, high = high, 2.0 * high
            if high > given * _SEARCH_RANGE:
                return None
        while high / low > 1.0 + 1e-9:
            middle = math.sqrt(low * high)
            low, high = (middle, high) if noise(middle) > target else (low, middle)
    except ValueError:  # a calibration that stops short of the budget (classical beyond epsilon 1)
        return None
    return _round_up(high)


def _round_up(value: float) -> float:
    """``value`` rounded up to :data:`_DIGITS` significant digits."""
    unit = 10.0 ** (math.floor(math.log10(value)) - _DIGITS + 1)
    return float(f"{math.ceil(value / unit) * unit:.{_DIGITS}g}")
