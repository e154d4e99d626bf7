"""The privacy budget and size flags shared by the commands: ``--epsilon``, ``--delta``, ``--rho``,
``--size``, ``--size-share``, ``--seed``."""

from __future__ import annotations

import argparse
import math

from ..privacy import DEFAULT_SIZE_SHARE, ESTIMATE_SIZE, ZCDP, ApproxDP, PureDP

__all__ = ["positive", "fraction", "check_seed", "privacy", "size"]

def positive(flag: str, value: float) -> float:
    """A flag's value that must be a positive finite number."""
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{flag}: must be a positive finite number, got {value:g}")
    return value


def fraction(flag: str, value: float) -> float:
    """A flag's value that must lie strictly between 0 and 1."""
    if not 0 < value < 1:  # NaN fails too
        raise ValueError(f"{flag}: must lie strictly between 0 and 1, got {value:g}")
    return value


def check_seed(seed: int | None) -> None:
    """``--seed``: numpy takes only a non-negative integer."""
    if seed is not None and seed < 0:
        raise ValueError(f"--seed: expected a non-negative integer, got {seed}")


def privacy(args: argparse.Namespace, mechanism: str) -> ZCDP | ApproxDP | PureDP:
    if args.rho is not None:
        if args.epsilon is not None or args.delta is not None:
            raise ValueError("--rho: give either --rho or --epsilon/--delta, not both")
        if mechanism == "laplace":
            raise ValueError("--rho: the Laplace mechanism is pure epsilon-DP; give --epsilon alone (or use "
                             "--mechanism gaussian for zCDP)")
        return ZCDP(positive("--rho", args.rho))
    if args.epsilon is None:
        raise ValueError("--epsilon: required (or --rho for zCDP)")
    epsilon = positive("--epsilon", args.epsilon)
    if mechanism == "laplace":
        if args.delta is not None:
            raise ValueError("--delta: the Laplace mechanism is pure epsilon-DP; omit --delta")
        return PureDP(epsilon)
    if args.delta is None:
        if mechanism == "adaptive":
            raise ValueError("--delta: required with --epsilon (or use --rho)")
        raise ValueError("--delta: required for the Gaussian, projection and factorization mechanisms (or use --rho)")
    return ApproxDP(epsilon, fraction("--delta", args.delta))


def size(args: argparse.Namespace) -> int | str | None:
    """``--size``: a declared public size (an int) or ``estimate``; only under add/remove."""
    if args.size is None:
        if args.size_share is not None:
            raise ValueError("--size-share: applies only with --size estimate")
        if args.neighbouring == "add-remove":
            raise ValueError("--size: --neighbouring add-remove keeps the row count private; give --size N (a public "
                             "size, e.g. a published total: answers are counts / N) or --size estimate (a noisy count, "
                             f"spending --size-share, default {DEFAULT_SIZE_SHARE:g}, of the budget)")
        return None
    if args.neighbouring != "add-remove":
        raise ValueError("--size: applies only with --neighbouring add-remove (under replace-one n is public)")
    if args.size == ESTIMATE_SIZE:
        if args.size_share is not None:
            fraction("--size-share", args.size_share)
        return ESTIMATE_SIZE
    try:
        size = int(args.size)
    except ValueError:
        size = 0
    if size < 1:
        raise ValueError(f"--size: expected a positive integer or {ESTIMATE_SIZE!r}, got {args.size!r}")
    if args.size_share is not None:
        raise ValueError("--size-share: applies only with --size estimate, not to a declared size")
    return size

