"""One estimator protocol: noisy measurements of tables in, a model of the tables out.

The implementations are :class:`~projmech.tables.MaximumEntropy`,
:class:`~projmech.tables.NoisyMarginals` and the local-polytope projection
:class:`~projmech.bodies.LocalProjection`. Each takes an optional ``start``, a model it
returned before on fewer measurements (an adaptive mechanism's previous round), where its
algorithm can start from it; ``start=None`` is the cold start.
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
    >>> from projmech.tables import MaximumEntropy, Measurement, TableModel
    >>> model = MaximumEntropy((2, 2)).estimate([Measurement((0,), np.array([0.5, 0.5]), 0.1)])
    >>> isinstance(model, TableModel), model.tables
    (True, ((0,),))
    """

    @property
    def tables(self) -> tuple[tuple[int, ...], ...]:
        """The attribute sets of the tables estimated."""

    @property
    def stats(self) -> SolveStats:
        """How the estimate was solved."""

    def marginal(self, attributes: Any) -> np.ndarray:
        """The estimated table on some attributes.

        Parameters
        ----------
        attributes : sequence of int
            Increasing domain positions.

        Returns
        -------
        numpy.ndarray
            The table, one axis per attribute.
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
    >>> from projmech.tables import Estimator, NoisyMarginals
    >>> isinstance(NoisyMarginals((2, 3)), Estimator)
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
            The estimate.
        """
