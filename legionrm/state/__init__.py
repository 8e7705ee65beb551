"""The embedded SQLite store for what must survive a restart.

:class:`~legionrm.state.requests.RequestStore` keeps the Scheduler's requests
(each with its history and instances), written at every transition before
the Scheduler acts on it; :class:`~legionrm.state.hosts.HostStore` keeps
what host objects and vaults granted (secrets, token serials, open
reservations, instances, vault uses);
:class:`~legionrm.state.accounting.AccountingStore` one record per finished instance;
:class:`~legionrm.state.elastic.ElasticStore` the elastic cycle's jobs,
their running processes, pool charges and the stops owed;
:class:`~legionrm.state.reloaded.ReloadedStore` the site policy and nodepools a
reload gave a Scheduler (for the actor Ray restarts).  SQLite in WAL
mode: a crash leaves every committed transition, and a reader never blocks
the writer.  A write that fails raises :class:`StoreFault` (``state.disk_full``
or ``state.io_error``, with the path) with nothing written; a durable write
syncs its log outside the store's lock, one sync for many commits, and a
failed sync stops the store (:mod:`legionrm.state.groupsync`); the fault seam
:mod:`legionrm.faults` is where tests make writes fail.

May import: :mod:`legionrm.models`, :mod:`legionrm.errors`, the standard
library.  Never Ray, an engine or the command line.
"""

from legionrm.state.accounting import AccountingStore
from legionrm.state.elastic import ElasticStore, StoredElasticJob, StoredShare, StoredStop
from legionrm.state.hosts import HostStore
from legionrm.state.requests import RequestStore, StoredRequest
from legionrm.state.sqlite import SqliteFile, StateError, StoreFault

__all__ = ["AccountingStore", "ElasticStore", "HostStore", "RequestStore", "StoredElasticJob", "SqliteFile", "StateError",
           "StoreFault", "StoredRequest", "StoredShare", "StoredStop"]
