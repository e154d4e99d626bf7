"""Domains with category labels and declared bins: the domain file, coding, released labels, and
Domain.infer's warning."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from projmech import Dataset, Domain, workloads
from projmech.data import Bins, Categories, Codes, DomainInferenceWarning

SPEC = {"vote": ["Clinton", "Dole"], "age": {"bins": [18, 25, 35, 50, 65, 100]}, "PID": 7}


def test_domain_file_with_labels_and_bins_round_trips(tmp_path):
    path = tmp_path / "domain.json"
    path.write_text(json.dumps(SPEC))
    domain = Domain.from_json(path)
    assert domain.attributes == ("vote", "age", "PID") and domain.sizes == (2, 5, 7)
    assert domain.encoding("vote") == Categories(["Clinton", "Dole"]) and domain.encoding("PID") == Codes(7)
    assert domain.labels("age") == ("[18, 25)", "[25, 35)", "[35, 50)", "[50, 65)", "[65, 100]")
    assert domain.labels("PID") == tuple("0123456")
    assert domain.spec() == SPEC
    domain.to_json(tmp_path / "copy.json")
    assert Domain.from_json(tmp_path / "copy.json") == domain
    with pytest.raises(FileExistsError):
        domain.to_json(path)  # never overwrites unless asked
    Domain(["x"], [3]).to_json(path, overwrite=True)
    assert Domain.from_json(path) == Domain(["x"], [3])
    with pytest.raises(TypeError, match="overwrite"):
        domain.to_json(path, overwrite="yes")


def test_labels_are_part_of_the_domain():
    labelled = Domain.from_dict(SPEC)
    assert labelled != Domain(["vote", "age", "PID"], [2, 5, 7])
    assert labelled.project(["PID", "vote"]) == Domain.from_dict({"PID": 7, "vote": ["Clinton", "Dole"]})
    assert "vote: ['Clinton', 'Dole']" in repr(labelled) and "PID: 7" in repr(labelled)
    assert Domain.from_dict({"a": {"size": 3}, "b": {"categories": [1, 5]}}) == \
        Domain.from_dict({"a": 3, "b": [1, 5]})


@pytest.mark.parametrize("spec, error, message", [
    ({"v": []}, ValueError, r"attribute 'v': labels: an attribute needs at least one category"),
    ({"v": ["a", "a"]}, ValueError, r"attribute 'v': labels: categories must be distinct"),
    ({"v": ["a", 1]}, TypeError, r"attribute 'v': labels: categories must be all str or all int"),
    ({"v": [True, False]}, TypeError, r"all str or all int"),
    ({"v": {"bins": [3]}}, ValueError, r"attribute 'v': bins: need at least two edges"),
    ({"v": {"bins": [1, 1, 2]}}, ValueError, r"edges must increase strictly"),
    ({"v": {"bins": [0, float("inf")]}}, ValueError, r"edges must be finite"),
    ({"v": {"bins": ["0", "1"]}}, TypeError, r"edges must be numbers"),
    ({"v": {"bins": 3}}, TypeError, r"'bins' must be a list of edges"),
    ({"v": {"edges": [1, 2]}}, ValueError, r"attribute 'v': expected a size, a list of categories"),
    ({"v": 2.0}, TypeError, r"size of 'v'"),
    ({"v": 0}, ValueError, r"size of 'v'"),
])
def test_bad_domain_entries_name_the_attribute(spec, error, message):
    with pytest.raises(error, match=message):
        Domain.from_dict(spec)


def test_bad_domain_file_names_the_file(tmp_path):
    path = tmp_path / "domain.json"
    path.write_text(json.dumps({"v": {"bins": [2, 1]}}))
    with pytest.raises(ValueError, match=rf"^{path}: attribute 'v': bins: edges must increase strictly"):
        Domain.from_json(path)


def test_bins_code_like_a_hand_count():
    """Left-closed bins, the last closed on the right; against a plain count of edges."""
    edges = [0, 0.5, 2, 10]
    values = np.array([0, 0.49, 0.5, 1.99, 2, 9.99, 10, 3.3])
    expected = [sum(v >= e for e in edges[1:-1]) for v in values]
    np.testing.assert_array_equal(Bins(edges).encode(values, "v"), expected)
    for bad in (-0.01, 10.01):
        with pytest.raises(ValueError, match="at row 1 is outside the domain's bins"):
            Bins(edges).encode(np.array([1.0, bad]), "v")
    with pytest.raises(ValueError, match="missing value at row 1; a domain has no code for missing values"):
        Bins(edges).encode(np.array([1.0, np.nan]), "v")


def test_integer_categories_code_by_position_not_value():
    encoding = Categories([10, 3, 7])
    np.testing.assert_array_equal(encoding.encode(np.array([7, 10, 3, 3]), "pid"), [2, 0, 1, 1])
    with pytest.raises(ValueError, match=r"column 'pid': value 4 at row 1 is not one of the domain's categories"):
        encoding.encode(np.array([7, 4]), "pid")


def test_text_for_integer_codes_points_to_categories():
    frame = pd.DataFrame({"vote": ["Clinton", "Dole"]})
    with pytest.raises(ValueError, match=r"column 'vote': expected integer codes, found 'Clinton' at row 0"):
        Dataset.from_frame(frame, Domain(["vote"], [2]))
    coded = Dataset.from_frame(frame, Domain.from_dict({"vote": ["Clinton", "Dole"]}))
    np.testing.assert_array_equal(coded.records, [[0], [1]])


def test_released_labels_use_the_category_names():
    pid = {"categories": [1, 2, 3, 4, 5, 6, 7], "ordered": True}  # prefixes need an order
    domain = Domain.from_dict({"vote": ["Clinton", "Dole"], "PID": pid})
    assert "vote=Dole & PID=6" in workloads.marginals(domain, 2).labels
    prefix = workloads.kron([workloads.total(2), workloads.prefix(7)], domain=domain)
    assert prefix.labels[5] == "PID<=6"
    age = Domain.from_dict({"age": {"bins": [18, 40, 100]}, "vote": ["Clinton", "Dole"]})
    ranges = workloads.kron([workloads.all_range(2), workloads.identity(2)], domain=age)
    assert list(ranges.labels) == ["18<=age<40 & vote=Clinton", "18<=age<40 & vote=Dole",
                                   "18<=age<=100 & vote=Clinton", "18<=age<=100 & vote=Dole",
                                   "40<=age<=100 & vote=Clinton", "40<=age<=100 & vote=Dole"]
    thresholds = workloads.kron([workloads.prefix(2), workloads.total(2)], domain=age)
    assert list(thresholds.labels) == ["age<40", "age<=100"]
    assert Domain.from_dict({"v": {"bins": [0, 0.1234561, 0.1234562, 1e6, 1e6 + 1]}}).labels("v") == \
        ("[0, 0.1234561)", "[0.1234561, 0.1234562)", "[0.1234562, 1000000)", "[1000000, 1000001]")


def test_infer_warns_and_proposes_a_domain():
    frame = pd.DataFrame({"vote": ["Dole", "Clinton", "Dole"], "pid": [0, 6, 2], "income": [10.5, 99.0, 47.2],
                          "flag": [True, False, True]})
    with pytest.warns(DomainInferenceWarning, match="not|no privacy guarantee"):
        domain = Domain.infer(frame)
    assert domain.encoding("vote") == Categories(["Clinton", "Dole"])
    assert domain.encoding("pid") == Codes(7)
    assert domain.encoding("income") == Bins([10, 18.9, 27.8, 36.7, 45.6, 54.5, 63.4, 72.3, 81.2, 90.1, 99])
    assert domain.encoding("flag") == Codes(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DomainInferenceWarning)
        with pytest.raises(ValueError, match=r"column 'vote': more than max_categories=1"):
            Domain.infer(frame, max_categories=1)
        with pytest.raises(ValueError, match=r"column 'pid': has 1 missing values"):
            Domain.infer(frame.assign(pid=[0, None, 1]))
        pl = pytest.importorskip("polars")
        assert Domain.infer(pl.from_pandas(frame).lazy()) == domain


# --- integer categories and text: one rule (issue 31, item 14) --------------------------------

def test_integer_categories_match_text_by_its_exact_decimal_text():
    """Text codes against integer labels by str(label) exactly: "10" is 10, "01" is no label."""
    encoding = Categories([1, 2, 10])
    for text in (np.array(["10", "1", "2", "1"], dtype=object), np.array(["10", "1", "2", "1"])):
        np.testing.assert_array_equal(encoding.encode(text, "x"), [2, 0, 1, 0])
    mixed = np.array([10, "2", np.int64(1)], dtype=object)  # an object column of ints and text
    np.testing.assert_array_equal(encoding.encode(mixed, "x"), [2, 1, 0])
    np.testing.assert_array_equal(Categories([-3, 7]).encode(np.array(["-3", "7"], dtype=object), "x"), [0, 1])
    for bad in ("01", " 1", "+1", "1.0", "1e0", "0x1"):
        with pytest.raises(ValueError, match=rf"^column 'x': value {re.escape(repr(bad))} at row 1 is not one of "
                                             r"the domain's categories \[1, 2, 10\]"):
            encoding.encode(np.array(["2", bad], dtype=object), "x")
    with pytest.raises(ValueError, match=r"exact decimal text: '01' is not the label 1"):
        encoding.encode(np.array(["01"], dtype=object), "x")


def test_integer_categories_refuse_floats_and_bools_with_a_hint():
    encoding = Categories([1, 2, 10])
    with pytest.raises(TypeError, match=r"^column 'x': expected one of the categories \[1, 2, 10\], got dtype "
                                        r"float64; .*missing values.* size .*bins"):
        encoding.encode(np.array([1.0, 2.0]), "x")
    with pytest.raises(TypeError, match=r"^column 'x': .*got dtype bool"):
        encoding.encode(np.array([True, False]), "x")
    for value in (1.0, True):  # in an object column: named with its row
        with pytest.raises(ValueError, match=rf"^column 'x': value {value!r} at row 1 is not one of the domain's"):
            encoding.encode(np.array([2, value], dtype=object), "x")


def test_bytes_are_refused_with_a_hint_to_decode():
    """b"a" is not the label "a", and b"1" is not the code 1: bytes are decoded by their owner."""
    with pytest.raises(TypeError, match=r"^column 'v': value b'a' at row 1 is bytes, not text; decode"):
        Categories(["a", "b"]).encode(np.array(["b", b"a"], dtype=object), "v")
    with pytest.raises(TypeError, match=r"^column 'v': value b'1' at row 0 is bytes, not text; decode"):
        Codes(3).encode(np.array([b"1", 0], dtype=object), "v")
    with pytest.raises(TypeError, match=r"^column 'v': .*got dtype \|S1; decode"):
        Categories(["a"]).encode(np.array([b"a"]), "v")


# --- ordered categories (issue 31, item 15b) ---------------------------------------------------

def test_categories_may_be_declared_ordered():
    """Ranges need an order: codes and bins have one, categories only when declared."""
    assert Codes(3).ordered and Bins([0, 1, 2]).ordered
    assert not Categories(["Adelie", "Gentoo"]).ordered
    spec = {"size": ["S", "M", "L"]}
    size = Domain.from_dict({"size": {"categories": ["S", "M", "L"], "ordered": True}})
    assert size.encoding("size").ordered and size.encoding("size") == Categories(["S", "M", "L"], ordered=True)
    assert size.spec() == {"size": {"categories": ["S", "M", "L"], "ordered": True}}
    assert Domain.from_dict(size.spec()) == size and Domain.from_dict(spec) != size  # part of the domain
    assert Domain.from_dict(spec).spec() == spec  # unordered: the short form, as before
    assert repr(size.encoding("size")) == "Categories(['S', 'M', 'L'], ordered=True)"
    assert Domain.from_dict({"v": {"categories": [1, 2], "ordered": False}}) == Domain.from_dict({"v": [1, 2]})
    with pytest.raises(TypeError, match=r"^attribute 'v': 'ordered' must be true or false, got 'yes'"):
        Domain.from_dict({"v": {"categories": [1, 2], "ordered": "yes"}})
    with pytest.raises(ValueError, match=r"^attribute 'v': expected a size"):
        Domain.from_dict({"v": {"size": 2, "ordered": True}})


# --- Domain.infer proposes sizes a user would accept (issue 31, item 15c) ----------------------

def test_infer_proposes_categories_for_few_integers_and_bins_for_many():
    """Years 2007-2009 are three categories, not 2010 codes; body masses 2700..6300 g are bins,
    not 6301 codes; a small range from 0 or 1 stays codes."""
    masses = list(range(2700, 6301, 100))  # 37 distinct values
    n = len(masses)
    frame = pd.DataFrame({"year": ([2007, 2008, 2009] * n)[:n], "body_mass_g": masses,
                          "rating": ([1, 5, 3, 2] * n)[:n], "pid": ([0, 6, 2] * n)[:n],
                          "rooms": ([1.0, 3.0] * n)[:n]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DomainInferenceWarning)
        domain = Domain.infer(frame)
        pl = pytest.importorskip("polars")
        assert Domain.infer(pl.from_pandas(frame).lazy()) == domain
    assert domain.encoding("year") == Categories([2007, 2008, 2009], ordered=True)
    assert domain.encoding("body_mass_g") == Bins([2700, 3060, 3420, 3780, 4140, 4500, 4860, 5220, 5580, 5940,
                                                   6300])
    assert domain.encoding("rating") == Codes(6) and domain.encoding("pid") == Codes(7)
    assert domain.encoding("rooms") == Codes(4)  # integral floats from 0 or 1: codes (a float column has no labels)
    assert domain.size == 3 * 10 * 6 * 7 * 4
    np.testing.assert_array_equal(Dataset.from_frame(frame, domain).table([0]), [13, 12, 12])



def test_missing_values_of_nullable_columns_are_named_missing():
    """pandas' nullable columns hold pd.NA (and an integer column with nulls reaches NumPy as
    floats): each is a missing value, whatever the categories."""
    for spec, values in (([1, 2, 10], pd.array([1, None, 2], dtype="Int64")),
                         (["a", "b"], pd.array(["a", None], dtype="string")),
                         ([1, 2], pd.array(["1", None], dtype="string"))):
        with pytest.raises(ValueError, match=r"^column 'x': missing value at row 1; a domain has no code"):
            Dataset.from_frame(pd.DataFrame({"x": values}), Domain.from_dict({"x": spec}))


def test_integer_categories_must_fit_in_int64():
    """Engines compare integer columns as int64; a label of 2**63 worked in pandas but failed inside
    lazy Polars and DuckDB with a cast error, so it is refused where the categories are declared."""
    with pytest.raises(ValueError, match=r"^labels: integer categories must fit in int64, got 9223372036854775808"):
        Categories([1, 2**63])
    with pytest.raises(ValueError, match=r"^labels: integer categories must fit in int64"):
        Categories([-2**63 - 1, 0])
    assert Categories([-2**63, 2**63 - 1]).size == 2
