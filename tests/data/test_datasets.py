"""The embedded Adult data set: its files are Private-PGM's, byte for byte, and the loader reads
them as the csv module does."""

import csv
import gzip
import hashlib
import io
import json
from importlib import resources

import numpy as np
import pytest

from projmech import Dataset, Domain
from projmech.datasets import ADULT_BINARY_THRESHOLDS, ADULT_DEMO_ATTRIBUTES, adult

#: The package's copy of Adult.
EMBEDDED = resources.files("projmech.datasets")
#: SHA-256 of Private-PGM's data/adult.csv and data/adult-domain.json
#: (https://github.com/ryan112358/private-pgm at 4d2b3c566b148da3ef800ce76e6189c548f2da22), which
#: the package ships unchanged (adult.csv gzip-compressed).
ORIGINAL_SHA256 = {"adult.csv": "de1b8341b65de6081d50863b9c15b90ed976e7e47322a7efc37968db98705400",
                   "adult-domain.json": "734f07d75cbc2acbe711984e6db520b3e95c9c727cf448c528ce0b38347bb147"}

#: The rule of ADULT_BINARY_THRESHOLDS, as its comment states it: ordered attributes split at the
#: code closest to a balanced split, attributes dominated by code 0 split "0 vs the rest", binary
#: ones kept. The thresholds are derived from it (below), not restated.
BALANCED = ("age", "fnlwgt", "education-num", "occupation", "relationship", "hours-per-week")
ZERO_VS_REST = ("workclass", "marital-status", "race", "capital-gain", "capital-loss", "native-country")
BINARY = ("sex", "income>50K")

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


def test_embedded_files_are_the_originals():
    csv_bytes = gzip.decompress(EMBEDDED.joinpath("adult.csv.gz").read_bytes())
    assert hashlib.sha256(csv_bytes).hexdigest() == ORIGINAL_SHA256["adult.csv"]
    domain_bytes = EMBEDDED.joinpath("adult-domain.json").read_bytes()
    assert hashlib.sha256(domain_bytes).hexdigest() == ORIGINAL_SHA256["adult-domain.json"]


@pytest.fixture(scope="module")
def by_csv_module():
    """(header, int rows, domain dict) of the embedded files read with gzip and the csv module,
    independently of the loader's pandas."""
    text = gzip.decompress(EMBEDDED.joinpath("adult.csv.gz").read_bytes()).decode("utf-8")
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader)
    rows = np.array([[int(v) for v in row] for row in reader], dtype=np.int64)
    sizes = json.loads(EMBEDDED.joinpath("adult-domain.json").read_text(encoding="utf-8"))
    return header, rows, sizes


@pytest.fixture(scope="module")
def thresholds_by_rule(by_csv_module):
    """Each attribute's threshold by the documented rule, from the csv module's reading."""
    header, rows, sizes = by_csv_module
    thresholds = {}
    for j, name in enumerate(header):
        if name in BALANCED:
            fractions = [(rows[:, j] >= t).mean() for t in range(1, sizes[name])]
            thresholds[name] = 1 + int(np.argmin([abs(f - 0.5) for f in fractions]))
        else:
            assert name in ZERO_VS_REST or (name in BINARY and sizes[name] == 2), name
            thresholds[name] = 1
    return thresholds


@pytest.fixture(scope="module")
def full():
    return adult()


def test_adult_equals_csv_module_reading(full, by_csv_module):
    header, rows, sizes = by_csv_module
    assert isinstance(full, Dataset)
    assert full.n == 48842 == rows.shape[0]
    assert list(full.domain.attributes) == header == list(sizes)
    assert len(header) == 14
    assert list(full.domain.sizes) == [sizes[a] for a in header]
    assert full.records.dtype == np.int64
    np.testing.assert_array_equal(full.records, rows)


def test_adult_codes_within_domain(by_csv_module):
    header, rows, sizes = by_csv_module
    limits = np.array([sizes[a] for a in header])
    assert (rows >= 0).all() and (rows < limits).all()


def test_thresholds_follow_the_documented_rule(thresholds_by_rule):
    assert ADULT_BINARY_THRESHOLDS == thresholds_by_rule
    assert list(ADULT_BINARY_THRESHOLDS) == list(thresholds_by_rule)


def test_binary_equals_thresholded_csv_module_reading(by_csv_module, thresholds_by_rule):
    header, rows, _ = by_csv_module
    binary = adult(binary=True)
    assert binary.domain == Domain(header, [2] * 14)
    expected = np.empty_like(rows)
    for j, name in enumerate(header):
        t = thresholds_by_rule[name]
        expected[:, j] = [1 if v >= t else 0 for v in rows[:, j]]
    np.testing.assert_array_equal(binary.records, expected)
    fractions = expected.mean(axis=0)
    for j, name in enumerate(header):
        assert fractions[j] == pytest.approx(DOCUMENTED_FRACTIONS[name], abs=0.0005), name
    # no attribute is constant after the split
    assert ((fractions > 0) & (fractions < 1)).all()


def test_attributes_subset_and_order(by_csv_module, thresholds_by_rule):
    header, rows, sizes = by_csv_module
    names = ["sex", "age", "income>50K"]
    sub = adult(attributes=names)
    assert sub.domain.attributes == tuple(names)
    assert sub.domain.sizes == (2, 85, 2)
    cols = [header.index(a) for a in names]
    np.testing.assert_array_equal(sub.records, rows[:, cols])
    sub_bin = adult(binary=True, attributes=names)
    assert sub_bin.domain.sizes == (2, 2, 2)
    thresholds = np.array([thresholds_by_rule[a] for a in names])
    np.testing.assert_array_equal(sub_bin.records, (rows[:, cols] >= thresholds).astype(np.int64))


def test_demo_attributes_binary(thresholds_by_rule):
    demo = adult(binary=True, attributes=ADULT_DEMO_ATTRIBUTES)
    assert len(ADULT_DEMO_ATTRIBUTES) == 10
    assert demo.domain.size == 2**10
    assert set(ADULT_DEMO_ATTRIBUTES) <= set(thresholds_by_rule)
    assert "fnlwgt" not in ADULT_DEMO_ATTRIBUTES


def test_unknown_attribute_raises():
    with pytest.raises(ValueError, match="'salary'"):
        adult(attributes=["age", "salary"])
    with pytest.raises(ValueError, match="'salary'"):
        adult(binary=True, attributes=["salary"])


def test_repeated_attribute_raises():
    with pytest.raises(ValueError, match="repeated"):
        adult(attributes=["age", "sex", "age"])


def test_adult_records_read_only_and_cache_not_corrupted(by_csv_module):
    header, rows, _ = by_csv_module
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
