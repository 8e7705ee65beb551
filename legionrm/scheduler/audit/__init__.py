"""The auditor: do the accounts agree with what runs, and do the books agree with each other?

:func:`audit` (:mod:`~legionrm.scheduler.audit.resources`, with the book's
own checks from :mod:`~legionrm.scheduler.audit.books`) finds every
disagreement, by code; :func:`repair` (:mod:`~legionrm.scheduler.audit.repair`)
fixes what it can and says what it did.  Pure: the Ray shell gathers the
resources' views and calls these.
"""

from legionrm.scheduler.audit.books import book_findings
from legionrm.scheduler.audit.repair import repair
from legionrm.scheduler.audit.resources import EPS, Finding, audit, views_of

__all__ = ["EPS", "Finding", "audit", "book_findings", "repair", "views_of"]
