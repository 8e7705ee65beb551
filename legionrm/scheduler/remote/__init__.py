"""legionrm.scheduler.remote: the Scheduler's ports over Ray (its ``actor``
module), how the Scheduler's Ray shell reaches the Enactor, class actors and
the actors carrying hosts and vaults."""
