"""Every public object's docstring passes numpydoc's validation, with the checks pyproject.toml names."""

from __future__ import annotations

import inspect
import pathlib
import re

import pytest
from numpydoc.hooks.validate_docstrings import parse_config
from numpydoc.validate import validate

from projmech._public_api import public_objects

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECKS = set(parse_config(ROOT)["checks"])
#: Methods and properties are shown in their class's example; a property is read, not called.
NOT_FOR_METHODS = {"EX01"}
NOT_FOR_PROPERTIES = {"EX01", "RT01", "PR01", "PR02"}

OBJECTS = dict(public_objects())


def _checks_for(value: object) -> set[str]:
    if isinstance(value, property):
        return CHECKS - NOT_FOR_PROPERTIES
    if inspect.isclass(value) or "." not in value.__qualname__:  # type: ignore[attr-defined]
        return CHECKS
    return CHECKS - NOT_FOR_METHODS


def test_the_configuration_names_the_checks() -> None:
    assert {"GL08", "SS01", "PR01", "RT01", "EX01"} <= CHECKS


@pytest.mark.parametrize("name", sorted(OBJECTS))
def test_docstring(name: str) -> None:
    value = OBJECTS[name]
    report = validate(name)
    errors = [f"{code} {message}" for code, message in report["errors"] if code in _checks_for(value)]
    assert not errors, "\n".join(errors)


def test_no_citation_of_unpublished_notes() -> None:
    """Users get published papers, cited by bibliography key, not the lecture notes we learnt from."""
    pattern = re.compile(r"seeds?\s+\d{3}|lecture notes|design folder", re.IGNORECASE)
    paths = [ROOT / "README.md", *ROOT.glob("projmech/**/*.py"), *ROOT.glob("docs/**/*.md"),
             *ROOT.glob("docs/**/*.rst"), *ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("benchmarks/*.py"),
             ROOT / "benchmarks" / "README.md"]
    found = [f"{path.relative_to(ROOT)}:{number}" for path in paths
             for number, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert not found, found


def test_no_string_statement_after_a_docstring() -> None:
    """A second string right after a docstring is dead code (a stale docstring left behind)."""
    import ast

    found = []
    for path in sorted(ROOT.glob("projmech/**/*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            body = getattr(node, "body", None)
            if isinstance(body, list) and len(body) > 1 and all(
                    isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
                    and isinstance(statement.value.value, str) for statement in body[:2]):
                found.append(f"{path.relative_to(ROOT)}:{body[1].lineno}")
    assert not found, found
