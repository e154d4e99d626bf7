"""Errors and warnings in the command's words, each one line naming the flag at fault: the library
names the argument as data (:class:`~projmech.errors.ArgumentError`, ``BudgetWarning.argument``),
and :data:`ARGUMENT_FLAGS` gives the flag that passed it on."""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Collection, Iterator
from typing import TextIO

from ..errors import ArgumentError, ArgumentWarning

__all__ = ["ARGUMENT_FLAGS", "flag_of", "in_flags", "one_line", "warnings_in_one_line"]

#: The flag of each library argument that a command passes on from a flag of its own, for the
#: errors that name the argument (:class:`projmech.errors.ArgumentError`); a budget (``privacy``)
#: is named by the flag of its part at fault (``rho``, ``epsilon``, ``delta``) where the user gave
#: it, else by the budget's flag the user gave.
ARGUMENT_FLAGS = {
    "rho": "--rho", "epsilon": "--epsilon", "delta": "--delta", "rows": "--rows", "workload": "--workload",
    "estimator": "--estimator", "noise": "--noise", "size": "--size", "size_share": "--size-share",
    "neighbouring": "--neighbouring", "objective": "--objective", "body": "--body", "solver": "--solver",
    "relaxation": "--relaxation", "synthetic_rows": "--synthetic-rows", "metric": "--metric",
    # The adaptive mechanism's max_cells has no flag: a workload none of whose tables fits in it is
    # the workload's to change.
    "max_cells": "--workload",
}


def flag_of(argument: str, part: str | None, args: argparse.Namespace, flags: Collection[str]) -> str | None:
    """The command's flag for a library argument (and its part), or None where it has none."""
    if argument == "privacy":
        given = [flag for flag in ("--rho", "--epsilon", "--delta")
                 if flag in flags and getattr(args, flag[2:], None) is not None]
        preferred = ARGUMENT_FLAGS.get(part or "")
        return preferred if preferred in given else (given[0] if given else None)
    flag = ARGUMENT_FLAGS.get(argument)
    return flag if flag in flags else None


def in_flags(error: BaseException, args: argparse.Namespace, flags: Collection[str]) -> str:
    """An error in the command's words: one from the library that names its argument as data
    (:class:`projmech.errors.ArgumentError`) names the flag that gave that argument instead, and
    the other flags it suggests; any other error as it is (the command's own name their flags)."""
    if not isinstance(error, ArgumentError):
        return str(error)
    flag = flag_of(error.argument, error.part, args, flags)
    if flag is None:
        return str(error)

    def setting(argument: str, value: str) -> str:
        other = flag_of(argument, None, args, flags)
        return f"{other} {value}" if other is not None else f"{argument}={value!r}"

    return f"{flag}: {error.describe(setting)}"


def one_line(message: object) -> str:
    return " ".join(str(message).split())


def _warning_text(message: Warning | str, args: argparse.Namespace, flags: Collection[str]) -> str:
    """A warning's message, naming the flag of the argument it carries
    (:class:`~projmech.errors.ArgumentWarning`); any other warning as it is."""
    if not isinstance(message, ArgumentWarning):
        return one_line(message)
    flag = flag_of(message.argument, message.part, args, flags)
    return one_line(str(message) if flag is None else f"{flag}: {message.detail}")


@contextlib.contextmanager
def warnings_in_one_line(prog: str, args: argparse.Namespace, flags: Collection[str]) -> Iterator[None]:
    """Every warning shown while a command runs as one line on stderr, ``projmech release:
    warning: <message>``, without Python's file and line (a warning meant for developers, not a
    UserWarning, keeps its category's name), naming the command's flag where the library names
    its argument; the command runs on."""
    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        kind = "" if issubclass(category, UserWarning) else f"{category.__name__}: "
        print(f"{prog}: warning: {kind}{_warning_text(message, args, flags)}", file=sys.stderr)

    with warnings.catch_warnings():  # restores the previous showwarning on the way out
        warnings.showwarning = show
        yield
