"""The CVXPY solvers installed in this environment, looked up once: ``cvxpy.installed_solvers()``
tries to import every solver module on each call, and the set cannot change while the process
runs. CVXPY itself is imported on the first call, not with this module."""

from __future__ import annotations

import functools

__all__ = ["installed_solvers"]


@functools.cache
def installed_solvers() -> tuple[str, ...]:
    """The names of the installed CVXPY solvers (upper case, as CVXPY spells them)."""
    import cvxpy as cp

    return tuple(cp.installed_solvers())
