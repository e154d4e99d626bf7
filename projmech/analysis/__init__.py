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
