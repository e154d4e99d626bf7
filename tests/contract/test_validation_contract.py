"""One validation regime: every public entry point that declares its argument checks
(``validate_params``) is fed, for each declared argument, values its constraint must refuse,
generated from the constraint itself (the idea of scikit-learn's ``generate_invalid_param_val``),
and must raise the policy's exception with a message naming the argument first: a TypeError for
a wrong type (``2.0`` or ``True`` where an int is expected, ``"a"`` where a number is), a
ValueError for a wrong value of the right type. The checks run before the body, so the other
arguments need only bind."""

from __future__ import annotations

import inspect
import math
from numbers import Integral
from typing import Any

import numpy as np
import pytest

import projmech as pm
from projmech._public_api import public_objects
from projmech.validation import Flag, InstanceOf, Interval, IsCallable, Options, OrNone, Seed

_NO_VALUE = object()


def _invalid(constraint: Any) -> list[tuple[Any, type[Exception]]]:
    """Values ``constraint`` must refuse, each with the exception the policy asks for."""
    if isinstance(constraint, OrNone):
        return [(value, error) for value, error in _invalid(constraint.constraint) if value is not None]
    if isinstance(constraint, Interval):
        cases: list[tuple[Any, type[Exception]]] = [("1", TypeError), (True, TypeError), (None, TypeError)]
        integral = constraint.kind is Integral
        if integral:
            cases.append((2.0, TypeError))
        else:
            cases.append((math.nan, ValueError))
        step = 1 if integral else 0.5
        if constraint.low is not None:
            low_open = constraint.closed in ("right", "neither")
            cases.append((constraint.low if low_open else constraint.low - step, ValueError))
        if constraint.high is not None:
            high_open = constraint.closed in ("left", "neither")
            cases.append((constraint.high if high_open else constraint.high + step, ValueError))
        return cases
    if isinstance(constraint, Options):
        if all(isinstance(choice, str) for choice in constraint.choices):
            return [("no such choice", ValueError), (3, TypeError)]
        return [(-12345.5, ValueError), ("1", TypeError)]
    if isinstance(constraint, Flag):
        return [("yes", TypeError), (1, TypeError)]
    if isinstance(constraint, Seed):
        return [("seed", TypeError), (1.5, TypeError), (-1, ValueError)]
    if isinstance(constraint, (InstanceOf, IsCallable)):
        return [(_NotAnything(), TypeError)]
    raise AssertionError(f"no invalid values for the constraint {constraint!r}: teach this test its kind")


class _NotAnything:
    """An instance of no type a constraint asks for, and not callable."""


def _valid(constraint: Any) -> Any:
    """A value ``constraint`` accepts, or _NO_VALUE where the test cannot build one."""
    if isinstance(constraint, OrNone):
        return None
    if isinstance(constraint, Interval):
        low, high = constraint.low, constraint.high
        if constraint.kind is Integral:
            return (low if low is not None else 0) + 1 if high is None else int(high)
        if low is not None and high is not None:
            return (low + high) / 2
        return (low if low is not None else 0.0) + 0.5 if high is None else high - 0.5
    if isinstance(constraint, Options):
        return constraint.choices[0]
    if isinstance(constraint, Flag):
        return False
    if isinstance(constraint, Seed):
        return None
    if isinstance(constraint, IsCallable):
        return lambda *args, **kwargs: None
    if isinstance(constraint, InstanceOf):
        for kind in constraint.types:
            for known, make in _INSTANCES:
                if issubclass(known, kind):
                    return make()
    return _NO_VALUE


#: An instance of each type an InstanceOf constraint may ask for, built on demand.
_INSTANCES: list[tuple[type, Any]] = [
    (np.random.Generator, lambda: np.random.default_rng(0)),
    (pm.Domain, lambda: pm.Domain(["x"], [2])),
    (pm.workloads.MatrixWorkload, lambda: pm.identity(2)),
    (pm.ZCDP, lambda: pm.ZCDP(1.0)),
    (pm.PureDP, lambda: pm.PureDP(1.0)),
    (pm.ApproxDP, lambda: pm.ApproxDP(1.0, 1e-6)),
    (np.ndarray, lambda: np.zeros(2)),
    (int, lambda: 1),
    (float, lambda: 1.0),
    (str, lambda: "x"),
]


def _entry_points() -> list[tuple[str, Any, dict[str, Any]]]:
    """``(name, callable, spec)`` of every public function, method and constructor that declares checks."""
    found = []
    for name, value in public_objects():
        function = value.__init__ if inspect.isclass(value) else value
        function = function.__func__ if isinstance(function, (classmethod, staticmethod)) else function
        spec = getattr(function, "__validated__", None)
        if spec:
            found.append((name, function, spec))
    return found


def _cases() -> list[Any]:
    cases = []
    for name, function, spec in _entry_points():
        signature = inspect.signature(function)
        for argument, constraint in spec.items():
            for value, error in _invalid(constraint):
                cases.append(pytest.param(function, signature, spec, argument, value, error,
                                          id=f"{name}-{argument}={value!r}"))
    return cases


CASES = _cases()


def test_the_contract_reaches_every_layer():
    """The declarative checks are where the issue found them missing too: entry points of the
    factorization, mechanisms and privacy folders are among those covered."""
    covered = {name for name, _, _ in _entry_points()}
    assert len(covered) >= 20, sorted(covered)
    for expected in ("projmech.factorization._norm.factorization_norm",
                     "projmech.mechanisms.multiplicative_weights.OfflinePMW"):
        assert expected in covered, sorted(covered)


@pytest.mark.parametrize("function, signature, spec, argument, value, error", CASES)
def test_a_declared_argument_refuses_invalid_values_by_the_policy(function, signature, spec, argument, value,
                                                                  error):
    arguments: dict[str, Any] = {}
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if parameter.name == argument:
            arguments[parameter.name] = value
        elif parameter.name in spec:
            if parameter.default is not parameter.empty:
                continue
            valid = _valid(spec[parameter.name])
            if valid is _NO_VALUE:
                pytest.skip(f"{parameter.name}: no valid value to build for {spec[parameter.name]!r}")
            arguments[parameter.name] = valid
        elif parameter.default is parameter.empty:
            arguments[parameter.name] = None  # never read: the checks run before the body
    positional = [arguments.pop(p.name) for p in signature.parameters.values()
                  if p.kind is p.POSITIONAL_ONLY and p.name in arguments]
    with pytest.raises(error) as info:
        function(*positional, **arguments)
    assert str(info.value).startswith(f"{argument}:"), str(info.value)
