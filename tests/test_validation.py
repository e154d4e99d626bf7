"""Tests of projmech.validation, the shared argument checks (their refusals are also in the
catalogue of tests/test_bad_inputs.py; here: what they accept and return, and their wording)."""

from __future__ import annotations

import ast
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import projmech.validation as validation
from projmech.validation import (
    DEFAULT_MAX_ENTRIES,
    as_array,
    as_generator,
    check_bool,
    check_entries,
    check_positive_int,
    check_real_array,
    check_real_dtype,
    check_real_vector,
    format_count,
)

# ----------------------------------------------------------------------------- as_generator


def test_generator_passes_through_and_keeps_its_stream():
    generator = np.random.default_rng(3)
    generator.random()
    assert as_generator(generator) is generator


@pytest.mark.parametrize("seed", [0, 7, np.int64(7), np.uint8(7), 2**70])
def test_int_seed_gives_the_default_rng_of_that_seed(seed):
    assert as_generator(seed).random() == np.random.default_rng(int(seed)).random()


def test_none_gives_fresh_entropy():
    first, second = as_generator(None), as_generator(None)
    assert isinstance(first, np.random.Generator)
    assert first.integers(2**62) != second.integers(2**62)


@pytest.mark.parametrize("seed", [-1, np.int32(-3), -(2**70)])
def test_negative_seed_is_a_value_error_naming_rng(seed):
    with pytest.raises(ValueError, match=r"^rng: a seed must be an int >= 0"):
        as_generator(seed)


@pytest.mark.parametrize(
    "bad, shown",
    [
        (True, "bool"),
        (np.True_, "bool"),
        (1.0, "float"),
        ("1", "str"),
        (np.random.RandomState(0), "RandomState"),
        (np.random, "numpy.random module"),
        (np.random.SeedSequence(0), "SeedSequence"),
        (np.random.PCG64(0), "PCG64"),
    ],
)
def test_other_kinds_are_type_errors_naming_rng(bad, shown):
    with pytest.raises(TypeError, match=r"^rng: ") as info:
        as_generator(bad)
    assert shown in str(info.value)


def test_as_generator_names_the_given_argument():
    with pytest.raises(ValueError, match="^seed: "):
        as_generator(-1, name="seed")
    with pytest.raises(TypeError, match="^noise_rng: "):
        as_generator(np.random.RandomState(0), name="noise_rng")


# ----------------------------------------------------------------------------- check_positive_int


@pytest.mark.parametrize("value", [1, 5, np.int64(5), np.uint16(5), 10**30])
def test_positive_int_returns_a_python_int(value):
    result = check_positive_int("k", value)
    assert result == value and type(result) is int


@pytest.mark.parametrize("value", [True, False, 2.0, np.float64(2), "2", None, 2 + 0j, Fraction(2)])
def test_positive_int_type_errors(value):
    with pytest.raises(TypeError, match="^k: expected an int"):
        check_positive_int("k", value)


@pytest.mark.parametrize("value", [0, -1, np.int8(-4)])
def test_positive_int_value_errors(value):
    with pytest.raises(ValueError, match="^k: must be at least 1"):
        check_positive_int("k", value)


def test_workloads_still_exports_the_same_check_positive_int():
    from projmech import workloads

    assert workloads.check_positive_int is check_positive_int


# ----------------------------------------------------------------------------- check_bool


@pytest.mark.parametrize("value", [True, False, np.True_, np.False_])
def test_bool_accepted(value):
    assert check_bool("flag", value) is bool(value)


@pytest.mark.parametrize("value", [0, 1, "yes", None, 1.0])
def test_non_bool_flag_refused(value):
    with pytest.raises(TypeError, match="^flag: expected True or False"):
        check_bool("flag", value)


# ----------------------------------------------------------------------------- check_real_array


def test_real_array_converts_to_float64_and_keeps_the_shape():
    for value, expected in [
        ([[1, 2], [3, 4]], np.array([[1.0, 2.0], [3.0, 4.0]])),
        (np.array([True, False]), np.array([1.0, 0.0])),
        (np.arange(3, dtype=np.uint8), np.arange(3.0)),
        (pd.Series([0.5, 1.5]), np.array([0.5, 1.5])),
        (np.array([Fraction(1, 2), 2], dtype=object), np.array([0.5, 2.0])),
        (3, np.array(3.0)),
    ]:
        array = check_real_array("x", value)
        assert array.dtype == np.float64
        np.testing.assert_array_equal(array, expected)


def test_real_array_copy_only_when_asked():
    source = np.arange(3.0)
    assert check_real_array("x", source) is source  # no copy of a float array
    copied = check_real_array("x", source, copy=True)
    copied[0] = 9.0
    assert source[0] == 0.0


def test_real_array_finite_flag():
    assert np.isnan(check_real_array("x", [np.nan], finite=False)[0])
    with pytest.raises(ValueError, match=r"^x: contains NaN or infinite entries \(first at index 2\)"):
        check_real_array("x", [0.0, 1.0, np.inf])
    with pytest.raises(ValueError, match=r"first at index \(1, 0\)"):
        check_real_array("x", [[0.0], [np.nan]])


@pytest.mark.parametrize("value", [np.array([1 + 0j]), [0, 1j], np.array([1, 2], dtype=np.complex64)])
def test_complex_is_a_type_error_even_with_zero_imaginary_part(value):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning: refused before any cast
        with pytest.raises(TypeError, match="^x: expected real numbers, (got complex|found 1j)"):
            check_real_array("x", value)


def test_object_array_names_the_first_bad_entry():
    with pytest.raises(TypeError, match=r"^x: expected real numbers, found 'a' \(str\) at index \(1, 0\)"):
        check_real_array("x", np.array([[1], ["a"]], dtype=object))
    with pytest.raises(TypeError, match=r"found None \(NoneType\) at index \(1,\)"):
        check_real_array("x", [1.0, None])


def test_sparse_matrices_are_refused_with_a_clear_message():
    with pytest.raises(TypeError, match="^x: expected a dense array, got a sparse csr_array"):
        check_real_array("x", sp.csr_array(np.eye(2)))


def test_ragged_lists_name_the_argument():
    with pytest.raises(ValueError, match="^x: not a rectangular array"):
        check_real_array("x", [[1, 2], [3]])
    with pytest.raises(ValueError, match="^rows: not a rectangular array"):
        as_array("rows", [[1], [2, 3]])


@pytest.mark.parametrize("dtype", [bool, np.int8, np.uint64, np.float16, np.float64])
def test_real_dtypes_accepted(dtype):
    check_real_dtype("x", np.dtype(dtype))


@pytest.mark.parametrize("dtype", [complex, np.complex64, "U3", "S3", object, "datetime64[D]", "m8[s]"])
def test_other_dtypes_refused(dtype):
    with pytest.raises(TypeError, match="^x: expected real numbers"):
        check_real_dtype("x", np.dtype(dtype))


def test_real_vector_shape():
    np.testing.assert_array_equal(check_real_vector("v", [1, 2], 2), [1.0, 2.0])
    for bad in ([1, 2, 3], [[1, 2]], [[1], [2]], 1.0):
        with pytest.raises(ValueError, match=r"^v: expected shape \(2,\)"):
            check_real_vector("v", bad, 2)


# ----------------------------------------------------------------------------- check_entries


def test_check_entries_boundary_and_message():
    check_entries("m", 100, 100, "a matrix")  # at the cap: allowed
    with pytest.raises(ValueError) as info:
        check_entries("m", 101, 100, "the matrix of identity(101)", hint=" (raise it)", limit="cap")
    assert str(info.value) == (
        "m: the matrix of identity(101) would hold 1.010e+2 entries, above cap=1.0e+02; "
        "refusing to allocate it (raise it)"
    )


def test_check_entries_handles_astronomic_counts():
    # 2^1500 overflows a float: the message goes through Decimal.
    with pytest.raises(ValueError, match=r"3\.507e\+451 entries"):
        check_entries("domain", 2**1500, DEFAULT_MAX_ENTRIES, "a histogram")


def test_format_count():
    assert format_count(12_345) == "12,345"
    assert format_count(2**150) == "1.427e+45"


# ----------------------------------------------------------------------------- the module


def test_validation_is_a_leaf_module():
    """Every layer imports it, so it imports nothing of projmech and no third party but numpy."""
    tree = ast.parse(Path(validation.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative imports"
            imported.add(node.module.split(".")[0])
    assert imported <= {"__future__", "math", "numbers", "decimal", "typing", "numpy"}
