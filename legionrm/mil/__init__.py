"""legionrm.mil."""
