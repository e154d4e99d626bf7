"""The public API: the objects the API reference documents and the docstring check covers.

One list serves both (the pages ``docs/api/*.rst`` are generated from it, and ``tests/contract/test_docstrings.py``
validates each object), so nothing can be documented without being checked or checked without
being documented.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from typing import Any

#: The packages (and topic modules) whose ``__all__`` is the public API, in the order the API
#: reference shows them; every other module is private (``_module.py``) behind its package.
PUBLIC_MODULES = (
    "projmech.data", "projmech.datasets", "projmech.workloads", "projmech.privacy", "projmech.tables",
    "projmech.bodies", "projmech.factorization", "projmech.synthetic", "projmech.mechanisms",
    "projmech.mechanisms.adaptive", "projmech.mechanisms.multiplicative_weights", "projmech.mechanisms.online_pmw",
    "projmech.analysis", "projmech.analysis.bounds", "projmech.analysis.evaluation", "projmech.analysis.geometry",
    "projmech.audit", "projmech.audit.self_audit", "projmech.solve", "projmech.errors",
)


def public_objects() -> Iterator[tuple[str, Any]]:
    """Yield ``(qualified name, object)`` for every public function, class, method and property.

    A name is qualified by the module that defines it (``projmech.mechanisms._additive.Release.summary``),
    and each object is yielded once however many modules re-export it or classes inherit it. Constants are skipped:
    their documentation is the ``#:`` comment beside them.
    """
    seen: set[int] = set()
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if not (inspect.isclass(value) or inspect.isfunction(value)) or id(value) in seen:
                continue
            seen.add(id(value))
            qualified = f"{value.__module__}.{value.__qualname__}"
            yield qualified, value
            if inspect.isclass(value):
                yield from _members(qualified, value, seen)


def _members(qualified: str, cls: type, seen: set[int]) -> Iterator[tuple[str, Any]]:
    """The public methods and properties of a class, its own and those it inherits from
    projmech's classes (a mechanism's ``release`` comes from a private base), each once."""
    for base in cls.__mro__:
        if not base.__module__.startswith("projmech"):
            continue
        for name, member in vars(base).items():
            function = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
            if name.startswith("_") or id(function) in seen:
                continue
            if isinstance(function, property) or inspect.isfunction(function):
                seen.add(id(function))
                yield f"{qualified}.{name}", member
