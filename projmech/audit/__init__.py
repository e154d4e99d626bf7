"""Auditing: statistical lower bounds on a mechanism's epsilon and delta (:func:`audit`,
:func:`audit_delta`), and audits of projmech's own mechanisms (:mod:`projmech.audit.self_audit`).
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
