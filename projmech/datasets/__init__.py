"""Embedded data sets.

``adult()`` is the discretized UCI Adult census extract (48,842 rows, 14 attributes), the standard
benchmark of the marginal-release literature. See ``ATTRIBUTION.md`` in this folder: UCI Machine
Learning Repository (:cite:t:`BK96`, CC BY 4.0); discretization from Private-PGM (:cite:t:`MSM19`,
Apache-2.0).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

import numpy as np

from ..data import Dataset, Domain
from ..validation import FLAG, validate_params

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["adult", "ADULT_BINARY_THRESHOLDS", "ADULT_DEMO_ATTRIBUTES"]

#: Binarization of Adult: attribute ``a`` becomes ``1`` when its code is ``>= ADULT_BINARY_THRESHOLDS[a]``.
#: Ordered attributes are split at the code closest to a balanced split (age, fnlwgt,
#: education-num, occupation, relationship, hours-per-week); attributes whose code 0 is the
#: dominant category are split "code 0 vs the rest" (workclass, marital-status, race,
#: capital-gain, capital-loss, native-country); binary ones are kept (sex, income>50K).
#: Fractions of ones on the full data: age .489, workclass .306, fnlwgt .527, education-num .546,
#: marital-status .542, occupation .507, relationship .393, race .145, sex .668,
#: capital-gain .081, capital-loss .047, hours-per-week .294, native-country .103, income>50K .239.
ADULT_BINARY_THRESHOLDS: dict[str, int] = {
    "age": 22,
    "workclass": 1,
    "fnlwgt": 11,
    "education-num": 9,
    "marital-status": 1,
    "occupation": 5,
    "relationship": 3,
    "race": 1,
    "sex": 1,
    "capital-gain": 1,
    "capital-loss": 1,
    "hours-per-week": 40,
    "native-country": 1,
    "income>50K": 1,
}

#: Ten binary attributes used by the demo and the error-vs-n benchmark (fnlwgt, a sampling
#: weight, and the three sparsest splits are left out): 2^10 = 1024 cells, 180 two-way cells.
ADULT_DEMO_ATTRIBUTES: tuple[str, ...] = (
    "age",
    "workclass",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "hours-per-week",
    "income>50K",
)


@lru_cache(maxsize=1)
def _adult_frame() -> tuple[pd.DataFrame, dict[str, int]]:
    import pandas as pd  # imported where a frame is read: it is slow to import

    folder = resources.files(__name__)
    with folder.joinpath("adult-domain.json").open("r", encoding="utf-8") as handle:
        sizes = json.load(handle)
    with folder.joinpath("adult.csv.gz").open("rb") as handle:
        frame = pd.read_csv(handle, compression="gzip")
    return frame, sizes


@validate_params(binary=FLAG)
def adult(binary: bool = False, attributes: Sequence[str] | None = None) -> Dataset:
    """The discretized UCI Adult census extract (48,842 rows, 14 attributes) :cite:p:`BK96`.

    Parameters
    ----------
    binary
        If true, attribute ``a`` is 1 where its code is at least ``ADULT_BINARY_THRESHOLDS[a]``, else 0.
    attributes
        Keep only these attributes, in this order (default all 14).

    Returns
    -------
    Dataset
        The rows in memory, over the integer codes of Private-PGM :cite:p:`MSM19`.

    Examples
    --------
    >>> small = pm.datasets.adult(binary=True, attributes=["sex", "income>50K"])
    >>> small.domain
    Domain(sex: 2, income>50K: 2)
    >>> small.table([0, 1]).tolist()  # rows by sex and income
    [[14423, 1769], [22732, 9918]]
    """
    frame, sizes = _adult_frame()
    if isinstance(attributes, str):
        raise TypeError(f"attributes: expected a sequence of names, got the str {attributes!r}")
    names = list(sizes) if attributes is None else list(attributes)
    unknown = [a for a in names if a not in sizes]
    if unknown:
        raise ValueError(f"attributes: {unknown} are not Adult attributes; choose from {list(sizes)}")
    if len(set(names)) != len(names):
        raise ValueError(f"attributes: repeated names in {names}")
    records = frame[names].to_numpy(dtype=np.int64)
    if binary:
        thresholds = np.array([ADULT_BINARY_THRESHOLDS[a] for a in names])
        return Dataset((records >= thresholds).astype(np.int64), Domain(names, [2] * len(names)))
    return Dataset(records, Domain(names, [sizes[a] for a in names]))
