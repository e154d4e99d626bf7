"""Tests of projmech.data._domain.Domain against independent computations."""

import itertools
import json
import math
import re
from importlib import resources

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projmech import Domain
from projmech.data import UnknownAttributeError

# ----------------------------------------------------------------------------- construction


def test_basic_properties():
    d = Domain(["a", "b", "c"], [2, 3, 4])
    assert d.attributes == ("a", "b", "c")
    assert d.sizes == (2, 3, 4)
    assert d.shape == (2, 3, 4)
    assert d.size == 24
    assert len(d) == 3
    assert "b" in d and "z" not in d
    assert d["c"] == 4
    assert d.position("c") == 2
    assert d.to_dict() == {"a": 2, "b": 3, "c": 4}


def test_size_is_exact_python_int_for_huge_universe():
    sizes = [100] * 12  # 1e24 > 2**63
    d = Domain([f"x{i}" for i in range(12)], sizes)
    assert d.size == 10**24
    assert isinstance(d.size, int)


def test_numpy_integer_sizes_accepted_and_stored_as_int():
    d = Domain(["a", "b"], [np.int64(2), np.int32(5)])
    assert d.sizes == (2, 5)
    assert all(type(s) is int for s in d.sizes)


def test_duplicate_names_rejected():
    with pytest.raises(ValueError, match="unique"):
        Domain(["a", "b", "a"], [2, 2, 2])


@pytest.mark.parametrize("bad", [0, -1])
def test_size_below_one_rejected(bad):
    with pytest.raises(ValueError, match=r"'b'.*at least 1"):
        Domain(["a", "b"], [2, bad])


def test_mismatched_lengths_rejected():
    with pytest.raises(ValueError, match="same length"):
        Domain(["a", "b"], [2])
    with pytest.raises(ValueError, match="same length"):
        Domain(["a"], [2, 3])


def test_empty_domain_rejected():
    with pytest.raises(ValueError, match="at least one attribute"):
        Domain([], [])


@pytest.mark.parametrize("bad", [2.0, 2.5, "3", None, True])
def test_non_int_size_is_type_error(bad):
    with pytest.raises(TypeError, match=r"^sizes: size of 'a': expected an int"):
        Domain(["a"], [bad])


@pytest.mark.parametrize("bad", [3, None, b"a"])
def test_bad_attribute_name_is_type_error(bad):
    with pytest.raises(TypeError, match="non-empty str"):
        Domain([bad], [2])


def test_empty_attribute_name_is_value_error():
    # A str, so the type is right; the value is not.
    with pytest.raises(ValueError, match="attributes: every name must be a non-empty str"):
        Domain([""], [2])


def test_from_dict_keeps_order():
    d = Domain.from_dict({"z": 3, "a": 2})
    assert d.attributes == ("z", "a")
    assert d.sizes == (3, 2)


def test_from_json(tmp_path):
    path = tmp_path / "dom.json"
    path.write_text('{"age": 5, "sex": 2, "zip": 7}', encoding="utf-8")
    d = Domain.from_json(path)
    assert d.attributes == ("age", "sex", "zip")
    assert d.sizes == (5, 2, 7)
    assert Domain.from_json(str(path)) == d


def test_from_json_rejects_non_object(tmp_path):
    path = tmp_path / "dom.json"
    path.write_text("[1, 2, 3]", encoding="utf-8")
    with pytest.raises(ValueError, match="JSON object"):
        Domain.from_json(path)


def test_from_json_adult_domain_file():
    with resources.as_file(resources.files("projmech.datasets").joinpath("adult-domain.json")) as path:
        with open(path, encoding="utf-8") as handle:
            raw = json.load(handle)
        d = Domain.from_json(path)
    assert list(d.attributes) == list(raw)
    assert list(d.sizes) == list(raw.values())
    assert d.size == math.prod(raw.values())


def test_equality_and_hash():
    a = Domain(["x", "y"], [2, 3])
    assert a == Domain(["x", "y"], [2, 3])
    assert hash(a) == hash(Domain(["x", "y"], [2, 3]))
    assert a != Domain(["y", "x"], [3, 2])
    assert a != Domain(["x", "y"], [2, 4])
    assert a != "Domain(x: 2, y: 3)"


def test_unknown_attribute_key_error_names_it():
    d = Domain(["a", "b"], [2, 3])
    with pytest.raises(KeyError, match="'q'"):
        d.position("q")
    with pytest.raises(KeyError, match="'q'"):
        d["q"]


# ----------------------------------------------------------------------------- project


def test_project_order_and_sizes():
    d = Domain(["a", "b", "c", "d"], [2, 3, 4, 5])
    p = d.project(["d", "b"])
    assert p.attributes == ("d", "b")
    assert p.sizes == (5, 3)
    assert p.size == 15


def test_project_unknown_attribute():
    d = Domain(["a", "b"], [2, 3])
    with pytest.raises(KeyError, match="'c'"):
        d.project(["a", "c"])


def test_project_repeated_attribute_rejected():
    d = Domain(["a", "b"], [2, 3])
    with pytest.raises(ValueError, match="unique"):
        d.project(["a", "a"])


# ----------------------------------------------------------------------------- index / rows


def test_index_enumerates_universe_row_major_brute_force():
    sizes = (2, 3, 4)
    d = Domain(["a", "b", "c"], sizes)
    # itertools.product over ranges enumerates row-major order (last varies fastest).
    all_rows = np.array(list(itertools.product(*(range(s) for s in sizes))))
    np.testing.assert_array_equal(d.index(all_rows), np.arange(24))
    # explicit closed form: ((a * 3) + b) * 4 + c
    manual = [(a * 3 + b) * 4 + c for a, b, c in all_rows]
    np.testing.assert_array_equal(d.index(all_rows), manual)
    np.testing.assert_array_equal(d.rows(np.arange(24)), all_rows)


def test_docstring_example():
    d = Domain(["a", "b"], [2, 3])
    assert d.size == 6
    np.testing.assert_array_equal(d.index([[1, 2]]), [5])


@st.composite
def domain_and_rows(draw):
    sizes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=5))
    n = draw(st.integers(0, 20))
    rows = [[draw(st.integers(0, s - 1)) for s in sizes] for _ in range(n)]
    return sizes, np.array(rows, dtype=np.int64).reshape(n, len(sizes))


@settings(max_examples=150, deadline=None)
@given(domain_and_rows())
def test_index_rows_round_trip_matches_ravel_multi_index(case):
    sizes, rows = case
    d = Domain([f"v{i}" for i in range(len(sizes))], sizes)
    idx = d.index(rows)
    assert idx.dtype == np.int64
    assert idx.shape == (rows.shape[0],)
    if rows.shape[0]:
        expected = np.ravel_multi_index(tuple(rows.T), sizes)
        np.testing.assert_array_equal(idx, expected)
        assert idx.min() >= 0 and idx.max() < math.prod(sizes)
    back = d.rows(idx)
    assert back.shape == rows.shape
    np.testing.assert_array_equal(back, rows)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(1, 7), min_size=1, max_size=4).flatmap(
        lambda sizes: st.tuples(
            st.just(sizes), st.lists(st.integers(0, math.prod(sizes) - 1), max_size=15)
        )
    )
)
def test_rows_index_round_trip_matches_unravel_index(case):
    sizes, indices = case
    d = Domain([f"v{i}" for i in range(len(sizes))], sizes)
    indices = np.array(indices, dtype=np.int64)
    rows = d.rows(indices)
    assert rows.shape == (len(indices), len(sizes))
    if len(indices):
        np.testing.assert_array_equal(rows, np.stack(np.unravel_index(indices, sizes), axis=1))
    np.testing.assert_array_equal(d.index(rows), indices)


def test_index_large_universe_beyond_int32():
    sizes = [1000, 1000, 1000, 1000]  # 1e12 elements
    d = Domain(list("abcd"), sizes)
    rows = np.array([[999, 999, 999, 999], [1, 2, 3, 4]])
    np.testing.assert_array_equal(d.index(rows), [10**12 - 1, 1 * 10**9 + 2 * 10**6 + 3 * 10**3 + 4])
    np.testing.assert_array_equal(d.rows(d.index(rows)), rows)


def test_index_refuses_universe_beyond_int64():
    d = Domain([f"x{i}" for i in range(12)], [100] * 12)
    with pytest.raises(ValueError, match="int64"):
        d.index(np.zeros((1, 12), dtype=np.int64))


def test_index_validation():
    d = Domain(["a", "b"], [2, 3])
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        d.index([1, 2])
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        d.index([[1, 2, 0]])
    with pytest.raises(TypeError, match="integer"):
        d.index(np.array([[1.0, 2.0]]))
    with pytest.raises(ValueError, match="outside"):
        d.index([[2, 0]])
    with pytest.raises(ValueError, match="outside"):
        d.index([[0, -1]])
    with pytest.raises(ValueError, match="outside"):
        d.index([[0, 3]])


def test_rows_validation():
    d = Domain(["a", "b"], [2, 3])
    with pytest.raises(ValueError, match="1-d"):
        d.rows([[0, 1]])
    with pytest.raises(ValueError, match=r"\[0, 6\)"):
        d.rows([6])
    with pytest.raises(ValueError, match=r"\[0, 6\)"):
        d.rows([-1])


def test_rows_rejects_non_integer_indices():
    domain = Domain(["a", "b"], [2, 3])
    with pytest.raises(TypeError, match="indices"):
        domain.rows([1.5])


def test_index_of_no_rows_is_empty_whatever_the_dtype():
    d = Domain(["a", "b"], [2, 3])
    assert d.index(np.zeros((0, 2))).shape == (0,)


# ----------------------------------------------------------------------------- bad arguments
# (the full catalogue of refusals is tests/contract/test_bad_inputs.py; here the wording that matters)


def test_str_attributes_would_be_split_into_characters():
    with pytest.raises(TypeError, match=r"^attributes: expected a sequence, got the str 'ab' \(it would be read one"):
        Domain("ab", [2, 2])


def test_dict_sizes_point_to_from_dict():
    with pytest.raises(TypeError, match=r"^sizes: .*Domain\.from_dict"):
        Domain(["a", "b"], {"a": 2, "b": 2})


def test_unknown_attribute_error_is_a_key_error_and_a_value_error():
    # Mapping-style lookups keep KeyError; argument checks that catch ValueError catch it too.
    d = Domain(["a", "b"], [2, 3])
    for call in (lambda: d["zz"], lambda: d.project(["zz"])):
        with pytest.raises(KeyError):
            call()
        with pytest.raises(ValueError):
            call()
    with pytest.raises(UnknownAttributeError) as info:
        d.position("zz")
    assert str(info.value) == "name: unknown attribute 'zz'; the domain has ['a', 'b']"  # no repr quotes
    with pytest.raises(UnknownAttributeError, match="^attributes: unknown attribute 'zz'"):
        d.project(["a", "zz"])


def test_from_json_duplicate_key_names_file_and_key(tmp_path):
    path = tmp_path / "dom.json"
    path.write_text('{"age": 5, "sex": 2, "age": 7}', encoding="utf-8")
    with pytest.raises(ValueError) as info:
        Domain.from_json(path)
    assert str(info.value) == f"{path}: key 'age' appears more than once; a domain file names each attribute once"


@pytest.mark.parametrize(
    "text, detail",
    [
        ("", "is empty"),
        ('{"a": 2', "is not valid JSON"),
        ('"a"', "got a JSON str"),
        ('{"a": 2.5}', "sizes: size of 'a': expected an int, got 2.5"),
        ('{"a": 2, "b": -1}', "sizes: size of 'b': must be at least 1, got -1"),
        ("{}", "attributes: a domain needs at least one attribute"),
    ],
)
def test_from_json_errors_name_the_file_and_keep_the_detail(tmp_path, text, detail):
    path = tmp_path / "dom.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError) as info:
        Domain.from_json(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and detail in message


def test_from_json_missing_file_and_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.json"):  # Python's message names the path
        Domain.from_json(tmp_path / "nowhere.json")
    with pytest.raises(ValueError, match="is a directory"):
        Domain.from_json(tmp_path)
    with pytest.raises(TypeError, match="^path: "):
        Domain.from_json(0)  # would read standard input as file descriptor 0


# ----------------------------------------------------------------------------- issue 31, item 15d


@pytest.mark.parametrize("name, reason", [
    ("a & b", "' & ' separates"), ("a=b", "'=' separates"), ("a\nb", "control character"),
    ("a\tb", "control character"), (" a", "leading or trailing space"), ("a ", "leading or trailing space"),
])
def test_attribute_names_that_would_make_labels_ambiguous_are_refused(name, reason):
    """Query labels read ``a=1 & b=2``: a name holding a separator makes them ambiguous."""
    for build in (lambda: Domain([name, "c"], [2, 2]), lambda: Domain.from_dict({"c": 2, name: 2})):
        with pytest.raises(ValueError, match=rf"^attributes: name {re.escape(repr(name))} .*{reason}"):
            build()
    assert Domain(["income>50K", "a b", "R&D"], [2, 2, 2]).attributes == ("income>50K", "a b", "R&D")


def test_a_size_beyond_int64_codes_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"^sizes: size of 'a': at most 2\*\*63 - 1"):
        Domain(["a"], [10**400])
    for size in (2**63, 10**400):
        with pytest.raises(ValueError, match=r"^sizes: size of 'a': at most 2\*\*63 - 1"):
            Domain.from_dict({"a": size})
    assert Domain(["a"], [2**63 - 1]).sizes == (2**63 - 1,)


def test_a_deeply_nested_domain_file_is_a_value_error_naming_it(tmp_path):
    path = tmp_path / "deep.json"
    for text in ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", '{"a": ' + "[" * 900 + "1" + "]" * 900 + "}"):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ValueError, match=rf"^{path}: "):
            Domain.from_json(path)
