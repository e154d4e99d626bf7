"""Drawing an audit's releases: one child generator per release (or per batch), each output
mapped to a statistic or kept as a vector."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["AuditError"]

# Non-vectorized mechanisms: child generators are spawned this many at a time.
_SPAWN_CHUNK = 1024


class AuditError(RuntimeError):
    """The audited mechanism or statistic raised (chained as ``__cause__``); the message names the release.

    Examples
    --------
    >>> def broken(data, rng):
    ...     raise ZeroDivisionError("oops")
    >>> try:
    ...     pm.audit.audit(broken, (0, 1), releases=10, rng=0)
    ... except pm.audit.AuditError as error:
    ...     print(error)
    mechanism: raised ZeroDivisionError: oops (pair 0, data, release 0)
    """


def _children(rng: np.random.Generator, count: int) -> list[np.random.Generator]:
    """``count`` fresh independent child generators of ``rng``."""
    try:
        return rng.spawn(count)
    except (TypeError, AttributeError, ValueError):  # a bit generator without a seed sequence
        seeds = rng.integers(0, 2**63, size=count)
        return [np.random.default_rng(int(seed)) for seed in seeds]


def _is_real_scalar(value: Any) -> bool:
    """Whether ``value`` is a real number (a 0-d numeric array included)."""
    if isinstance(value, (numbers.Real, np.bool_)):
        return True
    return isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biuf"


def _where(pair: int, which: int) -> str:
    """The pair and data set named in messages."""
    return f"pair {pair}, {'data' if which == 0 else 'neighbour'}"


def _sample(mechanism: Callable[..., Any], data: Any, count: int, rng: np.random.Generator,
            statistic: Callable[[Any], Any] | None, batch: int | None, pair: int, which: int) -> np.ndarray:
    """``count`` releases of ``mechanism(data)`` as statistics (1-d) or, without a statistic, vectors (2-d)."""
    where = _where(pair, which)
    if batch is not None:
        return _sample_batched(mechanism, data, count, rng, statistic, batch, where)

    values: np.ndarray | None = None
    done = 0
    while done < count:
        for child in _children(rng, min(_SPAWN_CHUNK, count - done)):
            try:
                output = mechanism(data, child)
            except Exception as error:
                raise AuditError(f"mechanism: raised {type(error).__name__}: {error} "
                                 f"({where}, release {done})") from error
            if statistic is not None:
                try:
                    value = statistic(output)
                except Exception as error:
                    raise AuditError(f"statistic: raised {type(error).__name__}: {error} "
                                     f"({where}, release {done})") from error
                if not _is_real_scalar(value):
                    raise TypeError(f"statistic: must return a real number, got {type(value).__name__} "
                                    f"({where}, release {done})")
                row = np.asarray(float(value))
            else:
                row = np.asarray(output)
                if row.dtype.kind not in "biuf" or row.ndim > 1:
                    raise TypeError(
                        f"mechanism: output {type(output).__name__} is not a number or a 1-d vector of numbers; "
                        f"pass statistic= to map it to a number ({where}, release {done})")
            if values is None:
                values = np.empty((count, *row.shape), dtype=float)
            elif row.shape != values.shape[1:]:
                raise ValueError(f"mechanism: output of shape {row.shape} differs from the first one's "
                                 f"{values.shape[1:]} ({where}, release {done})")
            values[done] = row
            done += 1
    assert values is not None
    return values


def _sample_batched(mechanism: Callable[..., Any], data: Any, count: int, rng: np.random.Generator,
                    statistic: Callable[[Any], Any] | None, batch: int, where: str) -> np.ndarray:
    """:func:`_sample` for a vectorized mechanism, ``batch`` releases a call."""
    pieces: list[np.ndarray] = []
    done = 0
    while done < count:
        size = min(batch, count - done)
        child = _children(rng, 1)[0]
        releases = f"releases {done} to {done + size - 1}"
        try:
            output = mechanism(data, child, size)
        except Exception as error:
            raise AuditError(f"mechanism: raised {type(error).__name__}: {error} ({where}, {releases})") from error
        if statistic is not None:
            try:
                output = statistic(output)
            except Exception as error:
                raise AuditError(f"statistic: raised {type(error).__name__}: {error} ({where}, {releases})") from error
            allowed: tuple[int, ...]
            name, allowed = "statistic", (1,)
        else:
            name, allowed = "mechanism", (1, 2)
        array = np.asarray(output)
        if array.dtype.kind not in "biuf" or array.ndim not in allowed or array.shape[0] != size:
            shape = "(size,)" if allowed == (1,) else "(size,) or (size, d)"
            raise ValueError(f"{name}: with batch, must return an array of numbers of shape {shape} with size={size}, "
                             f"got {type(output).__name__} of shape {np.shape(output)} ({where}, {releases})")
        if pieces and array.shape[1:] != pieces[0].shape[1:]:
            raise ValueError(f"{name}: output of shape {array.shape} differs from the first one's "
                             f"{pieces[0].shape} ({where}, {releases})")
        pieces.append(array.astype(float, copy=False))
        done += size
    return np.concatenate(pieces)


def _check_values(values: np.ndarray, where: str, statistic_given: bool) -> None:
    """Refuse a nan statistic, or a vector output with a nan or infinite entry."""
    if values.ndim == 1:
        if np.isnan(values).any():
            name = "statistic" if statistic_given else "mechanism"
            raise ValueError(f"{name}: a release's statistic is nan ({where})")
    elif not np.isfinite(values).all():
        raise ValueError(f"mechanism: a vector output has a nan or infinite entry ({where}); "
                         "pass statistic= to map outputs to numbers")
