"""Auditing: statistical lower bounds on a mechanism's epsilon and delta from samples, and the
audits of projmech's own mechanisms.

Its modules, the public ones first (their ``__all__`` is exported here):

- ``auditor``: Statistical privacy auditing: lower bounds on the epsilon and delta of any mechanism
  from samples.
- ``self_audit``: Audits of projmech's own mechanisms: worst-case neighbouring pairs,
  likelihood-ratio statistics and planted bugs, run through the generic auditor
  :mod:`projmech.audit.auditor`.
"""

from __future__ import annotations

from .auditor import (
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
