"""legionrm.hostobj.classes: the class object on Ray (its actor shell) and the
remote ports a class object, or the Scheduler, reaches host and vault actors through."""
