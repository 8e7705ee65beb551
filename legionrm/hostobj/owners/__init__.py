"""What an owner's code plugs into on a host or vault.

* ``policy``: the :class:`~legionrm.hostobj.owners.policy.Policy` interface
  (its verdicts, composition with ``&`` and ``|``, loading from
  configuration, and the mark of what may refuse for good);
* ``hooks``: an owner's hooks run so that a mistake refuses and never breaks
  the resource.

The ready-made policies, and the import path owners write against, are
:mod:`legionrm.hostobj.policies`.
"""
