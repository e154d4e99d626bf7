"""Tests of projmech.validation, the shared argument checks (their refusals are also in the
catalogue of tests/contract/test_bad_inputs.py; here: what they accept and return, and their wording)."""

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
    FLAG,
    NONNEGATIVE,
    OPEN_UNIT,
    POSITIVE,
    POSITIVE_INT,
    SEED,
    InstanceOf,
    Integral,
    Interval,
    IsCallable,
    Options,
    OrNone,
    Real,
    as_array,
    as_generator,
    check_bool,
    check_entries,
    check_positive_int,
    check_query_row,
    check_real_array,
    check_real_dtype,
    check_real_vector,
    format_count,
    validate_params,
)

# ----------------------------------------------------------------------------- constraints


@pytest.mark.parametrize("value", [3, np.int64(3), np.uint8(3), 10**30])
def test_integral_interval_returns_a_python_int(value):
    result = Interval(Integral, 1, None).check("k", value)
    assert result == value and type(result) is int


@pytest.mark.parametrize("value", [0.5, np.float64(2.0), 0.0, 1e300, np.float32(7)])
def test_real_interval_returns_a_python_float(value):
    result = NONNEGATIVE.check("x", value)
    assert result == float(value) and type(result) is float


@pytest.mark.parametrize("constraint", [POSITIVE_INT, POSITIVE, NONNEGATIVE, OPEN_UNIT,
                                        Interval(Integral, 0, 10), Interval(Real, None, None)])
@pytest.mark.parametrize("value", [True, False, np.True_, "1", None, 1 + 0j, Fraction(1, 2), [1]])
def test_a_non_number_is_a_type_error_for_every_interval(constraint, value):
    with pytest.raises(TypeError, match="^x: expected (an int|a number), got "):
        constraint.check("x", value)


@pytest.mark.parametrize("value", [1.0, np.float64(3), 2.5])
def test_a_float_is_a_type_error_where_an_int_is_expected(value):
    with pytest.raises(TypeError, match="^x: expected an int, got "):
        Interval(Integral, 0, None).check("x", value)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, 10**400])
def test_reals_are_finite(value):
    with pytest.raises(ValueError, match="^x: must be a finite number"):
        Interval(Real, None, None).check("x", value)


@pytest.mark.parametrize(
    "constraint, inside, outside, wording",
    [
        (POSITIVE_INT, [1, 2**70], [0, -1], "must be at least 1"),
        (Interval(Integral, 1, None, closed="neither"), [2], [1], "must be at least 2"),
        (Interval(Integral, 0, 3), [0, 3], [-1, 4], r"must lie in \[0, 3\]"),
        (POSITIVE, [1e-300, 5.0], [0.0, -1.0, np.inf], "must be a positive finite number"),
        (NONNEGATIVE, [0, 2.5], [-1e-300, np.nan], "must be a finite number >= 0"),
        (OPEN_UNIT, [1e-9, 0.5], [0, 1, 1.5], r"must lie in \(0, 1\)"),
        (Interval(Real, 0, 1, closed="left"), [0.0, 0.999], [1.0, -0.1], r"must lie in \[0, 1\)"),
        (Interval(Real, 0, 0.5, closed="right"), [0.5], [0.0, 0.6], r"must lie in \(0, 0.5\]"),
        (Interval(Real, 2, None, closed="neither"), [2.5], [2.0], "must be a finite number > 2"),
        (Interval(Real, None, 3), [-1e9, 3], [3.5], "must be a finite number <= 3"),
    ],
)
def test_interval_bounds_and_wording(constraint, inside, outside, wording):
    for value in inside:
        assert constraint.check("x", value) == value
    for value in outside:
        with pytest.raises(ValueError, match=f"^x: {wording}, got "):
            constraint.check("x", value)


def test_interval_reason_is_shown():
    with pytest.raises(ValueError, match=r"^alpha: must lie in \(0, 0.5\] \(the band must fit\), got 0.7"):
        Interval(Real, 0, 0.5, closed="right", reason="the band must fit").check("alpha", 0.7)


def test_interval_refuses_a_bad_definition():
    with pytest.raises(ValueError, match="^kind"):
        Interval(int, 0, None)
    with pytest.raises(ValueError, match="^closed"):
        Interval(Real, 0, 1, closed="open")


def test_options():
    colours = Options("red", "green")
    assert colours.check("colour", "red") == "red"
    with pytest.raises(ValueError, match=r"^colour: expected one of \['red', 'green'\], got 'blue'"):
        colours.check("colour", "blue")
    for bad in (None, 1, True, ["red"], b"red"):
        with pytest.raises(TypeError, match=r"^colour: expected one of \['red', 'green'\], got "):
            colours.check("colour", bad)


def test_numeric_options():
    order = Options(1, 2, np.inf)
    assert order.check("ord", 2.0) == 2 and order.check("ord", np.float64(np.inf)) == np.inf
    with pytest.raises(ValueError, match=r"^ord: expected one of \[1, 2, inf\], got 3"):
        order.check("ord", 3)
    for bad in (True, "2", None):
        with pytest.raises(TypeError, match="^ord: expected one of"):
            order.check("ord", bad)


def test_flag_instance_callable_or_none():
    assert FLAG.check("f", np.False_) is False
    assert InstanceOf(np.random.Generator, what="a numpy.random.Generator").check("rng", RNG) is RNG
    with pytest.raises(TypeError, match="^rng: expected a numpy.random.Generator, got int"):
        InstanceOf(np.random.Generator, what="a numpy.random.Generator").check("rng", 0)
    with pytest.raises(TypeError, match="^x: expected a str or a bytes, got int"):
        InstanceOf(str, bytes).check("x", 1)
    assert IsCallable().check("f", len) is len
    with pytest.raises(TypeError, match="^f: expected a function of one row, got int"):
        IsCallable("a function of one row").check("f", 3)
    assert OrNone(POSITIVE_INT).check("k", None) is None
    assert OrNone(POSITIVE_INT).check("k", np.int8(2)) == 2
    with pytest.raises(TypeError, match="^k: expected an int"):
        OrNone(POSITIVE_INT).check("k", 2.0)


RNG = np.random.default_rng(0)


# ----------------------------------------------------------------------------- validate_params


@validate_params(k=POSITIVE_INT, scale=POSITIVE, noise=Options("auto", "discrete"))
def _example(k, scale=1.0, *, noise="auto", untouched=None):
    return k, scale, noise, untouched


def test_validate_params_hands_over_converted_values():
    k, scale, noise, untouched = _example(np.int64(3), np.float32(0.5), noise="discrete", untouched="x")
    assert (k, scale, noise, untouched) == (3, 0.5, "discrete", "x")
    assert type(k) is int and type(scale) is float


def test_validate_params_checks_before_the_body_and_names_the_argument():
    calls = []

    @validate_params(k=POSITIVE_INT)
    def body(k):
        calls.append(k)

    with pytest.raises(ValueError, match="^k: must be at least 1"):
        body(0)
    with pytest.raises(TypeError, match="^k: expected an int"):
        body(k=2.0)
    assert calls == []


def test_validate_params_converts_defaults_too_and_keeps_the_signature():
    import inspect

    assert _example(1) == (1, 1.0, "auto", None)

    @validate_params(rng=SEED)
    def draw(rng=None):
        return rng

    assert isinstance(draw(), np.random.Generator)  # the body never sees the None
    assert list(inspect.signature(_example).parameters) == ["k", "scale", "noise", "untouched"]
    assert _example.__name__ == "_example"


def test_validate_params_keeps_keyword_only_options_keyword_only():
    with pytest.raises(TypeError, match="positional"):
        _example(1, 1.0, "auto")


def test_validate_params_refuses_a_spec_for_an_argument_that_does_not_exist():
    with pytest.raises(TypeError, match="no argument"):
        validate_params(kk=POSITIVE_INT)(lambda k: k)


def test_validate_params_on_a_constructor():
    class Thing:
        @validate_params(size=POSITIVE_INT)
        def __init__(self, size):
            self.size = size

    assert Thing(np.int16(4)).size == 4
    with pytest.raises(TypeError, match="^size: "):
        Thing(True)


# ----------------------------------------------------------------------------- check_query_row


def test_query_row_accepts_unit_rows_of_any_layout():
    expected = np.array([0.0, 0.5, 1.0])
    for row in ([0, 0.5, 1], [[0, 0.5, 1]], np.array([[0], [0.5], [1]]), sp.csr_array([[0, 0.5, 1]])):
        np.testing.assert_array_equal(check_query_row("query", row, 3), expected)


@pytest.mark.parametrize(
    "row, error, wording",
    [
        ([0, 1], ValueError, "expected 3 values"),
        ([0, 1, 2], ValueError, r"values must lie in \[0, 1\]"),
        ([0, -0.5, 1], ValueError, r"values must lie in \[0, 1\]"),
        ([0, np.nan, 1], ValueError, "NaN or infinite"),
        ([0, 1j, 1], TypeError, "expected real numbers"),
        ("abc", TypeError, "expected real numbers"),
    ],
)
def test_query_row_refusals(row, error, wording):
    with pytest.raises(error, match=f"^query: .*{wording}"):
        check_query_row("query", row, 3)


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


def test_check_positive_int_lives_only_in_validation():
    """One definition, imported from its home: no module re-defines it or takes it from another."""
    from projmech import workloads

    assert "check_positive_int" not in workloads.__all__
    for path in Path(validation.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "check_positive_int":
                assert path.name == "validation.py", f"{path} defines check_positive_int"
            if isinstance(node, ast.ImportFrom) and any(a.name == "check_positive_int" for a in node.names):
                assert node.module.endswith("validation"), f"{path} imports check_positive_int from {node.module}"


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


def _imports(path: Path) -> set[str]:
    """The top-level modules a file imports; a relative import is named with its dot."""
    imported = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add("." * node.level + (node.module or "").split(".")[0])
    return imported


def test_validation_is_a_leaf_module():
    """Every layer imports it, so it imports nothing of projmech but the errors it raises (a leaf
    of the standard library alone) and no third party but numpy."""
    assert _imports(Path(validation.__file__)) <= {"__future__", "collections", "decimal", "functools", "inspect",
                                                   "math", "numbers", "typing", "numpy", ".errors"}
    assert _imports(Path(validation.__file__).with_name("errors.py")) <= {"__future__", "collections", "typing"}


# ----------------------------------------------------------------------------- one rule, every layer

import projmech as pm  # noqa: E402
from projmech.audit import _auditor as audit_module  # noqa: E402
from projmech.data._tables import marginal_cells  # noqa: E402

_D = pm.Domain(["a", "b"], [2, 3])
_H = np.full(6, 1 / 6)
_GEN = np.random.default_rng(0)

#: Entry points taking a positive count, as ``name -> call(value)``.
COUNTS = {
    "Domain sizes": lambda v: pm.Domain(["a"], [v]),
    "identity m": lambda v: pm.identity(v),
    "marginals way": lambda v: pm.marginals(_D, v),
    "repeated k": lambda v: pm.repeated([1.0, 0.0], v),
    "marginal_cells way": lambda v: marginal_cells([2, 3], v),
    "Workload.gram max_entries": lambda v: pm.identity(2).gram(max_entries=v),
    "histogram max_universe": lambda v: pm.histogram(pm.Dataset([[0, 0]], _D), max_universe=v),
    "check_normalized_histogram n": lambda v: pm.data.check_normalized_histogram(_H, v),
    "resolve_rows n": lambda v: pm.data.resolve_rows(_H, v),
    # (SizePolicy.parse's size is an int or the word "estimate": "2" is a wrong word, tested there.)
    "Neighbouring.sensitivity n": lambda v: pm.Neighbouring.REPLACE_ONE.sensitivity(1.0, v),
    "ThresholdK k": lambda v: pm.ThresholdK(_H, 0.5, 1.0, v, n=6),
    "OnlinePMW k": lambda v: pm.OnlinePMW(_H, 0.1, 1.0, k=v, n=6),
    "OfflinePMW rounds": lambda v: pm.OfflinePMW(pm.identity(6), pm.PureDP(1.0), v),
    "mw_update_bound universe_size": lambda v: pm.multiplicative_weights.mw_update_bound(v, 0.5),
    "offline_pmw_error_bound n": lambda v: pm.multiplicative_weights.offline_pmw_error_bound(v, 6, 6, 3,
                                                                                             pm.PureDP(1.0)),
    "online_pmw_accuracy k": lambda v: pm.online_pmw.online_pmw_accuracy(0.1, 1.0, 100, 10, v),
    "gaussian_norm_mean k": lambda v: pm.geometry.gaussian_norm_mean(v),
    "gaussian_expected_rmse k": lambda v: pm.evaluation.gaussian_expected_rmse(1.0, v),
    "finite_set_width_bound num_points": lambda v: pm.geometry.finite_set_width_bound(v, 1.0),
    "support_function block_entries": lambda v: pm.geometry.support_function(np.eye(2), np.ones(2), block_entries=v),
    "clopper_pearson trials": lambda v: audit_module.clopper_pearson(0, v, 0.9),
    "audit batch": lambda v: audit_module.audit(lambda d, rng: d, (0, 1), releases=10, batch=v),
    "random_queries k": lambda v: pm.random_queries(v, 3, _GEN),
}

#: Entry points taking a positive real number.
NUMBERS = {
    "ZCDP rho": lambda v: pm.ZCDP(v),
    "PureDP epsilon": lambda v: pm.PureDP(v),
    "discrete_gaussian_pmf sigma": lambda v: pm.privacy.discrete_gaussian_pmf(v),
    "gaussian_delta sigma": lambda v: pm.privacy.gaussian_delta(v, 1.0, 1.0),
    "laplace_scale epsilon": lambda v: pm.privacy.laplace_scale(1.0, v),
    "ThresholdK epsilon": lambda v: pm.ThresholdK(_H, 0.5, v, 2, n=6),
    "multiplicative_weights_update alpha":
        lambda v: pm.multiplicative_weights.multiplicative_weights_update(_H, _H * 0, True, v),
    "offline_pmw_min_n alpha": lambda v: pm.multiplicative_weights.offline_pmw_min_n(v, 6, 6, 3, pm.PureDP(1.0)),
}


@pytest.mark.parametrize("call", COUNTS.values(), ids=COUNTS.keys())
@pytest.mark.parametrize("value", [2.0, np.float64(3), True, np.True_, "2", [2]])
def test_a_count_of_the_wrong_type_is_a_type_error_everywhere(call, value):
    # (None is no mistake of type for every count: beside a histogram a missing n is the
    # documented ValueError "n: required", and k=None asks OnlinePMW for its default.)
    with pytest.raises(TypeError):
        call(value)


@pytest.mark.parametrize("call", COUNTS.values(), ids=COUNTS.keys())
def test_a_count_below_one_is_a_value_error_everywhere(call):
    for value in (0, -1, np.int64(-2)):
        with pytest.raises(ValueError):
            call(value)


@pytest.mark.parametrize("call", NUMBERS.values(), ids=NUMBERS.keys())
@pytest.mark.parametrize("value", [True, "1", None, 1j])
def test_a_number_of_the_wrong_type_is_a_type_error_everywhere(call, value):
    with pytest.raises(TypeError):
        call(value)


@pytest.mark.parametrize("call", NUMBERS.values(), ids=NUMBERS.keys())
def test_a_bad_number_is_a_value_error_everywhere(call):
    for value in (0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError):
            call(value)


def test_an_int_beyond_float64_is_refused_as_a_value_not_an_overflow():
    """math.isfinite(10**400) raises OverflowError; the interval check compares the int exactly."""
    import projmech as pm
    from projmech.validation import Interval

    with pytest.raises(ValueError, match=r"^size: must lie in \[1, 100\], got 1000"):
        Interval(Integral, 1, 100).check("size", 10**400)
    assert Interval(Integral, 1, None).check("size", 10**400) == 10**400
    with pytest.raises(ValueError, match=r"^m: prefix: the explicit matrix"):
        pm.workloads.prefix(10**400)


@pytest.mark.parametrize("value, count, error, message", [
    ((1, 0), 3, ValueError, "attributes: must be increasing positions below 3, got \\[1, 0\\]"),
    ((0, 0), 3, ValueError, "must be increasing"),
    ((3,), 3, ValueError, "below 3"),
    ((-1,), None, ValueError, "must be increasing positions, got \\[-1\\]"),
    ((), 3, ValueError, "must be increasing"),
    ((0.9,), 3, TypeError, "expected a sequence of int positions"),
    ((True, 2), 3, TypeError, "booleans"),
    ("01", 3, TypeError, "expected a sequence of int positions"),
    (5, 3, TypeError, "expected a sequence"),
])
def test_check_positions_refuses_naming_the_argument(value, count, error, message):
    with pytest.raises(error, match=message):
        validation.check_positions("attributes", value, count)


def test_check_positions_returns_python_ints_once_read():
    positions = validation.check_positions("axes", (np.int64(0), 2), 3, what="axes")
    assert positions == (0, 2) and all(type(p) is int for p in positions)
    assert validation.check_positions("axes", (a for a in (1, 2))) == (1, 2)  # a generator, read once
