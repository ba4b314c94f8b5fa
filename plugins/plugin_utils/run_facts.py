# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The run's facts as the action plugins read them (stage_start, stage_stamp)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleActionFail


def run_fact(templar, task_vars, name, action):
    """The templated value of the fact ``name``, or a failure saying where the action runs."""
    if name not in task_vars:
        raise AnsibleActionFail('%s needs the %s fact, which roles/primus and the preflight role publish: run it inside '
                                'playbooks/primus.yml (after preflight)' % (action, name))
    return templar.template(task_vars[name])
