"""The embedded Adult data set, checked against the original files in /work/shared."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from projmech import Dataset, Domain
from projmech.datasets import ADULT_BINARY_THRESHOLDS, ADULT_DEMO_ATTRIBUTES, adult

# CI and developers have the design folder beside the checkout: ../shared/data/adult.
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "adult"

#: The thresholds as documented in the docstring of projmech.datasets (typed in independently).
DOCUMENTED_THRESHOLDS = {
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

#: Fractions of ones documented next to the thresholds.
DOCUMENTED_FRACTIONS = {
    "age": 0.489,
    "workclass": 0.306,
    "fnlwgt": 0.527,
    "education-num": 0.546,
    "marital-status": 0.542,
    "occupation": 0.507,
    "relationship": 0.393,
    "race": 0.145,
    "sex": 0.668,
    "capital-gain": 0.081,
    "capital-loss": 0.047,
    "hours-per-week": 0.294,
    "native-country": 0.103,
    "income>50K": 0.239,
}


@pytest.fixture(scope="module")
def shared():
    """(header, int rows, domain dict) read with the csv module, independently of pandas."""
    if not (SHARED / "adult.csv").exists():
        pytest.skip("shared Adult copy not available")
    with open(SHARED / "adult.csv", newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        rows = np.array([[int(v) for v in row] for row in reader], dtype=np.int64)
    with open(SHARED / "adult-domain.json", encoding="utf-8") as handle:
        sizes = json.load(handle)
    return header, rows, sizes


@pytest.fixture(scope="module")
def full():
    return adult()


def test_adult_equals_shared_csv(full, shared):
    header, rows, sizes = shared
    assert isinstance(full, Dataset)
    assert full.n == 48842 == rows.shape[0]
    assert list(full.domain.attributes) == header == list(sizes)
    assert len(header) == 14
    assert list(full.domain.sizes) == [sizes[a] for a in header]
    assert full.records.dtype == np.int64
    np.testing.assert_array_equal(full.records, rows)


def test_adult_codes_within_domain(shared):
    header, rows, sizes = shared
    limits = np.array([sizes[a] for a in header])
    assert (rows >= 0).all() and (rows < limits).all()


def test_documented_thresholds_match_constant():
    assert ADULT_BINARY_THRESHOLDS == DOCUMENTED_THRESHOLDS
    assert list(ADULT_BINARY_THRESHOLDS) == list(DOCUMENTED_THRESHOLDS)


def test_binary_equals_thresholded_shared_csv(shared):
    header, rows, _ = shared
    binary = adult(binary=True)
    assert binary.domain == Domain(header, [2] * 14)
    expected = np.empty_like(rows)
    for j, name in enumerate(header):
        t = DOCUMENTED_THRESHOLDS[name]
        expected[:, j] = [1 if v >= t else 0 for v in rows[:, j]]
    np.testing.assert_array_equal(binary.records, expected)
    fractions = expected.mean(axis=0)
    for j, name in enumerate(header):
        assert fractions[j] == pytest.approx(DOCUMENTED_FRACTIONS[name], abs=0.0005), name
    # no attribute is constant after the split
    assert ((fractions > 0) & (fractions < 1)).all()


def test_attributes_subset_and_order(shared):
    header, rows, sizes = shared
    names = ["sex", "age", "income>50K"]
    sub = adult(attributes=names)
    assert sub.domain.attributes == tuple(names)
    assert sub.domain.sizes == (2, 85, 2)
    cols = [header.index(a) for a in names]
    np.testing.assert_array_equal(sub.records, rows[:, cols])
    sub_bin = adult(binary=True, attributes=names)
    assert sub_bin.domain.sizes == (2, 2, 2)
    thresholds = np.array([DOCUMENTED_THRESHOLDS[a] for a in names])
    np.testing.assert_array_equal(sub_bin.records, (rows[:, cols] >= thresholds).astype(np.int64))


def test_demo_attributes_binary():
    demo = adult(binary=True, attributes=ADULT_DEMO_ATTRIBUTES)
    assert len(ADULT_DEMO_ATTRIBUTES) == 10
    assert demo.domain.size == 2**10
    assert set(ADULT_DEMO_ATTRIBUTES) <= set(DOCUMENTED_THRESHOLDS)
    assert "fnlwgt" not in ADULT_DEMO_ATTRIBUTES


def test_unknown_attribute_raises():
    with pytest.raises(ValueError, match="'salary'"):
        adult(attributes=["age", "salary"])
    with pytest.raises(ValueError, match="'salary'"):
        adult(binary=True, attributes=["salary"])


def test_repeated_attribute_raises():
    with pytest.raises(ValueError, match="repeated"):
        adult(attributes=["age", "sex", "age"])


def test_adult_records_read_only_and_cache_not_corrupted(shared):
    header, rows, _ = shared
    a = adult(attributes=["age"])
    with pytest.raises(ValueError):
        a.records[0, 0] = 0  # read-only view
    # a second call still gives the original codes
    np.testing.assert_array_equal(adult(attributes=["age"]).records[:, 0], rows[:, header.index("age")])


def test_adult_arguments_follow_one_rule():
    with pytest.raises(TypeError, match="^binary: expected True or False"):
        adult(binary="yes")
    with pytest.raises(TypeError, match="^attributes: expected a sequence of names"):
        adult(attributes="age")  # would be read one character at a time
