#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: build_wait
short_description: Wait for an async source build, showing its progress on the console
version_added: 0.1.0
description:
  - "Waits for the async job of a build (a M(primus.trainenv.pip_constrained) task started with C(async) and
    C(poll: 0)) and returns that task's result, as if it had run in the foreground."
  - "Polls with M(ansible.builtin.async_status) after 1, 2, 4 and 8 seconds, then every O(poll) seconds: a build of a
    few seconds is not waited for a whole poll interval, and a build of hours prints one line per poll. Each line
    says the host, the stage, the step, the time elapsed, how long this build took the last time it ran on this
    base (from the stage's stamp, when it was built there before, for another build key), the log and the log's
    last line, for example C(node1: [te] Build the wheel - te - 2m 05s elapsed (last build 14m 10s) - log
    /base/logs/te.log - [ 41%] Building HIP object ...)."
  - When the job fails because it ran longer than its C(async) time limit - the job, pip and every compiler it
    started were killed by Ansible's async wrapper, which stops the job's whole process group - the task fails
    saying so and naming the log. A job still running O(timeout) + 60 seconds after the start (its wrapper gone)
    fails the task too.
  - On success the seconds the build took are returned as RV(build_seconds), which the stage's stamp records.
  - This is an action plugin; the module of the same name only reads the log's last line and the stamp on the node.
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  check_mode:
    description: Waits for the job as in a normal run (a job started in check mode changes nothing).
    support: full
  diff_mode:
    description: Nothing to show.
    support: none
  action:
    description: The waiting and the console lines are the controller's; the node reads the log and the stamp.
    support: full
options:
  jid:
    description: The async job id (C(ansible_job_id) of the registered start task).
    type: str
    required: true
  log_path:
    description: The build's log on the node (the O(primus.trainenv.pip_constrained#module:log_path) of the build).
    type: path
    required: true
  stage:
    description: The stage the build belongs to, shown in brackets.
    type: str
    default: ""
  step:
    description: What is being built, shown after the stage (default - the task's name).
    type: str
  timeout:
    description: The C(async) time limit of the job, in seconds (the role's C(source_build_timeout)), named when it is
      reached.
    type: int
    required: true
  poll:
    description: Seconds between the polls after the first quick ones (1, 2, 4, 8 s).
    type: int
    default: 15
  stamp:
    description:
      - The stage's stamp on the node; when it records an earlier build (C(outputs.built)), the seconds it took
        (C(outputs.build_seconds), else the stage's C(outputs.seconds)) are shown as the estimate.
    type: path
'''

EXAMPLES = r'''
- name: Start the build - te
  primus.trainenv.pip_constrained:
    src: /tmp/primus-build-trainer/TransformerEngine
    wheel_dir: /tmp/primus-cache-trainer/wheels/te/1b2c3d4e5f607182
    log_path: /home/trainer/envs/primus-env/logs/te.log
  async: 21600
  poll: 0
  register: build_job

- name: Build the wheel - te
  primus.trainenv.build_wait:
    jid: "{{ build_job.ansible_job_id }}"
    log_path: /home/trainer/envs/primus-env/logs/te.log
    stage: te
    timeout: 21600
    stamp: /home/trainer/envs/primus-env/state/te.json
'''

RETURN = r'''
build_seconds:
  description: Seconds from the start of the wait until the job finished (the action plugin's result).
  returned: when the job finished
  type: float
  sample: 851.3
log_path:
  description: The build's log.
  returned: always
  type: str
  sample: /home/trainer/envs/primus-env/logs/te.log
size:
  description: The log's size in bytes (null when it does not exist yet) - the module's own result.
  returned: always
  type: int
  sample: 48213
last_line:
  description: The log's last non-empty line (at most 300 characters) - the module's own result.
  returned: always
  type: str
  sample: "[ 41%] Building HIP object"
estimate:
  description: The seconds the last build recorded in O(stamp) took (null when there is none) - the module's result.
  returned: always
  type: float
  sample: 850.0
'''

import json

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.primus.trainenv.plugins.module_utils.run_log import WAIT_OPTIONS, last_line


def estimate(stamp_path):
    """Seconds the build recorded in a stage's stamp took, or None (no stamp, or the wheel came from the cache)."""
    if not stamp_path:
        return None
    try:
        with open(stamp_path) as handle:
            outputs = json.load(handle).get('outputs') or {}
    except (IOError, OSError, ValueError, AttributeError):
        return None
    if outputs.get('built') not in (True, 'true', 'True'):
        return None
    for key in ('build_seconds', 'seconds'):
        try:
            seconds = float(outputs.get(key))
        except (TypeError, ValueError):
            continue
        if seconds > 0:
            return seconds
    return None


def main():
    # The options of the action plugin (which validates them first); only log_path and stamp are read here.
    module = AnsibleModule(argument_spec=WAIT_OPTIONS, supports_check_mode=True)
    size, line = last_line(module.params['log_path'])
    module.exit_json(changed=False, log_path=module.params['log_path'], size=size, last_line=line,
                     estimate=estimate(module.params['stamp']))


if __name__ == '__main__':
    main()
