# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller half of primus.trainenv.base_lock (documented with the module).

It runs on the controller, so it knows this run (the ansible-playbook process is the parent of
the worker that runs this plugin) and can tell whether a run recorded in a lock is still alive
when that run was started on this same controller host. The module does the file work on the node.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import getpass
import os
import socket

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.primus.trainenv.plugins.module_utils import base_lock

MODULE = 'primus.trainenv.base_lock'
display = Display()


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(('path', 'state', 'holder'))

    def _lock_module(self, task_vars, **args):
        return self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _validated, args = self.validate_argument_spec(argument_spec=dict(
            path=dict(type='str', required=True),
            state=dict(type='str', choices=['acquired', 'released', 'checked'], default='acquired'),
            holder=dict(type='dict'),
        ))
        base = args['path']
        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = str(os.getuid())
        # The worker running this plugin is a child of the ansible-playbook process: that is the run.
        here = base_lock.controller_identity(os.getppid(), socket.gethostname(), user)
        here['inventory_host'] = task_vars.get('inventory_hostname', '')

        if args['state'] == 'checked':
            return self._check(result, base, args['holder'], here, task_vars)
        first = self._lock_module(task_vars, path=base, state=args['state'], owner=here)
        result.update(first)
        # Every later task of this run passes it on as PRIMUS_TRAINENV_RUN (playbooks/primus.yml).
        result['run_id'] = here['run_id']
        if first.get('failed') or args['state'] == 'released' or first.get('acquired'):
            if first.get('acquired'):
                result['msg'] = 'PRIMUS_BASE %s is locked for this run (run id %s)' % (base, here['run_id'])
            return result

        holder = first.get('holder') or {}
        verdict, detail = base_lock.judge(holder, here)
        if verdict == 'stale' and not self._task.check_mode:
            second = self._lock_module(task_vars, path=base, state='acquired', owner=here, takeover=holder['run_id'])
            result.update(second)
            if second.get('failed'):
                return result
            if second.get('acquired'):
                result['taken_over'] = holder
                result['msg'] = 'PRIMUS_BASE %s is locked for this run (run id %s)' % (base, here['run_id'])
                stopped = second.get('stopped') or []
                display.warning('PRIMUS_BASE %s was locked by a run that no longer exists (%s: %s); this run took the '
                                'lock over%s.' % (base, base_lock.describe(holder), detail, (
                                    ' and stopped the %d process(es) that run had left running on the node: %s'
                                    % (len(stopped), '; '.join('pid %d %s (%s)' % (p['pid'], p['command'][:120], p['signal'])
                                                               for p in stopped))) if stopped else ''))
                return result
            holder = second.get('holder') or {}
            verdict, detail = base_lock.judge(holder, here)
        if verdict == 'stale':
            message = ('PRIMUS_BASE %s is locked by a run that no longer exists (%s: %s); a real run takes it over.'
                       % (base, base_lock.describe(holder), detail))
        else:
            message = base_lock.refusal(base, verdict, holder, here)
        result['holder'] = holder
        if self._task.check_mode:
            display.warning('check mode: ' + message)
            return result
        result.update(failed=True, msg=message)
        return result

    def _check(self, result, base, holder, here, task_vars):
        """state=checked: refuse as acquiring would, change nothing; a stale lock is left to state=acquired."""
        result['run_id'] = here['run_id']
        if holder is None:
            seen = self._lock_module(task_vars, path=base, state='checked', owner=here)
            if seen.get('failed'):
                result.update(seen)
                return result
            holder = seen.get('holder') if not seen.get('acquired') else {}
        holder = holder or {}
        result.update(changed=False, lock=base_lock.lock_path(base), holder=holder, acquired=False, released=False)
        if not holder:
            result['msg'] = 'PRIMUS_BASE %s is not locked' % base
            return result
        verdict, detail = base_lock.judge(holder, here)
        if verdict in ('ours', 'stale'):
            result['msg'] = ('PRIMUS_BASE %s is locked by a run that no longer exists (%s: %s); this run will take it over.'
                             % (base, base_lock.describe(holder), detail)) if verdict == 'stale' else (
                'PRIMUS_BASE %s is locked by this run' % base)
            return result
        result.update(failed=True, msg=base_lock.refusal(base, verdict, holder, here))
        return result
