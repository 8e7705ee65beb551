"""The bad files of the issue, one per class seen, each with the message
(file, table, key) it must now get; and the same files through the command
line: exit 2, one clean line, no traceback."""

from __future__ import annotations

import pytest

from legionrm.cli import main
from legionrm.errors import LegionError
from tests.unit.fuzz.loaders import LOADERS, write

POOL = '[capacity]\ncpu = 10\n[[pool]]\npath = "/a"\n[pool.cpu]\nreservation = 1\nlimit = 5\n'
GANG = POOL + '[[gang]]\nid = "g"\npool = "/a"\ntasks = [{cpu = %s}]\n'
PLACE = '[[node]]\nname = "n"\n[node.resources]\nncpus = 4\n[[job]]\nid = "j"\nselect = "%s"\n'
REQ = '[identity]\nuser = "u"\n[[object]]\nclass_name = "C"\n%s\n'
SIM = '[[machine]]\nname = "m"\nmemory_gb = 8\n%s\n'

CASES = [
    # (command, file text, what the message must say)
    ("simulate", "x = " + "[" * 1000 + "]" * 1000 + "\n", "nested deeper than 32 levels"),
    ("cluster", "x = " + "{a=" * 200 + "1" + "}" * 200 + "\n", "nested deeper than 32 levels"),
    ("pools", "x = " + "9" * 5000 + "\n", "not valid TOML: a value TOML cannot hold"),
    ("pools", GANG % "-inf", "gang[0].tasks[0].cpu: must be a finite number, not -inf"),
    ("pools", GANG % "-1000000", "gang[0].tasks[0].cpu: must be at least 0"),
    ("pools", GANG % "nan", "gang[0].tasks[0].cpu: must be a finite number"),
    ("pools", GANG % "true", "gang[0].tasks[0].cpu: must be float"),
    ("pools", POOL + "[pool.memory]\nlimit = inf\n", "pool[0].memory.limit: must be a finite number"),
    ("pools", POOL + '[[gang]]\nid = "g"\npool = "/a"\ntasks = [' + "{}, " * 10_001 + "]\n", "more than 10000 tasks"),
    ("cluster", '[[vault]]\nname = "v"\nserves = ["arm*", 1]\n', "vault[0].serves: must be a list of strings"),
    ("cluster", '[[class]]\nname = "C"\nhost_list = [1979-05-27]\n', "class[0].host_list: must be a list of strings"),
    ("cluster", '[[host]]\nname = "h"\npolicy = "NoSuchPolicy"\n', "host[0].policy: module 'legionrm.hostobj.policies' has no 'NoSuchPolicy'"),
    ("cluster", '[[host]]\nname = "h"\npolicy = "no_such_module:P"\n', "host[0].policy: cannot import module 'no_such_module'"),
    ("cluster", '[[host]]\nname = "h"\npolicy = "LoadCeiling"\npolicy_args = {nope = 1}\n', "host[0].policy_args"),
    ("cluster", '[[vault]]\nname = "v"\npolicy = "os:path"\n', "vault[0].policy"),
    ("cluster", '[[class]]\nname = "C"\npolicy = "AllowUsers"\n', "class[0].policy: 'AllowUsers' is not an import path"),
    ("cluster", '[[class]]\nname = "C"\nimplementation = "not a path"\n', "class[0].implementation: must be 'module:Class'"),
    ("cluster", '[[host]]\nname = "h"\ncount = 9223372036854775807\n', "host[0].count: must be at most 100000"),
    ("cluster", '[[host]]\nname = "h"\ncount = 60000\n[[vault]]\nname = "v"\ncount = 60000\n', "more than 100000 hosts and vaults"),
    ("cluster", '[[host]]\nname = "h"\n[host.attributes]\ncpus = nan\n', "host[0].attributes.cpus: must be a finite number"),
    ("cluster", '[[host]]\nname = "h"\n[host.attributes]\ngpus = 1.5\n', "host[0].attributes.gpus: capacity must be a whole number"),
    ("cluster", '[[host]]\nname = "h"\n[host.attributes]\nmemory_gb = true\n', "host[0].attributes.memory_gb: capacity"),
    ("cluster", '[collection]\nstale_after = true\n', "collection.stale_after: must be int"),
    ("cluster", '[collection]\nheartbeat_interval_s = inf\n', "collection.heartbeat_interval_s: must be a finite number"),
    ("cluster", '[fairshare.rm]\nquantum_gb = 1e-300\n', "fairshare.rm.quantum_gb: must be >= 0.000976562"),
    ("place", "[scheduler]\nresources = \"-5\"\n" + PLACE % "1:ncpus=1", "scheduler.resources: '-5' is not a resource name"),
    ("place", '[scheduler]\nnode_sort_key = "ncpus SIDEWAYS"\n' + PLACE % "1:ncpus=1", "scheduler.node_sort_key"),
    ("place", PLACE.replace("ncpus = 4", "ncpus = true") % "1:ncpus=1", "node[0].resources.ncpus: must be a whole number"),
    ("place", PLACE.replace("ncpus = 4", "mem = -5") % "1:ncpus=1", "node[0].resources.mem: must be a size"),
    ("place", PLACE % "99999999999999999999:ncpus=1", "more than 100000 chunks"),
    ("place", PLACE % ("1:ncpus=" + "9" * 5000), "number too large"),
    ("place", PLACE % "1:mem=1.0e999", "number too large"),
    ("place", PLACE % ("1:mem=" + "9" * 400 + "pb"), "number too large"),
    ("place", PLACE.replace('name = "n"', 'name = "n"\ncount = 100001') % "1:ncpus=1", "node[0].count: must be at most 100000"),
    ("request", REQ % "memory_gb = true", "object[0].memory_gb: must be float, not bool"),
    ("request", REQ % "count = true", "object[0].count: must be int, not bool"),
    ("request", REQ % "count = 1000000000", "object[0].count: Input should be less than or equal to 10000"),
    ("request", REQ % "cpus = inf", "object[0].cpus: must be a finite number"),
    ("request", REQ % "args = {x = nan}", "object[0].args.x"),
    ("request", REQ % "count = 6000" + REQ.split("\n", 2)[2] % "count = 6000", "more than 10000 instances in all"),
    ("simulate", SIM % "[[event]]\ncycle = 1000000000\nkind = \"vary_off\"\nmachine = \"m\"", "event[0].cycle: must be at most 10000"),
    ("simulate", SIM % "count = 10001", "machine[0].count: must be at most 10000"),
    ("simulate", '[rm]\nquantum_gb = 1\n[[machine]]\nname = "m"\nmemory_gb = 1e15\n', "machine[0].memory_gb: more than 1024 quanta"),
    ("simulate", SIM % '[[class]]\nname = "c"\npolicy = "FAIR_SHARE"\ndefault = true\n[[job]]\nid = "j"\nuser = "u"\nmemory_gb = 1\nthreads = -inf', "job[0].threads"),
]


@pytest.mark.parametrize("kind, text, fragment", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_a_bad_file_gets_a_clean_error_naming_the_place(kind: str, text: str, fragment: str) -> None:
    path = write(text, f"{kind}.toml")
    with pytest.raises(LegionError) as err:
        LOADERS[kind](path)
    assert fragment in str(err.value)
    assert str(err.value).startswith(path) or kind == "place"  # place's select errors start with the file too


COMMANDS = {"cluster": ["pools"], "simulate": ["simulate"], "place": ["place"], "pools": ["pools"],
            "request": ["explain"]}


@pytest.mark.parametrize("kind, text, fragment", [c for c in CASES if c[0] != "request"],
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES) if c[0] != "request"])
def test_the_command_exits_2_with_one_line_and_no_traceback(kind: str, text: str, fragment: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = write(text, f"cli-{kind}.toml")
    assert main([*COMMANDS[kind], path]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith(f"legionrm {COMMANDS[kind][0]}: ")
    assert fragment.splitlines()[0] in err


def test_simulate_refuses_a_billion_cycles_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    path = write('[[machine]]\nname = "m"\nmemory_gb = 8\n', "cycles.toml")
    assert main(["simulate", path, "--cycles", "1000000000"]) == 2
    assert "must be from 1 to 10000" in capsys.readouterr().err
    path = write("# run with --cycles " + "9" * 5000 + '\n[[machine]]\nname = "m"\nmemory_gb = 8\n', "cycles2.toml")
    assert main(["simulate", path]) == 2
    assert "must be from 1 to 10000" in capsys.readouterr().err
