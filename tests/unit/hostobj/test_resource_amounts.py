"""``Resources.amounts`` (what a host books at each grant) is ``amount`` of each kind, whatever the kinds."""

from hypothesis import given, strategies as st

from legionrm.models import Resources
from legionrm.models.reservations import custom_kinds

KINDS = ("cpus", "memory_gb", "gpus", "storage_gb", "fpga", "licence", "exclusive", "custom")
num = st.floats(min_value=0, max_value=1e6, allow_nan=False)


@given(cpus=num, mem=num, gpus=st.integers(0, 64), storage=num,
       custom=st.dictionaries(st.sampled_from(["fpga", "licence"]), st.floats(min_value=0.5, max_value=64)),
       kinds=st.lists(st.sampled_from(KINDS), max_size=6).map(tuple))
def test_amounts_is_amount_of_each_kind(cpus, mem, gpus, storage, custom, kinds):
    r = Resources(cpus=cpus, memory_gb=mem, gpus=gpus, storage_gb=storage, custom=custom_kinds(custom))
    assert r.amounts(kinds) == tuple(r.amount(k) for k in kinds)
