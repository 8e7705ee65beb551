"""legionrm.hostobj."""
