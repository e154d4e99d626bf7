"""Auditing: statistical lower bounds on a mechanism's epsilon and delta, and audits of projmech's own.

Modules: ``auditor`` (:func:`~projmech.audit.audit` and its event selection), ``sampling``
(drawing releases), ``results`` (Clopper–Pearson bounds, events, results), ``self_audit`` (the
library's own mechanisms).
"""

from __future__ import annotations

from ._auditor import (
                      DISCRETE_VALUES,
                      AuditError,
                      AuditResult,
                      Counts,
                      Event,
                      EventEstimate,
                      audit,
                      audit_delta,
                      clopper_pearson,
                      format_audit_table,
)
from .self_audit import MECHANISMS, AuditCase, audit_cases, bug_factor, run_audits

__all__ = ["DISCRETE_VALUES", "AuditError", "AuditResult", "Counts", "Event", "EventEstimate", "audit", "audit_delta",
           "clopper_pearson", "format_audit_table", "MECHANISMS", "AuditCase", "audit_cases", "bug_factor",
           "run_audits"]
