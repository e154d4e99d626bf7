"""Per-query confidence intervals for released answers (defined beside the release, in :mod:`.release`)."""

from __future__ import annotations

from ._release import ConfidenceIntervals, confidence_intervals

__all__ = ["ConfidenceIntervals", "confidence_intervals"]
