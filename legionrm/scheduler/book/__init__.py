"""The request book's parts (the book itself is :mod:`legionrm.scheduler.requests`).

* :mod:`legionrm.scheduler.book.instances`: the instances a request owns, as
  the book records them (started, rewritten, ended; the book's base class).
"""
