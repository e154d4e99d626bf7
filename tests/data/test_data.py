"""Tests of projmech.data._dataset: loading/validation of data sets and histograms."""

import itertools
import json
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from projmech import Dataset, Domain, histogram
from projmech.data import check_normalized_histogram, resolve_rows
from projmech.privacy import SizePolicy

DOMAIN = Domain(["a", "b", "c"], [2, 3, 4])
ROWS = np.array([[0, 0, 0], [1, 2, 3], [1, 2, 3], [0, 1, 2], [1, 0, 3]])


def brute_force_histogram(rows, sizes, normalize=True):
    """Histogram by enumerating the universe in row-major order and counting tuples."""
    counts = Counter(tuple(int(v) for v in row) for row in rows)
    universe = list(itertools.product(*(range(s) for s in sizes)))
    h = np.array([counts.get(u, 0) for u in universe], dtype=float)
    return h / len(rows) if normalize else h


# ----------------------------------------------------------------------------- Dataset


def test_dataset_from_ndarray():
    ds = Dataset(ROWS, DOMAIN)
    assert ds.n == len(ds) == 5
    assert ds.domain == DOMAIN
    assert ds.records.dtype == np.int64
    np.testing.assert_array_equal(ds.records, ROWS)


def test_records_are_read_only_and_copied():
    rows = ROWS.copy()
    ds = Dataset(rows, DOMAIN)
    with pytest.raises(ValueError):
        ds.records[0, 0] = 1
    rows[0, 0] = 1  # the caller's array must not alias the validated records
    assert ds.records[0, 0] == 0


def test_dataset_accepts_integral_floats():
    ds = Dataset(ROWS.astype(float), DOMAIN)
    assert ds.records.dtype == np.int64
    np.testing.assert_array_equal(ds.records, ROWS)


def test_dataset_from_dataframe_ignores_extra_columns_and_reorders():
    frame = pd.DataFrame({"c": ROWS[:, 2], "extra": ["x"] * 5, "a": ROWS[:, 0], "b": ROWS[:, 1]})
    ds = Dataset.from_dataframe(frame, DOMAIN)
    np.testing.assert_array_equal(ds.records, ROWS)


def test_dataset_from_dataframe_object_column_of_ints():
    frame = pd.DataFrame(
        {"a": pd.Series([0, 1, 1, 0, 1], dtype=object), "b": ROWS[:, 1], "c": ROWS[:, 2]}
    )
    np.testing.assert_array_equal(Dataset.from_dataframe(frame, DOMAIN).records, ROWS)


def test_dataset_from_dataframe_numeric_strings_accepted():
    frame = pd.DataFrame({name: [str(v) for v in ROWS[:, i]] for i, name in enumerate("abc")})
    np.testing.assert_array_equal(Dataset.from_dataframe(frame, DOMAIN).records, ROWS)


def test_dataset_from_dataframe_nullable_int():
    frame = pd.DataFrame({name: pd.array(ROWS[:, i], dtype="Int64") for i, name in enumerate("abc")})
    np.testing.assert_array_equal(Dataset.from_dataframe(frame, DOMAIN).records, ROWS)


def test_from_dataframe_rejects_non_frame():
    with pytest.raises(TypeError, match="DataFrame"):
        Dataset.from_dataframe(ROWS, DOMAIN)


def test_dataset_rejects_non_domain():
    with pytest.raises(TypeError, match="Domain"):
        Dataset(ROWS, {"a": 2, "b": 3, "c": 4})


def _write_csv(tmp_path, text, domain=None):
    data = tmp_path / "data.csv"
    data.write_text(text, encoding="utf-8")
    dom = tmp_path / "domain.json"
    dom.write_text(json.dumps((domain or DOMAIN).to_dict()), encoding="utf-8")
    return data, dom


def test_from_csv_with_json_domain(tmp_path):
    lines = ["c,b,a"] + [f"{c},{b},{a}" for a, b, c in ROWS]
    data, dom = _write_csv(tmp_path, "\n".join(lines) + "\n")
    ds = Dataset.from_csv(data, dom)
    assert ds.domain == DOMAIN
    np.testing.assert_array_equal(ds.records, ROWS)
    # Domain object instead of a path, string paths
    ds2 = Dataset.from_csv(str(data), DOMAIN)
    np.testing.assert_array_equal(ds2.records, ROWS)


# Each case: (the CSV's lines, expected message regex).
# Row numbers are 0-based data rows (the header is not counted).
BAD_CSV = [
    pytest.param(["a,b,c", "0,0,0", "1,2,3", "1,3,0", "1,5,0"], r"column 'b'.*value 3 at row 2.*outside.*0\.\.2",
                 id="outside"),
    pytest.param(["a,b,c", "0,0,0", "0,0,-1", "0,0,-2"], r"column 'c'.*value -1 at row 1.*outside", id="negative"),
    pytest.param(["a,b,c", "0,0,0", "1,1,1", "0,,1", "0,,1"],
                 r"column 'b': missing value at row 2; a domain has no code", id="missing-value"),
    pytest.param(["a,b,c", "0,0,0", "1,1.5,1", "0,2.5,1"], r"column 'b'.*non-integer code 1\.5 at row 1",
                 id="fraction"),
    pytest.param(["a,b,c", "0,0,0", "1,1,1", "0,1,x", "0,1,y"], r"column 'c'.*expected integer codes.*'x'.*at row 2",
                 id="string"),
    pytest.param(["a,c", "0,0", "1,1"], r"\['b'\].*missing", id="missing-column"),
    pytest.param(["0,0,0", "1,2,3"], r"missing.*the CSV needs a header row", id="no-header"),
]


@pytest.mark.parametrize("lines, message", BAD_CSV)
def test_from_csv_refuses_bad_files(tmp_path, lines, message):
    data, dom = _write_csv(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=message):
        Dataset.from_csv(data, dom)


def test_from_csv_no_rows(tmp_path):
    """A header and no rows is a data set of n = 0 (under add/remove neighbours the neighbour of
    every one-row data set); it has counts but no normalized histogram."""
    data, dom = _write_csv(tmp_path, "a,b,c\n")
    empty = Dataset.from_csv(data, dom)
    assert empty.n == 0
    assert histogram(empty, normalize=False).sum() == 0
    with pytest.raises(ValueError, match="no rows"):
        histogram(empty)


BAD_FRAMES = [
    pytest.param({"a": [0, 1, 2, 5], "b": [0, 0, 0, 0], "c": [0, 0, 0, 0]}, r"column 'a'.*value 2 at row 2.*0\.\.1",
                 id="outside"),
    pytest.param({"a": [0, 0], "b": [0, -3], "c": [0, 0]}, r"column 'b'.*value -3 at row 1", id="negative"),
    pytest.param({"a": [0, 0, 0], "b": [0, 0, 0], "c": [0.0, np.nan, 1.0]},
                 r"column 'c': missing value at row 1; a domain has no code", id="nan"),
    pytest.param({"a": [0, 0, 0], "b": [0, 0, 0], "c": [0.0, 1.0, np.inf]}, r"column 'c'.*inf at row 2", id="inf"),
    pytest.param({"a": [0, 0], "b": [0, 0], "c": [0.0, 2.25]}, r"column 'c'.*non-integer code 2\.25 at row 1",
                 id="fraction"),
    pytest.param({"a": [0, 1, 1], "b": ["0", "1", "x"], "c": [0, 0, 0]}, r"column 'b'.*expected integer "
                                                                         r"codes.*'x'.*at row 2", id="string"),
    pytest.param({"a": [0, 1], "b": ["x", "y"], "c": [0, 0]}, r"column 'b'.*'x'.*at row 0", id="all-strings"),
    pytest.param({"a": [0, 1, 0], "b": [0, 1, "x"], "c": [0, 0, 0]}, r"column 'b'.*'x'.*at row 2", id="mixed-object"),
    pytest.param({"a": [0, 1, 1], "b": [0, 1, None], "c": [0, 0, 0]}, r"column 'b'.*at row 2", id="none"),
    pytest.param({"a": [0, 1], "b": [0, 1], "c": [0, 10**20]}, r"column 'c'.*value 1e\+20 at row 1.*outside",
                 id="huge"),
]


@pytest.mark.parametrize("columns, message", BAD_FRAMES)
def test_from_dataframe_bad_values(columns, message):
    with pytest.raises(ValueError, match=message):
        Dataset.from_dataframe(pd.DataFrame(columns), DOMAIN)


def test_from_dataframe_missing_columns_named():
    frame = pd.DataFrame({"b": [0], "x": [0]})
    with pytest.raises(ValueError, match=r"\['a', 'c'\].*missing"):
        Dataset.from_dataframe(frame, DOMAIN)


def test_from_dataframe_empty():
    empty = Dataset.from_dataframe(pd.DataFrame({"a": [], "b": [], "c": []}), DOMAIN)
    assert empty.n == 0 and empty.records.shape == (0, 3)


BAD_ARRAYS = [
    pytest.param([[0, 0, 0], [0, 3, 0]], r"column 'b'.*value 3 at row 1.*0\.\.2", id="outside"),
    pytest.param([[0, 0, 0], [0, 0, 0], [-1, 0, 0]], r"column 'a'.*value -1 at row 2", id="negative"),
    pytest.param([[0, 0, 0.0], [0, 0, np.nan]], r"column 'c': missing value at row 1; a domain has no code", id="nan"),
    pytest.param([[0, 0, 0.5], [0, 0, 1.5]], r"column 'c'.*non-integer code 0\.5 at row 0", id="fraction"),
    pytest.param([[0, 0, 0], [0, 1, 1e30]], r"column 'c'.*value 1e\+30 at row 1.*outside", id="huge-float"),
    pytest.param(np.array([["0", "0", "0"], ["1", "x", "0"]]), r"column 'b'.*'x'.*at row 1", id="string"),
]


@pytest.mark.parametrize("array, message", BAD_ARRAYS)
def test_ndarray_bad_values(array, message):
    with pytest.raises(ValueError, match=message):
        Dataset(np.asarray(array), DOMAIN)


@pytest.mark.parametrize("shape", [(5,), (5, 2), (5, 4), (2, 3, 1)])
def test_ndarray_wrong_shape(shape):
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        Dataset(np.zeros(shape, dtype=np.int64), DOMAIN)


def test_ndarray_no_rows():
    empty = Dataset(np.zeros((0, 3), dtype=np.int64), DOMAIN)
    assert empty.n == 0
    with pytest.raises(ValueError, match="no rows"):
        histogram(empty)  # fractions of n = 0 rows are undefined


def test_first_bad_row_reported_not_a_later_one():
    rows = np.zeros((100, 3), dtype=np.int64)
    rows[[37, 60, 99], 1] = [9, 5, 3]
    with pytest.raises(ValueError, match=r"column 'b': value 9 at row 37"):
        Dataset(rows, DOMAIN)


# ----------------------------------------------------------------------------- project / subsample


def test_project_and_to_dataframe():
    ds = Dataset(ROWS, DOMAIN)
    p = ds.project(["c", "a"])
    assert p.domain == Domain(["c", "a"], [4, 2])
    np.testing.assert_array_equal(p.records, ROWS[:, [2, 0]])
    frame = ds.to_dataframe()
    assert list(frame.columns) == ["a", "b", "c"]
    np.testing.assert_array_equal(frame.to_numpy(), ROWS)


def test_subsample_without_replacement():
    rows = np.array([[i % 2, i % 3, i % 4] for i in range(12)])
    ds = Dataset(rows, DOMAIN)
    sub = ds.subsample(12, np.random.default_rng(0))
    # all 12 rows are distinct as tuples (i mod 2,3,4 with i < 12 is injective), so a
    # permutation without replacement gives back exactly the same multiset
    assert Counter(map(tuple, sub.records.tolist())) == Counter(map(tuple, rows.tolist()))
    a = ds.subsample(5, np.random.default_rng(3)).records
    b = ds.subsample(5, np.random.default_rng(3)).records
    np.testing.assert_array_equal(a, b)
    assert len({tuple(r) for r in a.tolist()}) == 5
    with pytest.raises(ValueError, match=r"\[1, 12\]"):
        ds.subsample(13, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"\[1, 12\]"):
        ds.subsample(0, np.random.default_rng(0))


# ----------------------------------------------------------------------------- histogram


def test_histogram_brute_force_counts_and_normalized():
    ds = Dataset(ROWS, DOMAIN)
    h = histogram(ds)
    assert h.shape == (24,)
    np.testing.assert_allclose(h, brute_force_histogram(ROWS, DOMAIN.sizes))
    assert h.sum() == pytest.approx(1.0)
    counts = histogram(ds, normalize=False)
    np.testing.assert_array_equal(counts, brute_force_histogram(ROWS, DOMAIN.sizes, normalize=False))
    # specific cells: (1,2,3) -> 23 appears twice; (0,1,2) -> 6; (1,0,3) -> 15
    assert counts[23] == 2 and counts[6] == 1 and counts[15] == 1 and counts[0] == 1
    assert counts.sum() == 5


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=4).flatmap(
        lambda sizes: st.tuples(
            st.just(sizes),
            st.lists(st.tuples(*(st.integers(0, s - 1) for s in sizes)), min_size=1, max_size=30),
        )
    )
)
def test_histogram_property_matches_counter(case):
    sizes, rows = case
    domain = Domain([f"v{i}" for i in range(len(sizes))], sizes)
    rows = np.array(rows, dtype=np.int64)
    h = histogram(rows, domain)
    np.testing.assert_allclose(h, brute_force_histogram(rows, sizes), rtol=0, atol=1e-15)
    assert h.sum() == pytest.approx(1.0)
    s = histogram(rows, domain, sparse=True)
    np.testing.assert_allclose(s.toarray().ravel(), h, rtol=0, atol=0)


def test_histogram_sparse_equals_dense():
    ds = Dataset(ROWS, DOMAIN)
    for normalize in (True, False):
        s = histogram(ds, normalize=normalize, sparse=True)
        assert sp.issparse(s)
        assert s.shape == (1, 24)
        assert s.nnz == 4  # four distinct rows
        np.testing.assert_array_equal(s.toarray().ravel(), histogram(ds, normalize=normalize))


def test_histogram_dataframe_and_ndarray_with_domain():
    frame = pd.DataFrame(ROWS, columns=["a", "b", "c"])
    expected = brute_force_histogram(ROWS, DOMAIN.sizes)
    np.testing.assert_allclose(histogram(frame, DOMAIN), expected)
    np.testing.assert_allclose(histogram(ROWS, DOMAIN), expected)
    with pytest.raises(TypeError, match="required"):
        histogram(frame)
    with pytest.raises(ValueError, match=r"column 'b'"):
        histogram(pd.DataFrame([[0, 7, 0]], columns=["a", "b", "c"]), DOMAIN)


def test_histogram_dataset_with_conflicting_domain():
    ds = Dataset(ROWS, DOMAIN)
    assert np.array_equal(histogram(ds, DOMAIN), histogram(ds))
    with pytest.raises(ValueError, match="differs"):
        histogram(ds, Domain(["a", "b", "c"], [2, 3, 5]))


def test_histogram_max_universe_refusal_and_sparse_accepted():
    domain = Domain([f"x{i}" for i in range(10)], [100] * 10)  # 1e20 elements
    rows = np.array([[1] * 10, [1] * 10, [99] * 10])
    with pytest.raises(ValueError, match=r"max_universe.*sparse=True"):
        histogram(rows, domain)
    # also a small explicit limit
    with pytest.raises(ValueError, match="max_universe"):
        histogram(ROWS, DOMAIN, max_universe=23)
    assert histogram(ROWS, DOMAIN, max_universe=24).shape == (24,)
    # sparse works on a universe above 2**32 (1e18 elements, 9 attributes of 100)
    big = Domain([f"x{i}" for i in range(9)], [100] * 9)
    rows9 = np.array([[1] * 9, [1] * 9, [99] * 9, [0] * 8 + [5]])
    s = histogram(rows9, big, sparse=True)
    assert s.shape == (1, 10**18)
    ones = sum(100**k for k in range(9))  # row (1, ..., 1) in base 100
    nines = 10**18 - 1
    coo = s.tocoo()
    assert coo.coords[0].tolist() == [0] * coo.nnz
    cells = dict(zip(coo.coords[1].tolist(), coo.data.tolist()))
    assert cells == {ones: 0.5, nines: 0.25, 5: 0.25}


# ----------------------------------------------------------------------------- bad arguments
# (the full catalogue of refusals is tests/contract/test_bad_inputs.py; here the behaviours around it)


def test_boolean_records_are_codes_0_and_1():
    binary = Domain(["x", "y"], [2, 2])
    ds = Dataset(np.array([[True, False], [False, False]]), binary)
    np.testing.assert_array_equal(ds.records, [[1, 0], [0, 0]])
    frame = pd.DataFrame({"x": [True, False], "y": [False, False]})
    np.testing.assert_array_equal(Dataset.from_dataframe(frame, binary).records, [[1, 0], [0, 0]])


def test_dataframe_records_point_to_from_dataframe():
    # Columns in another order than the domain's would be matched by position, silently.
    frame = pd.DataFrame(ROWS[:, ::-1], columns=["c", "b", "a"])
    with pytest.raises(TypeError, match="from_frame"):
        Dataset(frame, DOMAIN)
    np.testing.assert_array_equal(Dataset.from_dataframe(frame, DOMAIN).records, ROWS)


@pytest.mark.parametrize("records", [np.array([[1 + 0j, 0, 0]]), [[0, 0, 1j]]])
def test_complex_records_are_type_errors(records):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not even a ComplexWarning: refused before any cast
        with pytest.raises(TypeError):
            Dataset(records, DOMAIN)


def test_complex_dataframe_column_is_a_type_error_naming_it():
    frame = pd.DataFrame({"a": [0], "b": [1 + 0j], "c": [0]})
    with pytest.raises(TypeError, match="^column 'b': expected integer codes, got dtype complex128"):
        Dataset.from_dataframe(frame, DOMAIN)


def test_from_csv_errors_name_the_file(tmp_path):
    data, dom = _write_csv(tmp_path, "a,b,c\n0,0,0\n1,7,0\n")
    with pytest.raises(ValueError, match=rf"^{data}: column 'b': value 7 at row 1"):
        Dataset.from_csv(data, dom)


def test_from_csv_empty_file_and_directory(tmp_path):
    data, dom = _write_csv(tmp_path, "")
    with pytest.raises(ValueError, match=rf"^{data}: is empty; expected a header row naming \['a', 'b', 'c'\]"):
        Dataset.from_csv(data, dom)
    with pytest.raises(ValueError, match="is a directory"):
        Dataset.from_csv(tmp_path, dom)


def test_subsample_takes_a_seed_like_the_mechanisms():
    ds = Dataset(np.array([[i % 2, i % 3, i % 4] for i in range(12)]), DOMAIN)
    np.testing.assert_array_equal(ds.subsample(5, 4).records, ds.subsample(5, np.random.default_rng(4)).records)
    with pytest.raises(TypeError, match="^rng: "):
        ds.subsample(5, np.random.RandomState(4))


def test_histogram_flags_must_be_bools():
    ds = Dataset(ROWS, DOMAIN)
    with pytest.raises(TypeError, match="^normalize: "):
        histogram(ds, normalize=0)  # 0 would have meant False by its truth value
    assert histogram(ds, normalize=np.False_).sum() == 5


# ----------------------------------------------------------------------------- check_normalized_histogram


def test_normalized_histogram_accepts_counts_over_n():
    rng = np.random.default_rng(5)
    for n in (1, 7, 1000, 10**9):
        counts = rng.multinomial(n, np.full(24, 1 / 24))
        h, checked = check_normalized_histogram(counts / n, n)
        assert checked == n and type(checked) is int
        np.testing.assert_array_equal(h, counts / n)


def test_normalized_histogram_refuses_an_n_it_cannot_have():
    with pytest.raises(ValueError) as info:
        check_normalized_histogram([0.5, 0.5], n=3)
    assert str(info.value) == (
        "histogram, n: n * histogram must be the integer counts of n=3 rows, but cell 0 holds 0.5, "
        "i.e. 1.5 rows; pass the n the histogram was computed from"
    )
    counts = np.array([333, 667])
    with pytest.raises(ValueError, match="histogram, n"):
        check_normalized_histogram(counts / 1000, n=1001)  # off by one row
    with pytest.raises(ValueError, match="histogram, n"):
        check_normalized_histogram(np.random.default_rng(0).dirichlet(np.ones(6)), n=300)


def test_normalized_histogram_shapes():
    h = np.array([0.25, 0.75])
    for shaped in (h, h[None, :], h[:, None], sp.csr_array(h[None, :]), sp.csc_array(h[:, None]), list(h)):
        np.testing.assert_array_equal(check_normalized_histogram(shaped, 4, size=2)[0], h)
    with pytest.raises(ValueError, match=r"histogram: expected a vector.*shape \(2, 2\)"):
        check_normalized_histogram(np.full((2, 2), 0.25), 4)  # no silent flattening


@pytest.mark.parametrize("n, error", [(2.0, TypeError), (True, TypeError), ("4", TypeError), (0, ValueError)])
def test_normalized_histogram_n_type_and_value(n, error):
    with pytest.raises(error, match="^n: "):
        check_normalized_histogram([0.25, 0.75], n)


def test_histogram_options_are_keyword_only():
    ds = Dataset(ROWS, DOMAIN)
    with pytest.raises(TypeError, match="positional"):
        histogram(ds, None, False)
    with pytest.raises(TypeError, match="positional"):
        check_normalized_histogram([0.25, 0.75], 4, 2)
    np.testing.assert_array_equal(histogram(ds, None, normalize=False), brute_force_histogram(ROWS, DOMAIN.sizes,
                                                                                              False))


@pytest.mark.parametrize(
    "call, error, named",
    [
        (lambda: histogram(Dataset(ROWS, DOMAIN), max_universe=2.0), TypeError, "max_universe"),
        (lambda: histogram(Dataset(ROWS, DOMAIN), max_universe=0), ValueError, "max_universe"),
        (lambda: histogram(Dataset(ROWS, DOMAIN), sparse="yes"), TypeError, "sparse"),
        (lambda: histogram(ROWS, {"a": 2}), TypeError, "domain"),
        (lambda: check_normalized_histogram([0.25, 0.75], 4, size=2.0), TypeError, "size"),
        (lambda: Dataset(ROWS, DOMAIN).subsample(2.0, 0), TypeError, "n"),
        (lambda: Dataset(ROWS, DOMAIN).subsample(6, 0), ValueError, "n"),
        (lambda: Dataset.from_dataframe(ROWS, DOMAIN), TypeError, "frame"),
    ],
)
def test_data_arguments_follow_one_rule(call, error, named):
    with pytest.raises(error, match=f"^{named}: "):
        call()


# ----------------------------------------------------------------------------- resolve_rows


def test_resolve_rows_returns_a_dataset_and_its_rows():
    ds = Dataset(ROWS, DOMAIN)
    assert resolve_rows(ds, None) == (ds, 5)
    assert resolve_rows(ds, 5, universe_size=24)[0] is ds  # a matching public n is fine
    with pytest.raises(ValueError, match="^n: given 4 but the data set has 5 rows"):
        resolve_rows(ds, 4)
    with pytest.raises(TypeError, match="^n: "):
        resolve_rows(ds, 5.0)
    with pytest.raises(ValueError, match="^n: under add-remove"):
        resolve_rows(ds, 5, policy=SizePolicy.parse("add-remove", 10))  # refused even when right
    with pytest.raises(ValueError, match="^data_or_histogram: the data set's universe has 24"):
        resolve_rows(ds, None, universe_size=12)
    with pytest.raises(ValueError, match="^data_or_histogram: its universe has 24 elements, above max_universe=10"):
        resolve_rows(ds, None, max_universe=10)


def test_resolve_rows_turns_a_histogram_into_exact_counts():
    h = brute_force_histogram(ROWS, DOMAIN.sizes)
    counts, rows = resolve_rows(h, 5, universe_size=24)
    np.testing.assert_array_equal(counts, brute_force_histogram(ROWS, DOMAIN.sizes, normalize=False))
    assert rows == 5 and type(rows) is int
    sparse_counts, _ = resolve_rows(sp.csr_array(h[None, :]), np.int64(5))
    np.testing.assert_array_equal(sparse_counts, counts)
    with pytest.raises(ValueError, match="^n: required"):
        resolve_rows(h, None)
    with pytest.raises(ValueError, match="^histogram: expected 12 entries"):
        resolve_rows(h, 5, universe_size=12)
    with pytest.raises(ValueError, match="above max_universe=10"):
        resolve_rows(h, 5, max_universe=10)
    with pytest.raises(TypeError, match="^policy: "):
        resolve_rows(h, 5, policy="replace-one")
    with pytest.raises(TypeError, match="positional"):
        resolve_rows(h, 5, 24)


def test_data_does_not_need_pandas_to_import():
    """pandas is imported by the functions that read or build frames, not by the module."""
    import subprocess
    import sys

    code = ("import sys; import projmech.data._dataset as d, numpy as np; "
            "ds = d.Dataset(np.zeros((2, 1), dtype=int), d.Domain(['a'], [2])); d.histogram(ds); "
            "print('pandas' in sys.modules)")
    # projmech/__init__ may import pandas through other modules; load data.py on its own.
    loader = ("import importlib.util, sys, types; pkg = types.ModuleType('projmech'); "
              f"pkg.__path__ = [{str(Path(__file__).parents[2] / 'projmech')!r}]; sys.modules['projmech'] = pkg; ")
    result = subprocess.run([sys.executable, "-c", loader + code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# ----------------------------------------------------------------------------- issue 31, items 14 and 15


def test_from_csv_codes_integer_categories_by_their_exact_text(tmp_path):
    """The issue's CSV: "01" is not the label 1 (pandas parsed it as 1); "1", "2", "10" are."""
    domain = Domain.from_dict({"x": [1, 2, 10]})
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text("x\n1\n10\n2\n10\n", encoding="utf-8")
    bad.write_text("x\n01\n02\n10\n1\n", encoding="utf-8")
    np.testing.assert_array_equal(Dataset.from_csv(good, domain).table([0]), [1, 1, 2])  # by hand
    with pytest.raises(ValueError, match=rf"^{bad}: column 'x': value '01' at row 0 is not one of the domain's "
                                         r"categories \[1, 2, 10\]"):
        Dataset.from_csv(bad, domain)


def test_from_csv_refuses_a_repeated_domain_column(tmp_path):
    """pandas renames the second x to x.1 and counted the first x only."""
    path = tmp_path / "dup.csv"
    path.write_text("x,y,x\n1,0,0\n0,1,1\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{path}: column 'x' appears more than once in its header"):
        Dataset.from_csv(path, Domain(["x", "y"], [2, 2]))
    np.testing.assert_array_equal(Dataset.from_csv(path, Domain(["y"], [2])).records, [[0], [1]])


def test_masked_entries_of_records_are_refused_not_dropped():
    """NumPy's asarray drops a masked array's mask: the masked value counted as if present."""
    domain = Domain(["a", "b"], [2, 2])
    masked = np.ma.array([[0, 1], [1, 1]], mask=[[False, False], [False, True]])
    with pytest.raises(ValueError, match=r"^column 'b': masked value at row 1; a domain has no code for missing"):
        Dataset(masked, domain)
    with pytest.raises(ValueError, match=r"^column 'b': masked value at row 1"):
        histogram(masked, domain)
    unmasked = np.ma.array([[0, 1], [1, 1]], mask=False)
    np.testing.assert_array_equal(Dataset(unmasked, domain).table([1]), [0, 2])
