"""Errors that name the argument at fault as data, not only in their message.

A refusal is a ``TypeError`` or ``ValueError`` whose message starts with the argument's name
(``"rows: must be at least 1, got 0"``); projmech's also carry the name, the part at fault and the
valid range as attributes, so that a caller (the command line, a form) need not parse the message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["ArgumentError", "ArgumentTypeError", "ArgumentValueError", "ArgumentWarning"]


def _setting(argument: str, value: str) -> str:
    """How the API spells another argument's value: ``noise='continuous'``."""
    return f"{argument}={value!r}"


class ArgumentError(Exception):
    """A refused argument, named as data: the base of :class:`ArgumentValueError` and :class:`ArgumentTypeError`.

    Parameters
    ----------
    argument, detail : str
        The public name of the argument at fault, and what is wrong (``"must be at least 1, got 0"``).
    part, valid : str, optional
        The part at fault (``"epsilon"`` of a budget), and the valid range in words.
    alternatives, remedies : sequence, optional
        Other arguments' ``(argument, value)`` pairs, and other ways out in words, that avoid the refusal.

    Examples
    --------
    >>> try:
    ...     pm.ZCDP(-1.0)
    ... except pm.errors.ArgumentError as error:
    ...     print(error.argument, "|", error.valid, "|", error)
    rho | a positive finite number | rho: must be a positive finite number, got -1.0
    """

    def __init__(self, argument: str, detail: str, *, part: str | None = None, valid: str | None = None,
                 alternatives: Sequence[tuple[str, str]] = (), remedies: Sequence[str] = ()) -> None:
        self.argument = argument
        self.detail = detail
        self.part = part
        self.valid = valid
        self.alternatives = tuple(alternatives)
        self.remedies = tuple(remedies)
        super().__init__(f"{argument}: {self.describe()}")

    def describe(self, setting: Callable[[str, str], str] = _setting) -> str:
        """The message without the argument's name, the alternatives spelt by ``setting``.

        Parameters
        ----------
        setting : callable, optional
            ``setting(argument, value)``; by default as the API takes it (``noise='continuous'``).

        Returns
        -------
        str
        """
        ways = [setting(name, value) for name, value in self.alternatives] + list(self.remedies)
        return f"{self.detail}; use {' or '.join(ways)}" if ways else self.detail

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled with its fields (the default would pass the message alone to __init__).
        return (_rebuild, (type(self), self.argument, self.detail, self.part, self.valid, self.alternatives,
                           self.remedies))


def _rebuild(cls: type[ArgumentError], argument: str, detail: str, part: str | None, valid: str | None,
             alternatives: tuple[tuple[str, str], ...], remedies: tuple[str, ...]) -> ArgumentError:
    return cls(argument, detail, part=part, valid=valid, alternatives=alternatives, remedies=remedies)


class ArgumentValueError(ArgumentError, ValueError):
    """A ``ValueError`` naming the argument at fault as data.

    Parameters
    ----------
    argument, detail, part, valid, alternatives, remedies
        As for :class:`ArgumentError`.

    Examples
    --------
    >>> pm.errors.ArgumentValueError("rows", "must be at least 1, got 0", valid="at least 1").valid
    'at least 1'
    """


class ArgumentTypeError(ArgumentError, TypeError):
    """A ``TypeError`` naming the argument at fault as data.

    Parameters
    ----------
    argument, detail, part, valid, alternatives, remedies
        As for :class:`ArgumentError`; ``valid`` says what would be accepted.

    Examples
    --------
    >>> str(pm.errors.ArgumentTypeError("rho", "expected a number, got str"))
    'rho: expected a number, got str'
    """


class ArgumentWarning(UserWarning):
    """A warning about an argument, named as data; subclasses set :attr:`argument`.

    Parameters
    ----------
    part : str or None
        The part of the argument at fault, if any; with no ``detail``, the whole message.
    detail : str, optional
        The message after the name.

    Examples
    --------
    >>> class RowsWarning(pm.errors.ArgumentWarning):
    ...     argument = "rows"
    >>> str(RowsWarning(None, "few")), str(RowsWarning("few"))
    ('rows: few', 'few')
    """

    #: The public name of the argument the warning is about.
    argument = ""

    def __init__(self, part: str | None, detail: str | None = None) -> None:
        self._given = (part, detail)
        if detail is None:
            self.part, self.detail = None, str(part)
            super().__init__(self.detail)
        else:
            self.part, self.detail = part, detail
            super().__init__(f"{part or self.argument}: {detail}")

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), self._given)
