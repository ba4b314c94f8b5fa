# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""primus.trainenv.build_wait (documented in plugins/modules/build_wait.py): wait for an async build, showing progress.

Polls the job with ansible.builtin.async_status on a quick-then-steady schedule (module_utils.run_log.poll_delays) and
prints one line per poll through Ansible's Display: host, stage, step, elapsed time, the last build's duration from the
stage's stamp, the log and its last line (read on the node by the module of the same name).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.primus.trainenv.plugins.module_utils import run_log

display = Display()
MODULE = 'primus.trainenv.build_wait'
GRACE = 60   # seconds past the time limit after which a job still running is given up on


class ActionModule(ActionBase):

    TRANSFERS_FILES = False

    def _job(self, jid, task_vars, mode='status'):
        # As ansible.builtin.async_status's own action: the job file is in the shell's async_dir.
        async_dir = self._remote_expand_user(self.get_shell_option('async_dir', default='~/.ansible_async'))
        return self._execute_module(module_name='ansible.legacy.async_status', task_vars=task_vars,
                                    module_args=dict(jid=jid, mode=mode, _async_dir=async_dir))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _validated, args = self.validate_argument_spec(argument_spec=run_log.WAIT_OPTIONS)
        for option, setting, usual in (('timeout', 'source_build_timeout', 21600), ('poll', 'source_build_poll', 15)):
            if args[option] < 1:
                raise AnsibleActionFail('build_wait: %s=%d is not a number of seconds; give 1 or more (the source-build '
                                        'role\'s %s, default %d)' % (option, args[option], setting, usual))
        if not args['jid']:
            raise AnsibleActionFail('build_wait: no async job id (jid is empty): the task that starts the build must run '
                                    'with async and poll: 0 and be registered')
        node_args = dict((k, v) for k, v in args.items() if v is not None)
        label = '%s%s' % ('[%s] ' % args['stage'] if args['stage'] else '', args['step'] or self._task.name or MODULE)
        where = '%s: %s' % (task_vars.get('inventory_hostname', '?'), label)
        start = time.time()
        first = self._execute_module(module_name=MODULE, module_args=node_args, task_vars=task_vars)
        estimate = first.get('estimate')
        delays = run_log.poll_delays(args['poll'])
        while True:
            time.sleep(next(delays))
            job = self._job(args['jid'], task_vars)
            elapsed = time.time() - start
            if job.get('finished') or job.get('failed'):
                break
            if elapsed > args['timeout'] + GRACE:
                result.update(failed=True, log_path=args['log_path'], msg=run_log.overdue_message(
                    label, args['timeout'], elapsed, args['log_path']))
                return result
            seen = self._execute_module(module_name=MODULE, module_args=node_args, task_vars=task_vars)
            display.display(run_log.progress_line(where, elapsed, estimate, args['log_path'], seen.get('last_line')))
        self._job(args['jid'], task_vars, mode='cleanup')
        for key in ('results_file', 'started', 'finished', 'stdout_lines', 'stderr_lines', 'invocation'):
            job.pop(key, None)
        result.update(job)
        result.update(log_path=args['log_path'], build_seconds=round(elapsed, 1))
        if job.get('failed') and job.get('msg') == 'Timeout exceeded':
            result['msg'] = run_log.timeout_message(label, args['timeout'], args['log_path'])
        return result
