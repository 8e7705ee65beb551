"""The Legion scheduler and the engines it plans with.

The Legion scheduler itself (this package's modules):

* ``scheduler``: :class:`Scheduler`, Legion's ``scheduleObjects`` (how much,
  admission, planning, enactment, the response) and its companions, composing
  its parts: ``requests`` (the book), ``queue`` (the pending requests' order
  and the one attempt each may have under way), ``accounts`` (pools,
  allotments, the one place a request gives back) and ``enactment`` (the
  Enactor's side of Legion's steps 4 to 6, and stops);
* ``planner``: one request -> ranked master schedules with deltas, over one
  Collection snapshot; ``planning``: its parts (the named filters and
  rankers, the snapshot's host and vault columns, a future window's table,
  the placement engine's feed);
* ``replan``: a new schedule when every master fails;
* ``ahead``: requests reserved ahead of time, started by the clock;
* ``mobility``: objects deactivated, activated and migrated;
* ``sharegate``: the fair-share core's class rules applied to one request;
* ``priority``: who goes next, as the site sets it: QoS tables and limits,
  fair-share usage decayed with a half-life, the multifactor formula, holds
  (it reads the book's entries; the queue and the door use it);
* ``ports``: the Protocols of its collaborators; ``wiring``: the one place
  a Scheduler and its collaborators are built, from the cluster's settings;
  ``actor``: the Ray shell.

The engines (sub-packages; each names what it may import):

* ``fairshare``: the DUCC-style fair-share and nodepool core;
* ``placement``: the PBS-style node-bucket and per-node placement engine;
* ``pools``: Peloton-style resource pools (admission ahead of scheduling);
* ``elastic``: the continuous cycle over elastic jobs (uses ``fairshare``).

Imports run downwards only: the Legion scheduler may import the engines'
packages (never their modules), an engine never imports the Legion
scheduler (but its ``ports``) or another engine's modules.  This file
imports nothing, so importing an engine never loads the scheduler.
"""
