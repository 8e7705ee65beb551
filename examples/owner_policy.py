"""An owner who admits only their group, during working hours, under a load cap."""

import calendar

from legionrm.hostobj import AllOf, AllowGroups, HostObject, HoursOfWeek, LoadCeiling
from legionrm.models import Holder, ReservationRequest, Resources

MONDAY_10H = calendar.timegm((2024, 1, 1, 10, 0, 0))  # a Monday, 10:00 (UTC)
clock = [float(MONDAY_10H)]

owner_policy = AllOf(
    AllowGroups(["genomics"]),
    HoursOfWeek("mon-fri 09:00-18:00", utc_offset_h=0),  # the owner's working hours
    LoadCeiling(0.75),  # keep a quarter of the machine for the owner
)
host = HostObject("bigmem1", Resources(cpus=32, memory_gb=512), policy=owner_policy, clock=lambda: clock[0])

ann = Holder(user="ann", groups=("genomics",))
eve = Holder(user="eve", groups=("physics",))


def ask(who: Holder, cpus: float, rid: str) -> None:
    req = ReservationRequest(request_id=rid, resource=host.name, holder=who, resources=Resources(cpus=cpus))
    answer = host.make_reservation(req)
    verdict = f"token {answer.token_id}" if answer else f"refused [{answer.code}] by {answer.by}: {answer.reason}"
    print(f"{who.user:>4} asks {cpus:>4g} cpus at {clock[0] - MONDAY_10H:>6.0f}s: {verdict}")


ask(eve, 4, "1")  # not in the group
ask(ann, 16, "2")  # fine: load 0.5
ask(ann, 12, "3")  # load would be 0.875
ask(ann, 8, "4")  # exactly the ceiling
clock[0] += 9 * 3600  # 19:00: after hours
ask(ann, 1, "5")
print("advertised access:", host.record().access.allow_groups, "| load after the unused tokens expired:", host.load())
