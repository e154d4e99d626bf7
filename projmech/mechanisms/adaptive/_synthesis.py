"""Synthetic rows from private data in one call."""

from __future__ import annotations

import numpy as np

from ...data import Dataset
from ...privacy import ZCDP, ApproxDP, Neighbouring
from ...validation import POSITIVE_INT, SEED, IsCallable, OrNone, validate_params
from ...workloads import Workload, marginals
from ._mechanism import AdaptiveProjectionMechanism
from ._run import Progress, Synthesis


@validate_params(rng=SEED, progress=OrNone(IsCallable()))
def synthesize(data: Dataset, privacy: ZCDP | ApproxDP, workload: Workload | None = None, *,
               rows: int | None = None, neighbouring: Neighbouring | str = Neighbouring.ADD_REMOVE,
               size: int | str | None = "estimate", size_share: float | None = None, noise: str = "auto",
               rng: np.random.Generator | int | None = None, progress: Progress | None = None) -> Synthesis:
    """Synthetic rows in one call: the adaptive mechanism's release, then rows drawn from its estimate.

    Post-processing of :class:`AdaptiveProjectionMechanism`: the same guarantee (:doc:`/guide/adaptive`).

    Parameters
    ----------
    data : Dataset
        The private data.
    privacy : ZCDP or ApproxDP
        The whole budget (no default: the budget is the curator's decision).
    workload : Workload, optional
        Marginal tables to release; default every 3-way table.
    neighbouring, size, size_share, noise
        As for :class:`AdaptiveProjectionMechanism`; by default add/remove with an estimated size
        (the row count stays private).
    rows, rng, progress
        As for :meth:`AdaptiveProjectionMechanism.synthesize`.

    Returns
    -------
    Synthesis

    Examples
    --------
    >>> data = pm.Dataset(np.random.default_rng(0).integers(0, 2, size=(400, 3)), pm.Domain(["a", "b", "c"], [2, 3, 2]))
    >>> len(pm.synthesize(data, pm.ZCDP(1.0), neighbouring="replace-one", noise="continuous", rng=0).data)
    400
    """
    if not isinstance(data, Dataset):
        raise TypeError(f"data: expected a Dataset, got {type(data).__name__}")
    if rows is not None:
        POSITIVE_INT.check("rows", rows)  # before the mechanism is built
    if workload is None:
        workload = marginals(data.domain, min(3, len(data.domain.sizes)), implicit=True)
    if Neighbouring.parse(neighbouring) is Neighbouring.REPLACE_ONE:
        size, size_share = None, None
    mechanism = AdaptiveProjectionMechanism(workload, privacy, neighbouring=neighbouring, size=size,
                                            size_share=size_share, noise=noise)
    return mechanism.synthesize(data, rows, rng=rng, progress=progress)
