"""One estimator protocol: noisy measurements of tables in, a model of the tables out.

Implementations: :class:`~projmech.tables.MaximumEntropy`, :class:`~projmech.tables.NoisyMarginals`
and :class:`~projmech.bodies.LocalProjection`; each may warm-start from its own earlier model
(``start``, an adaptive mechanism's previous round).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..solve import SolveStats
from ._measurement import Measurement

__all__ = ["Estimator", "TableModel"]


@runtime_checkable
class TableModel(Protocol):
    """What an estimator returns: the tables it estimates, their values, and how it solved.

    Parameters
    ----------
    *args, **kwargs
        None: a protocol is implemented by classes, never instantiated.

    Examples
    --------
    >>> model = pm.tables.MaximumEntropy((2, 2)).estimate([pm.tables.Measurement((0,), np.array([0.5, 0.5]), 0.1)])
    >>> isinstance(model, pm.tables.TableModel), model.tables
    (True, ((0,),))
    """

    @property
    def tables(self) -> tuple[tuple[int, ...], ...]:
        """The attribute sets of the tables estimated."""

    @property
    def stats(self) -> SolveStats:
        """How the estimate was solved."""

    def marginal(self, attributes: Any) -> np.ndarray:
        """The estimated table on some attributes, one axis per attribute.

        Parameters
        ----------
        attributes : sequence of int
            Increasing domain positions.

        Returns
        -------
        numpy.ndarray
        """


@runtime_checkable
class Estimator(Protocol):
    """Measurements in, a :class:`TableModel` out; optionally warm-started.

    Parameters
    ----------
    *args, **kwargs
        None: a protocol is implemented by classes, never instantiated.

    Examples
    --------
    >>> isinstance(pm.tables.NoisyMarginals((2, 3)), pm.tables.Estimator)
    True
    """

    def estimate(self, measurements: Sequence[Measurement], start: Any = None) -> TableModel:
        """The model of the measured tables.

        Parameters
        ----------
        measurements : sequence of Measurement
            The noisy measurements.
        start : TableModel, optional
            An earlier estimate of this estimator's to start from.

        Returns
        -------
        TableModel
        """
