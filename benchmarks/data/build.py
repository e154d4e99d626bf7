"""Rebuild the coded public tables of this folder from the raw files of Rdatasets.

Usage::

    python benchmarks/data/build.py RDATASETS [--check]

``RDATASETS`` is a checkout (or an unpacked snapshot) of
https://github.com/vincentarelbundock/Rdatasets: each table is read from the file it was built
from, ``csv/<package>/<item>.csv`` or ``parquet/<package>/<item>.parquet`` (``Table.raw``), or
from the other where that one is absent (the reading is the same: a CSV written from the Parquet
files, NA for missing values, gives the same codes; ``--check`` tells). For each table in
:data:`TABLES` it writes ``<name>.csv.gz`` (a header of attribute names, then one row of integer
codes per record) and ``<name>-domain.json`` (a projmech domain file: each attribute's category
labels, in code order, or its bin edges; ``pm.Domain.from_json`` reads it) beside this script. It
prints whether each raw file is byte for byte the one the committed files were built from (its
SHA-256), and the sanity figures of README.md: rows, sizes, the largest 3-way table and the number
of all 3-way answers, and the most dependent pairs of attributes (Cramér's V). With ``--check``
nothing is written: the rebuilt bytes are compared with the files here and the exit status is 1 on
any difference.

The rules, the same for every table (README.md in this folder lists each table's columns):

- identifier columns, sampling weights and model-derived scores are dropped;
- a categorical column keeps its values as labels in the declared order below (a raw value that is
  not declared stops the build, so a changed source cannot be coded silently). Numbers are written
  as integers (``3.0`` -> ``"3"``); an empty string or a missing value becomes the label ``"NA"``,
  which is declared (last) only where the raw data has missing values;
- a numeric column is cut at fixed edges ``e_0 < ... < e_k``, written in the domain file: code
  ``i`` holds ``e_i <= x < e_{i+1}``, the last bin its right edge too (projmech's ``Bins``). The
  outer edges enclose the column's range and the inner ones are round numbers near its octiles,
  chosen once when the table was added and fixed here (data-dependent edges would leak information
  about private rows; these rows are public benchmark data). A binned column with missing values
  (only ``nass_cds.yearVeh``, one row) is declared as categories: the bins' labels, then ``"NA"``.

The output is deterministic: gzip with no file name and time stamp 0, level 9.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import itertools
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
MISSING = "NA"


@dataclass(frozen=True)
class Column:
    """One attribute: ``source`` coded by ``labels`` (categorical) or cut at ``edges`` (numeric)."""

    name: str
    source: str
    labels: tuple[str, ...] | None = None
    ordered: bool = False
    edges: tuple[float, ...] | None = None
    missing: bool = False  # binned with missing values: declared as the bins' labels, then NA

    @property
    def size(self) -> int:
        if self.labels is not None:
            return len(self.labels)
        assert self.edges is not None
        return len(self.edges) - 1 + self.missing


@dataclass(frozen=True)
class Table:
    """An Rdatasets item, the raw file the committed codes were built from, and its coding."""

    package: str
    item: str
    raw: str  # "csv" or "parquet": the file read when both are present
    raw_sha256: str
    columns: tuple[Column, ...]
    dropped: tuple[str, ...] = field(default=())


def cat(name: str, labels: Sequence[str | int], *, ordered: bool = False, source: str | None = None) -> Column:
    return Column(name, source or name, labels=tuple(str(label) for label in labels), ordered=ordered)


def bins(name: str, edges: list[float], *, missing: bool = False, source: str | None = None) -> Column:
    return Column(name, source or name, edges=tuple(edges), missing=missing)


def number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def bin_labels(edges: tuple[float, ...]) -> list[str]:
    """``[a, b)`` for each bin, ``[a, b]`` for the last: the labels of projmech's ``Bins``."""
    closing = [")"] * (len(edges) - 2) + ["]"]
    return [f"[{number(low)}, {number(high)}{close}" for low, high, close in zip(edges, edges[1:], closing)]


NA = [MISSING]

US_STATES = [
    "Alabama", "Alaska", "Arizona", "Arkansas", "California", "Colorado", "Connecticut", "Delaware",
    "District of Columbia", "Florida", "Georgia", "Hawaii", "Idaho", "Illinois", "Indiana", "Iowa",
    "Kansas", "Kentucky", "Louisiana", "Maine", "Maryland", "Massachusetts", "Michigan", "Minnesota",
    "Mississippi", "Missouri", "Montana", "Nebraska", "Nevada", "New Hampshire", "New Jersey", "New Mexico",
    "New York", "North Carolina", "North Dakota", "Ohio", "Oklahoma", "Oregon", "Pennsylvania",
    "Rhode Island", "South Carolina", "South Dakota", "Tennessee", "Texas", "Utah", "Vermont", "Virginia",
    "Washington", "West Virginia", "Wisconsin", "Wyoming",
]

# The 87 neighbourhood names of carData::MplsStops, in Python's string order.
MPLS_NEIGHBORHOODS = [
    "Armatage", "Audubon Park", "Bancroft", "Beltrami", "Bottineau", "Bryant", "Bryn - Mawr", "CARAG",
    "Camden Industrial", "Cedar - Isles - Dean", "Cedar Riverside", "Central", "Cleveland", "Columbia Park",
    "Como", "Cooper", "Corcoran", "Diamond Lake", "Downtown East", "Downtown West", "ECCO", "East Harriet",
    "East Isles", "East Phillips", "Elliot Park", "Ericsson", "Field", "Folwell", "Fulton", "Hale",
    "Harrison", "Hawthorne", "Hiawatha", "Holland", "Howe", "Humboldt Industrial Area", "Jordan", "Keewaydin",
    "Kenny", "Kenwood", "King Field", "Lind - Bohanon", "Linden Hills", "Logan Park", "Longfellow",
    "Loring Park", "Lowry Hill", "Lowry Hill East", "Lyndale", "Lynnhurst", "Marcy Holmes",
    "Marshall Terrace", "McKinley", "Mid - City Industrial", "Midtown Phillips", "Minnehaha", "Morris Park",
    "Near - North", "Nicollet Island - East Bank", "North Loop", "Northeast Park", "Northrop", "Page",
    "Phillips West", "Powderhorn Park", "Prospect Park - East River Road", "Regina", "Seward", "Sheridan",
    "Shingle Creek", "St. Anthony East", "St. Anthony West", "Standish", "Steven's Square - Loring Heights",
    "Sumner - Glenwood", "Tangletown", "University of Minnesota", "Ventura Village", "Victory", "Waite Park",
    "Webber - Camden", "Wenonah", "West Calhoun", "Whittier", "Willard - Hay", "Windom", "Windom Park",
]

MPLS_RACES = ["White", "Black", "East African", "Latino", "Native American", "Asian", "Other", "Unknown", MISSING]

TABLES: dict[str, Table] = {
    # Medical Expenditure Panel Survey 1996 (AER::HealthInsurance): 8,802 rows.
    "health_insurance": Table(
        "AER", "HealthInsurance", "csv", "04b0608b161da60a3421690f76e7ed8067b21700760717788fba6a4ac288ccbc", (
        cat("health", ["no", "yes"]),
        bins("age", [18, 25, 30, 35, 40, 45, 50, 55, 65]),
        cat("limit", ["no", "yes"]),
        cat("gender", ["female", "male"]),
        cat("insurance", ["no", "yes"]),
        cat("married", ["no", "yes"]),
        cat("selfemp", ["no", "yes"]),
        bins("family", [1, 2, 3, 4, 5, 6, 7, 20]),
        cat("region", ["northeast", "midwest", "south", "west"]),
        cat("ethnicity", ["cauc", "afam", "other"]),
        cat("education", ["none", "ged", "highschool", "bachelor", "master", "phd", "other"]),
    ), dropped=("rownames",)),
    # US police-reported crashes 1997-2002, front-seat occupants (DAAG::nassCDS): 26,217 rows.
    "nass_cds": Table(
        "DAAG", "nassCDS", "csv", "33d6f4a2d32e32153817f8df338757c74469b1168b496261313b18422adeadc3", (
        cat("dvcat", ["1-9km/h", "10-24", "25-39", "40-54", "55+"], ordered=True),
        cat("dead", ["alive", "dead"]),
        cat("airbag", ["none", "airbag"]),
        cat("seatbelt", ["none", "belted"]),
        cat("frontal", [0, 1]),
        cat("sex", ["f", "m"]),
        bins("ageOFocc", [16, 20, 25, 30, 40, 50, 60, 70, 100]),
        cat("yearacc", range(1997, 2003), ordered=True),
        bins("yearVeh", [1950, 1985, 1988, 1991, 1993, 1995, 1997, 1999, 2004], missing=True),
        cat("abcat", ["unavail", "nodeploy", "deploy"]),
        cat("occRole", ["driver", "pass"]),
        cat("deploy", [0, 1]),
        cat("injSeverity", [*range(7), MISSING]),
    ), dropped=("rownames", "weight", "caseid")),
    # Minneapolis Police Department stops, 2017 (carData::MplsStops): 51,920 rows.
    "mpls_stops": Table(
        "carData", "MplsStops", "parquet", "81d863c6e5ebe81c423b10f4859cd0e674f021751bca88540969cbae1f3e2b3b", (
        cat("problem", ["suspicious", "traffic"]),
        cat("MDC", ["MDC", "other"]),
        cat("citationIssued", ["NO", "YES", MISSING]),
        cat("personSearch", ["NO", "YES", MISSING]),
        cat("vehicleSearch", ["NO", "YES", MISSING]),
        cat("preRace", MPLS_RACES),
        cat("race", MPLS_RACES),
        cat("gender", ["Female", "Male", "Unknown", MISSING]),
        bins("lat", [44.89, 44.944, 44.95, 44.961, 44.975, 44.985, 44.999, 45.013, 45.06]),
        bins("long", [-93.33, -93.3, -93.29, -93.281, -93.276, -93.268, -93.255, -93.245, -93.19]),
        cat("policePrecinct", range(1, 6)),
        cat("neighborhood", MPLS_NEIGHBORHOODS),
    ), dropped=("rownames", "idNum", "date")),
    # 2016 Cooperative Congressional Election Study, Trump vote (stevedata::TV16): 64,600 rows.
    "tv16": Table(
        "stevedata", "TV16", "parquet", "2fcdd88d4138ac59f953c6316145dad3d51531fc51e426d1b76cd737768f876b", (
        cat("state", US_STATES),
        cat("votetrump", [0, 1, MISSING]),
        bins("age", [18, 25, 30, 40, 50, 55, 60, 70, 100]),
        cat("female", [0, 1]),
        cat("collegeed", [0, 1]),
        cat("racef", ["White", "Black", "Hispanic", "Asian", "Native American", "Middle Eastern", "Mixed", "Other"]),
        cat("famincr", [*range(1, 13), MISSING]),
        cat("ideo", [*range(1, 6), MISSING]),
        cat("pid7na", [*range(1, 8), MISSING]),
        cat("bornagain", [0, 1, MISSING]),
        cat("religimp", [*range(1, 5), MISSING]),
        cat("churchatd", [*range(1, 7), MISSING]),
        cat("prayerfreq", [*range(1, 8), MISSING]),
        cat("angryracism", [*range(1, 6), MISSING]),
        cat("whiteadv", [*range(1, 6), MISSING]),
        cat("fearraces", [*range(1, 6), MISSING]),
        cat("racerare", [*range(1, 6), MISSING]),
    ), dropped=("rownames", "uid", "lrelig", "lcograc", "lemprac")),
    # A 1988 survey of voting intentions in Chile's plebiscite (carData::Chile): 2,700 rows.
    "chile": Table(
        "carData", "Chile", "csv", "2f825754d58d18414f97ba8190c37b3bd9d2de1983d04bfa106e03327abd7e70", (
        cat("region", ["C", "M", "N", "S", "SA"]),
        cat("population", [3750, 8750, 15000, 25000, 45000, 62500, 87500, 125000, 175000, 250000], ordered=True),
        cat("sex", ["F", "M"]),
        bins("age", [18, 25, 30, 35, 40, 45, 50, 60, 70], missing=True),
        cat("education", ["P", "S", "PS", MISSING], ordered=True),
        cat("income", [2500, 7500, 15000, 35000, 75000, 125000, 200000, MISSING], ordered=True),
        cat("vote", ["A", "N", "U", "Y", MISSING]),
    ), dropped=("rownames", "statusquo")),
    # Suicides recorded in Shandong, China, 2009-2011 (Stat2Data::SuicideChina): 2,571 rows.
    "suicide_china": Table(
        "Stat2Data", "SuicideChina", "csv", "6a152609c56d800bdf3b17d13aeeb7569dedfb4dfba6a52a1fbc2a94fc4c39e8", (
        cat("Hospitalised", ["no", "yes"]),
        cat("Died", ["no", "yes"]),
        cat("Urban", ["no", "yes", "unknown"]),
        cat("Year", [2009, 2010, 2011], ordered=True),
        cat("Month", range(1, 13), ordered=True),
        cat("Sex", ["female", "male"]),
        bins("Age", [12, 20, 30, 40, 50, 60, 70, 80, 100]),
        cat("Education", ["iliterate", "primary", "Secondary", "Tertiary", "unknown"]),
        cat("Occupation", ["business/service", "farming", "household", "others", "others/unknown", "professional",
                           "retiree", "student", "unemployed", "worker"]),
        cat("method", ["Cutting", "Drowning", "Hanging", "Jumping", "Other poison", "Others", "Pesticide",
                       "Poison unspec", "unspecified"]),
    ), dropped=("rownames", "Person_ID")),
}


def raw_path(root: Path, table: Table) -> Path:
    """The table's raw file under an Rdatasets checkout: the format it was built from, else the other."""
    formats = ("csv", "parquet") if table.raw == "csv" else ("parquet", "csv")
    for path in (root / form / table.package / f"{table.item}.{form}" for form in formats):
        if path.is_file():
            return path
    raise FileNotFoundError(f"RDATASETS: neither csv/{table.package}/{table.item}.csv nor "
                            f"parquet/{table.package}/{table.item}.parquet under {root}")


def read_raw(path: Path) -> pd.DataFrame:
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    return pd.read_csv(path, keep_default_na=True, low_memory=False)


def as_labels(values: pd.Series) -> np.ndarray:
    """Each value as its label: integral numbers as integers, empty or missing values as ``NA``."""
    def one(value: Any) -> str:
        if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
            return MISSING
        if isinstance(value, (bool, np.bool_)):
            return "TRUE" if value else "FALSE"
        if isinstance(value, (int, np.integer)):
            return str(int(value))
        if isinstance(value, (float, np.floating)):
            if float(value).is_integer():
                return str(int(value))
            return repr(float(value))
        text = str(value).strip()
        return text if text else MISSING
    return np.array([one(value) for value in values.astype(object)], dtype=object)


def code_column(frame: pd.DataFrame, column: Column, where: str) -> np.ndarray:
    if column.source not in frame.columns:
        raise ValueError(f"{where}: no column {column.source!r} in the raw file")
    values = frame[column.source]
    if column.edges is not None:
        numbers = pd.to_numeric(values, errors="raise").to_numpy(dtype=np.float64)
        present = ~np.isnan(numbers)
        if not column.missing and not present.all():
            raise ValueError(f"{where}.{column.name}: {int((~present).sum())} missing values")
        low, high = column.edges[0], column.edges[-1]
        outside = present & ~((numbers >= low) & (numbers <= high))
        if outside.any():
            raise ValueError(f"{where}.{column.name}: {int(outside.sum())} values outside [{low}, {high}] "
                             f"(first {numbers[outside][0]!r})")
        codes = np.full(len(numbers), len(column.edges) - 1, dtype=np.int64)  # the NA code
        codes[present] = np.searchsorted(np.asarray(column.edges[1:-1], dtype=float), numbers[present],
                                         side="right")
        return codes
    assert column.labels is not None
    labels = as_labels(values)
    lookup = {label: code for code, label in enumerate(column.labels)}
    unknown = sorted({label for label in labels if label not in lookup})
    if unknown:
        raise ValueError(f"{where}.{column.name}: values {unknown[:10]} are not among the declared labels")
    return np.fromiter((lookup[label] for label in labels), dtype=np.int64, count=len(labels))


def domain_entry(column: Column) -> Any:
    if column.edges is not None and column.missing:
        return [*bin_labels(column.edges), MISSING]
    if column.edges is not None:
        return {"bins": [int(e) if float(e).is_integer() else e for e in column.edges]}
    labels = list(column.labels or ())
    return {"categories": labels, "ordered": True} if column.ordered else labels


def build(name: str, table: Table, root: Path) -> tuple[bytes, bytes, dict[str, Any]]:
    path = raw_path(root, table)
    raw = path.read_bytes()
    frame = read_raw(path)
    unexpected = set(frame.columns) - {c.source for c in table.columns} - set(table.dropped)
    if unexpected:
        raise ValueError(f"{name}: raw columns {sorted(unexpected)} are neither coded nor dropped")
    codes = np.column_stack([code_column(frame, column, name) for column in table.columns])
    sizes = [column.size for column in table.columns]
    for column, size, used in zip(table.columns, sizes, codes.max(axis=0)):
        if used >= size:
            raise AssertionError(f"{name}.{column.name}: code {used} outside 0..{size - 1}")
    text = io.StringIO()
    text.write(",".join(column.name for column in table.columns) + "\n")
    np.savetxt(text, codes, fmt="%d", delimiter=",")
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as handle:
        handle.write(text.getvalue().encode("ascii"))
    domain = {column.name: domain_entry(column) for column in table.columns}
    domain_bytes = (json.dumps(domain, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    info = {"raw": f"{path.parent.parent.name}/{path.parent.name}/{path.name}",
            "raw_sha256": hashlib.sha256(raw).hexdigest(), "codes": codes, "sizes": sizes}
    return buffer.getvalue(), domain_bytes, info


def cramers_v(x: np.ndarray, y: np.ndarray, nx: int, ny: int) -> float:
    """Cramér's V of two coded columns (0: independent, 1: one determines the other)."""
    table = np.zeros((nx, ny))
    np.add.at(table, (x, y), 1)
    table = table[table.sum(1) > 0][:, table.sum(0) > 0]
    if min(table.shape) < 2:
        return 0.0
    n = table.sum()
    expected = np.outer(table.sum(1), table.sum(0)) / n
    chi2 = float(((table - expected) ** 2 / expected).sum())
    return float(np.sqrt(chi2 / n / (min(table.shape) - 1)))


def sanity(table: Table, codes: np.ndarray, sizes: list[int]) -> str:
    names = [column.name for column in table.columns]
    triples = list(itertools.combinations(range(len(sizes)), 3))
    cells = [sizes[a] * sizes[b] * sizes[c] for a, b, c in triples]
    largest = triples[int(np.argmax(cells))]
    pairs = sorted(((cramers_v(codes[:, a], codes[:, b], sizes[a], sizes[b]), names[a], names[b])
                    for a, b in itertools.combinations(range(len(sizes)), 2)), reverse=True)
    return (f"  {len(codes)} rows, {len(sizes)} attributes, sizes {sizes}; largest 3-way table "
            f"{max(cells)} cells ({', '.join(names[i] for i in largest)}); {len(triples)} 3-way tables, "
            f"{sum(cells)} answers\n  Cramér's V: median {np.median([v for v, _, _ in pairs]):.2f}, "
            f"{sum(v > 0.3 for v, _, _ in pairs)} of {len(pairs)} pairs above 0.3, strongest "
            + ", ".join(f"{a}~{b} {v:.2f}" for v, a, b in pairs[:4]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rdatasets", type=Path, help="a checkout of vincentarelbundock/Rdatasets")
    parser.add_argument("--check", action="store_true", help="compare with the files here, write nothing")
    args = parser.parse_args(argv)
    differ = False
    for name, table in TABLES.items():
        data, domain, info = build(name, table, args.rdatasets)
        targets = {HERE / f"{name}.csv.gz": data, HERE / f"{name}-domain.json": domain}
        for target, content in targets.items():
            if args.check:
                same = target.is_file() and target.read_bytes() == content
                differ |= not same
                print(f"{target.name}: {'identical' if same else 'DIFFERS'}")
            else:
                target.write_bytes(content)
        same_raw = info["raw_sha256"] == table.raw_sha256
        print(f"{name}: raw {info['raw']} {'is' if same_raw else 'is NOT'} the file the committed codes were "
              f"built from (sha256 {info['raw_sha256'][:16]}...); {name}.csv.gz {len(data)} bytes")
        print(sanity(table, info["codes"], info["sizes"]))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
