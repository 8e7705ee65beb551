"""The Legion planner's parts (:mod:`legionrm.scheduler.planner` runs them),
each in its own module: ``pipeline`` (the host table and the named filters and
rankers), ``snaptables`` (the host and vault columns read from one Collection
snapshot), ``window`` (the host table over a future window, for a request
that starts later), ``whatof`` (instances onto ranked hosts; the columns a
schedule being built reads and writes), ``engine_feed`` (the placement
engine fed a snapshot) and ``enginepick`` (the hosts the placement engine
chooses, for the requests its bucket path takes).  Of the rest of the
scheduler they import only the placement engine's package, never the planner.
"""
