# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""primus.trainenv.stage_stamp (documented in plugins/modules/stage_stamp.py): the stamp of a stage, from the run's facts.

Inside playbooks/primus.yml a stage names only what it built (stage, distributions, outputs); the state directory, the
release, the stage's key, the venv, the seconds since the stage started (primus.trainenv.stage_start) and the release's
fixes to installed files (re-applied after every stage that changed the venv) come from the facts the core role,
preflight and stage_start published. An option given explicitly wins.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.primus.trainenv.plugins.plugin_utils.run_facts import run_fact

MODULE = 'primus.trainenv.stage_stamp'
STARTED = 'primus_stage_started'


class ActionModule(ActionBase):

    TRANSFERS_FILES = False

    def _fact(self, task_vars, name):
        return run_fact(self._templar, task_vars, name, 'stage_stamp')

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        stage = args.get('stage')
        if not isinstance(stage, str) or not stage:
            raise AnsibleActionFail('stage_stamp: stage is required')
        if 'path' not in args:
            args['path'] = self._fact(task_vars, 'primus_paths')['state']
        if 'release' not in args:
            args['release'] = self._fact(task_vars, 'primus_pins')['release']
        if 'key' not in args:
            keys = self._fact(task_vars, 'preflight_stages')['stage_keys']
            if stage not in keys:
                raise AnsibleActionFail('stage_stamp: no key is defined for stage %s in this run' % stage)
            args['key'] = keys[stage]
        if args.get('distributions') and 'venv' not in args:
            args['venv'] = self._fact(task_vars, 'primus_paths')['venv']
        # The release's fixes to installed files, re-applied where this stage's pip runs put an original back.
        fixes = self._fact(task_vars, 'primus_pins').get('installed_fixes') or []
        if fixes and 'installed_fixes' not in args:
            args['installed_fixes'] = fixes
            args.setdefault('site_packages', self._fact(task_vars, 'primus_paths')['site_packages'])
        if 'seconds' not in args:
            started = ((task_vars.get('ansible_facts') or {}).get(STARTED) or {}).get(stage)
            if started is None:
                raise AnsibleActionFail('stage_stamp: stage %s was not started in this run (primus.trainenv.stage_start '
                                        'records when a stage starts); give seconds explicitly' % stage)
            args['seconds'] = round(max(0.0, time.time() - float(started)), 1)
        result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
        return result
