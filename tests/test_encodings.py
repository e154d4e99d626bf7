"""Domains with category labels and declared bins: the domain file, coding, released labels, and
Domain.infer's warning."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from projmech import Dataset, Domain, workloads
from projmech.domain import DomainInferenceWarning
from projmech.encodings import Bins, Categories, Codes

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
    domain = Domain.from_dict({"vote": ["Clinton", "Dole"], "PID": [1, 2, 3, 4, 5, 6, 7]})
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
