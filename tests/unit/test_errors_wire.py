"""An error the control plane raises crosses Ray pickled: it must come back
as itself, its message and its ``code`` (what the gateway and the CLI print)
kept.  A code lost on the way is the class's name on a user's screen."""

from __future__ import annotations

import pickle

import pytest

from legionrm import codes
from legionrm.errors import SchedulingError
from legionrm.scheduler.priority.control import QueueError


@pytest.mark.parametrize("exc", [
    SchedulingError("no request 'x' is known", code=codes.REQUEST_UNKNOWN),
    SchedulingError("request 'x' has 1 instance(s): give --instance 0 to 0", code=codes.REQUEST_NO_INSTANCE),
    SchedulingError("a request that asks for nothing"),
    QueueError(codes.QUEUE_NOT_PENDING, "x is completed: only a pending request can be held"),
], ids=["unknown", "no-instance", "no-code", "queue-error"])
def test_an_error_comes_back_from_a_pickle_as_itself(exc: SchedulingError) -> None:
    back = pickle.loads(pickle.dumps(exc))
    assert (type(back), str(back), back.code) == (type(exc), str(exc), exc.code)
