"""legionrm.collection."""
