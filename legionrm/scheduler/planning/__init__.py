"""Parts of the Legion planner (:mod:`legionrm.scheduler.planner`) kept in
their own modules: ``whatof`` (instances onto ranked hosts; the columns a
schedule being built reads and writes) and ``enginepick`` (the hosts the
placement engine chooses, for the requests its bucket path takes).
"""
