"""legionrm.enactor."""
