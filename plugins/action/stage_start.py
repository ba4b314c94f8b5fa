# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""primus.trainenv.stage_start (documented in plugins/modules/stage_start.py): the start of every stage.

One task per stage instead of an imported task file: the decision is module_utils.stage_state.start
(a pure function), the only node work is removing pip's debris, through ansible.builtin.file.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.primus.trainenv.plugins.plugin_utils.run_facts import run_fact
from ansible_collections.primus.trainenv.plugins.module_utils import stage_state

# The fact that records when each stage of this run started (controller clock), read by the stamps.
STARTED = 'primus_stage_started'


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(('stage',))

    def _fact(self, task_vars, name):
        return run_fact(self._templar, task_vars, name, 'stage_start')

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _validated, args = self.validate_argument_spec(argument_spec=dict(stage=dict(type='str', required=True)))
        stage = args['stage']
        run = self._fact(task_vars, 'primus_run')
        stages = {'requires': run['requires'], 'order': run['order'], 'run': run['stages'], 'pip': run['pip'],
                  'status': self._fact(task_vars, 'preflight_stages')['status']}
        node = self._fact(task_vars, 'primus_node')
        try:
            plan = stage_state.start(stage, stages, node.get('venv'))
        except stage_state.StageError as exc:
            raise AnsibleActionFail('stage_start: %s' % exc)
        started = dict((task_vars.get('ansible_facts') or {}).get(STARTED) or {})
        started[stage] = round(time.time(), 3)
        result.update(stage=stage, missing=plan['missing'], removed=[], changed=False,
                      ansible_facts={STARTED: started})
        if plan['missing']:
            result.update(failed=True, msg='[%s] %s' % (stage, plan['message']))
            return result
        for path in plan['debris']:
            removal = self._execute_module(module_name='ansible.legacy.file', module_args=dict(path=path, state='absent'),
                                           task_vars=task_vars)
            if removal.get('failed'):
                result.update(failed=True, msg="[%s] cannot remove pip's debris %s from the venv: %s. Fix: remove it by "
                                               "hand (rm -rf '%s') and run again." % (stage, path, removal.get('msg'), path))
                return result
            if removal.get('changed'):
                result['removed'].append(path)
        result['changed'] = bool(result['removed'])
        result['msg'] = 'stage %s started%s' % (stage, (
            "; removed pip's debris of an interrupted install: %s" % ', '.join(result['removed'])) if result['removed'] else '')
        return result
