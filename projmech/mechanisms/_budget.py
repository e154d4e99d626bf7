"""Whether a budget leaves the measured counts any signal: the check the mechanisms make before they
spend (derived in the guide's ``docs/guide/adaptive.md``)."""

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

    Raised before spending where the noise of a measured count exceeds the mean count ``n / c`` of a
    cell in at least half of the measured tables; it names the least budget that avoids it
    (``docs/guide/adaptive.md``). It is for the data's curator, not the release: under add/remove
    without a declared size it reads the private row count, so its text must not be published.

    Parameters
    ----------
    part, detail : str
        The part of ``privacy`` (its :attr:`argument`) to raise, ``"rho"`` or ``"epsilon"``; the message.

    Examples
    --------
    >>> import warnings
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
    """The ``stacklevel`` of the first frame outside projmech, for a warning raised by our caller."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame: types.FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def table_shares(workload: Workload) -> tuple[list[float], bool] | None:
    """The mean count per row of a cell of each of the workload's tables (``w / c``), False beside them;
    else each query's answer on the uniform distribution, True beside them; else None.
    """
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
    """The size the check reads, what it is and whether it is private (the row count under add/remove)."""
    if policy.neighbouring is Neighbouring.REPLACE_ONE:
        return float(rows), "the row count, public under replace-one neighbours", False
    if policy.declared is not None:
        return float(policy.declared), "the declared size", False
    return float(rows), "the row count, private under add-remove neighbours", True


def budget_warning(privacy: Privacy, noise: float, noise_at: Callable[[Privacy], float], shares: Sequence[float],
                   policy: SizePolicy, rows: int, *, noise_name: str, tables_name: str,
                   queries: bool = False) -> BudgetWarning | None:
    """The :class:`BudgetWarning` when ``noise`` exceeds the mean count of a cell in at least half of
    the tables (per-row ``shares``), naming the least budget (by bisection on ``noise_at``); else None.
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
    """Warn with ``warning`` at the user's call, if there is one."""
    if warning is not None:
        # A fresh instance each time: raised as an error, the kept one would hold the traceback
        # (and through it the data) in the mechanisms' cache.
        warnings.warn(BudgetWarning(warning.part, warning.detail), stacklevel=_caller_level())


def _least_budget(privacy: Privacy, noise_at: Callable[[Privacy], float], target: float) -> float | None:
    """The least rho or epsilon (same delta) at which ``noise_at`` is at most ``target``, rounded up;
    None beyond :data:`_SEARCH_RANGE` times the budget or where the calibration refuses one.
    """
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
