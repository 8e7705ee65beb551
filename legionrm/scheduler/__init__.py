"""legionrm.scheduler."""
