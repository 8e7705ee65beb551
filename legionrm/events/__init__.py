"""Triggers on object status (Legion's monitoring stage, issue 18).

:mod:`legionrm.events.triggers` holds the registry: register a subscriber
for some statuses of a request or an object, remove it, fire an event to
every matching live subscriber, and read a request's events as a pollable
stream (what ``legionrm show ID --follow`` prints).  Pure; no Ray.
"""
