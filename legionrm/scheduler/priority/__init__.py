"""The site sets priority: QoS, fair share that remembers, one multifactor order, holds.

::

    cluster file ([[qos]], [[class]] qos, [fairshare] half_life_s / max_age_s / weights / group)
        -> settings.site_settings -> SiteSettings
    accounting records (finished work) + what runs now
        -> usage.UsageLedger (cpu-seconds, decayed with the half-life)
        -> sharetree.ShareTree (normalized shares, factor 2^(-U/S))
    pending requests
        -> multifactor.rank (QoS, fair share, age, size; higher first; total order)
        -> limits.QosLimits (over a limit: stays pending, the limit its reason)
    site.SitePolicy joins them over a request book; control.QueueControl holds,
    releases, updates and tops.

``multifactor`` is pure over plain values, for any caller that orders jobs
(the Scheduler's queue, ``legionrm simulate --swf``).  The formula is written
out in docs/priority.md.  No Ray anywhere here.
"""

from legionrm.scheduler.priority.control import QueueControl, QueueError
from legionrm.scheduler.priority.limits import Ask, QosLimits
from legionrm.scheduler.priority.multifactor import Factors, Formula, PendingJob, Weights, factors, order, rank
from legionrm.scheduler.priority.settings import Group, Qos, SiteSettings, settings_of, site_settings, site_spec
from legionrm.scheduler.priority.sharetree import ShareTree
from legionrm.scheduler.priority.site import SitePolicy
from legionrm.scheduler.priority.usage import Usage, UsageLedger, Use, decayed_cpu_seconds

__all__ = ["Ask", "Factors", "Formula", "Group", "PendingJob", "Qos", "QosLimits", "QueueControl", "QueueError",
           "ShareTree", "SitePolicy", "SiteSettings", "Usage", "UsageLedger", "Use", "Weights", "decayed_cpu_seconds",
           "factors", "order", "rank", "settings_of", "site_settings", "site_spec"]
