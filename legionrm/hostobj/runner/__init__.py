"""The work runner: each ``Command`` instance as a child process of its owner's OS account.

User work never runs inside a control-plane process or a Ray worker
(DESIGN.md, "Three zones, one door").  The node's host object starts each
instance through a :class:`Runner`, which starts one child process per
instance with :class:`subprocess.Popen`:

- as the instance's OS :class:`Account` (``user=``, ``group=``,
  ``extra_groups=`` from its passwd and group entries), in a session and
  process group of its own (``start_new_session=True``);
- with a scrubbed environment: ``PATH``, ``HOME``, ``USER``,
  ``LEGIONRM_REQUEST_ID``, ``LEGIONRM_INSTANCE_ID``, ``LEGIONRM_CPUS`` and the
  request's own ``env`` table; nothing of the service's (no ``RAY_*``, no
  token, no ``LEGIONRM_HOME``);
- in a work directory of its own (``<work_root>/<instance>``, owned by the
  account, 0700) as its cwd, with umask 077;
- in a cgroup (v2) of its own where the node allows it
  (:mod:`~legionrm.hostobj.runner.cgroup`), so a process that left the run's
  session is still ended with it;
- with the grant's limits: ``RLIMIT_AS`` from ``memory_gb``, ``RLIMIT_CPU``
  from ``walltime_s`` (times the cores granted), and its cpu affinity set to
  as many cores as were granted (when the node has more).  These are set in a
  ``preexec_fn``, which runs in the child after the switch of account and
  before the exec.  CPython warns that a ``preexec_fn`` may deadlock in a
  threaded parent (the child inherits locks other threads held); this one
  makes plain system calls only (``setrlimit``, ``sched_setaffinity``,
  ``prctl``) with values computed beforehand, and takes no lock and imports
  nothing.  It also asks for SIGKILL when the host's process dies
  (``PR_SET_PDEATHSIG``), so a killed host actor takes its runs' leaders
  with it (what a leader started itself may stay: the host's next process
  kills what is left of each run's session, :meth:`WorkInstances.orphan`);
  every run is forked by one long-lived thread, since that signal follows
  the forking thread.

The function form (``function = "module:name"``) runs in a fresh interpreter
(:attr:`RunnerSettings.python`), which must be one the account can run: a
venv made from the system's ``python3`` in a directory every account can
read.  When it is not, the start fails with one line saying so.  The
function's return value comes back as JSON over a pipe.

stdout and stderr go to ``<log_dir>/<instance>/stdout`` / ``stderr`` (opened
by the service, 0600; the user reads them through the service), each capped
at :attr:`RunnerSettings.output_cap` bytes with its tail kept.

Ends: a stop (cancel, preemption, walltime, the node going away) sends
SIGTERM to the whole process group, then SIGKILL after ``kill_grace_s``; when
the leader has ended, whatever is left in its session or its cgroup is ended the same way,
so no process of the run is left behind.  The exit status and rusage come
from :func:`os.wait4`.

Pure: no Ray.  Thread-safe.

Modules: :mod:`~legionrm.hostobj.runner.process` (the runner),
:mod:`~legionrm.hostobj.runner.accounts` (OS accounts),
:mod:`~legionrm.hostobj.runner.files` (outputs, results, sessions),
:mod:`~legionrm.hostobj.runner.cgroup` (a run's cgroup),
:mod:`~legionrm.hostobj.runner.owner` (whose account, and when none),
:mod:`~legionrm.hostobj.runner.instances` (a host object's runs).
"""

from legionrm.hostobj.runner.accounts import Account, RunError
from legionrm.hostobj.runner.files import OUTPUT_CAP, STREAMS, kept_result, read_output, session_members, trim
from legionrm.hostobj.runner.instances import WorkInstances, is_work, names_work, request_of, work_for
from legionrm.hostobj.runner.owner import NoOsUser, account_for, build_work, owner_gate, owner_refusal
from legionrm.hostobj.runner.process import Run, Runner, RunnerSettings, Work, default_work_root, stop_state

__all__ = [
    "OUTPUT_CAP", "STREAMS", "Account", "NoOsUser", "Run", "RunError", "Runner", "RunnerSettings", "Work",
    "WorkInstances", "account_for", "build_work", "default_work_root", "is_work", "kept_result", "names_work",
    "owner_gate", "owner_refusal", "read_output", "request_of", "session_members", "stop_state", "trim", "work_for",
]
