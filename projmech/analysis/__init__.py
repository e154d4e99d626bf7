"""Analysis: the geometry of the bodies (support functions, widths), error bounds with the data
sizes they need, and error measures over repeated releases. See :doc:`/theory/geometry` and
:doc:`/theory/bounds`.
"""

from __future__ import annotations

from . import bounds, evaluation, geometry
from .bounds import *  # noqa: F403
from .evaluation import *  # noqa: F403
from .geometry import *  # noqa: F403

__all__ = [*geometry.__all__, *bounds.__all__, *evaluation.__all__]

# What other folders use beyond the public API above (not part of it).
from ._experiments import error_vs_n, format_number, format_table, plot_error_vs_n, pyplot
