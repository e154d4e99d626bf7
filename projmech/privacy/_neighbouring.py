"""Neighbouring relations, the sensitivity of counts under each, and the public size (:doc:`/theory/privacy`)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..validation import (
    ENUM_LOOKUP_SIGNATURE,
    FLAG,
    NONNEGATIVE,
    OPEN_UNIT,
    POSITIVE_INT,
    Integral,
    Interval,
    Options,
    OrNone,
    Real,
    check_positive_int,
    validate_params,
)
from ._definitions import ApproxDP, LargeDeltaWarning, Privacy, _large_delta_advice

__all__ = ["Neighbouring", "SizePolicy", "ESTIMATE_SIZE", "DEFAULT_SIZE_SHARE"]

#: The orders of the norms a count sensitivity is stated in.
_SENSITIVITY_ORD = Options(1, 2)


class Neighbouring(str, Enum):
    """Which data sets count as neighbours (:doc:`/theory/privacy`).

    ``REPLACE_ONE`` (bounded DP, the default): one row replaced; ``n`` is public and divides the counts.
    ``ADD_REMOVE`` (unbounded DP): one row added or removed; the row count is private, so the counts
    are divided by a declared or privately estimated size (:class:`SizePolicy`).

    Parameters
    ----------
    value : {"replace-one", "add-remove"}
        The relation's name.

    Examples
    --------
    >>> pm.Neighbouring("add-remove").count_sensitivity(1.0), pm.Neighbouring.REPLACE_ONE.count_sensitivity(1.0, ord=1)
    (1.0, 2.0)
    """

    REPLACE_ONE = "replace-one"
    ADD_REMOVE = "add-remove"

    __signature__ = ENUM_LOOKUP_SIGNATURE

    @validate_params(column_norm=NONNEGATIVE, ord=_SENSITIVITY_ORD, nonnegative=FLAG)
    def count_sensitivity(self, column_norm: float, ord: float = 2, *, nonnegative: bool = False,
                          column_distance: float | None = None) -> float:
        """The l_p sensitivity of the counts ``F c``: ``column_norm`` under add/remove, at most twice under replace-one.

        Parameters
        ----------
        column_norm : float
            ``||F||_{1->p}``, ``>= 0``.
        ord : {1, 2}, default 2
            1 for Laplace noise, 2 for Gaussian.
        nonnegative : bool, default False
            Whether F has no negative entry (replace-one l2: ``sqrt(2) column_norm``).
        column_distance : float, optional
            ``max over u != v of ||F_u - F_v||_2``, used in l2 under replace-one only.

        Returns
        -------
        float
        """
        if self is Neighbouring.ADD_REMOVE:
            return column_norm
        bound = (math.sqrt(2.0) if ord == 2 and nonnegative else 2.0) * column_norm
        if ord == 2 and column_distance is not None:
            # Both are upper bounds on the sensitivity (the distance one up to its rounding margin,
            # see projmech.workloads.max_column_distance); the smaller is the calibration.
            return min(NONNEGATIVE.check("column_distance", column_distance), bound)
        return bound

    @validate_params(n=POSITIVE_INT)
    def sensitivity(self, column_norm: float, n: int, *, ord: float = 2, nonnegative: bool = False) -> float:
        """The sensitivity of the answers ``F c / n`` for a public size ``n``: a planning figure.

        Parameters
        ----------
        column_norm, ord, nonnegative
            As for :meth:`count_sensitivity`.
        n : int
            The public size.

        Returns
        -------
        float
        """
        return self.count_sensitivity(column_norm, ord, nonnegative=nonnegative) / n

    @classmethod
    def parse(cls, value: Neighbouring | str) -> Neighbouring:
        """The relation named ``value``.

        Parameters
        ----------
        value : Neighbouring or {"replace-one", "add-remove"}
            A relation or its name.

        Returns
        -------
        Neighbouring
        """
        return cls(_NEIGHBOURING.check("neighbouring", value))


_NEIGHBOURING = Options(*(relation.value for relation in Neighbouring))


#: ``size="estimate"``: estimate the private row count from a share of the privacy budget.
ESTIMATE_SIZE = "estimate"

#: Default share of the budget spent on the size estimate (the split: the theory page ``docs/theory/privacy.md``).
DEFAULT_SIZE_SHARE = 0.05

#: The share of a budget spent on a size estimate (0: none).
_SHARE = Interval(Real, 0, 1, closed="left")

#: A declared size, or the word asking for an estimate.
_ESTIMATE = Options(ESTIMATE_SIZE)


@dataclass(frozen=True)
class SizePolicy:
    """How a mechanism turns counts into fractions without using a private size (:doc:`/theory/privacy`).

    Replace-one: ``n`` is public. Add/remove: a declared public size, or a private estimate bought
    with a ``share`` of the budget; :meth:`parse` reads a mechanism's ``size=``.

    Parameters
    ----------
    neighbouring : Neighbouring or {"replace-one", "add-remove"}
        The neighbouring relation.
    declared : int, optional
        Under add/remove, a size declared public (e.g. a published population total).
    share : float, default 0.0
        Under add/remove, the share of the budget, in ``[0, 1)``, spent on a noisy row count.

    Examples
    --------
    >>> policy = pm.SizePolicy.parse("add-remove", "estimate")
    >>> policy.source, policy.share, policy.main_share()
    ('estimated', 0.05, 0.95)
    >>> pm.SizePolicy.parse("add-remove", 48_842).resolve(100, lambda: 0.0)  # declared: not the rows
    48842.0
    """

    neighbouring: Neighbouring
    declared: int | None = None
    share: float = 0.0

    def __post_init__(self) -> None:
        # Built by parse() from a mechanism's arguments, or directly (a planning figure needs a
        # relation only): checked the same way either way.
        object.__setattr__(self, "neighbouring", Neighbouring.parse(self.neighbouring))
        object.__setattr__(self, "declared", OrNone(POSITIVE_INT).check("declared", self.declared))
        object.__setattr__(self, "share", _SHARE.check("share", self.share))
        if self.neighbouring is Neighbouring.REPLACE_ONE and (self.declared is not None or self.share):
            raise ValueError("declared, share: apply to add-remove neighbours only; under replace-one n is public")
        if self.declared is not None and self.share:
            raise ValueError("declared, share: a declared size is not estimated; give one or the other")

    @classmethod
    def parse(cls, neighbouring: Neighbouring | str, size: int | str | None, *,
              size_share: float | None = None) -> SizePolicy:
        """Validate a mechanism's ``neighbouring``, ``size`` and ``size_share`` arguments.

        Parameters
        ----------
        neighbouring : Neighbouring or {"replace-one", "add-remove"}
            The neighbouring relation.
        size : int, "estimate" or None
            None under replace-one; under add/remove a declared public size or ``"estimate"``.
        size_share : float, optional
            With ``size="estimate"``, the budget's share for it; default :data:`DEFAULT_SIZE_SHARE`.

        Returns
        -------
        SizePolicy
        """
        relation = Neighbouring.parse(neighbouring)
        if relation is Neighbouring.REPLACE_ONE:
            if size is not None:
                raise ValueError(
                    f"size: applies to add-remove neighbours only; under replace-one the size n is public "
                    f"and taken from the data, got size={size!r}"
                )
            if size_share is not None:
                raise ValueError("size_share: applies only with neighbouring='add-remove' and size='estimate'")
            return cls(relation)
        if size is None:
            raise ValueError(
                "size: under add-remove neighbours the row count is private; declare a public size "
                "(size=N, e.g. a published total: answers are counts / N) or estimate it privately "
                f"(size='estimate', spending size_share={DEFAULT_SIZE_SHARE} of the budget on a noisy count)"
            )
        if isinstance(size, str):
            _ESTIMATE.check("size", size)
            share = DEFAULT_SIZE_SHARE if size_share is None else OPEN_UNIT.check("size_share", size_share)
            return cls(relation, share=share)
        declared = check_positive_int("size", size)
        if size_share is not None:
            raise ValueError("size_share: applies only with size='estimate', not to a declared size")
        return cls(relation, declared=declared)

    @property
    def estimated(self) -> bool:
        """Whether the size is estimated privately (a positive ``share``)."""
        return self.share > 0

    @property
    def source(self) -> str:
        """``"public n"`` (replace-one), ``"declared"`` or ``"estimated"``."""
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            return "public n"
        return "estimated" if self.estimated else "declared"

    def main_share(self) -> float:
        """The share of the budget left for the mechanism itself, ``1 - share``.

        Returns
        -------
        float
        """
        return 1.0 - self.share

    def check_dataset_n(self, n: Any, rows: int) -> None:
        """Check an ``n`` passed beside a Dataset: equal to its rows under replace-one, refused under add/remove.

        Comparing the private row count with a guess would tell whether the guess is right.

        Parameters
        ----------
        n : int or None
            The size passed by the caller (None: nothing to check).
        rows : int
            The data set's row count.
        """
        if n is None:
            return
        if self.neighbouring is Neighbouring.ADD_REMOVE:
            raise ValueError(
                "n: under add-remove neighbours the row count is private and is taken from the Dataset; "
                "do not pass n (declare a public size with size= instead)"
            )
        if _ROW_COUNT.check("n", n) != rows:
            raise ValueError(f"n: given {n} but the data set has {rows} rows")

    def check_delta(self, privacy: Privacy, rows: int) -> None:
        """Warn (:class:`LargeDeltaWarning`) when an ApproxDP's delta is at least ``1/n`` for a public ``n``.

        A private size is never compared, so the warning tells nothing about the data.

        Parameters
        ----------
        privacy : ZCDP, ApproxDP or PureDP
            The guarantee.
        rows : int
            The data's row count, compared under replace-one only.
        """
        if not isinstance(privacy, ApproxDP):
            return
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            n = float(rows)
        elif self.declared is not None:
            n = float(self.declared)
        else:
            return
        if n >= 1 and privacy.delta >= 1.0 / n:
            # stacklevel 3: the caller of the mechanism's release, which called this.
            warnings.warn(LargeDeltaWarning("delta", f"{privacy.delta:g} is at least 1/n for the public size "
                                            f"n = {n:g} ({self.source}); " + _large_delta_advice(privacy.delta, n)),
                          stacklevel=3)

    def resolve(self, rows: int, draw_size_noise: Callable[[], float]) -> float:
        """The public size for data of ``rows`` rows: ``rows``, the declared size, or ``max(1, rows + noise)``.

        Parameters
        ----------
        rows : int
            The data set's row count (at least 1 under replace-one).
        draw_size_noise : callable
            One draw of the size estimate's noise, called only when the size is estimated.

        Returns
        -------
        float
        """
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            if rows < 1:
                raise ValueError(
                    "data: the data set has no rows; under replace-one neighbours the size n is public and "
                    "divides the counts, so it must be at least 1 (under add-remove an empty data set is "
                    "released with a declared or estimated size)"
                )
            return float(rows)
        if self.declared is not None:
            return float(self.declared)
        return max(1.0, rows + float(draw_size_noise()))


#: A row count: an int >= 0 (an empty data set has one).
_ROW_COUNT = Interval(Integral, 0, None)

