"""Whether the rows asked for fit in memory, checked before any budget is spent or row drawn."""

from __future__ import annotations

from ..bodies import memory_limit, memory_shortfall
from ..data import Domain
from ..errors import ArgumentValueError
from ..validation import format_count

__all__ = ["check_rows_fit", "ROW_BYTES_PER_VALUE"]

#: Bytes per value of :func:`synthetic_data`'s rows (``n`` times the attributes): the int64
#: rows and two working copies of them (the unravelled columns and their stacking, or the
#: search's candidate rows).
ROW_BYTES_PER_VALUE = 3 * 8


def check_rows_fit(n: int, domain: Domain, name: str = "n") -> None:
    """Refuse ``n`` rows over ``domain`` where they would not fit in memory.

    Parameters
    ----------
    n : int
        The rows to draw, :data:`ROW_BYTES_PER_VALUE` bytes per value.
    domain : Domain
        Their domain.
    name : str, default "n"
        The caller's argument for the row count, named in the error.

    Raises
    ------
    ArgumentValueError
        Naming ``name``, with the most rows that fit, where the rows do not.

    Examples
    --------
    >>> from projmech.synthetic import check_rows_fit
    >>> check_rows_fit(1000, pm.Domain(["a", "b"], [2, 3]))  # fits: returns None
    """
    per_row = ROW_BYTES_PER_VALUE * len(domain)
    too_large = memory_shortfall(per_row * float(n))
    if too_large is not None:
        limit = memory_limit()
        assert limit is not None  # a shortfall needs a known limit
        valid = f"between 1 and {format_count(max(1, int(limit // per_row)))}"
        raise ArgumentValueError(name, f"{format_count(n)} rows of {len(domain)} attributes hold {too_large}; "
                                 f"draw fewer rows, {valid} here (several calls draw more, each from the same "
                                 "projection)", valid=valid)
