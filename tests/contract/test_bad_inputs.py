"""A catalogue of bad inputs to the data layer: every one is refused at the public boundary with
a ``TypeError`` (wrong type) or a ``ValueError`` (wrong value) whose message names the argument.

Each entry is (description, zero-argument call, expected exception type, substring that the
message must contain). Warnings are errors while an entry runs: a ``ComplexWarning`` means that
a complex value was truncated to its real part, i.e. accepted silently. Every entry is cheap:
the huge sizes are refused before anything of their size is allocated, which is the point.

File errors: a missing file stays a ``FileNotFoundError`` (the ``OSError`` that callers expect),
whose message names the path; every other unreadable file is a ``ValueError`` naming it.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import projmech as pm
from projmech import Dataset, Domain, Workload, histogram
from projmech.data import _tables as tables
from projmech.data import check_normalized_histogram
from projmech.validation import (
    as_generator,
    check_bool,
    check_entries,
    check_positive_int,
    check_real_array,
    check_real_dtype,
)
from projmech.workloads import as_query_matrix, column_norm

D = Domain(["a", "b"], [2, 3])
ROWS = np.array([[0, 0], [1, 2], [1, 1]])
DS = Dataset(ROWS, D)
H = np.full(6, 1 / 6)
W = Workload(np.ones((2, 6)))  # explicit, dense, k = 2, m = 6
IMPLICIT = pm.marginals(D, 2, implicit=True)  # k = 6, m = 6
#: 10^12 elements: anything proportional to m (or k, here 10^12 + 2·10^6 cells) must be refused.
HUGE = Domain(["a", "b"], [10**6, 10**6])
#: 10^9 elements, but only 3000 one-way cells.
WIDE = Domain(["a", "b", "c"], [1000, 1000, 1000])
#: Beyond int64 indices.
ASTRONOMIC = Domain([f"x{i}" for i in range(70)], [2] * 70)
RNG = np.random.default_rng(0)

#: Files written once per session by the autouse fixture below; the lambdas read it at call time.
FILES: dict[str, Path] = {}


@pytest.fixture(scope="module", autouse=True)
def _files(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_files")
    texts = {
        "empty.json": "",
        "malformed.json": '{"a": 2,',
        "list.json": "[2, 3]",
        "scalar.json": "3",
        "duplicate.json": '{"a": 2, "b": 3, "a": 4}',
        "float.json": '{"a": 2.5}',
        "integral_float.json": '{"a": 2.0}',
        "string.json": '{"a": "2"}',
        "bool.json": '{"a": true}',
        "zero.json": '{"a": 0}',
        "null.json": '{"a": null}',
        "nested.json": '{"a": {"b": 2}}',
        "no_attributes.json": "{}",
        "good.json": json.dumps(D.to_dict()),
        "empty.csv": "",
        "header_only.csv": "a,b\n",
        "no_header.csv": "0,1\n1,2\n",
        "ragged.csv": "a,b\n0,1\n0,1,2,3\n",
        "bad_value.csv": "a,b\n0,1\n0,7\n",
        "words.csv": "a,b\n0,1\nx,1\n",
        "complex.csv": "a,b\n0,1\n1+1j,1\n",
    }
    for name, text in texts.items():
        (root / name).write_text(text, encoding="utf-8")
    (root / "latin1.json").write_bytes('{"a\xe9": 2}'.encode("latin-1"))
    (root / "latin1.csv").write_bytes("a\xe9,b\n0,1\n".encode("latin-1"))
    (root / "folder").mkdir()
    FILES.update({path.name: path for path in root.iterdir()})
    FILES["missing"] = root / "missing.json"
    yield
    FILES.clear()


def f(name: str) -> Path:
    return FILES[name]


def _bad_predicate(kind: str) -> Callable:
    returns = {
        "wrong shape": lambda x: np.ones(4),
        "2-d": lambda x: np.ones((1, 6)),
        "one entry": lambda x: np.ones(1),
        "strings": lambda x: np.array(["yes"] * 6),
        "NaN": lambda x: np.where(x["a"] == 1, np.nan, 0.0),
        "above 1": lambda x: x["b"],
        "negative": lambda x: -1.0 * (x["a"] == 1),
        "None": lambda x: None,
        "complex": lambda x: (x["a"] == 1) * 1j,
        "sparse": lambda x: sp.csr_array(np.ones((1, 6))),
        "raises": lambda x: 1 / 0,
        "and of arrays": lambda x: x["a"] == 1 and x["b"] == 0,
        "unknown attribute": lambda x: x["nope"] == 1,
        "dict": lambda x: {"a": 1},
    }
    return returns[kind]


def _implicit(**overrides) -> Workload:
    arguments = dict(shape=(2, 3), matvec=lambda v: v[:2], gram=lambda: np.eye(3))
    arguments.update(overrides)
    return Workload.implicit(**arguments)


E = pytest.param

CATALOGUE = [
    # ------------------------------------------------------------------ Domain(attributes, sizes)
    E(lambda: Domain("ab", [2, 2]), TypeError, "attributes", id="Domain: str attributes (split into characters)"),
    E(lambda: Domain(b"ab", [2, 2]), TypeError, "attributes", id="Domain: bytes attributes"),
    E(lambda: Domain({"a": 2, "b": 2}, [2, 2]), TypeError, "attributes", id="Domain: dict attributes"),
    E(lambda: Domain({"a", "b"}, [2, 2]), TypeError, "attributes", id="Domain: set attributes (no order)"),
    E(lambda: Domain(None, [2]), TypeError, "attributes", id="Domain: None attributes"),
    E(lambda: Domain(3, [2]), TypeError, "attributes", id="Domain: int attributes"),
    E(lambda: Domain([1], [2]), TypeError, "attributes", id="Domain: int name"),
    E(lambda: Domain(["a", None], [2, 2]), TypeError, "attributes", id="Domain: None name"),
    E(lambda: Domain([("a",)], [2]), TypeError, "attributes", id="Domain: tuple name"),
    E(lambda: Domain([""], [2]), ValueError, "attributes", id="Domain: empty name"),
    E(lambda: Domain(["a", "a"], [2, 2]), ValueError, "attributes", id="Domain: duplicate names"),
    E(lambda: Domain([], []), ValueError, "attributes", id="Domain: no attributes"),
    E(lambda: Domain(["a", "b"], [2]), ValueError, "sizes", id="Domain: fewer sizes than names"),
    E(lambda: Domain(["a"], [2, 3]), ValueError, "sizes", id="Domain: more sizes than names"),
    E(lambda: Domain(["a", "b"], "22"), TypeError, "sizes", id="Domain: str sizes"),
    E(lambda: Domain(["a", "b"], {"a": 2, "b": 2}), TypeError, "sizes", id="Domain: dict sizes"),
    E(lambda: Domain(["a"], None), TypeError, "sizes", id="Domain: None sizes"),
    E(lambda: Domain(["a"], 2), TypeError, "sizes", id="Domain: scalar sizes"),
    E(lambda: Domain(["a", "b"], np.array([[2, 2]])), ValueError, "sizes", id="Domain: 2-d array of sizes"),
    E(lambda: Domain(["a", "b"], [2.0, 2]), TypeError, "sizes: size of 'a'", id="Domain: integral float size"),
    E(lambda: Domain(["a"], [2.5]), TypeError, "sizes: size of 'a'", id="Domain: fractional size"),
    E(lambda: Domain(["a"], [np.float64(2)]), TypeError, "size of 'a'", id="Domain: numpy float size"),
    E(lambda: Domain(["a"], [True]), TypeError, "size of 'a'", id="Domain: bool size"),
    E(lambda: Domain(["a"], ["2"]), TypeError, "size of 'a'", id="Domain: str size"),
    E(lambda: Domain(["a"], [2 + 0j]), TypeError, "size of 'a'", id="Domain: complex size"),
    E(lambda: Domain(["a"], [None]), TypeError, "size of 'a'", id="Domain: None size"),
    E(lambda: Domain(["a"], [[2]]), TypeError, "size of 'a'", id="Domain: nested size"),
    E(lambda: Domain(["a"], [0]), ValueError, "size of 'a'", id="Domain: zero size"),
    E(lambda: Domain(["a"], [-3]), ValueError, "size of 'a'", id="Domain: negative size"),
    # ------------------------------------------------------------------ Domain.from_dict / from_json
    E(lambda: Domain.from_dict([("a", 2)]), TypeError, "mapping", id="from_dict: list of pairs"),
    E(lambda: Domain.from_dict(None), TypeError, "mapping", id="from_dict: None"),
    E(lambda: Domain.from_dict({"a": 2.5}), TypeError, "size of 'a'", id="from_dict: float size"),
    E(lambda: Domain.from_dict({}), ValueError, "attributes", id="from_dict: empty"),
    E(lambda: Domain.from_dict({1: 2}), TypeError, "attributes", id="from_dict: int key"),
    E(lambda: Domain.from_json(f("missing")), FileNotFoundError, "missing.json", id="from_json: missing file"),
    E(lambda: Domain.from_json(f("folder")), ValueError, "folder", id="from_json: directory"),
    E(lambda: Domain.from_json(f("empty.json")), ValueError, "empty.json", id="from_json: empty file"),
    E(lambda: Domain.from_json(f("malformed.json")), ValueError, "malformed.json", id="from_json: malformed"),
    E(lambda: Domain.from_json(f("list.json")), ValueError, "list.json", id="from_json: JSON array"),
    E(lambda: Domain.from_json(f("scalar.json")), ValueError, "scalar.json", id="from_json: JSON number"),
    E(lambda: Domain.from_json(f("duplicate.json")), ValueError, "duplicate.json", id="from_json: duplicate key"),
    E(lambda: Domain.from_json(f("float.json")), ValueError, "float.json", id="from_json: float size"),
    E(lambda: Domain.from_json(f("integral_float.json")), ValueError, "integral_float.json", id="from_json: 2.0 size"),
    E(lambda: Domain.from_json(f("string.json")), ValueError, "string.json", id="from_json: str size"),
    E(lambda: Domain.from_json(f("bool.json")), ValueError, "bool.json", id="from_json: bool size"),
    E(lambda: Domain.from_json(f("zero.json")), ValueError, "zero.json", id="from_json: zero size"),
    E(lambda: Domain.from_json(f("null.json")), ValueError, "null.json", id="from_json: null size"),
    E(lambda: Domain.from_json(f("nested.json")), ValueError, "nested.json", id="from_json: nested object"),
    E(lambda: Domain.from_json(f("no_attributes.json")), ValueError, "no_attributes.json", id="from_json: {}"),
    E(lambda: Domain.from_json(f("latin1.json")), ValueError, "latin1.json", id="from_json: not UTF-8"),
    E(lambda: Domain.from_json(None), TypeError, "path", id="from_json: None path"),
    E(lambda: Domain.from_json(0), TypeError, "path", id="from_json: int path (a file descriptor)"),
    E(lambda: Domain.from_json(["dom.json"]), TypeError, "path", id="from_json: list path"),
    # ------------------------------------------------------------------ Domain methods
    E(lambda: D.position(3), TypeError, "name", id="position: int name"),
    E(lambda: D.position("zz"), ValueError, "'zz'", id="position: unknown name"),
    E(lambda: D["zz"], KeyError, "'zz'", id="getitem: unknown name"),
    E(lambda: D.project("ab"), TypeError, "attributes", id="project: str"),
    E(lambda: D.project(None), TypeError, "attributes", id="project: None"),
    E(lambda: D.project(["a", "zz"]), ValueError, "attributes", id="project: unknown name"),
    E(lambda: D.project(["a", "a"]), ValueError, "attributes", id="project: repeated name"),
    E(lambda: D.project([]), ValueError, "attributes", id="project: empty"),
    E(lambda: D.project([0]), TypeError, "attributes", id="project: int name"),
    E(lambda: D.index([[0, 0.5]]), TypeError, "rows", id="index: fractional codes"),
    E(lambda: D.index([[0.0, 1.0]]), TypeError, "rows", id="index: float codes"),
    E(lambda: D.index([[True, False]]), TypeError, "rows", id="index: bool codes"),
    E(lambda: D.index([["0", "1"]]), TypeError, "rows", id="index: str codes"),
    E(lambda: D.index([[1 + 0j, 0]]), TypeError, "rows", id="index: complex codes"),
    E(lambda: D.index("01"), TypeError, "rows", id="index: str"),
    E(lambda: D.index([[0, 1], [2]]), ValueError, "rows", id="index: ragged"),
    E(lambda: D.index([[0, 1, 2]]), ValueError, "rows", id="index: too many columns"),
    E(lambda: D.index([0, 1]), ValueError, "rows", id="index: 1-d"),
    E(lambda: D.index(np.zeros((1, 2, 1), dtype=int)), ValueError, "rows", id="index: 3-d"),
    E(lambda: D.index([[0, 3]]), ValueError, "rows", id="index: code above range"),
    E(lambda: D.index([[-1, 0]]), ValueError, "rows", id="index: negative code"),
    E(lambda: ASTRONOMIC.index(np.zeros((1, 70), dtype=int)), ValueError, "domain", id="index: beyond int64"),
    E(lambda: D.rows([0.5]), TypeError, "indices", id="rows: fractional"),
    E(lambda: D.rows(["0"]), TypeError, "indices", id="rows: str"),
    E(lambda: D.rows([[0]]), ValueError, "indices", id="rows: 2-d"),
    E(lambda: D.rows([6]), ValueError, "indices", id="rows: out of range"),
    E(lambda: D.rows([-1]), ValueError, "indices", id="rows: negative"),
    E(lambda: D.rows([[0], [1, 2]]), ValueError, "indices", id="rows: ragged"),
    E(lambda: ASTRONOMIC.rows([0]), ValueError, "domain", id="rows: beyond int64"),
    # ------------------------------------------------------------------ Dataset(records, domain)
    E(lambda: Dataset(ROWS, {"a": 2, "b": 3}), TypeError, "domain", id="Dataset: dict domain"),
    E(lambda: Dataset(ROWS, None), TypeError, "domain", id="Dataset: None domain"),
    E(lambda: Dataset(pd.DataFrame(ROWS, columns=["b", "a"]), D), TypeError, "records",
      id="Dataset: DataFrame (columns by position)"),
    E(lambda: Dataset(None, D), TypeError, "records", id="Dataset: None records"),
    E(lambda: Dataset("01", D), TypeError, "records", id="Dataset: str records"),
    E(lambda: Dataset({"a": [0], "b": [1]}, D), TypeError, "records", id="Dataset: dict records"),
    E(lambda: Dataset(np.array([[1 + 0j, 0]]), D), TypeError, "records", id="Dataset: complex (zero imaginary)"),
    E(lambda: Dataset(np.array([[1 + 1j, 0]]), D), TypeError, "records", id="Dataset: complex"),
    E(lambda: Dataset(np.array([[1 + 0j, 0]], dtype=object), D), TypeError, "column 'a'",
      id="Dataset: complex in object array"),
    E(lambda: Dataset(np.array([["2020-01-01", "2020-01-02"]], dtype="datetime64[D]"), D), TypeError, "records",
      id="Dataset: datetimes"),
    E(lambda: Dataset([[0, 0], [0]], D), ValueError, "records", id="Dataset: ragged"),
    # No rows is a data set (n = 0, add/remove's neighbour of every one-row data set); its
    # fractions are what is undefined.
    E(lambda: histogram(Dataset(np.zeros((0, 2)), D)), ValueError, "no rows", id="histogram: no rows"),
    E(lambda: Dataset([0, 1], D), ValueError, "records", id="Dataset: 1-d"),
    E(lambda: Dataset(np.zeros((2, 2, 2)), D), ValueError, "records", id="Dataset: 3-d"),
    E(lambda: Dataset([[0, 0, 0]], D), ValueError, "records", id="Dataset: too many columns"),
    E(lambda: Dataset([[0, 3]], D), ValueError, "column 'b'", id="Dataset: code above range"),
    E(lambda: Dataset([[-1, 0]], D), ValueError, "column 'a'", id="Dataset: negative code"),
    E(lambda: Dataset([[0.5, 0]], D), ValueError, "column 'a'", id="Dataset: fractional code"),
    E(lambda: Dataset([[np.nan, 0]], D), ValueError, "column 'a'", id="Dataset: NaN"),
    E(lambda: Dataset([[np.inf, 0]], D), ValueError, "column 'a'", id="Dataset: inf"),
    E(lambda: Dataset([[1e300, 0]], D), ValueError, "column 'a'", id="Dataset: huge float"),
    E(lambda: Dataset([[2**70, 0]], D), ValueError, "column 'a'", id="Dataset: int beyond int64"),
    E(lambda: Dataset([["x", "0"]], D), ValueError, "column 'a'", id="Dataset: word"),
    E(lambda: Dataset([[None, 0]], D), ValueError, "column 'a'", id="Dataset: None code"),
    E(lambda: DS.subsample(0, RNG), ValueError, "n", id="subsample: zero"),
    E(lambda: DS.subsample(4, RNG), ValueError, "n", id="subsample: more than n"),
    E(lambda: DS.subsample(2.0, RNG), TypeError, "n", id="subsample: float n"),
    E(lambda: DS.subsample(True, RNG), TypeError, "n", id="subsample: bool n"),
    E(lambda: DS.subsample(1, -1), ValueError, "rng", id="subsample: negative seed"),
    E(lambda: DS.subsample(1, np.random.RandomState(0)), TypeError, "rng", id="subsample: RandomState"),
    E(lambda: DS.project(["zz"]), ValueError, "attributes", id="Dataset.project: unknown"),
    E(lambda: DS.project("a"), TypeError, "attributes", id="Dataset.project: str"),
    # ------------------------------------------------------------------ Dataset.from_dataframe
    E(lambda: Dataset.from_dataframe(ROWS, D), TypeError, "frame", id="from_dataframe: ndarray"),
    E(lambda: Dataset.from_dataframe(pd.Series([0, 1]), D), TypeError, "frame", id="from_dataframe: Series"),
    E(lambda: Dataset.from_dataframe(pd.DataFrame({"a": [0], "b": [0]}), {"a": 2, "b": 3}), TypeError, "domain",
      id="from_dataframe: dict domain"),
    E(lambda: Dataset.from_dataframe(pd.DataFrame({"a": [0]}), D), ValueError, "frame",
      id="from_dataframe: missing column"),
    E(lambda: Dataset.from_dataframe(pd.DataFrame([[0, 0, 1]], columns=["a", "b", "a"]), D), ValueError, "frame",
      id="from_dataframe: repeated column"),
    E(lambda: Dataset.from_dataframe(pd.DataFrame({"a": [1 + 0j], "b": [0]}), D), TypeError, "column 'a'",
      id="from_dataframe: complex column"),
    E(lambda: Dataset.from_dataframe(pd.DataFrame({"a": pd.Series([1 + 0j], dtype=object), "b": [0]}), D),
      TypeError, "column 'a'", id="from_dataframe: complex in object column"),
    E(lambda: Dataset.from_dataframe(pd.DataFrame({"a": pd.to_datetime(["2020-01-01"]), "b": [0]}), D),
      TypeError, "column 'a'", id="from_dataframe: datetime column"),
    E(lambda: Dataset.from_dataframe(pd.DataFrame({"a": ["x"], "b": [0]}), D), ValueError, "column 'a'",
      id="from_dataframe: word"),
    E(lambda: pm.marginals(D, 1).answer_data(Dataset.from_dataframe(pd.DataFrame({"a": [], "b": []}), D)), ValueError,
      "no rows", id="answer_data: no rows"),
    # ------------------------------------------------------------------ Dataset.from_csv
    E(lambda: Dataset.from_csv(f("missing"), D), FileNotFoundError, "missing.json", id="from_csv: missing file"),
    E(lambda: Dataset.from_csv(f("folder"), D), ValueError, "folder", id="from_csv: directory"),
    E(lambda: Dataset.from_csv(f("empty.csv"), D), ValueError, "empty.csv", id="from_csv: empty file"),
    E(lambda: histogram(Dataset.from_csv(f("header_only.csv"), D)), ValueError, "no rows", id="from_csv: no rows"),
    E(lambda: Dataset.from_csv(f("no_header.csv"), D), ValueError, "header", id="from_csv: no header row"),
    E(lambda: Dataset.from_csv(f("ragged.csv"), D), ValueError, "ragged.csv", id="from_csv: ragged rows"),
    E(lambda: Dataset.from_csv(f("bad_value.csv"), D), ValueError, "bad_value.csv", id="from_csv: code out of range"),
    E(lambda: Dataset.from_csv(f("words.csv"), D), ValueError, "column 'a'", id="from_csv: word"),
    E(lambda: Dataset.from_csv(f("latin1.csv"), D), ValueError, "latin1.csv", id="from_csv: not UTF-8"),
    E(lambda: Dataset.from_csv(None, D), TypeError, "data_path", id="from_csv: None path"),
    E(lambda: Dataset.from_csv(0, D), TypeError, "data_path", id="from_csv: int path"),
    E(lambda: Dataset.from_csv(f("bad_value.csv"), 3), TypeError, "domain", id="from_csv: int domain"),
    E(lambda: Dataset.from_csv(f("bad_value.csv"), f("missing")), FileNotFoundError, "missing.json",
      id="from_csv: missing domain file"),
    E(lambda: Dataset.from_csv(f("bad_value.csv"), f("duplicate.json")), ValueError, "duplicate.json",
      id="from_csv: bad domain file"),
    # ------------------------------------------------------------------ histogram
    E(lambda: histogram(None), TypeError, "data", id="histogram: None"),
    E(lambda: histogram("01", D), TypeError, "data", id="histogram: str"),
    E(lambda: histogram(sp.csr_array(ROWS), D), TypeError, "data", id="histogram: sparse records"),
    E(lambda: histogram(ROWS), TypeError, "domain", id="histogram: array without domain"),
    E(lambda: histogram(ROWS, {"a": 2, "b": 3}), TypeError, "domain", id="histogram: dict domain"),
    E(lambda: histogram(DS, {"a": 2, "b": 3}), TypeError, "domain", id="histogram: Dataset and dict domain"),
    E(lambda: histogram(DS, Domain(["a", "b"], [3, 2])), ValueError, "domain", id="histogram: other domain"),
    E(lambda: histogram(DS, normalize="no"), TypeError, "normalize", id="histogram: str flag"),
    E(lambda: histogram(DS, sparse=1), TypeError, "sparse", id="histogram: int flag"),
    E(lambda: histogram(DS, max_universe=0), ValueError, "max_universe", id="histogram: zero cap"),
    E(lambda: histogram(DS, max_universe=1.5), TypeError, "max_universe", id="histogram: float cap"),
    E(lambda: histogram(Dataset([[0, 0]], HUGE)), ValueError, "max_universe", id="histogram: huge universe"),
    E(lambda: histogram(np.array([[1 + 0j, 0]]), D), TypeError, "records", id="histogram: complex records"),
    # ------------------------------------------------------------------ check_normalized_histogram
    E(lambda: check_normalized_histogram(np.array([0.5, 0.5 + 0j]), 2), TypeError, "histogram",
      id="normalized histogram: complex (zero imaginary)"),
    E(lambda: check_normalized_histogram(np.array([0.5, 0.5j]), 2), TypeError, "histogram",
      id="normalized histogram: complex"),
    E(lambda: check_normalized_histogram(sp.csr_array(np.array([[0.5, 0.5 + 0j]])), 2), TypeError, "histogram",
      id="normalized histogram: sparse complex"),
    E(lambda: check_normalized_histogram(["a", "b"], 2), TypeError, "histogram", id="normalized histogram: str"),
    E(lambda: check_normalized_histogram(pd.Series(["a", "b"]), 2), TypeError, "histogram",
      id="normalized histogram: Series of str"),
    E(lambda: check_normalized_histogram(None, 2), TypeError, "histogram", id="normalized histogram: None"),
    E(lambda: check_normalized_histogram(DS, 3), TypeError, "histogram", id="normalized histogram: a Dataset"),
    E(lambda: check_normalized_histogram([[0.5], [0.25, 0.25]], 2), ValueError, "histogram",
      id="normalized histogram: ragged"),
    E(lambda: check_normalized_histogram([0.5, 0.5], None), ValueError, "n", id="normalized histogram: n None"),
    E(lambda: check_normalized_histogram([0.5, 0.5], 2.0), TypeError, "n", id="normalized histogram: float n"),
    E(lambda: check_normalized_histogram([0.5, 0.5], True), TypeError, "n", id="normalized histogram: bool n"),
    E(lambda: check_normalized_histogram([0.5, 0.5], "2"), TypeError, "n", id="normalized histogram: str n"),
    E(lambda: check_normalized_histogram([0.5, 0.5], 0), ValueError, "n", id="normalized histogram: zero n"),
    E(lambda: check_normalized_histogram([0.5, 0.5], -2), ValueError, "n", id="normalized histogram: negative n"),
    E(lambda: check_normalized_histogram([0.5, 0.5], 3), ValueError, "histogram, n",
      id="normalized histogram: n impossible for h"),
    E(lambda: check_normalized_histogram([0.1, 0.9], 4), ValueError, "histogram, n",
      id="normalized histogram: fractional counts"),
    E(lambda: check_normalized_histogram([0.5, np.nan], 2), ValueError, "histogram", id="normalized histogram: NaN"),
    E(lambda: check_normalized_histogram([1.5, -0.5], 2), ValueError, "histogram",
      id="normalized histogram: negative entry"),
    E(lambda: check_normalized_histogram([0.5, 0.25], 4), ValueError, "histogram",
      id="normalized histogram: sum below 1"),
    E(lambda: check_normalized_histogram([], 2), ValueError, "histogram", id="normalized histogram: empty"),
    E(lambda: check_normalized_histogram(np.full((2, 2), 0.25), 4), ValueError, "histogram",
      id="normalized histogram: 2-d"),
    E(lambda: check_normalized_histogram(np.full((1, 2, 2), 0.25), 4), ValueError, "histogram",
      id="normalized histogram: 3-d"),
    E(lambda: check_normalized_histogram([0.5, 0.5], 2, size=3), ValueError, "histogram",
      id="normalized histogram: size mismatch"),
    E(lambda: check_normalized_histogram([0.5, 0.5], 2, size=0), ValueError, "size",
      id="normalized histogram: zero size"),
    E(lambda: check_normalized_histogram(sp.csr_array((1, 10**12)), 2), ValueError, "histogram",
      id="normalized histogram: sparse over a huge universe"),
    # ------------------------------------------------------------------ Workload(matrix, ...)
    E(lambda: Workload(np.eye(2) * 1j), TypeError, "matrix", id="Workload: complex"),
    E(lambda: Workload(np.eye(2) + 0j), TypeError, "matrix", id="Workload: complex (zero imaginary)"),
    E(lambda: Workload(sp.csr_array(np.eye(2) * 1j)), TypeError, "matrix", id="Workload: sparse complex"),
    E(lambda: Workload([[1, 1j]]), TypeError, "matrix", id="Workload: nested list with complex"),
    E(lambda: Workload("abc"), TypeError, "matrix", id="Workload: str"),
    E(lambda: Workload(None), TypeError, "matrix", id="Workload: None"),
    E(lambda: Workload([[1, "a"]]), TypeError, "matrix", id="Workload: mixed list"),
    E(lambda: Workload(np.array([[1, None]], dtype=object)), TypeError, "matrix", id="Workload: None entry"),
    E(lambda: Workload(pd.DataFrame({"a": ["x", "y"]})), TypeError, "matrix", id="Workload: DataFrame of str"),
    E(lambda: Workload(W), TypeError, "matrix", id="Workload: a Workload"),
    E(lambda: Workload([[1, 2], [3]]), ValueError, "matrix", id="Workload: ragged"),
    E(lambda: Workload(np.ones(3)), ValueError, "matrix", id="Workload: 1-d"),
    E(lambda: Workload(np.ones((2, 2, 2))), ValueError, "matrix", id="Workload: 3-d"),
    E(lambda: Workload(np.zeros((0, 3))), ValueError, "matrix", id="Workload: no queries"),
    E(lambda: Workload([[np.nan]]), ValueError, "matrix", id="Workload: NaN"),
    E(lambda: Workload(sp.csr_array(np.array([[np.inf, 0]]))), ValueError, "matrix", id="Workload: sparse inf"),
    E(lambda: Workload(np.eye(2), labels="ab"), TypeError, "labels", id="Workload: str labels"),
    E(lambda: Workload(np.eye(2), labels=[1, 2]), TypeError, "labels", id="Workload: int labels"),
    E(lambda: Workload(np.eye(2), labels=5), TypeError, "labels", id="Workload: scalar labels"),
    E(lambda: Workload(np.eye(2), labels=["x"]), ValueError, "labels", id="Workload: too few labels"),
    E(lambda: Workload(np.ones((1, 6)), domain={"a": 2}), TypeError, "domain", id="Workload: dict domain"),
    E(lambda: Workload(np.ones((1, 5)), domain=D), ValueError, "domain", id="Workload: domain of other size"),
    E(lambda: Workload(np.eye(2), name=3), TypeError, "name", id="Workload: int name"),
    E(lambda: Workload(np.eye(2), gram=np.eye(2)), TypeError, "gram", id="Workload: gram not callable"),
    E(lambda: as_query_matrix(np.eye(2) * 1j), TypeError, "F", id="as_query_matrix: complex"),
    E(lambda: as_query_matrix([[1, 2], [3]], "A"), ValueError, "A", id="as_query_matrix: ragged"),
    E(lambda: column_norm(np.eye(2) * 1j), TypeError, "matrix", id="column_norm function: complex"),
    E(lambda: column_norm("ab"), TypeError, "matrix", id="column_norm function: str"),
    E(lambda: column_norm(np.eye(2), ord=0), ValueError, "ord", id="column_norm function: ord 0"),
    # ------------------------------------------------------------------ Workload.implicit
    E(lambda: _implicit(shape=5), TypeError, "shape", id="implicit: int shape"),
    E(lambda: _implicit(shape="23"), TypeError, "shape", id="implicit: str shape"),
    E(lambda: _implicit(shape=(2, 3, 4)), ValueError, "shape", id="implicit: 3 entries"),
    E(lambda: _implicit(shape=(0, 3)), ValueError, "shape[0]", id="implicit: zero queries"),
    E(lambda: _implicit(shape=(2.0, 3)), TypeError, "shape[0]", id="implicit: float k"),
    E(lambda: _implicit(shape=(2, -3)), ValueError, "shape[1]", id="implicit: negative m"),
    E(lambda: _implicit(matvec=None), TypeError, "matvec", id="implicit: matvec None"),
    E(lambda: _implicit(gram=np.eye(3)), TypeError, "gram", id="implicit: gram array"),
    E(lambda: _implicit(rmatvec=1), TypeError, "rmatvec", id="implicit: rmatvec int"),
    E(lambda: _implicit(columns="x"), TypeError, "columns", id="implicit: columns str"),
    E(lambda: _implicit(column_norm=-1.0), ValueError, "column_norm", id="implicit: negative column_norm"),
    E(lambda: _implicit(column_norm=float("nan")), ValueError, "column_norm", id="implicit: NaN column_norm"),
    E(lambda: _implicit(column_norm="1"), TypeError, "column_norm", id="implicit: str column_norm"),
    E(lambda: _implicit(column_norm=True), TypeError, "column_norm", id="implicit: bool column_norm"),
    E(lambda: _implicit(labels=["x"]), ValueError, "labels", id="implicit: too few labels"),
    E(lambda: _implicit(labels=lambda: "ab").labels, TypeError, "labels", id="implicit: lazy labels as a str"),
    E(lambda: _implicit(gram=lambda: np.eye(2)).gram(), ValueError, "gram", id="implicit: gram of wrong shape"),
    E(lambda: _implicit(gram=lambda: np.eye(3) * 1j).gram(), TypeError, "gram", id="implicit: complex gram"),
    E(lambda: _implicit(matvec=lambda v: v[:2] * 1j).answer(np.ones(3)), TypeError, "matvec",
      id="implicit: complex matvec result"),
    E(lambda: _implicit(matvec=lambda v: v).answer(np.ones(3)), ValueError, "matvec",
      id="implicit: matvec result of wrong length"),
    # ------------------------------------------------------------------ Workload methods
    E(lambda: W.answer(H * 1j), TypeError, "histogram", id="answer: complex"),
    E(lambda: W.answer(H + 0j), TypeError, "histogram", id="answer: complex (zero imaginary)"),
    E(lambda: W.answer(sp.csr_array(H[None, :] + 0j)), TypeError, "histogram", id="answer: sparse complex"),
    E(lambda: W.answer("abcdef"), TypeError, "histogram", id="answer: str"),
    E(lambda: W.answer(None), TypeError, "histogram", id="answer: None"),
    E(lambda: W.answer(DS), TypeError, "histogram", id="answer: a Dataset"),
    E(lambda: W.answer(np.ones(5)), ValueError, "histogram", id="answer: wrong length"),
    E(lambda: W.answer(np.ones((6, 1))), ValueError, "histogram", id="answer: 2-d"),
    E(lambda: W.answer(np.full(6, np.nan)), ValueError, "histogram", id="answer: NaN"),
    E(lambda: W.answer(sp.csr_array(np.full((1, 6), np.inf))), ValueError, "histogram", id="answer: sparse inf"),
    E(lambda: W.answer(sp.csr_array((2, 3))), ValueError, "histogram", id="answer: sparse wrong shape"),
    E(lambda: IMPLICIT.answer(H * 1j), TypeError, "histogram", id="implicit answer: complex"),
    E(lambda: IMPLICIT.answer(sp.csr_array(H[None, :] * 1j)), TypeError, "histogram",
      id="implicit answer: sparse complex"),
    E(lambda: pm.all_range(20_000, implicit=True).answer(np.ones(20_000)), ValueError, "histogram",
      id="implicit answer: 2e8 answers"),
    E(lambda: pm.marginals(HUGE, 2, implicit=True).answer(np.zeros(3)), ValueError, "histogram",
      id="implicit answer: huge universe"),
    E(lambda: W.matvec(H * 1j), TypeError, "histogram", id="matvec: complex"),
    E(lambda: W.rmatvec(np.ones(2) * 1j), TypeError, "values", id="rmatvec: complex"),
    E(lambda: IMPLICIT.rmatvec(np.ones(6) + 0j), TypeError, "values", id="implicit rmatvec: complex"),
    E(lambda: W.rmatvec(None), TypeError, "values", id="rmatvec: None"),
    E(lambda: W.rmatvec(np.ones(3)), ValueError, "values", id="rmatvec: wrong length"),
    E(lambda: W.rmatvec([np.nan, 0]), ValueError, "values", id="rmatvec: NaN"),
    E(lambda: W.rmatvec(sp.csr_array(np.ones((1, 2)))), TypeError, "values", id="rmatvec: sparse"),
    E(lambda: pm.marginals(WIDE, 1, implicit=True).rmatvec(np.ones(3000)), ValueError, "values",
      id="implicit rmatvec: huge universe"),
    E(lambda: W.columns([0.5]), TypeError, "indices", id="columns: fractional"),
    E(lambda: W.columns([[0]]), TypeError, "indices", id="columns: 2-d"),
    E(lambda: W.columns(["0"]), TypeError, "indices", id="columns: str"),
    E(lambda: W.columns([6]), ValueError, "indices", id="columns: out of range"),
    E(lambda: W.columns([-1]), ValueError, "indices", id="columns: negative"),
    E(lambda: IMPLICIT.columns([0.5]), TypeError, "indices", id="implicit columns: fractional"),
    E(lambda: pm.marginals(HUGE, 2, implicit=True).columns(np.arange(4)), ValueError, "indices",
      id="implicit columns: 4 columns of 1e12 entries"),
    E(lambda: W.column_norm(True), TypeError, "ord", id="column_norm: bool ord"),
    E(lambda: W.column_norm("2"), TypeError, "ord", id="column_norm: str ord"),
    E(lambda: W.column_norm(3), ValueError, "ord", id="column_norm: ord 3"),
    E(lambda: pm.all_range(8, implicit=True).column_norm(1), ValueError, "ord", id="implicit column_norm: ord 1"),
    E(lambda: W.gram(max_entries=0), ValueError, "max_entries", id="gram: zero cap"),
    E(lambda: W.gram(max_entries=None), TypeError, "max_entries", id="gram: None cap"),
    E(lambda: pm.prefix(50).gram(max_entries=100), ValueError, "gram", id="gram: above cap"),
    E(lambda: pm.prefix(10**12, implicit=True).gram(), ValueError, "gram", id="gram: implicit huge"),
    E(lambda: pm.identity(10**5).toarray(), ValueError, "max_entries", id="toarray: 1e10 dense entries"),
    E(lambda: W.toarray(max_entries=-1), ValueError, "max_entries", id="toarray: negative cap"),
    E(lambda: W.check_data(ROWS), TypeError, "data", id="check_data: array"),
    E(lambda: IMPLICIT.answer_data(None), TypeError, "data", id="answer_data: None"),
    E(lambda: IMPLICIT.answer_data(Dataset([[0, 0]], Domain(["a", "b"], [3, 2]))), ValueError, "data",
      id="answer_data: other domain"),
    E(lambda: pm.marginals(Domain(["a", "b"], [10**5, 10**5]), 2, implicit=True).answer_data(
        Dataset([[0, 0]], Domain(["a", "b"], [10**5, 10**5]))), ValueError, "data", id="answer_data: 1e10 cells"),
    E(lambda: pm.all_range(10**6, implicit=True).labels, ValueError, "labels", id="labels: 5e11 labels"),
    E(lambda: pm.marginals(HUGE, 2, implicit=True).labels, ValueError, "labels", id="labels: 1e12 marginal labels"),
    # ------------------------------------------------------------------ builders
    E(lambda: pm.identity(0), ValueError, "m", id="identity: zero"),
    E(lambda: pm.identity(-1), ValueError, "m", id="identity: negative"),
    E(lambda: pm.identity(2.0), TypeError, "m", id="identity: float"),
    E(lambda: pm.identity(True), TypeError, "m", id="identity: bool"),
    E(lambda: pm.identity("3"), TypeError, "m", id="identity: str"),
    E(lambda: pm.identity(None), TypeError, "m", id="identity: None"),
    E(lambda: pm.identity(10**12), ValueError, "m: identity", id="identity: 1e12"),
    E(lambda: pm.identity(3, max_entries=-1), ValueError, "max_entries", id="identity: negative cap"),
    E(lambda: pm.identity(3, max_entries=1.5), TypeError, "max_entries", id="identity: float cap"),
    E(lambda: pm.prefix(0), ValueError, "m", id="prefix: zero"),
    E(lambda: pm.prefix(np.float64(3)), TypeError, "m", id="prefix: numpy float"),
    E(lambda: pm.prefix(10**6), ValueError, "m: prefix", id="prefix: 1e12 entries"),
    E(lambda: pm.prefix(3, implicit="yes"), TypeError, "implicit", id="prefix: str flag"),
    E(lambda: pm.prefix(3, max_entries=None), TypeError, "max_entries", id="prefix: None cap"),
    E(lambda: pm.all_range(0), ValueError, "m", id="all_range: zero"),
    E(lambda: pm.all_range(3.5), TypeError, "m", id="all_range: float"),
    E(lambda: pm.all_range(10**5), ValueError, "m: all_range", id="all_range: 5e14 entries"),
    E(lambda: pm.all_range(3, implicit=1), TypeError, "implicit", id="all_range: int flag"),
    E(lambda: pm.repeated(np.ones(3), 0), ValueError, "k", id="repeated: zero"),
    E(lambda: pm.repeated(np.ones(3), 2.0), TypeError, "k", id="repeated: float k"),
    E(lambda: pm.repeated(np.eye(2), 3), ValueError, "query", id="repeated: matrix flattened"),
    E(lambda: pm.repeated(np.ones((2, 2, 2)), 3), ValueError, "query", id="repeated: 3-d"),
    E(lambda: pm.repeated([], 3), ValueError, "query", id="repeated: empty"),
    E(lambda: pm.repeated([1j, 0], 2), TypeError, "query", id="repeated: complex"),
    E(lambda: pm.repeated(sp.csr_array(np.array([[1j, 0]])), 2), TypeError, "query", id="repeated: sparse complex"),
    E(lambda: pm.repeated([np.nan], 2), ValueError, "query", id="repeated: NaN"),
    E(lambda: pm.repeated("ab", 2), TypeError, "query", id="repeated: str"),
    E(lambda: pm.repeated(None, 2), TypeError, "query", id="repeated: None"),
    E(lambda: pm.repeated([[1], [1, 2]], 2), ValueError, "query", id="repeated: ragged"),
    E(lambda: pm.repeated(Workload(np.ones((2, 3))), 2), ValueError, "query", id="repeated: workload of 2"),
    E(lambda: pm.repeated(np.ones(10**4), 10**5), ValueError, "k: repeated", id="repeated: 1e9 entries"),
    E(lambda: pm.marginals({"a": 2}, 1), TypeError, "domain", id="marginals: dict domain"),
    E(lambda: pm.marginals(D, 0), ValueError, "way", id="marginals: way 0"),
    E(lambda: pm.marginals(D, 3), ValueError, "way", id="marginals: way above d"),
    E(lambda: pm.marginals(D, 1.0), TypeError, "way", id="marginals: float way"),
    E(lambda: pm.marginals(D, True), TypeError, "way", id="marginals: bool way"),
    E(lambda: pm.marginals(D, 1, max_entries=0), ValueError, "max_entries", id="marginals: zero cap"),
    E(lambda: pm.marginals(D, 1, implicit="yes"), TypeError, "implicit", id="marginals: str flag"),
    E(lambda: pm.marginals(HUGE, 2), ValueError, "domain: marginals", id="marginals: 1e12 elements, 2-way"),
    E(lambda: pm.marginals(HUGE, 1), ValueError, "domain: marginals", id="marginals: 1e12 elements, 1-way"),
    E(lambda: pm.marginals(HUGE, 2, implicit=True).gram(), ValueError, "gram", id="marginals: implicit gram"),
    E(lambda: pm.from_predicates(D, {"q": _bad_predicate("unknown attribute")}), ValueError, "'nope'",
      id="from_predicates: the unknown attribute is named"),
    *[
        E(lambda kind=kind: pm.from_predicates(D, {"q": _bad_predicate(kind)}), ValueError, "predicates: 'q'",
          id=f"from_predicates: {kind}")
        for kind in ("unknown attribute", "wrong shape", "2-d", "one entry", "strings", "NaN", "above 1",
                     "negative", "None", "complex", "sparse", "raises", "and of arrays", "dict")
    ],
    E(lambda: pm.from_predicates(D, [lambda x: x["a"] == 1, _bad_predicate("NaN")]), ValueError, "'q1'",
      id="from_predicates: second of a list"),
    E(lambda: pm.from_predicates(D, lambda x: x["a"] == 1), TypeError, "predicates",
      id="from_predicates: one callable"),
    E(lambda: pm.from_predicates(D, "ab"), TypeError, "predicates", id="from_predicates: str"),
    E(lambda: pm.from_predicates(D, None), TypeError, "predicates", id="from_predicates: None collection"),
    E(lambda: pm.from_predicates(D, []), ValueError, "predicates", id="from_predicates: empty"),
    E(lambda: pm.from_predicates(D, {1: lambda x: x["a"] == 1}), TypeError, "predicates",
      id="from_predicates: int label"),
    E(lambda: pm.from_predicates(D, {"q": 3}), TypeError, "'q'", id="from_predicates: not callable"),
    E(lambda: pm.from_predicates({"a": 2}, [lambda x: 1]), TypeError, "domain", id="from_predicates: dict domain"),
    E(lambda: pm.from_predicates(HUGE, [lambda x: 1]), ValueError, "domain: from_predicates",
      id="from_predicates: 1e12 elements"),
    E(lambda: pm.from_predicates(D, [lambda x: 1], max_entries=0), ValueError, "max_entries",
      id="from_predicates: zero cap"),
    E(lambda: pm.random_queries(0, 3, RNG), ValueError, "k", id="random_queries: zero k"),
    E(lambda: pm.random_queries(2, 0, RNG), ValueError, "m", id="random_queries: zero m"),
    E(lambda: pm.random_queries(2.0, 3, RNG), TypeError, "k", id="random_queries: float k"),
    E(lambda: pm.random_queries(2, 3, 0), TypeError, "rng", id="random_queries: int seed"),
    E(lambda: pm.random_queries(2, 3, None), TypeError, "rng", id="random_queries: None rng"),
    E(lambda: pm.random_queries(10**5, 10**5, RNG), ValueError, "k: random_queries", id="random_queries: 1e10"),
    E(lambda: pm.random_queries(2, 3, RNG, max_entries=None), TypeError, "max_entries", id="random_queries: None cap"),
    E(lambda: pm.stack([]), ValueError, "workloads", id="stack: empty"),
    E(lambda: pm.stack(W), TypeError, "workloads", id="stack: one workload"),
    E(lambda: pm.stack(None), TypeError, "workloads", id="stack: None"),
    E(lambda: pm.stack("ab"), TypeError, "workloads", id="stack: str"),
    E(lambda: pm.stack([W, np.ones((1, 6))]), TypeError, "workloads", id="stack: array"),
    E(lambda: pm.stack([W, Workload(np.ones((1, 5)))]), ValueError, "workloads", id="stack: universes differ"),
    E(lambda: pm.stack([W, IMPLICIT], implicit=False), ValueError, "implicit", id="stack: explicit of implicit"),
    E(lambda: pm.stack([pm.marginals(D, 1), pm.marginals(Domain(["x"], [6]), 1)]), ValueError, "workloads",
      id="stack: domains differ"),
    # ------------------------------------------------------------------ operators
    E(lambda: tables.marginal_matvec(np.ones(5), [2, 3], 2), ValueError, "vector", id="matvec op: wrong length"),
    E(lambda: tables.marginal_matvec(np.ones(6) * 1j, [2, 3], 2), TypeError, "vector", id="matvec op: complex"),
    E(lambda: tables.marginal_matvec(np.full(6, np.nan), [2, 3], 1), ValueError, "vector", id="matvec op: NaN"),
    E(lambda: tables.marginal_matvec(np.ones(6), [2, 3], 3), ValueError, "way", id="matvec op: way above d"),
    E(lambda: tables.marginal_matvec(np.ones(6), [2, 3], 0), ValueError, "way", id="matvec op: way 0"),
    E(lambda: tables.marginal_matvec(np.ones(6), [2, 0], 1), ValueError, "sizes[1]", id="matvec op: zero size"),
    E(lambda: tables.marginal_matvec(np.ones(6), [2, 3.0], 1), TypeError, "sizes[1]", id="matvec op: float size"),
    E(lambda: tables.marginal_matvec(np.ones(6), "23", 1), TypeError, "sizes", id="matvec op: str sizes"),
    E(lambda: tables.marginal_matvec(np.ones(6), [], 1), ValueError, "sizes", id="matvec op: no sizes"),
    E(lambda: tables.marginal_matvec(np.ones(6), [2, 3], 1, max_entries=2), ValueError, "sizes",
      id="matvec op: answers above cap"),
    E(lambda: tables.marginal_rmatvec(np.ones(5), [2, 3], 2), ValueError, "values", id="rmatvec op: wrong length"),
    E(lambda: tables.marginal_rmatvec(np.ones(6) * 1j, [2, 3], 2), TypeError, "values", id="rmatvec op: complex"),
    E(lambda: tables.marginal_rmatvec(np.ones(3000), [1000] * 3, 1), ValueError, "sizes",
      id="rmatvec op: 1e9 elements"),
    E(lambda: tables.marginal_columns([0], [2, 3], 2, 5), ValueError, "num_queries", id="columns op: wrong k"),
    E(lambda: tables.marginal_columns([6], [2, 3], 2, 6), ValueError, "indices", id="columns op: out of range"),
    E(lambda: tables.marginal_columns([0.5], [2, 3], 2, 6), TypeError, "indices", id="columns op: fractional"),
    E(lambda: tables.marginal_columns(np.arange(4), [10**6, 10**6], 2, 10**12), ValueError, "indices",
      id="columns op: 4e12 entries"),
    E(lambda: tables.marginal_rows([np.array([0, 1])], [2, 3], 1), ValueError, "codes", id="rows op: too few arrays"),
    E(lambda: tables.marginal_rows([np.array([0, 2]), np.array([0, 1])], [2, 3], 1), ValueError, "codes[0]",
      id="rows op: code out of range"),
    E(lambda: tables.marginal_rows([np.array([0.0, 1.0]), np.array([0, 1])], [2, 3], 1), TypeError, "codes[0]",
      id="rows op: float codes"),
    E(lambda: tables.marginal_rows([np.array([0, 1]), np.array([0])], [2, 3], 1), ValueError, "codes[1]",
      id="rows op: lengths differ"),
    E(lambda: tables.marginal_rows(None, [2, 3], 1), TypeError, "codes", id="rows op: None"),
    E(lambda: tables.pair_cells([2]), ValueError, "sizes", id="pair_cells: one attribute"),
    E(lambda: tables.pair_cells(None), TypeError, "sizes", id="pair_cells: None"),
    E(lambda: tables.pair_cells([10**6] * 3), ValueError, "sizes", id="pair_cells: 3e12 cells"),
    E(lambda: tables.marginal_cells([2, 3], 0), ValueError, "way", id="marginal_cells: way 0"),
    # ------------------------------------------------------------------ validation helpers
    E(lambda: as_generator(-1), ValueError, "rng", id="as_generator: negative seed"),
    E(lambda: as_generator(np.int64(-5)), ValueError, "rng", id="as_generator: negative numpy seed"),
    E(lambda: as_generator(True), TypeError, "rng", id="as_generator: bool"),
    E(lambda: as_generator(1.0), TypeError, "rng", id="as_generator: float"),
    E(lambda: as_generator("0"), TypeError, "rng", id="as_generator: str"),
    E(lambda: as_generator(np.random.RandomState(0)), TypeError, "rng", id="as_generator: RandomState"),
    E(lambda: as_generator(np.random), TypeError, "rng", id="as_generator: numpy.random module"),
    E(lambda: as_generator(np.random.SeedSequence(0)), TypeError, "rng", id="as_generator: SeedSequence"),
    E(lambda: as_generator([1, 2]), TypeError, "rng", id="as_generator: list"),
    E(lambda: as_generator(-1, name="seed"), ValueError, "seed", id="as_generator: named argument"),
    E(lambda: check_positive_int("k", 0), ValueError, "k", id="check_positive_int: zero"),
    E(lambda: check_positive_int("k", 1.0), TypeError, "k", id="check_positive_int: float"),
    E(lambda: check_positive_int("k", None), TypeError, "k", id="check_positive_int: None"),
    E(lambda: check_positive_int("k", np.True_), TypeError, "k", id="check_positive_int: numpy bool"),
    E(lambda: check_bool("flag", 1), TypeError, "flag", id="check_bool: int"),
    E(lambda: check_bool("flag", "False"), TypeError, "flag", id="check_bool: str"),
    E(lambda: check_real_array("x", [1j]), TypeError, "x", id="check_real_array: complex"),
    E(lambda: check_real_array("x", ["a"]), TypeError, "x", id="check_real_array: str"),
    E(lambda: check_real_array("x", [b"1"]), TypeError, "x", id="check_real_array: bytes"),
    E(lambda: check_real_array("x", None), TypeError, "x", id="check_real_array: None"),
    E(lambda: check_real_array("x", {"a": 1}), TypeError, "x", id="check_real_array: dict"),
    E(lambda: check_real_array("x", [Decimal(1)]), TypeError, "x", id="check_real_array: Decimal"),
    E(lambda: check_real_array("x", np.array(["2020-01-01"], dtype="datetime64[D]")), TypeError, "x",
      id="check_real_array: datetime"),
    E(lambda: check_real_array("x", [[1], [1, 2]]), ValueError, "x", id="check_real_array: ragged"),
    E(lambda: check_real_array("x", [1.0, np.nan]), ValueError, "x", id="check_real_array: NaN"),
    E(lambda: check_real_array("x", [-np.inf]), ValueError, "x", id="check_real_array: inf"),
    E(lambda: check_real_dtype("x", np.complex64), TypeError, "x", id="check_real_dtype: complex"),
    E(lambda: check_entries("m", 10, 5, "a matrix"), ValueError, "m", id="check_entries: above cap"),
    # ------------------------------------------------------------------ beyond the data layer
    # Complex numbers were cast to their real part (a ComplexWarning at most); strings failed
    # inside numpy without naming the argument.
    E(lambda: pm.Threshold(np.ones(6) / 6, threshold=0.5, epsilon=1.0, n=6, rng=0).answer(np.ones(6) * 1j),
      TypeError, "query", id="Threshold.answer: complex query"),
    E(lambda: pm.multiplicative_weights.multiplicative_weights_update(np.ones(6) / 6, np.ones(6) * 1j, True, 0.1),
      TypeError, "query_row",
      id="multiplicative_weights_update: complex row"),
    E(lambda: pm.multiplicative_weights.multiplicative_weights_update(np.ones(6) / 6 * 1j, np.ones(6), True, 0.1),
      TypeError,
      "distribution", id="multiplicative_weights_update: complex distribution"),
    E(lambda: pm.project_to_hull(np.eye(2), np.ones(2) * 1j), TypeError, "y", id="project_to_hull: complex y"),
    E(lambda: pm.bodies.relaxation_support(D, np.ones(4) * 1j), TypeError, "directions", id="relaxation_support: "
                                                                                            "complex"),
    E(lambda: pm.geometry.support_function(pm.identity(3), np.ones((2, 3)) * 1j), TypeError, "directions",
      id="support_function: complex"),
    E(lambda: pm.geometry.support_function(pm.identity(3), "ab"), TypeError, "directions",
      id="support_function: a str"),
    E(lambda: pm.rmse(np.ones(3) * 1j, np.ones(3)), TypeError, "estimate", id="rmse: complex"),
    E(lambda: pm.max_error("abc", np.ones(3)), TypeError, "estimate", id="max_error: a str"),
    E(lambda: pm.evaluation.mean_confidence_interval(np.ones(3) * 1j), TypeError, "values",
      id="mean_confidence_interval: complex"),
    E(lambda: pm.privacy.laplace_scale(1j, 1.0), TypeError, "l1_sensitivity", id="laplace_scale: complex"),
    E(lambda: pm.privacy.gaussian_sigma(1j, pm.ZCDP(1.0)), TypeError, "l2_sensitivity", id="gaussian_sigma: complex"),
    # Privacy parameters whose noise scale overflows, and the calibration at huge epsilon.
    E(lambda: pm.privacy.laplace_scale(1.0, pm.PureDP(1e-310)), ValueError, "epsilon", id="laplace_scale: "
                                                                                          "PureDP(1e-310)"),
    E(lambda: pm.LaplaceMechanism(pm.identity(2), pm.PureDP(1e-310)), ValueError, "epsilon",
      id="LaplaceMechanism: PureDP(1e-310)"),
    # Mechanisms: arguments checked at construction, before any data is touched.
    E(lambda: pm.ProjectionMechanism(pm.identity(2), pm.ZCDP(1.0), "add-remove"), TypeError, "positional",
      id="ProjectionMechanism: options are keyword-only"),
    E(lambda: pm.ProjectionMechanism(pm.identity(2), pm.ZCDP(1.0), tol=-1), ValueError, "tol",
      id="ProjectionMechanism: tol=-1"),
    E(lambda: pm.GaussianMechanism(pm.identity(2), pm.ZCDP(1.0), neighbouring="add-remove"), ValueError, "size",
      id="GaussianMechanism: add-remove without a size"),
    E(lambda: pm.GaussianMechanism(pm.identity(2), pm.ZCDP(1.0), noise="exact"), ValueError, "noise",
      id="GaussianMechanism: unknown noise"),
    E(lambda: pm.GaussianMechanism(pm.Workload(0.5 * np.eye(2)), pm.ZCDP(1.0), noise="discrete"), ValueError, "noise",
      id="GaussianMechanism: discrete noise on fractional counts"),
    E(lambda: pm.FactorizationMechanism(pm.identity(4), pm.ZCDP(1.0),
                                        factorization=pm.factorization_norm(pm.prefix(4))),
      ValueError, "factorization", id="FactorizationMechanism: another workload's factorization"),
    E(lambda: pm.GaussianMechanism(pm.identity(2), pm.ZCDP(1.0)).release(np.array([0.5, 0.5]), n=3), ValueError,
      "n", id="release: a histogram n cannot have"),
    E(lambda: pm.GaussianMechanism(pm.identity(2), pm.ZCDP(1.0)).release(np.array([0.5, 0.5]), n=2, rng=-1),
      ValueError, "rng", id="release: rng=-1"),
    # ------------------------------------------------ the audit of issue 31: privacy at the extremes
    E(lambda: pm.GaussianMechanism(pm.Workload(np.array([[5e-324, 0.0]]), domain=Domain(["a"], [2])), pm.ZCDP(0.5)),
      ValueError, "workload", id="GaussianMechanism: a subnormal sensitivity (it released with no noise)"),
    E(lambda: pm.GaussianMechanism(pm.identity(2), pm.ZCDP(1e-40)), ValueError, "privacy",
      id="GaussianMechanism: discrete sigma 1e20 beyond the sampler (it saturated at 2^63)"),
    E(lambda: pm.LaplaceMechanism(pm.identity(2), pm.PureDP(1e-300)), ValueError, "privacy",
      id="LaplaceMechanism: discrete scale 2e300 beyond the sampler"),
    E(lambda: pm.GaussianMechanism(pm.identity(2), pm.ApproxDP(5e-324, 1e-300)), ValueError, "privacy",
      id="GaussianMechanism: epsilon 5e-324 (a bare ZeroDivisionError)"),
    E(lambda: pm.ApproxDP(1.0, 1.0), ValueError, "delta", id="ApproxDP: delta=1 protects nothing"),
    E(lambda: pm.ApproxDP(1.0, 0.5), pm.LargeDeltaWarning, "delta", id="ApproxDP: delta=0.5 warns"),
    E(lambda: pm.OfflinePMW(pm.identity(6), pm.PureDP(1.0), rounds=10**9), ValueError, "rounds",
      id="OfflinePMW: rounds=10**9 (it hung)"),
    E(lambda: Domain(["a=b"], [2]), ValueError, "attributes", id="Domain: '=' in a name (labels ambiguous)"),
    E(lambda: Domain(["a\nb"], [2]), ValueError, "attributes", id="Domain: a newline in a name"),
    E(lambda: Domain([" a"], [2]), ValueError, "attributes", id="Domain: a leading space in a name"),
    E(lambda: Domain(["a"], [10**400]), ValueError, "size", id="Domain: size=10**400"),
    E(lambda: Dataset(np.ma.masked_array([[0, 1]], mask=[[0, 1]]), D), ValueError, "column 'b'",
      id="Dataset: a masked entry"),
    E(lambda: Dataset.from_frame(pd.DataFrame({"a": [b"0"], "b": [0]}), D), TypeError, "column 'a'",
      id="Dataset.from_frame: bytes codes"),
    E(lambda: pm.prefix(10**400), ValueError, "m", id="prefix: m=10**400 (an OverflowError)"),
]

#: Seconds an entry may take: every refusal comes before any work of the input's size, and an
#: entry that hangs (a FIFO, rounds=10**9) fails instead of stalling the suite.
ENTRY_SECONDS = 30


@pytest.mark.parametrize("call, error, named", CATALOGUE)
def test_bad_input_is_refused_naming_the_argument(call, error, named):
    import signal

    def overran(signum, frame):
        raise AssertionError(f"took over {ENTRY_SECONDS} s: a refusal must come before any work")

    alarm = hasattr(signal, "SIGALRM")  # POSIX only; elsewhere the entries run without a limit
    previous = signal.signal(signal.SIGALRM, overran) if alarm else None
    if alarm:
        signal.alarm(ENTRY_SECONDS)
    try:
        with warnings.catch_warnings():
            # A ComplexWarning (or any other) while refusing means something was cast silently.
            warnings.simplefilter("error")
            with pytest.raises(error) as info:
                call()
    finally:
        if alarm:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
    assert named in str(info.value), f"{type(info.value).__name__}: {info.value}"


def test_catalogue_is_large_and_ids_are_unique():
    ids = [entry.id for entry in CATALOGUE]
    assert len(ids) == len(set(ids))
    assert len(ids) > 100


def test_missing_file_stays_file_not_found_and_names_the_path(tmp_path):
    # Decided: a missing file keeps the OSError callers catch, and Python's message names the path.
    missing = tmp_path / "nowhere" / "domain.json"
    for call in (lambda: Domain.from_json(missing), lambda: Dataset.from_csv(missing, D)):
        with pytest.raises(FileNotFoundError) as info:
            call()
        assert os.fspath(missing) in str(info.value)


def test_good_inputs_next_to_the_bad_ones_are_accepted():
    """The boundary is where the catalogue puts it: these neighbours of bad entries are fine."""
    assert Domain(["a", "b"], (np.int64(2), np.int32(3))) == D  # numpy ints are ints
    assert Domain(("a" for _ in range(1)), [2]).attributes == ("a",)  # any iterable of names
    assert Dataset(ROWS.astype(float), D).records.dtype == np.int64  # integral floats are codes
    assert Dataset(ROWS == 1, Domain(["a", "b"], [2, 2])).records.max() == 1  # booleans are codes 0/1
    assert Workload(pd.DataFrame(np.eye(2))).shape == (2, 2)  # a numeric DataFrame: its values
    assert Workload(np.eye(2, dtype=bool)).matrix.dtype == float  # a boolean matrix: 0/1
    h, n = check_normalized_histogram([1 / 3, 2 / 3], 3)
    assert n == 3 and isinstance(n, int)
    assert check_normalized_histogram(sp.csr_array(np.array([[0.25, 0.75]])), np.int64(4))[1] == 4
    assert pm.from_predicates(D, {"all": lambda x: 1}).toarray().tolist() == [[1.0] * 6]  # a constant
    assert as_generator(0).integers(10) == np.random.default_rng(0).integers(10)
    assert isinstance(as_generator(None), np.random.Generator)
    generator = np.random.default_rng(1)
    assert as_generator(generator) is generator


# ------------------------------------------------------------------ errors that name their argument as data
# An external test of 146 bad inputs found refusals that named an internal argument ("n:", "y:")
# or none ("-inf + inf in fsum"). Each names the argument the caller passed, as an attribute, with
# the valid range; the limits are written out from what float64 and the machine can hold.

#: float64's largest number, written out: (2 - 2^-52) 2^1023.
FLOAT64_MAX = (2.0 - 2.0**-52) * 2.0**1023
#: The most rows whose counts float64 holds exactly.
EXACT_ROWS = 2.0**53
#: The adaptive mechanism's default under add/remove: 5% of the budget estimates the size.
SIZE_SHARE = 0.05


def _three_attributes() -> Dataset:
    return Dataset(np.random.default_rng(0).integers(0, 2, size=(60, 3)), Domain(["a", "b", "c"], [2, 3, 2]))


def _refusal(call: Callable[[], object]) -> pm.errors.ArgumentValueError:
    with pytest.raises(pm.errors.ArgumentValueError) as info:
        call()
    assert isinstance(info.value, ValueError)  # caught by every handler of ValueError as before
    assert str(info.value).startswith(f"{info.value.argument}: ")
    return info.value


def test_an_epsilon_beyond_the_discrete_calibration_names_privacy_and_its_range():
    """ApproxDP(1e308, 1e-6) ended in "-inf + inf in fsum": the conversion from zCDP squares rho +
    epsilon, so it takes epsilon up to sqrt(float64's largest) = 1.34e154, checked up front."""
    largest = FLOAT64_MAX**0.5
    error = _refusal(lambda: pm.synthesize(_three_attributes(), pm.ApproxDP(1e308, 1e-6), rng=0))
    assert (error.argument, error.part) == ("privacy", "epsilon")
    assert error.valid == f"at most {largest:.4g}" and "epsilon must be at most 1.341e+154" in str(error)
    error = _refusal(lambda: pm.GaussianMechanism(pm.identity(2), pm.ApproxDP(1e308, 1e-6), noise="discrete"))
    assert (error.argument, error.part) == ("privacy", "epsilon")
    # The boundary itself converts; the continuous Gaussian's calibration takes every finite epsilon,
    # where sigma tends to Delta / sqrt(2 epsilon) (the profile's a = Delta / (2 sigma) - epsilon sigma / Delta
    # must reach a fixed quantile: epsilon sigma^2 / Delta^2 -> 1/2).
    assert pm.privacy.zcdp_for_approx_dp(pm.ApproxDP(largest, 1e-6)) > 0
    for epsilon in (1e153, 1e200, 1e308):
        sigma = pm.privacy.gaussian_sigma(1.0, pm.ApproxDP(epsilon, 1e-6))
        assert sigma == pytest.approx(1.0 / (2.0 * epsilon) ** 0.5, rel=1e-6)


def test_every_epsilon_up_to_the_largest_converts_with_the_delta_it_claims():
    """Near the root rho is close to epsilon, so (rho + epsilon)^2 overflows from about half the
    largest epsilon: on a grid of 300 epsilons over the last 30 % below it, 122 ended in "-inf +
    inf in fsum" before the overflowing terms were read as nothing certified."""
    largest = FLOAT64_MAX**0.5
    for epsilon in np.linspace(0.70 * largest, largest, 300):
        rho = pm.privacy.zcdp_for_approx_dp(pm.ApproxDP(float(epsilon), 1e-6))
        assert 0 < rho and pm.privacy.zcdp_delta(rho, float(epsilon)) <= 1e-6


def test_a_rho_beyond_the_adaptive_mechanisms_weighting_names_privacy_and_its_range():
    """ZCDP(1e308) was refused as the local projection's internal "y". A round of noise sigma costs
    Delta^2 / (2 sigma^2), so its counts weighted by 1 / sigma have squared norm at most 4 n^2 rho /
    Delta^2 (Delta = 1 under add/remove) for n up to 2^53 rows, kept below half float64's largest."""
    largest = FLOAT64_MAX / (8.0 * EXACT_ROWS**2) / (1.0 - SIZE_SHARE)
    error = _refusal(lambda: pm.synthesize(_three_attributes(), pm.ZCDP(1e308), rng=0))
    assert (error.argument, error.part) == ("privacy", "rho")
    assert error.valid == f"at most {largest:.3g}" and f"rho must be at most {largest:.3g}" in str(error)
    workload = pm.marginals(Domain(["a", "b", "c"], [2, 3, 2]), 2)
    pm.AdaptiveProjectionMechanism(workload, pm.ZCDP(largest * 0.999), neighbouring="add-remove", size="estimate")
    # An (epsilon, delta) budget converts to a rho far below it, up to the conversion's largest epsilon.
    pm.AdaptiveProjectionMechanism(workload, pm.ApproxDP(FLOAT64_MAX**0.5, 1e-6), neighbouring="add-remove",
                                   size="estimate")


def test_a_budget_beyond_the_discrete_sampler_names_privacy_its_part_and_the_alternative():
    """rho = 1e-30 was blamed on the workload by the command line; the refusal names privacy, its
    part, the least budget the sampler draws as stated, and continuous noise as the other way out."""
    error = _refusal(lambda: pm.synthesize(_three_attributes(), pm.ZCDP(1e-30), rng=0))
    assert (error.argument, error.part, error.alternatives) == ("privacy", "rho", (("noise", "continuous"),))
    assert error.valid is not None and error.valid.startswith("at least ")
    # The size estimate's noise (sensitivity 1, 5% of the budget) is the largest: sigma =
    # 1 / sqrt(2 rho 0.05) must stay within 2^52 / 40 counts.
    least = (40.0 / 2.0**52) ** 2 / (2.0 * SIZE_SHARE)
    assert float(error.valid.removeprefix("at least ")) == pytest.approx(least, rel=1e-2)
    assert "use noise='continuous' or a budget of at least rho = " in str(error)
    error = _refusal(lambda: pm.LaplaceMechanism(pm.identity(2), pm.PureDP(1e-300)))
    assert (error.argument, error.part) == ("privacy", "epsilon")


def test_rows_beyond_memory_name_rows_with_the_most_that_fit():
    """rows=10**12 was refused as the rounding's internal "n"."""
    from projmech.bodies import memory_limit, memory_shortfall

    if memory_limit() is None:
        pytest.skip("the available memory is unknown here")
    error = _refusal(lambda: pm.synthesize(_three_attributes(), pm.ZCDP(1.0), rows=10**12, rng=0))
    assert error.argument == "rows" and str(error).startswith("rows: 1,000,000,000,000 rows of 3 attributes")
    assert error.valid is not None and error.valid.startswith("between 1 and ")
    most = int(error.valid.removeprefix("between 1 and ").replace(",", ""))
    # Three int64 copies of each value: the most rows that fit, and one more does not.
    assert memory_shortfall(3 * 8 * 3 * most) is None and memory_shortfall(3 * 8 * 3 * (most + 1)) is not None


@pytest.mark.parametrize("call, argument, error_type", [
    (lambda: pm.ZCDP(-1.0), "rho", ValueError),
    (lambda: pm.ZCDP("1"), "rho", TypeError),
    (lambda: pm.ApproxDP(1.0, 1.0), "delta", ValueError),
    (lambda: pm.Noise("gaussian", 1.0, discrete=1), "discrete", TypeError),
    (lambda: pm.GaussianMechanism(pm.identity(2), pm.ZCDP(1.0), noise="exact"), "noise", ValueError),
    (lambda: pm.synthesize(_three_attributes(), pm.ZCDP(1.0), rows=0), "rows", ValueError),
    (lambda: pm.synthesize(_three_attributes(), pm.ZCDP(1.0), rng=-1), "rng", ValueError),
    (lambda: pm.AdaptiveProjectionMechanism(pm.identity(2), pm.ZCDP(1.0)), "workload", ValueError),
    (lambda: pm.privacy.laplace_scale(1.0, pm.ZCDP(1.0)), "privacy", TypeError),
])
def test_refusals_carry_the_argument_as_an_attribute(call, argument, error_type):
    with pytest.raises(pm.errors.ArgumentError) as info:
        call()
    assert isinstance(info.value, error_type) and info.value.argument == argument
    assert str(info.value).startswith(f"{argument}: ")


def test_argument_errors_survive_pickling():
    import pickle

    error = pm.errors.ArgumentValueError("privacy", "too small", part="rho", valid="at least 1",
                                         alternatives=[("noise", "continuous")], remedies=["a larger budget"])
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error) and str(copy) == str(error) == \
        "privacy: too small; use noise='continuous' or a larger budget"
    assert (copy.argument, copy.part, copy.valid, copy.alternatives) == ("privacy", "rho", "at least 1",
                                                                         (("noise", "continuous"),))
