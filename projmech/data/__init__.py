"""Data: the domain (what each attribute can hold), the encodings of raw values, the private
data set and its counts, read through every supported engine."""

from __future__ import annotations

from ._dataset import (
    DEFAULT_MAX_UNIVERSE,
    MW_MAX_UNIVERSE,
    Dataset,
    check_normalized_histogram,
    histogram,
    histogram_counts,
    resolve_rows,
)
from ._domain import Domain, DomainInferenceWarning, UnknownAttributeError
from ._encodings import Bins, Categories, Codes, Encoding, NotANumberError, encoding_from_spec

__all__ = ["Dataset", "histogram", "check_normalized_histogram", "histogram_counts", "resolve_rows",
           "DEFAULT_MAX_UNIVERSE", "MW_MAX_UNIVERSE", "Domain", "UnknownAttributeError", "DomainInferenceWarning",
           "Encoding", "Codes", "Categories", "Bins", "NotANumberError", "encoding_from_spec"]

# What other folders use beyond the public API above (not part of it).
from ._frames import ENGINES, is_parquet, read_frame
from ._tables import Unchecked
