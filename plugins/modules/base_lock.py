#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: base_lock
short_description: One run at a time per PRIMUS_BASE - take, take over or release the base's lock
version_added: 0.1.0
description:
  - The lock is the file C(<path>/.primus.lock), created the NFS-safe way (a uniquely named file hard-linked to the
    lock's name; the link count decides), with no reliance on C(flock). It holds JSON - the run id, the controller
    (host, machine and boot id, the C(ansible-playbook) pid and its start time, its user), the inventory host, the
    node's host name and user, and since when (UTC).
  - O(state=acquired) creates O(path) (and missing parents, mode 0755) and takes the lock. When another run holds it,
    the task fails with who holds it (user, node, controller, pid, since when) and how to clear it. A lock left by a
    run whose C(ansible-playbook) process is gone - on this same controller host, or from before the controller
    rebooted - is taken over, with a warning that names it; the processes that dead run left running on the node
    (an async build goes on after its controller is gone) are stopped first and named in the warning. A lock
    held from another controller host is never taken over (its process cannot be checked from here); the
    message says how to remove it.
  - O(state=released) removes the lock only when it is this run's own.
  - O(state=checked) changes nothing - it fails as O(state=acquired) would when another run holds the lock, and
    passes when the base is free or its lock is stale (taking it over is left to O(state=acquired)). With O(holder)
    (the lock record M(primus.trainenv.node_info) already read) it needs no round trip to the node, so a second run
    on a locked base is refused within seconds of its start.
  - Taking and releasing the lock are not reported as changes (a run leaves no lock behind, so a converged run stays
    at C(changed=0)), and neither is creating the base directory for the lock - its directories are returned as
    RV(created), and the playbook removes them again when the run leaves them empty (a run that preflight stops
    after the lock); what a stage then writes into the base is that stage's change.
  - The task runs through the action plugin of the same name, which fills in O(owner) on the controller and decides
    whether a lock is stale (only the controller can check its own processes); the module does the file work on
    the node.
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  check_mode:
    description: Reports whether the lock could be taken; creates and removes nothing.
    support: full
  diff_mode:
    description: Nothing to show.
    support: none
  action:
    description: Runs through the action plugin of the same name.
    support: full
options:
  path:
    description: The base directory (C(primus_base)); the lock is C(<path>/.primus.lock).
    type: str
    required: true
  state:
    description: Take (V(acquired)), give back (V(released)) or only check (V(checked)) the lock.
    type: str
    choices: [acquired, released, checked]
    default: acquired
  holder:
    description:
      - With O(state=checked), the lock record as already read from the node (C(primus_node.lock) of
        M(primus.trainenv.node_info)); empty means no lock. Without it the module reads the lock.
    type: dict
  owner:
    description:
      - Who this run is - C(run_id), C(inventory_host) and the C(controller_*) fields. Set by the action plugin.
    type: dict
    required: true
  takeover:
    description: The run id of a stale lock to replace with this run's (set by the action plugin).
    type: str
    default: ''
'''

EXAMPLES = r'''
- name: Lock PRIMUS_BASE for this run
  primus.trainenv.base_lock:
    path: "{{ primus_base }}"
  register: primus_lock

- name: Release the lock of this run
  primus.trainenv.base_lock:
    path: "{{ primus_base }}"
    state: released
  when: primus_lock.acquired | default(false)
'''

RETURN = r'''
lock:
  description: The lock file.
  returned: always
  type: str
  sample: /home/trainer/envs/primus-env/.primus.lock
run_id:
  description: This run's id (the same on every host of one run); the playbook passes it to every later task as
    C(PRIMUS_TRAINENV_RUN).
  returned: always
  type: str
  sample: 1a2b3c4d5e6f
acquired:
  description: Whether this run holds the lock now (O(state=acquired)).
  returned: always
  type: bool
released:
  description: Whether this call removed this run's lock (O(state=released)).
  returned: always
  type: bool
holder:
  description: The lock's record - this run's when acquired, the other run's when not.
  returned: when there is a lock
  type: dict
  sample: {"run_id": "1a2b3c4d5e6f", "user": "trainer", "node_host": "gpu07", "inventory_host": "gpu07",
           "controller_host": "login1", "controller_pid": 4242, "controller_user": "trainer", "since": "2026-12-02T17:30:00Z"}
taken_over:
  description: The record of the stale lock this run replaced.
  returned: when a stale lock was taken over
  type: dict
stopped:
  description:
    - The processes of the run whose stale lock was taken over that were still running on the node (found by the
      C(PRIMUS_TRAINENV_RUN) variable every task of a locked run passes on), each stopped with C(SIGTERM), or
      C(SIGKILL) when still there 5 seconds later.
  returned: when a stale lock was taken over
  type: list
  elements: dict
  sample: [{"pid": 31337, "command": "/home/trainer/envs/primus-env/venv/bin/python -m pip wheel ...", "signal": "SIGTERM"}]
created:
  description: Directories created for O(path).
  returned: always
  type: list
  elements: str
'''

import os
import pwd
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.primus.trainenv.plugins.module_utils import base_lock
from ansible_collections.primus.trainenv.plugins.module_utils.modes import make_dirs


def node_user():
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='str', required=True),
            state=dict(type='str', choices=['acquired', 'released', 'checked'], default='acquired'),
            owner=dict(type='dict', required=True),
            holder=dict(type='dict'),
            takeover=dict(type='str', default=''),
        ),
        supports_check_mode=True,
    )
    base = module.params['path']
    owner = module.params['owner']
    if not os.path.isabs(base):
        module.fail_json(msg='path %r is not absolute' % base)
    for field in ('run_id', 'inventory_host'):
        if not owner.get(field):
            module.fail_json(msg='owner.%s is missing: use this module through its action plugin' % field)
    base = os.path.normpath(base)
    path = base_lock.lock_path(base)
    result = dict(changed=False, lock=path, acquired=False, released=False, created=[])

    if module.params['state'] == 'released':
        holder, _problem = base_lock.read_lock(path)
        ours = holder is not None and holder.get('run_id') == owner['run_id'] \
            and holder.get('inventory_host') == owner['inventory_host']
        if module.check_mode:
            module.exit_json(changed=False, released=ours, holder=holder, lock=path, acquired=False, created=[])
        try:
            released, holder = base_lock.release(path, owner['run_id'], owner['inventory_host'])
        except (IOError, OSError) as exc:
            module.fail_json(msg='cannot remove the lock %s: %s' % (path, exc), **result)
        result.update(released=released, holder=holder)
        if holder is not None and not released:
            module.warn('the lock %s is not this run\'s (%s); it was left in place' % (path, base_lock.describe(holder)))
        module.exit_json(**result)

    record = dict((k, owner.get(k)) for k in base_lock.OWNER_FIELDS)
    record.update(format=base_lock.FORMAT, node_host=socket.gethostname(), user=node_user(), since=base_lock.now_utc(),
                  base=base)
    if module.check_mode or module.params['state'] == 'checked':
        holder, problem = base_lock.read_lock(path)
        if problem and holder is not None:
            holder = dict(holder, problem=problem)
        ours = holder is None or (holder.get('run_id') == owner['run_id']
                                  and holder.get('inventory_host') == owner['inventory_host'])
        # Neither check mode nor state=checked changes anything (nor would acquiring report a change).
        module.exit_json(changed=False, acquired=ours,
                         holder=holder or record, lock=path, released=False, created=[])
    try:
        result['created'] = make_dirs(base)
        if module.params['takeover']:
            acquired, holder, replaced = base_lock.take_over(path, module.params['takeover'], record)
            if replaced is not None:
                result['taken_over'] = replaced
                # The dead run may have left processes running here (an async build goes on without its
                # controller): stop them before this run touches what they work on.
                if acquired:
                    result['stopped'] = base_lock.stop_processes(base_lock.run_processes(replaced.get('run_id')))
        else:
            acquired, holder = base_lock.acquire(path, record)
    except (IOError, OSError) as exc:
        module.fail_json(msg='cannot take the lock %s: %s' % (path, exc), **result)
    result.update(acquired=acquired, holder=holder)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
